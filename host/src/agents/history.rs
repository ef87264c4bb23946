//! An agent's history for its operator: its trades, newest first and paged, each with the
//! strategy's reason and, for a live agent, the swap's transaction signature; and its equity
//! marks over time (the first tick of each hour), for charts.

use crucible_sql::Rows;
use serde::Serialize;

use super::AgentError;
use super::model::Agent;
use crate::clock::{from_millis, rfc3339};
use crate::db::Store;
use crate::usdc::Usdc;

#[derive(Debug, sqlx::FromRow)]
struct TradeRow {
    id: String,
    executed_at: i64,
    side: String,
    base_token: String,
    base_raw: i64,
    notional_raw: i64,
    fee_raw: i64,
    price: f64,
    realized_pnl_raw: Option<i64>,
    reason: Option<String>,
    tx_hash: String,
}

/// One trade as its operator sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TradeView {
    pub trade_id: String,
    pub executed_at: String,
    /// `buy` or `sell` (of the base token).
    pub side: String,
    pub base_token: String,
    pub base_amount: f64,
    /// What the trade was worth in USDC, and the fee paid.
    pub notional: f64,
    pub fee: f64,
    pub price: f64,
    /// Realized on a sell that closed a position.
    pub realized_pnl: Option<f64>,
    /// Why the strategy traded, in its own words.
    pub reason: Option<String>,
    /// The swap's transaction signature, for live agents (paper trades have none).
    pub tx_signature: Option<String>,
}

impl From<TradeRow> for TradeView {
    fn from(row: TradeRow) -> Self {
        TradeView {
            trade_id: row.id,
            executed_at: rfc3339(from_millis(row.executed_at)),
            side: row.side,
            base_amount: super::trades::whole_tokens(row.base_raw),
            base_token: row.base_token,
            notional: Usdc::from_raw(row.notional_raw).ui(),
            fee: Usdc::from_raw(row.fee_raw).ui(),
            price: row.price,
            realized_pnl: row.realized_pnl_raw.map(|raw| Usdc::from_raw(raw).ui()),
            reason: row.reason,
            tx_signature: (!row.tx_hash.starts_with("paper_")).then_some(row.tx_hash),
        }
    }
}

/// Up to `limit` trades of `agent`, newest first, after the trade `before` in that order (the
/// previous page's last `tradeId`; several trades of one tick share their time, so the cursor
/// is the trade, not the time).
pub(crate) async fn trades(
    store: &Store,
    agent: &Agent,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<TradeView>, AgentError> {
    if !(1..=500).contains(&limit) {
        return Err(AgentError::invalid("limit", "`limit` must be 1 to 500"));
    }
    let cursor = match before {
        None => (i64::MAX, String::new()),
        Some(trade_id) => {
            let found: Option<(i64,)> = sqlx::query_as(
                "SELECT executed_at FROM agent_trades WHERE agent_id = $1 AND id = $2",
            )
            .bind(&agent.id)
            .bind(trade_id)
            .fetch_optional(store.read())
            .await?;
            let (at,) = found.ok_or_else(|| {
                AgentError::invalid(
                    "before",
                    format!("`{trade_id}` is not a trade of this agent"),
                )
            })?;
            (at, trade_id.to_owned())
        }
    };
    let rows: Vec<TradeRow> = sqlx::query_as(
        "SELECT id, executed_at, side, base_token, base_raw, notional_raw, fee_raw, price,
                realized_pnl_raw, reason, tx_hash
         FROM agent_trades
         WHERE agent_id = $1 AND (executed_at < $2 OR (executed_at = $2 AND id < $3))
         ORDER BY executed_at DESC, id DESC LIMIT $4",
    )
    .bind(&agent.id)
    .bind(cursor.0)
    .bind(cursor.1)
    .bind(limit)
    .fetch_all(store.read())
    .await?;
    Ok(rows.into_iter().map(TradeView::from).collect())
}

/// One equity mark.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EquityPoint {
    pub at: String,
    /// USDC.
    pub equity: f64,
}

