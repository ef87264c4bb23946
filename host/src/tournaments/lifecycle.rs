//! Moving tournaments along `upcoming → live → ended`, one way, at their window
//! edges. The moves are scheduler jobs enqueued at creation, so they happen after a restart
//! that spanned an edge; each is a conditional update, so running one twice changes nothing.

use anyhow::Context;
use serde_json::json;

use crate::audit::{self, Actor, Entry};

use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::db::Store;
use crate::events::Bus;
use crate::tournaments::leaderboard::Cache as LeaderboardCache;

pub(crate) const START_JOB: &str = "tournament.start";
pub(crate) const END_JOB: &str = "tournament.end";

/// The window opened: `upcoming → live` — or, for a paid tournament with fewer registered wallets
/// than its minimum, `upcoming → cancelled` with every entry refunded.
pub async fn start(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament_id: &str,
) -> anyhow::Result<()> {
    if let Some(tournament) = super::queries::get(store, tournament_id).await?
        && tournament.status == "upcoming"
        && tournament.entry_fee_raw > 0
        && tournament.current_participants < tournament.min_participants
    {
        let why = format!(
            "only {} of the {} participants needed had registered at the start",
            tournament.current_participants, tournament.min_participants
        );
        if cancel_with_reason(
            store,
            clock,
            events,
            chain,
            tournament_id,
            &why,
            &Actor::System,
        )
        .await?
        {
            return Ok(());
        }
    }
    let moved =
        sqlx::query("UPDATE tournaments SET status = 'live' WHERE id = $1 AND status = 'upcoming'")
            .bind(tournament_id)
            .execute(store.write())
            .await
            .context("marking the tournament live")?;
    if moved.rows_affected() == 1 {
        tracing::info!(tournament_id, "tournament is live");
        events.publish(crate::events::Event::TournamentsChanged);
        // The baseline of every wallet registered before the start.
        super::tracking::snapshot_tournament(store, clock, events, chain, tournament_id)
            .await
            .context("baseline snapshot")?;
    }
    Ok(())
}

/// The window closed: `upcoming | live → ended`. Registration is closed from here on (410);
/// a last snapshot is taken, the final standings are frozen and the payouts recorded. Every
/// step is idempotent, so a retry after a failure part-way finishes the job.
pub async fn end(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    leaderboards: &LeaderboardCache,
    tournament_id: &str,
) -> anyhow::Result<()> {
    let Some(tournament) = super::queries::get(store, tournament_id).await? else {
        return Ok(());
    };
    let newly_ended = match tournament.status.as_str() {
        "cancelled" => return Ok(()),
        "ended" => false,
        _ => {
            super::tracking::snapshot_tournament(store, clock, events, chain, tournament_id)
                .await
                .context("final snapshot")?;
            sqlx::query("UPDATE tournaments SET status = 'ended' WHERE id = $1 AND status IN ('upcoming', 'live')")
                .bind(tournament_id)
                .execute(store.write())
                .await
                .context("marking the tournament ended")?
                .rows_affected()
                == 1
        }
    };
    let ended = super::queries::get(store, tournament_id)
        .await?
        .context("tournament vanished")?;
    super::leaderboard::freeze(store, leaderboards, &ended)
        .await
        .context("freezing the standings")?;
    super::payouts::award(store, clock, events, chain, leaderboards, &ended)
        .await
        .context("recording the payouts")?;
    if newly_ended {
        events.publish(crate::events::Event::TournamentEnded {
            tournament_id: tournament_id.to_owned(),
        });
        tracing::info!(tournament_id, "tournament ended");
    } else {
        // A retried end may have frozen standings or recorded prizes the first try did not.
        events.publish(crate::events::Event::LeaderboardChanged {
            tournament_id: tournament_id.to_owned(),
        });
    }
    Ok(())
}

/// Cancel a tournament that has not ended, by its host, refunding every paid entry. Returns
/// false when it had already ended or was unknown.
pub async fn cancel(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament_id: &str,
) -> anyhow::Result<bool> {
    cancel_with_reason(
        store,
        clock,
        events,
        chain,
        tournament_id,
        "cancelled by its host",
        &Actor::Host,
    )
    .await
}

/// Cancel and record the refunds in one transaction: a cancelled tournament always has its
/// refunds on the way, and a cancellation that failed part-way left nothing behind.
async fn cancel_with_reason(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament_id: &str,
    reason: &str,
    actor: &Actor,
) -> anyhow::Result<bool> {
    let now = clock.now();
    let mut tx = store.begin().await?;
    let moved = sqlx::query(
        "UPDATE tournaments SET status = 'cancelled', cancelled_at = $1, cancellation_reason = $2
         WHERE id = $3 AND status IN ('upcoming', 'live') AND end_date > $1",
    )
    .bind(to_millis(now))
    .bind(reason)
    .bind(tournament_id)
    .execute(&mut *tx)
    .await?;
    if moved.rows_affected() != 1 {
        return Ok(false);
    }
    let refunds = super::refunds::record(&mut tx, tournament_id, chain.stablecoin_mint(), now)
        .await
        .context("recording the refunds")?;
    audit::record(
        &mut tx,
        Entry::new(actor, "tournament.cancel", "tournament", tournament_id)
            .change(
                json!({"status": "upcoming or live"}),
                json!({"status": "cancelled", "reason": reason}),
            )
            .detail(format!("{refunds} refund(s) recorded")),
        now,
    )
    .await?;
    tx.commit().await?;
    tracing::info!(tournament_id, reason, refunds, "tournament cancelled");
    events.publish(crate::events::Event::TournamentEnded {
        tournament_id: tournament_id.to_owned(),
    });
    Ok(true)
}
