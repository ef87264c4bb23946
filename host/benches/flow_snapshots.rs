//! One snapshot round of a tournament with 10,000 registered wallets that have transaction
//! history on the simnet (the fair-tournaments issue's target: under 30 s on one core).
//!
//! Each wallet is funded by an airdrop (history before the baseline). Round 1 takes the
//! baselines (one signature page, the portfolio, one confirming page per wallet). Then every
//! wallet receives a deposit, and round 2 — the one measured against the target — reads each
//! wallet's new signatures, its portfolio and the new transaction, classifies it as a flow and
//! records it. The server (simnet RPC) runs on one thread, the round on another.
//!
//! `cargo bench --bench flow_snapshots`; `BENCH_WALLETS` changes the count;
//! `TEST_DATABASE_URL=postgres://…` for PostgreSQL.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::time::Instant;

use crucible::chain::tx::Pubkey;
use crucible::tournaments::queries::{self, NewTournament};
use support::env_number;

fn main() {
    let wallets = env_number("BENCH_WALLETS", 10_000) as usize;
    let server = support::serve_on_one_core();
    let (_, state, backend) = server.parts();
    let runtime = support::runtime();
    runtime.block_on(async move {
        let simnet = state.chain.simnet().expect("simnet").clone();
        let now = state.now();
        let new = NewTournament {
            name: "Flow Cup".into(),
            ..support::live_tournament(&state, "trn_flows", wallets)
        };
        let mut tx = state.store.begin().await.expect("tx");
        queries::insert(&mut tx, &new, now).await.expect("tournament");
        tx.commit().await.expect("commit");

        let keys: Vec<Pubkey> = (0..wallets)
            .map(|n| {
                let digest = crucible::crypto::sha256_hex(format!("flow wallet {n}"));
                Pubkey(digest.as_bytes()[..32].try_into().expect("32"))
            })
            .collect();
        let seeding = Instant::now();
        let at = crucible::clock::to_millis(now);
        for (n, key) in keys.iter().enumerate() {
            simnet.airdrop(key, 1_000_000_000, 100_000_000).await.expect("fund");
            sqlx::query(
                "INSERT INTO tournament_registrations (tournament_id, wallet, registered_at) VALUES ('trn_flows', $1, $2)",
            )
            .bind(key.to_string())
            .bind(at + n as i64)
            .execute(state.store.write())
            .await
            .expect("registration");
        }
        println!("seeded {wallets} funded wallets in {:.1} s", seeding.elapsed().as_secs_f64());

        let started = Instant::now();
        let valued = crucible::tournaments::tracking::snapshot_tournament(&state.store, &*state.clock, &state.events, &state.chain, "trn_flows")
            .await
            .expect("baseline round");
        assert_eq!(valued, wallets);
        println!(
            "round 1 (baselines), {backend}: {wallets} wallets in {:.1} s",
            started.elapsed().as_secs_f64()
        );

        for key in &keys {
            simnet.airdrop(key, 0, 5_000_000).await.expect("deposit");
        }
        let started = Instant::now();
        let valued = crucible::tournaments::tracking::snapshot_tournament(&state.store, &*state.clock, &state.events, &state.chain, "trn_flows")
            .await
            .expect("flow round");
        let elapsed = started.elapsed().as_secs_f64();
        assert_eq!(valued, wallets);
        let (flows,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM tournament_flows WHERE tournament_id = 'trn_flows'")
            .fetch_one(state.store.read())
            .await
            .expect("count");
        assert_eq!(flows, wallets as i64, "one deposit per wallet recorded");
        println!(
            "round 2 (one new deposit per wallet, classified and recorded), {backend}: {wallets} wallets in {elapsed:.1} s \
             ({:.2} ms per wallet; target < 30 s)",
            elapsed * 1000.0 / wallets as f64
        );
    });
}
