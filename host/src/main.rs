//! The `crucible` binary: parses the command line and hands over to [`crucible::cli`].

#[tokio::main]
async fn main() -> std::process::ExitCode {
    crucible::cli::run().await
}
