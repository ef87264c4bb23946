//! HTTP load benchmark: authenticated `GET /api/account` with an account API key.
//!
//! The server runs on ONE core (a current-thread runtime on its own thread); 64 concurrent
//! clients run on another. Reports requests/s, latency percentiles, and how many rows the run
//! changed (the key check must not write per request: `lastUsedAt` moves at most once a minute).
//!
//! `cargo bench --bench account_load` (SQLite); with `TEST_DATABASE_URL=postgres://…` on PostgreSQL.
//! `BENCH_SECONDS` (default 10) and `BENCH_CONCURRENCY` (default 64) tune the run.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use support::{closed_loop, env_number, percentile_ms};

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let concurrency = env_number("BENCH_CONCURRENCY", 64) as usize;
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();

    let client_runtime = support::client_runtime();
    client_runtime.block_on(async move {
        let client = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build().expect("client");
        let cookie = support::session(&client, &base, "bench@example.com").await;
        let key = support::api_key(&client, &base, &cookie, &["read", "write"]).await;
        let url = format!("{base}/api/account");
        for _ in 0..200 {
            client.get(&url).bearer_auth(&key).send().await.expect("warm-up");
        }
        let before = write_fingerprint(&state).await;
        let (latencies, elapsed) = closed_loop(&client, &url, Some(&key), concurrency, seconds).await;
        let writes = rows_changed(&before, &write_fingerprint(&state).await);
        println!(
            "GET /api/account (API key), {backend}, server on 1 core, {concurrency} clients, {seconds} s: \
             {} requests, {:.0} req/s, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms, rows changed by the run: {writes}",
            latencies.len(),
            latencies.len() as f64 / elapsed,
            percentile_ms(&latencies, 0.50),
            percentile_ms(&latencies, 0.90),
            percentile_ms(&latencies, 0.99),
            percentile_ms(&latencies, 1.0),
        );
    });
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
