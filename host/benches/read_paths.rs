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

use std::process::Command;

use support::env_number;

/// What wrk reported for one path.
struct Run {
    requests_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: String,
}

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let concurrency = env_number("BENCH_CONCURRENCY", 256);
    let wallets = env_number("BENCH_WALLETS", 10_000) as usize;
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("read_paths needs wrk (Debian: apt-get install wrk)");
        std::process::exit(2);
    }
    let pinned = pin_to_cpu(0);
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();

    let runtime = support::runtime();
    let key = runtime.block_on(async {
        support::seed_tournament(&state, "trn_bench", wallets).await;
        let client = reqwest::Client::new();
        let cookie = support::session(&client, &base, "bench@example.com").await;
        support::api_key(&client, &base, &cookie, &["read"]).await
    });

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
    // Rounds of (floor, then each path): each path is compared with the floor of its own
    // round, and the median round is reported, so a noisy neighbour skews one round, not all.
    let rounds = env_number("BENCH_ROUNDS", 3).max(1) as usize;
    let mut runs: Vec<Vec<(f64, Run)>> = (0..paths.len()).map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        let mut floor = None;
        for ((_, url, header), runs) in paths.iter().zip(&mut runs) {
            let run = wrk(url, *header, concurrency, seconds);
            let floor_rps = *floor.get_or_insert(run.requests_per_second);
            runs.push((run.requests_per_second / floor_rps, run));
        }
    }
    println!("median of {rounds} rounds (each path against the floor of its round):");
    for ((name, _, _), mut runs) in paths.iter().zip(runs) {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ratio, run) = &runs[runs.len() / 2];
        let ratios: Vec<String> = runs
            .iter()
            .map(|(r, _)| format!("{:.0}", r * 100.0))
            .collect();
        // The tail moves more from round to round than the rate: its median over the rounds.
        let mut p99s: Vec<f64> = runs.iter().map(|(_, run)| run.p99_ms).collect();
        p99s.sort_by(f64::total_cmp);
        println!(
            "  {name:<40} {:>9.0} req/s  {:>5.1} % of the floor (rounds: {} %)  p50 {:.2} ms  p99 {:.2} ms (median of the rounds {:.2} ms, {:.2}–{:.2}){}",
            run.requests_per_second,
            100.0 * ratio,
            ratios.join(", "),
            run.p50_ms,
            run.p99_ms,
            p99s[p99s.len() / 2],
            p99s[0],
            p99s[p99s.len() - 1],
            run.errors,
        );
    }
}

/// Pin this process (and the threads it starts later) to `cpu`, so wrk gets the other core.
fn pin_to_cpu(cpu: usize) -> bool {
    Command::new("taskset")
        .args([
            "-p",
            "-c",
            &cpu.to_string(),
            &std::process::id().to_string(),
        ])
        .output()
        .is_ok_and(|output| output.status.success())
}

fn wrk(url: &str, header: Option<&str>, concurrency: u64, seconds: u64) -> Run {
    // A short warm-up fills the caches and the connection pools first.
    let mut warm = wrk_command(url, header, concurrency.min(16), 1);
    warm.output().expect("wrk warm-up");
    let output = wrk_command(url, header, concurrency, seconds)
        .output()
        .expect("wrk");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    parse(&text).unwrap_or_else(|| panic!("unexpected wrk output:\n{text}"))
}

fn wrk_command(url: &str, header: Option<&str>, concurrency: u64, seconds: u64) -> Command {
    let mut command = if Command::new("taskset").arg("-V").output().is_ok() {
        let mut command = Command::new("taskset");
        command.args(["-c", "1", "wrk"]);
        command
    } else {
        Command::new("wrk")
    };
    command.args([
        "-t1",
        &format!("-c{concurrency}"),
        &format!("-d{seconds}s"),
        "--latency",
    ]);
    if let Some(header) = header {
        command.args(["-H", header]);
    }
    command.arg(url);
    command
}

/// Requests/s, the 50th and 99th latency percentiles, and any errors wrk counted.
fn parse(text: &str) -> Option<Run> {
    let value = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|line| line.strip_prefix(prefix))
            .map(str::trim)
    };
    let requests_per_second = value("Requests/sec:")?.parse().ok()?;
    let p50_ms = duration_ms(value("50%")?)?;
    let p99_ms = duration_ms(value("99%")?)?;
    let mut errors = String::new();
    if let Some(socket) = value("Socket errors:") {
        errors.push_str(&format!("  socket errors: {socket}"));
    }
    if let Some(non_2xx) = value("Non-2xx or 3xx responses:") {
        errors.push_str(&format!("  non-2xx: {non_2xx}"));
    }
    Some(Run {
        requests_per_second,
        p50_ms,
        p99_ms,
        errors,
    })
}

/// wrk's durations: `812.00us`, `1.25ms`, `2.01s`.
fn duration_ms(text: &str) -> Option<f64> {
    let (number, factor) = if let Some(us) = text.strip_suffix("us") {
        (us, 0.001)
    } else if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1.0)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1000.0)
    } else {
        return None;
    };
    number.trim().parse::<f64>().ok().map(|n| n * factor)
}
