//! The `agent.performance` webhook, daily at 00:00 UTC: per account, the last
//! 24 hours of its agents — profit and loss, win rate, total trades, best and worst agent.
//! The schedule runs once per occurrence across nodes; each account's event is queued in one
//! transaction with the others, so a retry after a failure never sends a day twice.

use chrono::Duration;
use serde_json::{Value, json};

use super::Agent;
use super::model::COLUMNS;
use super::performance::{self, PeriodMetrics};
use crate::clock::Clock;
use crate::clock::rfc3339;
use crate::db::Store;

/// Queue the report of every account that has agents which ever started.
pub async fn send(store: &Store, clock: &dyn Clock) -> anyhow::Result<usize> {
    let now = clock.now();
    let agents: Vec<Agent> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM agents WHERE started_at IS NOT NULL ORDER BY account_id, created_at, id"
    ))
    .fetch_all(store.read())
    .await?;
    let since = now - Duration::hours(24);
    let mut measured = Vec::with_capacity(agents.len());
    for agent in agents {
        let metrics = performance::metrics(store, &agent, Some(since)).await?;
        measured.push((agent, metrics));
    }
    // Agents come ordered by account: one report per run of the same account.
    let reports: Vec<(String, Value)> = measured
        .chunk_by(|a, b| a.0.account_id == b.0.account_id)
        .map(|agents| (agents[0].0.account_id.clone(), report(agents, since, now)))
        .collect();
    let mut tx = store.begin().await?;
    for (account_id, data) in &reports {
        crate::webhooks::enqueue(
            &mut tx,
            account_id,
            crate::webhooks::Event::AgentPerformance,
            data.clone(),
            now,
        )
        .await?;
    }
    tx.commit().await?;
    tracing::info!(accounts = reports.len(), "daily agent performance queued");
    Ok(reports.len())
}

fn report(
    agents: &[(Agent, PeriodMetrics)],
    since: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let total_pnl: f64 = agents.iter().map(|(_, m)| m.total_pnl).sum();
    let start: f64 = agents.iter().map(|(_, m)| m.start_equity).sum();
    let trades: i64 = agents.iter().map(|(_, m)| m.total_trades).sum();
    // Win rate over all agents' closed round trips (not a mean of the agents' rates).
    let closed: i64 = agents.iter().map(|(_, m)| m.closed_trips).sum();
    let won: i64 = agents.iter().map(|(_, m)| m.winning_trips).sum();
    let summary = |(agent, metrics): &(Agent, PeriodMetrics)| {
        json!({
            "agentId": agent.id,
            "name": agent.name,
            "username": agent.username,
            "pnl": metrics.total_pnl,
            "pnlPercent": metrics.total_pnl_percent,
        })
    };
    let by_pnl = |a: &&(Agent, PeriodMetrics), b: &&(Agent, PeriodMetrics)| {
        a.1.total_pnl.total_cmp(&b.1.total_pnl)
    };
    json!({
        "from": rfc3339(since),
        "to": rfc3339(now),
        "pnl24h": total_pnl,
        "pnlPercent24h": if start > 0.0 { total_pnl / start * 100.0 } else { 0.0 },
        "winRate": if closed > 0 { won as f64 / closed as f64 } else { 0.0 },
        "totalTrades": trades,
        "agents": agents.len(),
        "bestAgent": agents.iter().max_by(by_pnl).map(summary),
        "worstAgent": agents.iter().min_by(by_pnl).map(summary),
    })
}

/// Equity marks older than the longest period (30 days, plus a day of margin) are never read.
pub(crate) async fn prune_equity_marks(store: &Store, clock: &dyn Clock) -> anyhow::Result<()> {
    let cutoff = crate::clock::to_millis(clock.now() - Duration::days(31));
    let pruned = sqlx::query("DELETE FROM agent_equity WHERE at < $1")
        .bind(cutoff)
        .execute(store.write())
        .await?;
    tracing::info!(pruned = pruned.rows_affected(), "old equity marks pruned");
    Ok(())
}
