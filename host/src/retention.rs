//! Pruning what the service no longer needs, hourly, under the retention settings
//! (`CRUCIBLE_RETENTION_*`): without it every nonce, session, delivery, job and dungeon event
//! ever written stays forever, and the tables a request reads grow without bound.
//!
//! What goes, each in its own statement (a failure leaves the others done, and the next run
//! retries):
//! - wallet sign-in nonces and sessions a day after they expired;
//! - webhook deliveries that were delivered or died, after `webhook_days`;
//! - finished scheduler jobs, after `job_days`;
//! - the events of dungeon runs that ended more than `dungeon_days` ago (the run's row, score
//!   and status stay);
//! - uploaded strategy components no agent uses, uploaded more than `component_days` ago by
//!   every account that has them (their accounts' links go with them);
//! - agents' decisions (prompts and answers) after `decision_days`;
//! - MCP sessions idle for a day, with their subscriptions;
//! - agents still unfunded `unfunded_agent_archive_days` after their creation are archived
//!   (hidden, no longer checked for funding; starting one once funded brings it back).
//!
//! Never money: payouts, registrations, payment claims and sightings, trades and the simnet
//! ledger are kept.

use crate::clock::Clock;
use crate::clock::to_millis;
use crate::config::Config;
use crate::db::Store;

/// The recurring schedule that runs [`prune`].
pub(crate) const SCHEDULE: &str = "maintenance.retention";
/// Hourly, at minute 17 (away from the top of the hour, when tournaments start and end).
pub(crate) const CRON: &str = "0 17 * * * *";

const DAY_MS: i64 = 86_400_000;

/// Rows removed by one run, per kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pruned {
    pub nonces: u64,
    pub sessions: u64,
    pub deliveries: u64,
    pub jobs: u64,
    pub dungeon_events: u64,
    pub components: u64,
    pub decisions: u64,
    pub mcp_sessions: u64,
    /// Unfunded agents archived (not deleted: their wallets may still receive funds).
    pub archived_agents: u64,
}

/// Prune everything past its retention, as of now.
pub async fn prune(store: &Store, clock: &dyn Clock, config: &Config) -> anyhow::Result<Pruned> {
    let now = to_millis(clock.now());
    let keep = &config.retention;
    let older_than = |days: u64| now - days as i64 * DAY_MS;
    let run = |sql: &'static str, cutoff: i64| async move {
        let done = sqlx::query(sql).bind(cutoff).execute(store.write()).await?;
        anyhow::Ok(done.rows_affected())
    };
    let mut pruned = Pruned {
        nonces: run(
            "DELETE FROM wallet_nonces WHERE expires_at < $1",
            now - DAY_MS,
        )
        .await?,
        sessions: run("DELETE FROM sessions WHERE expires_at < $1", now - DAY_MS).await?,
        deliveries: run(
            "DELETE FROM webhook_deliveries
             WHERE status IN ('delivered', 'dead') AND created_at < $1",
            older_than(keep.retention_webhook_days),
        )
        .await?,
        jobs: run(
            "DELETE FROM jobs WHERE done_at IS NOT NULL AND done_at < $1",
            older_than(keep.retention_job_days),
        )
        .await?,
        dungeon_events: run(
            // An ended run's events are all older than its end: the time bound lets SQLite,
            // which keeps no index of events by run (migration 0043), read only old events.
            "DELETE FROM dungeon_run_events WHERE created_at < $1 AND run_id IN
                 (SELECT id FROM dungeon_runs WHERE ended_at IS NOT NULL AND ended_at < $1)",
            older_than(keep.retention_dungeon_days),
        )
        .await?,
        components: 0,
        decisions: run(
            "DELETE FROM agent_decisions WHERE decided_at < $1",
            older_than(keep.retention_decision_days),
        )
        .await?,
        mcp_sessions: 0,
        archived_agents: sqlx::query(
            "UPDATE agents SET archived_at = $1
             WHERE status = 'unfunded' AND archived_at IS NULL AND created_at < $2",
        )
        .bind(now)
        .bind(older_than(keep.unfunded_agent_archive_days))
        .execute(store.write())
        .await?
        .rows_affected(),
    };
    pruned.mcp_sessions =
        crate::mcp::sessions::prune(store, clock.now() - crate::mcp::sessions::IDLE_FOR).await?;
    pruned.components = prune_components(store, older_than(keep.retention_component_days)).await?;
    if pruned != Pruned::default() {
        tracing::info!(?pruned, "retention: old rows pruned");
    }
    Ok(pruned)
}

/// Components no agent references and nobody uploaded since `cutoff`: their links, then them,
/// in one transaction (an agent created meanwhile on one of them keeps it).
async fn prune_components(store: &Store, cutoff: i64) -> anyhow::Result<u64> {
    let mut tx = store.begin().await?;
    let unused = "SELECT c.id FROM strategy_components c
         WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.strategy_component = c.id)
           AND NOT EXISTS (SELECT 1 FROM account_strategies s
                           WHERE s.strategy_id = c.id AND s.uploaded_at >= $1)
           AND c.created_at < $1";
    sqlx::query(&format!(
        "DELETE FROM account_strategies WHERE strategy_id IN ({unused})"
    ))
    .bind(cutoff)
    .execute(&mut *tx)
    .await?;
    let done = sqlx::query(&format!(
        "DELETE FROM strategy_components WHERE id IN ({unused})"
    ))
    .bind(cutoff)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected())
}
