//! Scheduler benchmark of the agent ticker (issue: 10,000 active paper agents on 5m intervals
//! on SQLite): tick throughput and database writes per tick, and the headroom over what 10,000
//! agents on 5m intervals need (33.3 ticks/s).
//!
//! Every agent is due at once, then the clock moves one interval and they are all due again; each
//! round is one `ticker::run_due` (claim 256 → sandbox ticks → one transaction per batch), on one
//! core's worth of runtime.
//!
//! `cargo bench --bench agent_ticks`; `TEST_DATABASE_URL=postgres://…` for PostgreSQL;
//! `BENCH_AGENTS` and `BENCH_ROUNDS` tune it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, Utc};
use crucible::agents::ticker;
use crucible::clock::{ManualClock, to_millis};
use crucible::config::Config;
use crucible::startup::Application;
use crucible::state::AppState;
use support::env_number;

const CLASSES: [&str; 6] = ["fighter", "ranger", "mage", "defender", "gambler", "rogue"];

fn main() {
    let agents = env_number("BENCH_AGENTS", 10_000) as usize;
    let rounds = env_number("BENCH_ROUNDS", 3) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, backend) = support::database_url(dir.path());
    let runtime = support::runtime();
    runtime.block_on(async move {
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let config = Config::for_tests(dir.path().to_path_buf(), url);
        let app = Application::build_with_clock(config, clock.clone())
            .await
            .expect("app");
        let state = app.state().clone();
        seed(&state, agents).await;
        // Load every class component once, so the rounds measure ticks, not compiles.
        for class in CLASSES {
            state.agents.builtin(class).expect("builtin");
        }
        println!("agent ticker, {agents} active agents on 5m, {backend}");
        println!("round | ticks | seconds | ticks/s | writes/tick | trades");
        let mut rates = Vec::new();
        for round in 1..=rounds {
            let before = writes(&state).await;
            let started = Instant::now();
            let pass = ticker::run_due(&state.ticking(), "bench").await.expect("ticks");
            let seconds = started.elapsed().as_secs_f64();
            let after = writes(&state).await;
            assert_eq!(pass.ticked, agents, "every agent ticked once");
            let rate = pass.ticked as f64 / seconds;
            // Per tick: the agent row update, plus the rows the tick inserted.
            let per_tick = 1.0 + (after - before) as f64 / pass.ticked as f64;
            println!(
                "{round:>5} | {:>5} | {seconds:>7.2} | {rate:>7.0} | {per_tick:>11.2} | {}",
                pass.ticked, pass.trades
            );
            rates.push(rate);
            clock.advance(Duration::minutes(5));
        }
        let needed = agents as f64 / 300.0;
        let worst = rates.iter().cloned().fold(f64::INFINITY, f64::min);
        println!(
            "needed {needed:.1} ticks/s for {agents} agents on 5m; slowest round {worst:.0} ticks/s = {:.0}x headroom",
            worst / needed
        );
    });
}

/// Rows ticks insert: trades, equity marks, decisions and queued webhooks.
async fn writes(state: &AppState) -> i64 {
    let mut total = 0;
    for table in [
        "agent_trades",
        "agent_equity",
        "agent_decisions",
        "webhook_deliveries",
    ] {
        let (count,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(state.store.read())
            .await
            .expect("count");
        total += count;
    }
    total
}

/// One operator account with `agents` active agents, all due now.
async fn seed(state: &AppState, agents: usize) {
    let now = to_millis(state.now());
    let mut tx = state.store.begin().await.expect("tx");
    support::insert_account(&mut tx, now).await;
    support::insert_active_agents(&mut tx, "bench", &CLASSES, "bench/model", agents, now).await;
    tx.commit().await.expect("commit");
}
