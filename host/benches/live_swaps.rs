//! Live agents' swaps per second on simnet, everything on one core (the process, its runtime
//! and the database's worker threads pinned to CPU 0 when `taskset` exists; unpinned, the
//! database's threads wake across cores and a swap costs more): per swap the agent's key is
//! opened, the pool read, the swap built and signed, recorded as pending, sent over JSON-RPC,
//! confirmed, read back with `getTransaction` and recorded as a trade with its webhook — the
//! path a live tick takes for each order ([`crucible::agents::live`]).
//!
//! `cargo bench --bench live_swaps`; `TEST_DATABASE_URL=postgres://…` for PostgreSQL;
//! `BENCH_AGENTS` (agents swapping at once) and `BENCH_SWAPS` (per agent) tune it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::time::Instant;

use crucible::agents::live::{self, Settled, SwapOrder};
use crucible::chain::pool::Direction;
use crucible::clock::to_millis;
use crucible::config::Config;
use crucible::startup::Application;
use crucible::state::AppState;
use futures_util::future::join_all;
use support::env_number;

fn main() {
    let agents = env_number("BENCH_AGENTS", 16) as usize;
    let swaps = env_number("BENCH_SWAPS", 50) as usize;
    // Before any thread starts, so every thread the bench starts inherits the core.
    let pinned = support::wrk::pin_to_cpu(0);
    let dir = tempfile::tempdir().expect("tempdir");
    let database = support::database_url(dir.path());
    let (url, backend) = (database.url.clone(), database.backend);
    let runtime = support::runtime();
    runtime.block_on(async move {
        let config = Config::for_tests(dir.path().to_path_buf(), url);
        let app = Application::build(config).await.expect("app");
        let state = app.state().clone();
        tokio::spawn(app.run_until_stopped(std::future::pending()));
        let ids = seed(&state, agents).await;
        println!(
            "live swaps on simnet, {agents} agents × {swaps} swaps, {}, {backend}",
            if pinned {
                "pinned to CPU 0"
            } else {
                "not pinned (no taskset)"
            }
        );
        let simnet = state.chain.simnet().expect("the embedded simnet").clone();
        let (batches_before, writes_before) = simnet.write_batches();
        let started = Instant::now();
        let results = join_all(ids.iter().map(|id| {
            let state = state.clone();
            async move {
                let mut filled = 0;
                let mut phases = Vec::with_capacity(swaps);
                for n in 0..swaps {
                    // Alternate sides; amounts vary so no two transactions are identical.
                    let (direction, amount_in) = if n % 2 == 0 {
                        (Direction::SellSol, 10_000_000 + n as u64)
                    } else {
                        (Direction::SellUsdc, 1_000_000 + n as u64)
                    };
                    let order = SwapOrder {
                        direction,
                        amount_in,
                        minimum_out: None,
                        reason: None,
                        market_ts: 0,
                    };
                    let asked = Instant::now();
                    let pending = live::prepare(&state.ticking(), id, &order, None)
                        .await
                        .expect("prepare");
                    let prepared = Instant::now();
                    let settled = live::send_and_settle(&state.ticking(), id, &pending)
                        .await
                        .expect("settle");
                    phases.push((prepared - asked, prepared.elapsed()));
                    if matches!(settled, Settled::Filled { .. }) {
                        filled += 1;
                    }
                }
                (filled, phases)
            }
        }))
        .await;
        let seconds = started.elapsed().as_secs_f64();
        let filled: usize = results.iter().map(|(filled, _)| filled).sum();
        println!(
            "{filled} swaps filled of {} in {seconds:.2} s: {:.0} swaps/s",
            agents * swaps,
            filled as f64 / seconds
        );
        // Each agent swaps one order after another, so the rate is `agents` over a swap's
        // latency: where that latency goes says whether a core or a wait holds it back.
        let phases: Vec<_> = results.into_iter().flat_map(|(_, p)| p).collect();
        let (mut prepare, mut settle): (Vec<_>, Vec<_>) = phases.into_iter().unzip();
        println!(
            "a swap's latency: prepare (key, pool, sign, pending record) {}; send and settle {}",
            quantiles(&mut prepare),
            quantiles(&mut settle)
        );
        let (batches, writes) = simnet.write_batches();
        let (batches, writes) = (batches - batches_before, writes - writes_before);
        println!(
            "simnet ledger: {writes} writes in {batches} commits ({:.1} writes per commit)",
            writes as f64 / batches.max(1) as f64
        );
    });
}

/// "p50 … ms, p99 … ms" of `durations`.
fn quantiles(durations: &mut [std::time::Duration]) -> String {
    durations.sort_unstable();
    let at = |q: f64| {
        let index = ((durations.len() as f64 - 1.0) * q).round() as usize;
        durations
            .get(index)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    format!("p50 {:.2} ms, p99 {:.2} ms", at(0.5), at(0.99))
}

/// One account with `agents` live agents, each wallet holding 100 SOL and 100,000 USDC.
async fn seed(state: &AppState, agents: usize) -> Vec<String> {
    let now = to_millis(state.now());
    sqlx::query(
        "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at, created_at, updated_at)
         VALUES ('acc_bench', 'bench@example.com', $1, $1, $1, $1)",
    )
    .bind(now)
    .execute(state.store.write())
    .await
    .expect("account");
    let mut ids = Vec::new();
    for n in 0..agents {
        let id = format!("agt_live_{n:03}");
        let mut conn = state.store.write().acquire().await.expect("conn");
        let wallet =
            crucible::custodial::create(&mut conn, &*state.clock, &state.sealer, "agent", &id)
                .await
                .expect("wallet");
        sqlx::query(
            "INSERT INTO agents (id, account_id, name, username, username_key, class, model_id, strategy_type,
                                 base_token, quote_token, time_interval, max_allocation, is_paper_trading,
                                 wallet_address, status, ledger, created_at, updated_at)
             VALUES ($1, 'acc_bench', $1, $1, $1, 'fighter', 'bench/model', 'builtin', 'SOL', 'USDC', '5m',
                     100, 0, $2, 'idle', '{}', $3, $3)",
        )
        .bind(&id)
        .bind(wallet.as_str())
        .bind(now)
        .execute(&mut *conn)
        .await
        .expect("agent");
        drop(conn);
        state
            .chain
            .rpc()
            .request_airdrop(wallet.as_str(), 100_000_000_000, Some(100_000_000_000))
            .await
            .expect("airdrop");
        ids.push(id);
    }
    ids
}
