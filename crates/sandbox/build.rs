//! Builds the strategy components and the test guests for `wasm32-wasip2` and puts the `.wasm`
//! files into `OUT_DIR`, where `builtin.rs` embeds them. No manual step: a fresh clone's
//! `cargo build` / `cargo test` gets current components.
//!
//! The nested `cargo build` uses its own target dir (`target/wasm-guests`) so it never waits on
//! the lock the outer build holds, and runs with the outer build's compiler and flag variables
//! removed (wrappers such as clippy-driver, host RUSTFLAGS) so the guests build the same way
//! whatever command started the outer build.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One nested build: its packages, extra cargo arguments, and for each `.wasm` it produces the
/// name it is embedded under.
struct GuestBuild {
    packages: &'static [&'static str],
    args: &'static [&'static str],
    outputs: &'static [(&'static str, &'static str)],
}

/// Two builds, because cargo unifies features across the packages of one build: the second
/// links `std` (the hostile guest again with the SDK's `std` feature, and the wrong-world guest),
/// which would otherwise turn `std` on for the `no_std` strategies too.
const GUEST_BUILDS: &[GuestBuild] = &[
    GuestBuild {
        packages: &[
            "strategy-fighter",
            "strategy-ranger",
            "strategy-mage",
            "strategy-defender",
            "strategy-gambler",
            "strategy-rogue",
            "hostile-guest",
            "model-probe-guest",
            "v0-1-guest",
            "overfit-guest",
            "robust-guest",
            "bad-params-guest",
        ],
        args: &[],
        outputs: &[
            ("strategy_fighter.wasm", "strategy_fighter.wasm"),
            ("strategy_ranger.wasm", "strategy_ranger.wasm"),
            ("strategy_mage.wasm", "strategy_mage.wasm"),
            ("strategy_defender.wasm", "strategy_defender.wasm"),
            ("strategy_gambler.wasm", "strategy_gambler.wasm"),
            ("strategy_rogue.wasm", "strategy_rogue.wasm"),
            ("hostile_guest.wasm", "hostile_guest.wasm"),
            ("model_probe_guest.wasm", "model_probe_guest.wasm"),
            ("v0_1_guest.wasm", "v0_1_guest.wasm"),
            ("overfit_guest.wasm", "overfit_guest.wasm"),
            ("robust_guest.wasm", "robust_guest.wasm"),
            ("bad_params_guest.wasm", "bad_params_guest.wasm"),
        ],
    },
    GuestBuild {
        packages: &["hostile-guest", "wrong-world-guest"],
        args: &["--features", "hostile-guest/std"],
        outputs: &[
            ("hostile_guest.wasm", "hostile_std_guest.wasm"),
            ("wrong_world_guest.wasm", "wrong_world_guest.wasm"),
        ],
    },
];

/// Outer-build variables that must not leak into the nested build.
fn leaks(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_LINKER",
        "RUSTDOC",
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CLIPPY_ARGS",
        "CLIPPY_CONF_DIR",
        "CARGO_TARGET_DIR",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_ENCODED_RUSTDOCFLAGS",
        "CARGO_MAKEFLAGS",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "TARGET",
        "HOST",
        "OUT_DIR",
        "OPT_LEVEL",
        "PROFILE",
        "DEBUG",
        "NUM_JOBS",
    ];
    const PREFIXES: &[&str] = &[
        "CARGO_PKG_",
        "CARGO_CFG_",
        "CARGO_FEATURE_",
        "CARGO_BUILD_",
        "CARGO_PROFILE_",
        "CARGO_TARGET_",
        "CARGO_LLVM_COV",
        "DEP_",
    ];
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .and_then(Path::parent)
        .expect("crates/sandbox/ lives two levels below the workspace root")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for dir in ["wit", "sdk-guest", "strategies", "test-guests"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );

    ensure_wasm_target();

    let target_dir = root.join("target").join("wasm-guests");
    let built = target_dir.join("wasm32-wasip2").join("release");
    for build in GUEST_BUILDS {
        build_guests(&root, &target_dir, build);
        for (file, embedded) in build.outputs {
            copy(&built.join(file), &out_dir.join(embedded));
        }
    }
}

/// The guests need the `wasm32-wasip2` standard library. rustup installs a toolchain file's
/// `targets` only when it installs the toolchain itself, so a machine that already had the pinned
/// toolchain lacks it; without this check the nested build would compile for minutes and then
/// fail with "can't find crate for `core`". Where rustup is present we add the target for the
/// active toolchain (saying so); otherwise we stop at once with the one-line fix.
fn ensure_wasm_target() {
    const TARGET: &str = "wasm32-wasip2";
    const FIX: &str = "rustup target add wasm32-wasip2";
    if wasm_std_installed(TARGET) {
        return;
    }
    // rustup's proxies name the toolchain they resolved (here: the one rust-toolchain.toml pins).
    let toolchain = env::var("RUSTUP_TOOLCHAIN").ok();
    let mut cmd = Command::new("rustup");
    cmd.args(["target", "add", TARGET]);
    if let Some(toolchain) = &toolchain {
        cmd.args(["--toolchain", toolchain]);
    }
    let shown = format!(
        "rustup target add {TARGET}{}",
        toolchain
            .as_deref()
            .map(|t| format!(" --toolchain {t}"))
            .unwrap_or_default()
    );
    match cmd.output() {
        Ok(output) if output.status.success() && wasm_std_installed(TARGET) => {
            println!("cargo:warning=the {TARGET} target was missing: added it with `{shown}`");
        }
        Ok(output) => fail(&format!(
            "the {TARGET} target is missing and `{shown}` failed; run `{FIX}` and build again:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )),
        Err(_) => fail(&format!(
            "the {TARGET} target is missing and rustup was not found: install the target for \
             your toolchain (with rustup: `{FIX}`) and build again"
        )),
    }
}

/// Stop the build with one clear line (a panic would bury it under a backtrace).
fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1)
}

/// Whether the active compiler's sysroot holds the target's standard library.
fn wasm_std_installed(target: &str) -> bool {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let Ok(output) = Command::new(rustc).args(["--print", "sysroot"]).output() else {
        // No answer from rustc: let the nested build report what is wrong.
        return true;
    };
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_string();
    Path::new(&sysroot)
        .join("lib")
        .join("rustlib")
        .join(target)
        .join("lib")
        .is_dir()
}

/// One nested `cargo build --release --target wasm32-wasip2`.
fn build_guests(root: &Path, target_dir: &Path, build: &GuestBuild) {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(target_dir);
    for package in build.packages {
        cmd.args(["-p", package]);
    }
    cmd.args(build.args);
    for (name, _) in env::vars_os() {
        if let Some(name) = name.to_str()
            && leaks(name)
        {
            cmd.env_remove(name);
        }
    }
    // Small components compile faster on load: no debug info, symbols stripped.
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "true");

    let output = cmd
        .output()
        .expect("run cargo for the wasm32-wasip2 guests");
    if !output.status.success() {
        panic!(
            "building the strategy components failed (is the wasm32-wasip2 target installed? \
             `rustup target add wasm32-wasip2`):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
}
