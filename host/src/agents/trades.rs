//! A trade as an agent's history keeps it and as its `agent.trade` webhook announces it: one
//! row and one event, written in the caller's transaction. Paper fills and settled live swaps
//! both come through here, so the two can never disagree on what a trade says.

use chrono::{DateTime, Utc};
use crucible_sql::Rows;
use serde_json::json;

use crate::clock::{rfc3339, to_millis};
use crate::paper::UNIT;
use crate::webhooks::{self, Event};

/// Whole tokens of a raw amount in the trade table's units (6 decimals for every token, SOL
/// included: the table does not keep lamports). Everything that reads `base_raw` goes through
/// here, so no reader can apply a token's on-chain decimals to it by mistake.
pub(crate) fn whole_tokens(raw: i64) -> f64 {
    raw as f64 / UNIT
}

/// One executed trade. Token amounts are raw units of 6 decimals, as the trade table keeps them.
#[derive(Debug, Clone)]
pub(crate) struct NewTrade<'a> {
    pub id: &'a str,
    pub agent_id: &'a str,
    /// The agent's owner: the account whose webhooks hear of the trade.
    pub account_id: &'a str,
    pub executed_at: DateTime<Utc>,
    /// The agent's market clock at the tick that decided the trade.
    pub market_ts: i64,
    /// `buy` or `sell`.
    pub side: &'a str,
    pub base_token: &'a str,
    pub quote_token: &'a str,
    pub base_raw: i64,
    /// Whole base tokens, as the webhook reports them (a live swap's exact lamports, which the
    /// 6-decimal `base_raw` rounds).
    pub amount: f64,
    pub notional_raw: i64,
    pub fee_raw: i64,
    pub price: f64,
    /// Realised profit of a paper sell against its cost basis.
    pub realized_pnl_raw: Option<i64>,
    pub closed_trip: bool,
    pub won_trip: bool,
    pub reason: Option<&'a str>,
    /// `paper_<id>` on paper, the transaction signature live.
    pub tx_hash: &'a str,
    pub is_paper: bool,
}

/// The PostgreSQL types of a trade's columns in [`insert_all`].
const TRADE_TYPES: [&str; 15] = [
    "text", "text", "int8", "int8", "text", "text", "int8", "int8", "int8", "float8", "int8",
    "int8", "int8", "text", "text",
];

/// Store `trades`, many per statement, without their webhooks: a batch of ticks queues
/// those with its other events ([`announcement`]).
pub(crate) async fn insert_all(
    conn: &mut crucible_sql::Conn<'_>,
    trades: &[NewTrade<'_>],
) -> sqlx::Result<()> {
    let per_statement = crate::db::rows_per_statement(TRADE_TYPES.len());
    for chunk in trades.chunks(Rows::per_statement(conn, per_statement)) {
        let rows = rows(conn, chunk);
        let sql = format!("INSERT INTO agent_trades ({COLUMNS}) {}", rows.insert(0));
        rows.bind(crucible_sql::query(&sql)).execute(conn).await?;
    }
    Ok(())
}

/// The columns of `agent_trades` that [`rows`] fills, in order (`tx_hash` last).
pub(crate) const COLUMNS: &str = "id, agent_id, executed_at, market_ts, side, base_token, \
     base_raw, notional_raw, fee_raw, price, realized_pnl_raw, closed_trip, won_trip, reason, tx_hash";

/// `trades` as a batch's rows, one column per [`COLUMNS`].
pub(crate) fn rows<'q>(conn: &crucible_sql::Conn<'_>, trades: &[NewTrade<'q>]) -> Rows<'q> {
    let mut rows = Rows::new(conn, &TRADE_TYPES);
    for trade in trades {
        rows.push([
            trade.id.into(),
            trade.agent_id.into(),
            to_millis(trade.executed_at).into(),
            trade.market_ts.into(),
            trade.side.into(),
            trade.base_token.into(),
            trade.base_raw.into(),
            trade.notional_raw.into(),
            trade.fee_raw.into(),
            trade.price.into(),
            trade.realized_pnl_raw.into(),
            trade.closed_trip.into(),
            trade.won_trip.into(),
            trade.reason.into(),
            trade.tx_hash.into(),
        ]);
    }
    rows
}

/// The `agent.trade` webhook that announces `trade` to its owner.
pub(crate) fn announcement<'a>(trade: &NewTrade<'a>) -> webhooks::Queued<'a> {
    webhooks::Queued {
        account_id: trade.account_id,
        event: Event::AgentTrade,
        data: json!({
            "agentId": trade.agent_id,
            "tradeId": trade.id,
            "type": trade.side.to_ascii_uppercase(),
            "token": trade.base_token,
            "quoteToken": trade.quote_token,
            "amount": trade.amount,
            "price": trade.price,
            "notional": trade.notional_raw as f64 / UNIT,
            "fee": trade.fee_raw as f64 / UNIT,
            "reason": trade.reason,
            "txHash": trade.tx_hash,
            "isPaperTrading": trade.is_paper,
            "executedAt": rfc3339(trade.executed_at),
        }),
        at: trade.executed_at,
    }
}
