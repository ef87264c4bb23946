//! Load benchmark of the dungeon turn path (issue #7): 500 concurrent runs played over HTTP.
//!
//! Setup (not measured) goes through the real API: one account with a linked simnet wallet
//! quotes, pays (1 USDC with the memo) and enters 500 runs. Then 500 clients each play their own
//! run with the engine's greedy agent, one turn after another, for `BENCH_SECONDS` (or until the
//! run ends): turns per second and latency percentiles, server on one core, rate limits off.
//!
//! `cargo bench --bench dungeon_load`; `TEST_DATABASE_URL=postgres://…` for PostgreSQL;
//! `BENCH_SECONDS` (default 10) and `BENCH_RUNS` (default 500) tune it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::time::{Duration, Instant};

use crucible::dungeon::game::VisibleState;
use crucible::dungeon::game::agent::{Agent, GreedyAgent};
use serde_json::{Value, json};
use support::{env_number, percentile_ms};

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let runs = env_number("BENCH_RUNS", 500) as usize;
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();

    let client_runtime = support::client_runtime();
    client_runtime.block_on(async move {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(runs)
            .build()
            .expect("client");
        let setup = Instant::now();
        let keys = support::enter_runs(&client, &base, &state, "bench@example.com", runs).await;
        println!("setup: {runs} paid runs entered over HTTP in {:.1} s", setup.elapsed().as_secs_f64());

        let started = Instant::now();
        let deadline = started + Duration::from_secs(seconds);
        let players: Vec<_> = keys
            .into_iter()
            .map(|(run_id, key)| {
                let (client, url) = (client.clone(), format!("{base}/api/dungeons/runs/{run_id}/turn"));
                tokio::spawn(async move { play(&client, &url, &key, deadline).await })
            })
            .collect();
        let mut latencies = Vec::new();
        let mut ended = 0;
        for player in players {
            let (mut played, over) = player.await.expect("player");
            latencies.append(&mut played);
            ended += usize::from(over);
        }
        let elapsed = started.elapsed().as_secs_f64();
        latencies.sort_unstable();
        println!(
            "POST turn, {runs} concurrent runs, {backend}, server on 1 core, {seconds} s: {} turns, {:.0} turns/s, \
             p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {ended} runs reached their end",
            latencies.len(),
            latencies.len() as f64 / elapsed,
            percentile_ms(&latencies, 0.50),
            percentile_ms(&latencies, 0.99),
            percentile_ms(&latencies, 1.0),
        );
    });
}

/// Play one run until `deadline` or its end; latencies in µs, and whether it ended.
async fn play(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    deadline: Instant,
) -> (Vec<u32>, bool) {
    let mut agent = GreedyAgent::new();
    let mut latencies = Vec::with_capacity(512);
    let mut body = json!({"action": "inventory", "turnNumber": 1});
    while Instant::now() < deadline {
        let sent = Instant::now();
        let response = client
            .post(url)
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .expect("turn");
        let status = response.status().as_u16();
        let reply: Value = response.json().await.expect("json");
        latencies.push(sent.elapsed().as_micros() as u32);
        let state: VisibleState = match status {
            200 => serde_json::from_value(reply).expect("state"),
            400 => serde_json::from_value(reply["state"].clone()).expect("state"),
            other => panic!("turn answered {other}: {reply}"),
        };
        if state.status.is_over() {
            return (latencies, true);
        }
        let action = agent.decide(&state);
        body = json!({"action": action.action, "target": action.target, "turnNumber": state.turn_number + 1});
    }
    (latencies, false)
}
