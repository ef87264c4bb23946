//! Scheduler benchmark of the agent ticker (issue: 10,000 active paper agents on 5m intervals
//! on SQLite): tick throughput and database writes per tick, and the headroom over what 10,000
//! agents on 5m intervals need (33.3 ticks/s).
//!
//! Every agent is due at once, then the clock moves one interval and they are all due again; each
//! round is one `ticker::run_due` (claim 256 → sandbox ticks → one transaction per batch, one
//! statement per table), on one core's worth of runtime, against the same agents ticked in the
//! sandbox alone (`ticker::tick_without_storing`) just before and just after it: the ratio is
//! what the database work leaves of the sandbox's rate. The sandbox-only rate is the mean of the
//! two, so a VM whose speed drifts during the round moves both sides of the ratio alike (one
//! pass before alone put ratios of 36 % and 63 % side by side in one run). Each round also
//! reports the rows and the bytes the database wrote per tick: the bytes stay put when the
//! machine's speed moves, the rates do not.
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
use crucible::db::Backend;
use crucible::startup::Application;
use crucible::state::AppState;
use support::env_number;

const CLASSES: [&str; 6] = ["fighter", "ranger", "mage", "defender", "gambler", "rogue"];

fn main() {
    let agents = env_number("BENCH_AGENTS", 10_000) as usize;
    let rounds = env_number("BENCH_ROUNDS", 3) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let database = support::database_url(dir.path());
    let (url, backend) = (database.url.clone(), database.backend);
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
        println!(
            "agent ticker, {agents} active agents on 5m, {backend}; each round runs the ticker's pass \
             over them between two passes in the sandbox alone (nothing claimed or stored)"
        );
        println!(
            "round | ticks | seconds | ticks/s | sandbox only ticks/s | ratio | writes/tick | KiB/tick | trades"
        );
        let mut rates = Vec::new();
        let mut ratios = Vec::new();
        let ticking = state.ticking();
        // Each round's pass between two sandbox-only passes; the one after is the next round's
        // one before.
        let mut sandbox_before = sandbox_only(&ticking, agents).await;
        for round in 1..=rounds {
            let before = writes(&state).await;
            let bytes_before = bytes_written(&state).await;
            let started = Instant::now();
            let pass = ticker::run_due(&ticking, "bench").await.expect("ticks");
            let seconds = started.elapsed().as_secs_f64();
            let bytes = bytes_written(&state).await - bytes_before;
            let after = writes(&state).await;
            assert_eq!(pass.ticked, agents, "every agent ticked once");
            let rate = pass.ticked as f64 / seconds;
            let sandbox_after = sandbox_only(&ticking, agents).await;
            let sandbox_rate = (sandbox_before + sandbox_after) / 2.0;
            sandbox_before = sandbox_after;
            // Per tick: the agent row update, plus the rows the tick inserted.
            let per_tick = 1.0 + (after - before) as f64 / pass.ticked as f64;
            let kib_per_tick = bytes as f64 / 1024.0 / pass.ticked as f64;
            println!(
                "{round:>5} | {:>5} | {seconds:>7.2} | {rate:>7.0} | {sandbox_rate:>20.0} | {:>4.0} % | {per_tick:>11.2} | {kib_per_tick:>8.1} | {}",
                pass.ticked,
                100.0 * rate / sandbox_rate,
                pass.trades
            );
            rates.push(rate);
            ratios.push(rate / sandbox_rate);
            clock.advance(Duration::minutes(5));
        }
        let needed = agents as f64 / 300.0;
        let worst = rates.iter().cloned().fold(f64::INFINITY, f64::min);
        ratios.sort_by(f64::total_cmp);
        println!(
            "needed {needed:.1} ticks/s for {agents} agents on 5m; slowest round {worst:.0} ticks/s = {:.0}x headroom; \
             end to end at {:.0} % of the sandbox-only rate (median round)",
            worst / needed,
            100.0 * ratios[ratios.len() / 2]
        );
    });
}

/// The rate of a pass over every agent in the sandbox alone, nothing claimed or stored.
async fn sandbox_only(ticking: &ticker::Ticking, agents: usize) -> f64 {
    let (dry, dry_time) = ticker::tick_without_storing(ticking)
        .await
        .expect("dry pass");
    assert_eq!(dry, agents, "every agent ticked in the sandbox");
    dry as f64 / dry_time.as_secs_f64()
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

/// Bytes the database has written so far, a measure of a tick's database work that does not
/// move with the machine's speed. SQLite: what this process has handed to `write` (`wchar`
/// of `/proc/self/io`): the WAL's frames, and the file's pages when a commit checkpoints —
/// nothing else of the bench writes. PostgreSQL: the bytes of WAL the server has generated
/// (`pg_stat_wal`, PostgreSQL 14 and later), the ticks' and any other database's meanwhile.
async fn bytes_written(state: &AppState) -> u64 {
    match state.store.backend() {
        Backend::Postgres => {
            // The WAL's insert position, not `pg_stat_wal`: backends report to that view only
            // now and then, so a round's figure took in some of the last round's WAL or missed
            // some of its own.
            let (bytes,): (String,) = sqlx::query_as(
                "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint::text",
            )
            .fetch_one(state.store.read())
            .await
            .expect("WAL position");
            bytes.parse().expect("wal bytes")
        }
        Backend::Sqlite => {
            let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
            io.lines()
                .find_map(|line| line.strip_prefix("wchar:"))
                .and_then(|bytes| bytes.trim().parse().ok())
                .unwrap_or(0)
        }
    }
}

/// One operator account with `agents` active agents, all due now.
async fn seed(state: &AppState, agents: usize) {
    let now = to_millis(state.now());
    let mut tx = state.store.begin().await.expect("tx");
    support::insert_account(&mut tx, now).await;
    // A key with a webhook URL: every trade queues an `agent.trade` delivery, as in production
    // (nothing delivers them here).
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, family, name, key_prefix, key_hash, scopes, webhook_url,
                               webhook_secret_sealed, created_at)
         VALUES ('key_bench', 'acc_bench', 'v1', 'bench', 'bench', 'bench-hash', '[]',
                 'http://127.0.0.1:9/hook', 'sealed', $1)",
    )
    .bind(now)
    .execute(&mut *tx)
    .await
    .expect("webhook key");
    support::insert_active_agents(&mut tx, "bench", &CLASSES, "bench/model", agents, now).await;
    tx.commit().await.expect("commit");
}
