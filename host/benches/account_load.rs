//! HTTP load benchmark: authenticated `GET /api/account` with an account API key.
//!
//! The server runs on ONE core (a current-thread runtime on its own thread); 64 concurrent
//! clients run on another. Reports requests/s, latency percentiles, and how many rows the run
//! wrote (the key check must not write per request: `lastUsedAt` moves at most once a minute).
//!
//! `cargo bench --bench account_load` (SQLite); with `TEST_DATABASE_URL=postgres://…` on PostgreSQL.
//! `BENCH_SECONDS` (default 10) and `BENCH_CONCURRENCY` (default 64) tune the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crucible::config::{Config, sqlite_url_in};
use crucible::startup::Application;
use serde_json::json;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let concurrency = env_number("BENCH_CONCURRENCY", 64) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, backend) = database_url(dir.path());

    // The server: one core.
    let config = Config::for_tests(dir.path().to_path_buf(), url.clone());
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let app = Application::build(config).await.expect("build");
            address_tx
                .send((app.local_addr(), app.state().clone()))
                .expect("send");
            app.run_until_stopped(std::future::pending())
                .await
                .expect("serve");
        });
    });
    let (address, state) = address_rx.recv().expect("server started");
    let base = format!("http://{address}");

    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("rt");
    client_runtime.block_on(async move {
        let client = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build().expect("client");
        let key = setup_key(&client, &base).await;
        let url = format!("{base}/api/account");
        // Warm up connections and caches.
        for _ in 0..200 {
            client.get(&url).bearer_auth(&key).send().await.expect("warm-up");
        }
        let writes_before = write_fingerprint(&state).await;

        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let workers: Vec<_> = (0..concurrency)
            .map(|_| {
                let (client, url, key, stop) = (client.clone(), url.clone(), key.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut latencies = Vec::with_capacity(4096);
                    while !stop.load(Ordering::Relaxed) {
                        let sent = Instant::now();
                        let response = client.get(&url).bearer_auth(&key).send().await.expect("request");
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
        let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)] as f64 / 1000.0;
        let writes = rows_changed(&writes_before, &write_fingerprint(&state).await);
        println!(
            "GET /api/account (API key), {backend}, server on 1 core, {concurrency} clients, {seconds} s: \
             {} requests, {:.0} req/s, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms, rows changed by the run: {writes}",
            latencies.len(),
            latencies.len() as f64 / elapsed,
            pct(0.50),
            pct(0.90),
            pct(0.99),
            pct(1.0),
        );
    });
    drop(server);
}

fn database_url(dir: &std::path::Path) -> (String, &'static str) {
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

async fn setup_key(client: &reqwest::Client, base: &str) -> String {
    let signup = client
        .post(format!("{base}/api/auth/signup"))
        .json(&json!({"email": "bench@example.com", "password": "correct horse 9", "acceptTerms": true, "acceptPrivacy": true}))
        .send()
        .await
        .expect("signup");
    let cookie = signup.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let key: serde_json::Value = client
        .post(format!("{base}/api/api-keys"))
        .header("cookie", cookie)
        .json(&json!({"name": "bench"}))
        .send()
        .await
        .expect("key")
        .json()
        .await
        .expect("json");
    key["key"].as_str().expect("key").to_owned()
}

/// Every row the request path could write (key use, session slides, account updates), so the
/// run can show how many of them changed: `lastUsedAt` may move at most once a minute per key.
async fn write_fingerprint(state: &crucible::state::AppState) -> Vec<(String, i64)> {
    sqlx::query_as(
        "SELECT id, COALESCE(last_used_at, 0) + COALESCE(revoked_at, 0) FROM api_keys
         UNION ALL SELECT token_hash, last_seen_at + expires_at FROM sessions
         UNION ALL SELECT id, updated_at FROM accounts
         UNION ALL SELECT address, linked_at FROM account_wallets
         ORDER BY 1",
    )
    .fetch_all(state.store.read())
    .await
    .expect("fingerprint")
}

fn rows_changed(before: &[(String, i64)], after: &[(String, i64)]) -> usize {
    let unchanged = after.iter().filter(|row| before.contains(row)).count();
    after.len() - unchanged + before.len().saturating_sub(after.len())
}
