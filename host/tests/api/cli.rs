//! The `crucible` binary itself: what the README's first command does on a fresh machine.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn crucible() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crucible"));
    command
        .env_remove("DATABASE_URL")
        .env_remove("CRUCIBLE_BIND")
        .env_remove("CRUCIBLE_DATA_DIR");
    command
}

#[test]
fn migrate_creates_the_embedded_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("fresh");
    let output = crucible()
        .args(["migrate", "--data-dir"])
        .arg(&data_dir)
        .output()
        .expect("run");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("migrations applied (sqlite)"));
    assert!(data_dir.join("crucible.db").exists());
    // Running it again is a no-op, not an error.
    assert!(
        crucible()
            .args(["migrate", "--data-dir"])
            .arg(&data_dir)
            .output()
            .expect("run")
            .status
            .success()
    );
}

#[tokio::test]
async fn serve_starts_on_a_fresh_dir_answers_and_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = crucible()
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let line = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        lines.find_map(|line| line.ok().filter(|l| l.contains("listening on")))
    })
    .await
    .expect("reader")
    .expect("the server prints its address");
    let address = line.rsplit(' ').next().expect("address").to_owned();

    let health: serde_json::Value = reqwest::get(format!("{address}/api/health"))
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(health["status"], "ok");
    assert!(dir.path().join("data/crucible.db").exists());
    assert!(
        dir.path().join("data/master.key").exists(),
        "dev master key generated"
    );

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            waited < Duration::from_secs(30),
            "server did not stop after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    };
    assert!(
        status.success(),
        "graceful shutdown exits 0, got {status:?}"
    );
}

#[test]
fn bad_configuration_is_reported_not_panicked() {
    let output = crucible()
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir", "/tmp"])
        .env("DATABASE_URL", "mysql://nowhere/db")
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("DATABASE_URL must start with"));
}
