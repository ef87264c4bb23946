//! A full disk under the SQLite data dir, for real: the server runs as its own process on a small
//! tmpfs that also holds its log (as `crucible serve 2> crucible.log` would), and the disk is
//! filled while it serves (docs/operations.md, "When the database fails").
//!
//! It mounts a tmpfs, so it needs root: ignored by default, run by name in CI
//! (`cargo test -p crucible --test api faults_disk -- --ignored`).
//!
//! What it found: once the disk had been full, later writes answered 201 (or 404 when the
//! request read its own write back) and were gone after a restart — the writer connection was
//! left inside a transaction SQLite had already rolled back (`db::pool_options`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::helpers::server_process::ServerProcess;

/// A tmpfs of `size`, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().expect("tempdir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(mounted.success(), "mounting a tmpfs needs root");
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write zeros until the disk refuses; returns the file to delete to free it.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("fill");
        let mut file = std::fs::File::create(&path).expect("create the filler");
        let chunk = vec![0_u8; 64 * 1024];
        while file.write_all(&chunk).is_ok() {}
        let _ = file.sync_all();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// `crucible serve` on `data_dir`, its log appended to `log` (on the same disk).
async fn start(data_dir: &Path, log: &Path) -> ServerProcess {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open the log");
    ServerProcess::start(|command| {
        command.env("CRUCIBLE_DATA_DIR", data_dir).stderr(log);
    })
    .await
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> (u16, Option<String>, Value) {
    let response = client.post(url).json(&body).send().await.expect("send");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.json().await.unwrap_or(Value::Null);
    (status, retry_after, body)
}

async fn sign_up(
    client: &reqwest::Client,
    server: &ServerProcess,
    who: &str,
) -> (u16, Option<String>, Value) {
    post(
        client,
        format!("{}/api/auth/signup", server.base),
        json!({"email": format!("{who}@example.com"), "password": "abcdefgh123",
               "acceptTerms": true, "acceptPrivacy": true}),
    )
    .await
}

async fn log_in(client: &reqwest::Client, server: &ServerProcess, who: &str) -> u16 {
    post(
        client,
        format!("{}/api/auth/login", server.base),
        json!({"email": format!("{who}@example.com"), "password": "abcdefgh123"}),
    )
    .await
    .0
}

async fn get(client: &reqwest::Client, url: String) -> (u16, Value) {
    let response = client.get(url).send().await.expect("send");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
#[ignore = "mounts a tmpfs: needs root (CI runs it by name)"]
async fn faults_disk_a_full_disk_refuses_writes_keeps_reads_and_loses_nothing() {
    let disk = Tmpfs::mount("32m");
    let data_dir = disk.path().join("data");
    let log = disk.path().join("crucible.log");
    let client = reqwest::Client::new();
    let server = start(&data_dir, &log).await;

    assert_eq!(sign_up(&client, &server, "before").await.0, 201);

    let filler = disk.fill();
    for who in ["during-1", "during-2", "during-3"] {
        let (status, retry_after, body) = sign_up(&client, &server, who).await;
        assert_eq!(status, 503, "a write on a full disk: {body}");
        assert!(retry_after.is_some(), "503 carries Retry-After");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(message.contains("disk is full"), "says why: {message}");
    }
    let (status, _) = get(&client, format!("{}/api/tournaments", server.base)).await;
    assert_eq!(status, 200, "reads keep working");
    // Signing in writes a session: refused like any write, not taken for a wrong password.
    assert_eq!(
        log_in(&client, &server, "before").await,
        503,
        "sign-in writes a session"
    );
    let (status, health) = get(&client, format!("{}/api/health", server.base)).await;
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["status"], "degraded");
    assert!(
        health["database"]
            .as_str()
            .is_some_and(|d| d.starts_with("out of space")),
        "{health}"
    );

    std::fs::remove_file(filler).expect("free the disk");
    for who in ["after-1", "after-2"] {
        let (status, _, body) = sign_up(&client, &server, who).await;
        assert_eq!(status, 201, "writes resume once space is freed: {body}");
        assert_eq!(
            log_in(&client, &server, who).await,
            200,
            "{who} is really there"
        );
    }
    let (status, health) = get(&client, format!("{}/api/health", server.base)).await;
    assert_eq!((status, health["status"].clone()), (200, json!("ok")));

    // Everything acknowledged survives a restart; nothing refused is half there.
    server.stop().await;
    let server = start(&data_dir, &log).await;
    for who in ["before", "after-1", "after-2"] {
        assert_eq!(log_in(&client, &server, who).await, 200, "{who} survived");
    }
    for who in ["during-1", "during-2", "during-3"] {
        assert_eq!(
            log_in(&client, &server, who).await,
            401,
            "{who} was refused"
        );
    }
    server.stop().await;

    let url = format!(
        "sqlite://{}?mode=ro",
        data_dir.join("crucible.db").display()
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&url)
        .await
        .expect("open the database");
    let (check,): (String,) = sqlx::query_as("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .expect("integrity check");
    assert_eq!(check, "ok");
    pool.close().await;
}
