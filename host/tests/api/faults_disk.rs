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

/// `crucible serve` on `data_dir`, its log appended to `log` (on the same disk), rate limits
/// off (clients sign up back to back).
async fn start(data_dir: &Path, log: &Path) -> ServerProcess {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open the log");
    ServerProcess::start(|command| {
        command
            .env("CRUCIBLE_DATA_DIR", data_dir)
            .args(["--rate-limits", "off"])
            .stderr(log);
    })
    .await
}

/// The database of `data_dir`, opened read-only (the server has stopped).
async fn open_read_only(data_dir: &Path) -> sqlx::AnyPool {
    let url = format!(
        "sqlite://{}?mode=ro",
        data_dir.join("crucible.db").display()
    );
    sqlx::any::install_default_drivers();
    sqlx::AnyPool::connect(&url)
        .await
        .expect("open the database")
}

/// `PRAGMA integrity_check` passes; the pool is closed.
async fn assert_intact(pool: &sqlx::AnyPool) {
    let (check,): (String,) = sqlx::query_as("PRAGMA integrity_check")
        .fetch_one(pool)
        .await
        .expect("integrity check");
    assert_eq!(check, "ok");
    pool.close().await;
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
        crate::helpers::server_process::sign_up_body(&format!("{who}@example.com")),
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

    let pool = open_read_only(&data_dir).await;
    assert_intact(&pool).await;
}

/// Sign up as `who` through `server` until `stop`, one request at a time; every answer kept
/// (0 when none came).
async fn sign_up_loop(
    base: String,
    client_id: usize,
    told: std::sync::Arc<std::sync::Mutex<Vec<(String, u16)>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let client = crate::helpers::server_process::client(15);
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        n += 1;
        let who = format!("c{client_id}-{n}");
        let status = match crate::helpers::server_process::sign_up(
            &client,
            &base,
            &format!("{who}@example.com"),
        )
        .send()
        .await
        {
            Ok(response) => response.status().as_u16(),
            Err(_) => 0,
        };
        told.lock().expect("told").push((who, status));
        if status == 503 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// The disk filled and freed again and again under four clients signing up, from a seeded
/// schedule (`FAULT_SECONDS`, default 30; `FAULT_SEED` replays one). Every answer is 201 or
/// 503; after a restart every 201 is there and no 503 is; the database passes its integrity
/// check; and after each fault the time until writes succeed again is measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "mounts a tmpfs: needs root (CI runs it by name)"]
async fn faults_disk_schedule_a_disk_filled_again_and_again_loses_nothing() {
    use rand::Rng;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let (seconds, seed, mut rng) = crate::faults_schedule::schedule_from_env("disk schedule", 30);
    // Room for half an hour of sign-ups besides the filler.
    let disk = Tmpfs::mount("256m");
    let data_dir = disk.path().join("data");
    let log = disk.path().join("crucible.log");
    let server = start(&data_dir, &log).await;

    let told: Arc<Mutex<Vec<(String, u16)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|id| {
            tokio::spawn(sign_up_loop(
                server.base.clone(),
                id,
                told.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let probe = reqwest::Client::new();
    let (mut fills, mut longest, mut probes) = (0, Duration::ZERO, 0);
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(500..2_000))).await;
        let filler = disk.fill();
        tokio::time::sleep(Duration::from_millis(rng.gen_range(300..3_000))).await;
        std::fs::remove_file(filler).expect("free the disk");
        fills += 1;
        let freed = Instant::now();
        loop {
            probes += 1;
            let (status, _, body) = sign_up(&probe, &server, &format!("probe-{probes}")).await;
            if status == 201 {
                break;
            }
            assert!(
                freed.elapsed() < Duration::from_secs(10),
                "no write within 10 s of freeing the disk, the last answer {status} {body} \
                 (seed {seed}; log: {})",
                std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        longest = longest.max(freed.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.expect("a client panicked");
    }
    server.stop().await;

    let told = told.lock().expect("told").clone();
    let mut by_status = std::collections::BTreeMap::<u16, usize>::new();
    for (_, status) in &told {
        *by_status.entry(*status).or_default() += 1;
    }
    eprintln!(
        "seed {seed}: disk filled {fills} times; {} sign-ups, answers {by_status:?}; writes \
         succeeded again at most {longest:?} after the disk was freed",
        told.len()
    );
    assert!(
        by_status.keys().all(|s| matches!(*s, 201 | 503)),
        "only 201 and 503 (seed {seed}): {by_status:?}"
    );
    let pool = open_read_only(&data_dir).await;
    for (who, status) in &told {
        let (present,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM accounts WHERE email = $1")
            .bind(format!("{who}@example.com"))
            .fetch_one(&pool)
            .await
            .expect("count");
        let expected = i64::from(*status == 201);
        assert_eq!(
            present,
            expected,
            "{who} answered {status} but is {}there (seed {seed})",
            if present == 1 { "" } else { "not " }
        );
    }
    assert_intact(&pool).await;
}
