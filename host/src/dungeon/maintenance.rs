//! The dungeon's scheduled work, one recurring schedule every minute:
//!
//! - runs idle longer than `dungeon_idle_timeout_secs` are abandoned (their key dies);
//! - a past day whose runs are all over is settled once: the pot (entries × 1 USDC − rake) is
//!   recorded as a `payouts` row (`source_kind = 'dungeon'`) for the best score of the day
//!   (ties: the run that finished first), and the existing `payout.send` job sends it from the
//!   dungeon wallet. Runs entered before midnight may finish after it, so a day is settled only
//!   when none of its runs is still active.
//! - payment sightings (see [`crate::chain::payment`]) older than a day are forgotten: the
//!   paid-entry endpoints are public, so their rows must not pile up. (Quotes are signed, not
//!   stored, so they need no cleanup.)

use anyhow::anyhow;
use chrono::Duration;

use super::day::{DungeonDay, pot_raw};
use super::play;
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::config::Config;
use crate::crypto::new_id;
use crate::db::Store;
use crate::events::Bus;
use crate::scheduler;
use crate::tournaments::payouts::SEND_JOB;

/// Name of the recurring schedule.
pub(crate) const SCHEDULE: &str = "dungeon.maintenance";
/// Every minute.
pub(crate) const CRON: &str = "0 * * * * *";
/// Idle runs handled per pass (the next pass takes the rest).
const BATCH: i64 = 500;

/// One pass: abandon idle runs, settle finished days, forget stale payment sightings. Returns
/// (abandoned, days settled).
pub(crate) async fn run(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    config: &Config,
) -> anyhow::Result<(usize, usize)> {
    let abandoned = abandon_idle(store, clock, events, config).await?;
    let settled = settle_days(store, clock, chain, config).await?;
    prune_sightings(store, clock).await?;
    Ok((abandoned, settled))
}

/// How long a payment sighting is kept: far past [`crate::chain::payment::UNSEEN_SIGNATURE_GRACE`],
/// so a client still retrying a dead signature keeps getting 422, not a fresh grace period.
const SIGHTING_RETENTION: Duration = Duration::days(1);

async fn prune_sightings(store: &Store, clock: &dyn Clock) -> anyhow::Result<()> {
    let pruned =
        crate::chain::payment::prune_sightings(store, clock.now(), SIGHTING_RETENTION).await?;
    if pruned > 0 {
        tracing::debug!(pruned, "old payment sightings deleted");
    }
    Ok(())
}

async fn abandon_idle(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    config: &Config,
) -> anyhow::Result<usize> {
    let timeout = Duration::seconds(config.dungeon_idle_timeout_secs as i64);
    let cutoff = to_millis(clock.now() - timeout);
    let idle: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM dungeon_runs WHERE status = 'active' AND last_action_at < $1
         ORDER BY last_action_at LIMIT $2",
    )
    .bind(cutoff)
    .bind(BATCH)
    .fetch_all(store.read())
    .await?;
    let mut abandoned = 0;
    for (run_id,) in idle {
        if play::abandon(store, clock, events, &run_id)
            .await
            .map_err(|error| anyhow!("abandoning {run_id}: {error}"))?
        {
            abandoned += 1;
        }
    }
    Ok(abandoned)
}

async fn settle_days(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
) -> anyhow::Result<usize> {
    let today = DungeonDay::of(clock.now()).id();
    let days: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT r.dungeon_id FROM dungeon_runs r
         WHERE r.dungeon_id < $1
           AND NOT EXISTS (SELECT 1 FROM dungeon_days d WHERE d.dungeon_id = r.dungeon_id)
           AND NOT EXISTS (SELECT 1 FROM dungeon_runs a WHERE a.dungeon_id = r.dungeon_id AND a.status = 'active')
         ORDER BY r.dungeon_id",
    )
    .bind(&today)
    .fetch_all(store.read())
    .await?;
    let mut settled = 0;
    for (dungeon_id,) in days {
        if settle(store, clock, chain, config, &dungeon_id).await? {
            settled += 1;
        }
    }
    Ok(settled)
}

type Winner = (String, String, String, i64);

/// Record the day's prize (once) and schedule its sending.
async fn settle(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
    dungeon_id: &str,
) -> anyhow::Result<bool> {
    let now = clock.now();
    let mut tx = store.begin().await?;
    let (entries,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM dungeon_runs WHERE dungeon_id = $1")
            .bind(dungeon_id)
            .fetch_one(&mut *tx)
            .await?;
    let winner: Option<Winner> = sqlx::query_as(
        // A suspended account's runs win nothing: the best run of an account in good standing
        // takes the prize.
        "SELECT id, account_id, wallet, score FROM dungeon_runs WHERE dungeon_id = $1
           AND account_id NOT IN (SELECT id FROM accounts WHERE suspended_at IS NOT NULL)
         ORDER BY score DESC, ended_at, created_at, id LIMIT 1",
    )
    .bind(dungeon_id)
    .fetch_optional(&mut *tx)
    .await?;
    let pot = pot_raw(entries, config.dungeon_rake_percent);
    let marked = sqlx::query(
        "INSERT INTO dungeon_days (dungeon_id, entries, pot_raw, winner_run_id, settled_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (dungeon_id) DO NOTHING",
    )
    .bind(dungeon_id)
    .bind(entries)
    .bind(pot)
    .bind(winner.as_ref().map(|(run_id, ..)| run_id.clone()))
    .bind(to_millis(now))
    .execute(&mut *tx)
    .await?;
    if marked.rows_affected() == 0 {
        return Ok(false);
    }
    if let Some((run_id, account_id, wallet, score)) = winner.filter(|_| pot > 0) {
        let payout_id = new_id("pay");
        sqlx::query(
            "INSERT INTO payouts (id, account_id, wallet, source_kind, source_id, rank, amount_raw, mint, status, created_at)
             VALUES ($1, $2, $3, 'dungeon', $4, 1, $5, $6, 'pending', $7)
             ON CONFLICT (source_kind, source_id, wallet) DO NOTHING",
        )
        .bind(&payout_id)
        .bind(&account_id)
        .bind(&wallet)
        .bind(dungeon_id)
        .bind(pot)
        .bind(chain.stablecoin_mint())
        .bind(to_millis(now))
        .execute(&mut *tx)
        .await?;
        scheduler::enqueue(&mut tx, SEND_JOB, &payout_id, now, now).await?;
        tracing::info!(
            dungeon_id,
            run_id,
            wallet,
            score,
            pot,
            "dungeon prize awarded"
        );
    }
    tx.commit().await?;
    Ok(true)
}
