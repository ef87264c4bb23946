//! The `crucible` binary itself: what the README's first command does on a fresh machine.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::helpers::server_process::terminate;

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

    let status = terminate(&mut child).await;
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

/// `crucible simnet`: JSON-RPC at the root (where a validator serves it) and at `/simnet/rpc`,
/// PubSub on a second listener too (web3.js looks at the next port), a clean stop on SIGTERM.
#[tokio::test]
async fn simnet_alone_answers_json_rpc_and_pubsub_and_stops_on_sigterm() {
    use futures_util::{SinkExt, StreamExt};
    use serde_json::{Value, json};
    use tokio_tungstenite::tungstenite;

    let mut child = crucible()
        .args([
            "simnet",
            "--bind",
            "127.0.0.1:0",
            "--ws-bind",
            "127.0.0.1:0",
        ])
        .env_remove("CRUCIBLE_SIMNET_BIND")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (http, ws) = tokio::task::spawn_blocking(move || {
        let word = |line: &str, scheme: &str| {
            line.split_whitespace()
                .find(|w| w.starts_with(scheme))
                .map(str::to_owned)
        };
        let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
        let http = lines.find_map(|l| word(&l, "http://"));
        let ws = lines.find_map(|l| word(&l, "ws://"));
        // Keep its stdout open and drained for as long as it runs.
        std::thread::spawn(move || lines.for_each(drop));
        (http, ws)
    })
    .await
    .expect("reader");
    let (http, ws) = (
        http.expect("the JSON-RPC address"),
        ws.expect("the PubSub address"),
    );

    let (mut socket, _) = tokio_tungstenite::connect_async(ws).await.expect("upgrade");
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "slotSubscribe"});
    socket
        .send(tungstenite::Message::Text(subscribe.to_string().into()))
        .await
        .expect("send");
    let mut next_json = async || loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a message within 10 s")
            .expect("open")
            .expect("frame");
        if let tungstenite::Message::Text(text) = message {
            return serde_json::from_str::<Value>(text.as_str()).expect("json");
        }
    };
    assert!(next_json().await["result"].is_u64(), "a subscription id");

    let client = reqwest::Client::new();
    let rpc = async |path: &str, method: &str, params: Value| -> Value {
        client
            .post(format!("{http}{path}"))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("post")
            .json()
            .await
            .expect("json")
    };
    let wallet = "3h1zGmCwsRJnVk5BuRNMLsPaQu1y2aqXqXDWYCgrp5UG";
    let airdrop = rpc("/", "requestAirdrop", json!([wallet, 1_000_000_000])).await;
    assert!(airdrop["result"].is_string(), "{airdrop}");
    let balance = rpc("/simnet/rpc", "getBalance", json!([wallet])).await;
    assert_eq!(balance["result"]["value"], 1_000_000_000, "{balance}");
    assert_eq!(next_json().await["method"], "slotNotification");

    let status = terminate(&mut child).await;
    assert!(status.success(), "a clean stop exits 0, got {status:?}");
}
