//! The demo tournaments of a fresh embedded install (see [`crate::demo`]): one free tournament
//! that is live, where the demo operator's agents compete, and one paid tournament that is
//! upcoming.

use chrono::Duration;

use super::queries::{self, NewTournament};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::crypto::new_id;
use crate::db::Store;
use crate::usdc::Usdc;

/// The name the free demo tournament is found by.
const FREE_FOR_ALL: &str = "Demo Free-for-All";

/// The free demo tournament, while it is live.
pub(crate) async fn live_free_for_all(
    store: &Store,
    clock: &dyn Clock,
) -> anyhow::Result<Option<String>> {
    let now = to_millis(clock.now());
    let found: Option<(String,)> = sqlx::query_as(
        "SELECT id FROM tournaments
         WHERE name = $1 AND entry_fee_raw = 0 AND status <> 'cancelled' AND start_date <= $2 AND end_date > $2
         ORDER BY created_at LIMIT 1",
    )
    .bind(FREE_FOR_ALL)
    .bind(now)
    .fetch_optional(store.read())
    .await?;
    Ok(found.map(|(id,)| id))
}

/// Seed the demo tournaments if no tournament exists yet. Returns how many were created.
pub(crate) async fn seed_if_empty(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
) -> anyhow::Result<usize> {
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM tournaments")
        .fetch_one(store.read())
        .await?;
    if count > 0 {
        return Ok(0);
    }
    let now = clock.now();
    let escrow = chain.escrow().address.to_string();
    let demos = [
        NewTournament {
            id: new_id("trn"),
            name: FREE_FOR_ALL.into(),
            description:
                "A free, live demo tournament: the demo operator's agents (one per class) \
                          trade here on the simnet; register any wallet with a null txSignature \
                          or enter your own agent."
                    .into(),
            kind: "highest_pnl".into(),
            visibility: "public".into(),
            entry_fee_raw: 0,
            max_participants: 1000,
            escrow_wallet: escrow.clone(),
            payout_split: vec![100],
            rake_bps: 0,
            is_paper_trading: true,
            transfer_policy: crate::tournaments::rules::TransferPolicy::Adjust,
            evaluation_metric: crate::tournaments::rules::EvaluationMetric::PnlPercent,
            start_date: now - Duration::minutes(1),
            end_date: now + Duration::days(7),
            series: None,
            registration_deadline: None,
            invite_code_hash: None,
            min_participants: 2,
        },
        NewTournament {
            id: new_id("trn"),
            name: "Demo Paid Cup".into(),
            description:
                "A paid demo tournament (1 USDC on the embedded simnet); starts in an hour.".into(),
            kind: "highest_pnl".into(),
            visibility: "public".into(),
            entry_fee_raw: Usdc::whole(1).raw(),
            max_participants: 100,
            escrow_wallet: escrow,
            payout_split: vec![60, 30, 10],
            rake_bps: 1000,
            is_paper_trading: false,
            transfer_policy: crate::tournaments::rules::TransferPolicy::Adjust,
            evaluation_metric: crate::tournaments::rules::EvaluationMetric::PnlPercent,
            start_date: now + Duration::hours(1),
            end_date: now + Duration::days(2),
            series: None,
            registration_deadline: None,
            invite_code_hash: None,
            min_participants: 2,
        },
    ];
    let mut tx = store.begin().await?;
    for demo in &demos {
        queries::insert(&mut tx, demo, now).await?;
    }
    tx.commit().await?;
    tracing::info!("seeded demo tournaments");
    Ok(demos.len())
}
