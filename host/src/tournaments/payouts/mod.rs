//! Prizes: when a tournament ends, the pool (entry fees × participants − rake) is split by the
//! configured percentages over the final ranks and recorded as payouts (`pending`), each sent
//! from the escrow recorded with the tournament by a scheduler job ([`send`]; `sent` with the
//! transfer signature once it is finalized). The same job sends the dungeon's daily prize
//! (`source_kind = 'dungeon'`) from the dungeon wallet. How a prize is paid exactly once is in
//! `docs/payouts.md`.

mod model;
mod send;

use anyhow::anyhow;

use super::leaderboard;
use super::model::Tournament;
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::crypto::new_id;
use crate::db::Store;
use crate::events::Bus;
use crate::scheduler;
use crate::tournaments::leaderboard::Cache as LeaderboardCache;

pub(crate) use model::PayoutStatus;
pub(crate) use model::SourceKind;
pub use send::{Payer, send, sign_and_record};

pub(crate) const SEND_JOB: &str = "payout.send";

/// Amounts per place: each share rounded down, the remainder to first place so the whole pool
/// is paid. Places beyond the number of winners are folded back proportionally.
pub(crate) fn split(pool: i64, percentages: &[u32], winners: usize) -> Vec<i64> {
    let places = &percentages[..percentages.len().min(winners)];
    let total: i64 = places.iter().map(|p| i64::from(*p)).sum();
    if pool <= 0 || total == 0 {
        return Vec::new();
    }
    let mut amounts: Vec<i64> = places
        .iter()
        .map(|p| pool * i64::from(*p) / total)
        .collect();
    let paid: i64 = amounts.iter().sum();
    if let Some(first) = amounts.first_mut() {
        *first += pool - paid;
    }
    amounts
}

/// Record the payouts of an ended tournament and schedule their sending. Idempotent.
pub(crate) async fn award(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    leaderboards: &LeaderboardCache,
    tournament: &Tournament,
) -> anyhow::Result<usize> {
    let standings = leaderboard::ranked(store, leaderboards, tournament)
        .await
        .map_err(|error| anyhow!("{error}"))?;
    // A disqualified wallet is never paid: the next eligible wallet takes its place.
    let eligible: Vec<&leaderboard::Entry> = standings.iter().filter(|e| !e.disqualified).collect();
    let amounts = split(
        tournament.prize_pool_raw(),
        &tournament.payout_split(),
        eligible.len(),
    );
    let now = clock.now();
    let mut tx = store.begin().await?;
    let mut recorded = 0;
    for (entry, amount) in eligible.into_iter().zip(amounts) {
        if amount <= 0 {
            continue;
        }
        let payout_id = new_id("pay");
        let inserted = sqlx::query(
            "INSERT INTO payouts (id, account_id, wallet, source_kind, source_id, rank, amount_raw, mint, status, created_at)
             SELECT $1, account_id, wallet, 'tournament', $2, $3, $4, $5, 'pending', $6
             FROM tournament_registrations WHERE tournament_id = $2 AND wallet = $7
             ON CONFLICT (source_kind, source_id, wallet) DO NOTHING",
        )
        .bind(&payout_id)
        .bind(&tournament.id)
        .bind(entry.rank as i64)
        .bind(amount)
        .bind(chain.stablecoin_mint())
        .bind(to_millis(now))
        .bind(&entry.wallet)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            continue;
        }
        sqlx::query("UPDATE tournament_registrations SET prize_awarded_raw = $1 WHERE tournament_id = $2 AND wallet = $3")
            .bind(amount)
            .bind(&tournament.id)
            .bind(&entry.wallet)
            .execute(&mut *tx)
            .await?;
        scheduler::enqueue(&mut tx, SEND_JOB, &payout_id, now, now).await?;
        recorded += 1;
    }
    tx.commit().await?;
    if recorded > 0 {
        tracing::info!(tournament_id = tournament.id, recorded, "payouts recorded");
        events.publish(crate::events::Event::LeaderboardChanged {
            tournament_id: tournament.id.clone(),
        });
    }
    Ok(recorded)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn the_whole_pool_is_split_and_empty_places_fold_back() {
        assert_eq!(split(5_400_000, &[60, 40], 3), vec![3_240_000, 2_160_000]);
        assert_eq!(split(100, &[50, 30, 20], 3), vec![50, 30, 20]);
        assert_eq!(split(101, &[50, 30, 20], 3), vec![51, 30, 20]);
        assert_eq!(
            split(1_000, &[50, 30, 20], 2),
            vec![625, 375],
            "two winners share all of it"
        );
        assert_eq!(split(1_000, &[100], 0), Vec::<i64>::new());
        assert_eq!(split(0, &[100], 5), Vec::<i64>::new());
        assert_eq!(split(7, &[34, 33, 33], 3).iter().sum::<i64>(), 7);
    }
}
