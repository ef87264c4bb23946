//! How late a tournament's end runs while the funding check reads 5,000 unfunded agents' wallets.
//!
//! A server used to run all scheduled work on one loop: schedules first (the funding check
//! among them), then the job queue, so an end due during a long funding check waited for it.
//! Now each class of work runs on its own task (`scheduler::Lane`). This bench measures both
//! orders on the same database in one run:
//!
//! - one loop: the funding check, then the lifecycle class (as the old loop did);
//! - side by side: the funding check and the lifecycle class started at the same instant.
//!
//! Each time, the figure is from "the end is due" to "the tournament is ended".
//!
//! `cargo bench --bench scheduler_starvation`; with `TEST_DATABASE_URL=postgres://…` for
//! PostgreSQL. `BENCH_AGENTS` (default 5,000) sets the unfunded agents.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::time::Instant;

use crucible::chain::Keypair;
use crucible::clock::to_millis;
use crucible::scheduler::{Lane, Scheduler};
use crucible::state::AppState;
use support::env_number;

fn main() {
    let agents = env_number("BENCH_AGENTS", 5_000) as usize;
    let server = support::serve_on_one_core();
    let (_, state, backend) = server.parts();
    let runtime = support::runtime();
    runtime.block_on(async {
        seed_unfunded(&state, agents).await;
        let scheduler = Scheduler::new(Vec::new());

        let started = Instant::now();
        crucible::agents::funding::check_unfunded(
            &state.store,
            &*state.clock,
            &state.chain,
            &state.config,
        )
        .await
        .expect("funding");
        let funding_alone = started.elapsed().as_secs_f64();

        due_tournament(&state, "trn_serial").await;
        let started = Instant::now();
        crucible::agents::funding::check_unfunded(
            &state.store,
            &*state.clock,
            &state.chain,
            &state.config,
        )
        .await
        .expect("funding");
        scheduler
            .run_lane(&state, Lane::Lifecycle)
            .await
            .expect("lifecycle");
        assert_eq!(status(&state, "trn_serial").await, "ended");
        let serial = started.elapsed().as_secs_f64();

        due_tournament(&state, "trn_lanes").await;
        let started = Instant::now();
        let funding = crucible::agents::funding::check_unfunded(
            &state.store,
            &*state.clock,
            &state.chain,
            &state.config,
        );
        let lifecycle = async {
            scheduler
                .run_lane(&state, Lane::Lifecycle)
                .await
                .expect("lifecycle");
            started.elapsed().as_secs_f64()
        };
        let (funded, side_by_side) = tokio::join!(funding, lifecycle);
        funded.expect("funding");
        assert_eq!(status(&state, "trn_lanes").await, "ended");

        println!(
            "{agents} unfunded agents, {backend}: one funding check takes {funding_alone:.2} s; \
             a due tournament end finishes {serial:.2} s late on one loop, \
             {side_by_side:.3} s late with the classes side by side"
        );
    });
}

/// `agents` agents waiting for funds, each with a real (empty) wallet address.
async fn seed_unfunded(state: &AppState, agents: usize) {
    let now = to_millis(state.now());
    let mut tx = state.store.begin().await.expect("tx");
    support::insert_account(&mut tx, now).await;
    for n in 0..agents {
        sqlx::query(
            "INSERT INTO agents (id, account_id, name, username, username_key, class, model_id, strategy_type,
                                 base_token, quote_token, time_interval, max_allocation, wallet_address, status,
                                 ledger, created_at, updated_at)
             VALUES ($1, 'acc_bench', $2, $2, $2, 'fighter', 'bench/model', 'builtin', 'SOL', 'USDC', '1h', 100,
                     $3, 'unfunded', '{}', $4, $4)",
        )
        .bind(format!("agt_bench_{n:05}"))
        .bind(format!("bench_{n:05}"))
        .bind(Keypair::generate().pubkey().to_string())
        .bind(now)
        .execute(&mut *tx)
        .await
        .expect("agent");
    }
    tx.commit().await.expect("commit");
}

/// A tournament whose start and end are both due now (its jobs in the queue).
async fn due_tournament(state: &AppState, id: &str) {
    support::seed_tournament(state, id, 0).await;
    sqlx::query("UPDATE jobs SET due_at = $1 WHERE subject = $2")
        .bind(to_millis(state.now()))
        .bind(id)
        .execute(state.store.write())
        .await
        .expect("due");
    sqlx::query("UPDATE tournaments SET end_date = $1 WHERE id = $2")
        .bind(to_millis(state.now()))
        .bind(id)
        .execute(state.store.write())
        .await
        .expect("ends now");
}

async fn status(state: &AppState, id: &str) -> String {
    let (status,): (String,) = sqlx::query_as("SELECT status FROM tournaments WHERE id = $1")
        .bind(id)
        .fetch_one(state.store.read())
        .await
        .expect("status");
    status
}
