//! Load benchmark of the tournament read path (issue: 10,000 registered wallets).
//!
//! 1. `GET /api/tournaments/{id}/leaderboard` (first page of 100) with 256 concurrent clients,
//!    server on one core, rate limits off: requests/s and latency percentiles.
//! 2. 5,000 concurrent subscribers of `GET /api/tournaments/{id}/live`, each receiving its first
//!    `leaderboard:update`: time to connect them all and the memory the process grew by.
//!
//! `cargo bench --bench tournament_load`; `TEST_DATABASE_URL=postgres://…` for PostgreSQL;
//! `BENCH_SECONDS`, `BENCH_CONCURRENCY`, `BENCH_WALLETS`, `BENCH_SUBSCRIBERS` tune it.
//! Needs `ulimit -n` above twice the subscribers (client and server ends share the process).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::time::Instant;

use support::{closed_loop, env_number, percentile_ms, rss_mib};

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let concurrency = env_number("BENCH_CONCURRENCY", 256) as usize;
    let wallets = env_number("BENCH_WALLETS", 10_000) as usize;
    let subscribers = env_number("BENCH_SUBSCRIBERS", 5_000) as usize;
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();

    let client_runtime = support::client_runtime();
    client_runtime.block_on(async move {
        support::seed_tournament(&state, "trn_bench", wallets).await;
        let client = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build().expect("client");
        let url = format!("{base}/api/tournaments/trn_bench/leaderboard");
        let first: serde_json::Value = client.get(&url).send().await.expect("get").json().await.expect("json");
        assert_eq!(first["totalEntries"].as_u64(), Some(wallets as u64));

        let (latencies, elapsed) = closed_loop(&client, &url, None, concurrency, seconds).await;
        println!(
            "GET leaderboard ({wallets} wallets, page of 100), {backend}, server on 1 core, {concurrency} clients, {seconds} s: \
             {} requests, {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            latencies.len(),
            latencies.len() as f64 / elapsed,
            percentile_ms(&latencies, 0.50),
            percentile_ms(&latencies, 0.99),
            percentile_ms(&latencies, 1.0),
        );

        let before = rss_mib();
        let started = Instant::now();
        let live = format!("{base}/api/tournaments/trn_bench/live");
        let mut streams = Vec::with_capacity(subscribers);
        for batch in 0..subscribers.div_ceil(250) {
            let connecting: Vec<_> = (0..250.min(subscribers - batch * 250))
                .map(|_| {
                    let (client, live) = (reqwest::Client::new(), live.clone());
                    tokio::spawn(async move {
                        let mut response = client.get(&live).send().await.expect("subscribe");
                        let first = response.chunk().await.expect("chunk").expect("first event");
                        assert!(String::from_utf8_lossy(&first).contains("leaderboard:update"));
                        response
                    })
                })
                .collect();
            for connection in connecting {
                streams.push(connection.await.expect("subscriber"));
            }
        }
        let connected_in = started.elapsed().as_secs_f64();
        let after = rss_mib();
        println!(
            "live SSE: {} subscribers connected and served their first leaderboard:update in {connected_in:.1} s; \
             process memory {before:.0} MiB -> {after:.0} MiB ({:.1} KiB per subscriber, client and server ends together)",
            streams.len(),
            (after - before) * 1024.0 / streams.len() as f64,
        );
    });
}