/// The agent's equity marks, oldest first, at most `points` of them (evenly thinned).
pub(crate) async fn equity(
    store: &Store,
    agent: &Agent,
    points: usize,
) -> Result<Vec<EquityPoint>, AgentError> {
    if !(2..=1000).contains(&points) {
        return Err(AgentError::invalid("points", "`points` must be 2 to 1000"));
    }
    let marks: Vec<(i64, f64)> =
        sqlx::query_as("SELECT at, equity FROM agent_equity WHERE agent_id = $1 ORDER BY at")
            .bind(&agent.id)
            .fetch_all(store.read())
            .await?;
    let step = marks.len().div_ceil(points).max(1);
    let last = marks.len().saturating_sub(1);
    Ok(marks
        .iter()
        .enumerate()
        // Every `step`-th mark, and always the newest.
        .filter(|(i, _)| i % step == 0 || *i == last)
        .map(|(_, (at, equity))| EquityPoint {
            at: rfc3339(from_millis(*at)),
            equity: *equity,
        })
        .collect())
}

/// The hour an equity mark made at `at_ms` belongs to (its `hour_bucket`).
pub(crate) fn hour_of(at_ms: i64) -> i64 {
    at_ms.div_euclid(3_600_000)
}

/// The hour whose equity mark an agent's last tick made, if it surely made one: a tick of this
/// run (after `started_at`) that did not fault (`consecutive_faults` 0 since) marked its hour,
/// so another tick in that hour has nothing to mark. `None` says nothing either way: a tick
/// before a stop may have faulted before the stop cleared its count, one in the start's own
/// millisecond cannot be told from one before it.
pub(crate) fn surely_marked_hour(
    last_tick_at: Option<i64>,
    started_at: Option<i64>,
    consecutive_faults: i64,
) -> Option<i64> {
    match (last_tick_at, started_at) {
        (Some(last), Some(started)) if last > started && consecutive_faults == 0 => {
            Some(hour_of(last))
        }
        _ => None,
    }
}

/// Mark the agent's equity for the hour of `now_ms`: the first mark of each hour is kept, so
/// the chart shows one point an hour whichever ticks ran.
pub(crate) async fn mark_equity(
    conn: &mut sqlx::AnyConnection,
    agent_id: &str,
    now_ms: i64,
    equity: f64,
) -> sqlx::Result<()> {
    mark_equities(
        &mut crucible_sql::Conn::Any(conn),
        &[(agent_id, equity)],
        now_ms,
    )
    .await
}

/// [`mark_equity`] for a batch of agents, many marks per statement.
pub(crate) async fn mark_equities(
    conn: &mut crucible_sql::Conn<'_>,
    marks: &[(&str, f64)],
    now_ms: i64,
) -> sqlx::Result<()> {
    for chunk in marks.chunks(Rows::per_statement(conn, crate::db::rows_per_statement(2))) {
        let mut rows = Rows::new(conn, &["text", "float8"]);
        for (agent_id, equity) in chunk {
            rows.push([(*agent_id).into(), (*equity).into()]);
        }
        let sql = format!(
            "INSERT INTO agent_equity (agent_id, hour_bucket, at, equity)
             SELECT column1, $1, $2, column2 FROM {} AS v WHERE true
             ON CONFLICT (agent_id, hour_bucket) DO NOTHING",
            rows.table(2)
        );
        let query = crucible_sql::query(&sql).bind(hour_of(now_ms)).bind(now_ms);
        rows.bind(query).execute(conn).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    #[test]
    fn a_tick_of_this_run_that_did_not_fault_marked_its_hour() {
        assert_eq!(
            surely_marked_hour(Some(5 * HOUR + 10), Some(5 * HOUR), 0),
            Some(5)
        );
    }

    #[test]
    fn nothing_is_known_of_a_faulted_tick_one_before_the_start_or_none() {
        // The last tick faulted (it may have had no price to mark at).
        assert_eq!(
            surely_marked_hour(Some(5 * HOUR + 10), Some(5 * HOUR), 1),
            None
        );
        // Ticked before the agent was stopped and started again: the start cleared the count.
        assert_eq!(
            surely_marked_hour(Some(5 * HOUR), Some(5 * HOUR + 10), 0),
            None
        );
        // In the start's own millisecond: before or after it, it cannot say.
        assert_eq!(surely_marked_hour(Some(5 * HOUR), Some(5 * HOUR), 0), None);
        assert_eq!(surely_marked_hour(None, Some(5 * HOUR), 0), None);
    }

    #[test]
    fn hours_count_from_the_epoch_and_before_it() {
        assert_eq!(hour_of(0), 0);
        assert_eq!(hour_of(HOUR - 1), 0);
        assert_eq!(hour_of(HOUR), 1);
        assert_eq!(hour_of(-1), -1);
    }
}
