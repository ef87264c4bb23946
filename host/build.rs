//! `sqlx::migrate!` embeds `migrations/` at compile time but does not tell cargo to watch it:
//! a new migration must rebuild the server. (The strategy components are built by the sandbox
//! crate's own build script, `crates/sandbox/build.rs`.)

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
