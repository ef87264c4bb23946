//! What the HTTP load benchmarks share: a server pinned to one core on a fresh database, a
//! closed-loop load generator, and latency percentiles.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "shared by benches that each use part of it; a bench that cannot go on should fail loudly"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crucible::config::{Config, sqlite_url_in};
use crucible::startup::Application;
use crucible::state::AppState;

pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A fresh database: SQLite in `dir`, or a new schema in `TEST_DATABASE_URL`.
pub fn database_url(dir: &std::path::Path) -> (String, &'static str) {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(base) if !base.is_empty() => {
            let schema = format!(
                "bench_{}",
                crucible::crypto::random_base58(8).to_lowercase()
            );
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("rt");
            runtime.block_on(async {
                use sqlx::Connection;
                sqlx::any::install_default_drivers();
                let mut conn = sqlx::AnyConnection::connect(&base).await.expect("connect");
                sqlx::query(&format!("CREATE SCHEMA \"{schema}\""))
                    .execute(&mut conn)
                    .await
                    .expect("schema");
            });
            let separator = if base.contains('?') { '&' } else { '?' };
            (
                format!("{base}{separator}options=-c%20search_path%3D{schema}"),
                "postgres",
            )
        }
        _ => (sqlite_url_in(dir), "sqlite"),
    }
}

/// Start the server on its own thread with a single-threaded runtime (one core).
pub fn serve_on_one_core(dir: &std::path::Path, url: String) -> (String, AppState) {
    let config = Config::for_tests(dir.to_path_buf(), url);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let app = Application::build(config).await.expect("build");
            tx.send((app.local_addr(), app.state().clone()))
                .expect("send");
            app.run_until_stopped(std::future::pending())
                .await
                .expect("serve");
        });
    });
    let (address, state) = rx.recv().expect("server started");
    (format!("http://{address}"), state)
}

/// `concurrency` clients each sending GET `url` back to back for `seconds`; latencies in µs.
pub async fn closed_loop(
    client: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
    concurrency: usize,
    seconds: u64,
) -> (Vec<u32>, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, bearer, stop) = (
                client.clone(),
                url.to_owned(),
                bearer.map(str::to_owned),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(4096);
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let mut request = client.get(&url);
                    if let Some(key) = &bearer {
                        request = request.bearer_auth(key);
                    }
                    let response = request.send().await.expect("request");
                    assert_eq!(response.status(), 200);
                    response.bytes().await.expect("body");
                    latencies.push(sent.elapsed().as_micros() as u32);
                }
                latencies
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.expect("worker"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    (latencies, elapsed)
}

/// The `p` quantile (0..=1) of sorted latencies, in milliseconds.
pub fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)] as f64 / 1000.0
}

/// Resident memory of this process in MiB (Linux).
pub fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmRSS:")
                    .map(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            })
        })
        .flatten()
        .map_or(0.0, |kib| kib / 1024.0)
}
