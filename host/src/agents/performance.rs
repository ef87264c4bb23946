//! Performance of an agent over a period: `24h`, `7d`, `30d` or `all`.
//!
//! - `totalPnl`: equity now − equity at the period's start (the last equity mark at or before
//!   it; the paper capital when the agent had not ticked yet); `totalPnlPercent` relative to it.
//! - `totalTrades`, `avgTradeSize` (mean notional, quote), `winRate` (round trips closed in the
//!   period that made money, 0 when none closed): from the trades executed in the period.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::{Agent, AgentError};
use crate::clock::Clock;
use crate::clock::{rfc3339, to_millis};
use crate::db::Store;
use crate::paper::UNIT;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Period {
    Day,
    Week,
    Month,
    All,
}

impl Period {
    pub(crate) fn parse(raw: Option<&str>) -> Result<Period, AgentError> {
        Ok(match raw {
            None | Some("") | Some("24h") => Period::Day,
            Some("7d") => Period::Week,
            Some("30d") => Period::Month,
            Some("all") => Period::All,
            Some(_) => {
                return Err(AgentError::invalid(
                    "period",
                    "must be one of 24h, 7d, 30d, all",
                ));
            }
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Period::Day => "24h",
            Period::Week => "7d",
            Period::Month => "30d",
            Period::All => "all",
        }
    }

    /// The period's start, `None` for all time.
    pub(crate) fn since(self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Period::Day => Some(now - Duration::hours(24)),
            Period::Week => Some(now - Duration::days(7)),
            Period::Month => Some(now - Duration::days(30)),
            Period::All => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PeriodMetrics {
    pub total_pnl: f64,
    pub total_pnl_percent: f64,
    pub win_rate: f64,
    pub total_trades: i64,
    pub avg_trade_size: f64,
    /// Equity at the start of the period and now (quote).
    pub start_equity: f64,
    pub equity: f64,
    /// Fees paid on the period's trades (quote).
    pub fees_paid: f64,
    /// Round trips closed in the period, and those of them in profit.
    pub closed_trips: i64,
    pub winning_trips: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AgentPerformance)]
pub(crate) struct Performance {
    pub agent_id: String,
    pub period: &'static str,
    pub from: Option<String>,
    pub to: String,
    pub metrics: PeriodMetrics,
}

/// Metrics of `agent` over `period`, ending now.
pub(crate) async fn of(
    store: &Store,
    clock: &dyn Clock,
    agent: &Agent,
    period: Period,
) -> Result<Performance, AgentError> {
    let now = clock.now();
    let since = period.since(now);
    let metrics = metrics(store, agent, since).await?;
    Ok(Performance {
        agent_id: agent.id.clone(),
        period: period.as_str(),
        from: since.map(rfc3339),
        to: rfc3339(now),
        metrics,
    })
}

/// The metrics of `agent` since `since` (all time when `None`).
pub(crate) async fn metrics(
    store: &Store,
    agent: &Agent,
    since: Option<DateTime<Utc>>,
) -> Result<PeriodMetrics, AgentError> {
    let (initial, equity) = if agent.is_live() {
        // A live agent's equity is its wallet's value at the pool price, its base the first
        // value read on chain (marks are recorded from the same reading).
        let initial = agent.live_initial_equity.unwrap_or(0.0);
        (initial, agent.live_equity.unwrap_or(initial))
    } else {
        let ledger = agent.ledger().map_err(AgentError::internal)?;
        let initial = ledger.initial_quote as f64 / UNIT;
        let equity = agent
            .last_price
            .map_or(initial, |price| ledger.view(price).equity);
        (initial, equity)
    };
    let since_ms = since.map_or(i64::MIN, to_millis);
    let start_equity = match since {
        None => initial,
        Some(since) => {
            let mark: Option<(f64,)> = sqlx::query_as(
                "SELECT equity FROM agent_equity WHERE agent_id = $1 AND at <= $2 ORDER BY at DESC LIMIT 1",
            )
            .bind(&agent.id)
            .bind(to_millis(since))
            .fetch_optional(store.read())
            .await?;
            mark.map_or(initial, |(equity,)| equity)
        }
    };
    let (trades, notional, fees, closed, won): (i64, i64, i64, i64, i64) = sqlx::query_as(
        // SUM of BIGINT is NUMERIC on PostgreSQL: cast back so both back ends return integers.
        "SELECT COUNT(*), CAST(COALESCE(SUM(notional_raw), 0) AS BIGINT),
                CAST(COALESCE(SUM(fee_raw), 0) AS BIGINT), CAST(COALESCE(SUM(closed_trip), 0) AS BIGINT),
                CAST(COALESCE(SUM(won_trip), 0) AS BIGINT)
         FROM agent_trades WHERE agent_id = $1 AND executed_at > $2",
    )
    .bind(&agent.id)
    .bind(since_ms)
    .fetch_one(store.read())
    .await?;
    let total_pnl = equity - start_equity;
    Ok(PeriodMetrics {
        total_pnl,
        total_pnl_percent: if start_equity > 0.0 {
            total_pnl / start_equity * 100.0
        } else {
            0.0
        },
        win_rate: if closed > 0 {
            won as f64 / closed as f64
        } else {
            0.0
        },
        total_trades: trades,
        avg_trade_size: if trades > 0 {
            notional as f64 / UNIT / trades as f64
        } else {
            0.0
        },
        start_equity,
        equity,
        fees_paid: fees as f64 / UNIT,
        closed_trips: closed,
        winning_trips: won,
    })
}
