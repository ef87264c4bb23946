//! The read paths against the router's floor, measured in one run: how close an authenticated
//! `GET /api/account`, `GET /api/tournaments` and a page of a 10,000-wallet leaderboard come to
//! an unknown path (a 404 straight from the router, the least any request can cost).
//!
//! The server runs on one core (a current-thread runtime; the process is pinned to CPU 0 when
//! `taskset` exists) and `wrk` loads it from the other core, 256 connections by default. The
//! leaderboard page is loaded twice: as plain JSON, and gzipped as browsers ask for it. Rate
//! limits are off: they are measured apart (`cargo bench --bench rate_limits`).
//!
//! `cargo bench --bench read_paths` (SQLite); with `TEST_DATABASE_URL=postgres://…` on
//! PostgreSQL. Needs `wrk` (Debian: `apt-get install wrk`). `BENCH_SECONDS` (default 10),
//! `BENCH_CONCURRENCY` (256), `BENCH_WALLETS` (10,000) and `BENCH_ROUNDS` (3) tune it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use support::env_number;
use support::wrk::{self, Load, pin_to_cpu};

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let concurrency = env_number("BENCH_CONCURRENCY", 256);
    let wallets = env_number("BENCH_WALLETS", 10_000) as usize;
    if !wrk::available("read_paths") {
        std::process::exit(2);
    }
    let pinned = pin_to_cpu(0);
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();

    let runtime = support::runtime();
    let key = support::seed_reads(&runtime, &state, &base, wallets);

    let auth = format!("Authorization: Bearer {key}");
    // What browsers (and most HTTP clients) send: cached public answers are gzipped for them.
    let gzip = "Accept-Encoding: gzip";
    let paths: [(&str, String, Option<&str>); 5] = [
        (
            "unknown path (floor)",
            format!("{base}/api/no-such-path"),
            None,
        ),
        (
            "GET /api/account (API key)",
            format!("{base}/api/account"),
            Some(&auth),
        ),
        (
            "GET /api/tournaments",
            format!("{base}/api/tournaments"),
            None,
        ),
        (
            "GET leaderboard page (10,000 wallets)",
            format!("{base}/api/tournaments/trn_bench/leaderboard?page=2&pageSize=100"),
            None,
        ),
        (
            "  the same page, Accept-Encoding: gzip",
            format!("{base}/api/tournaments/trn_bench/leaderboard?page=2&pageSize=100"),
            Some(gzip),
        ),
    ];
    println!(
        "read paths, {backend}, server on 1 core{}, wrk -c{concurrency} -d{seconds}s from another core:",
        if pinned { " (pinned)" } else { "" }
    );
    // Each path answers what it should before it is loaded (the floor: 404).
    runtime.block_on(async {
        let client = reqwest::Client::new();
        for (name, url, header) in &paths {
            let mut request = client.get(url);
            if let Some((name, value)) = header.and_then(|header| header.split_once(": ")) {
                request = request.header(name, value);
            }
            let started = std::time::Instant::now();
            let response = request.send().await.expect("request");
            let status = response.status().as_u16();
            let body = response.bytes().await.expect("body");
            println!(
                "  {name:<40} first answer {status}, {} bytes, {:.1} ms",
                body.len(),
                started.elapsed().as_secs_f64() * 1e3
            );
        }
    });
    let loads: Vec<(&str, Vec<&str>)> = paths
        .iter()
        .map(|(name, _, header)| (*name, header.iter().copied().collect()))
        .collect();
    let loads: Vec<(&str, Load<'_>)> = paths
        .iter()
        .zip(&loads)
        .map(|((_, url, _), (name, headers))| {
            (
                *name,
                Load {
                    url,
                    headers,
                    script: None,
                    prepare: None,
                },
            )
        })
        .collect();
    wrk::against_the_floor(&loads, concurrency, seconds, env_number("BENCH_ROUNDS", 3));
}
