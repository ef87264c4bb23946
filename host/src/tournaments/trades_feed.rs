//! `GET /api/tournaments/{id}/trades`: what the agents in a tournament just did, for
//! spectators — the newest trades of the live agents whose wallets are registered, each with
//! its agent, amount, price and the strategy's reason (docs/api.md, "Tournament trades").
//!
//! Only live agents are shown: their trades are swaps on chain, public already. A paper
//! agent's trades stay its operator's.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::privacy::InviteParams;
use super::routes::visible;
use crate::agents::trades::whole_tokens;
use crate::clock::{from_millis, rfc3339};
use crate::http::ApiError;
use crate::http::json::{Path, Query};
use crate::http::rate_limit::{IpLimit, TournamentReadPolicy};
use crate::state::AppState;
use crate::usdc::Usdc;

/// Trades per answer when the caller does not say.
const DEFAULT_LIMIT: i64 = 20;
/// The most trades one answer holds.
const MAX_LIMIT: i64 = 100;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct FeedParams {
    /// 1 to 100 trades, newest first (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
}

/// One trade of an agent in the tournament.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FeedTrade {
    pub trade_id: String,
    pub executed_at: String,
    pub agent_name: String,
    pub agent_username: String,
    pub agent_class: String,
    /// The agent's wallet, as the leaderboard lists it.
    pub wallet: String,
    /// `buy` or `sell` (of the base token).
    pub side: String,
    pub base_token: String,
    pub base_amount: f64,
    pub price: f64,
    /// What the trade was worth in USDC, and the fee paid.
    pub notional: f64,
    pub fee: f64,
    /// Why the strategy traded, in its own words.
    pub reason: Option<String>,
    /// The swap's transaction signature.
    pub tx_signature: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TradeFeed {
    pub trades: Vec<FeedTrade>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: String,
    executed_at: i64,
    name: String,
    username: String,
    class: String,
    wallet_address: String,
    side: String,
    base_token: String,
    base_raw: i64,
    price: f64,
    notional_raw: i64,
    fee_raw: i64,
    reason: Option<String>,
    tx_hash: String,
}

/// The newest trades of the tournament's live agents since it started.
#[utoipa::path(get, path = "/api/tournaments/{id}/trades", operation_id = "get_tournament_trades",
    security(()), tag = "tournaments",
    params(("id" = String, Path, description = "Tournament id"), FeedParams, InviteParams),
    responses((status = 200, body = TradeFeed), (status = 400), (status = 404), (status = 429)))]
pub(super) async fn get_trades(
    _limit: IpLimit<TournamentReadPolicy>,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<FeedParams>,
    Query(invite): Query<InviteParams>,
) -> Result<axum::Json<TradeFeed>, ApiError> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "`limit` must be 1 to {MAX_LIMIT}"
        )));
    }
    let tournament = visible(&state, &id, invite.invite_code.as_deref()).await?;
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT t.id, t.executed_at, a.name, a.username, a.class, a.wallet_address, t.side,
                t.base_token, t.base_raw, t.price, t.notional_raw, t.fee_raw, t.reason, t.tx_hash
         FROM tournament_registrations r
         JOIN agents a ON a.wallet_address = r.wallet AND a.is_paper_trading = 0
         JOIN agent_trades t ON t.agent_id = a.id AND t.executed_at >= $2
         WHERE r.tournament_id = $1
         ORDER BY t.executed_at DESC, t.id DESC
         LIMIT $3",
    )
    .bind(&tournament.id)
    .bind(tournament.start_date)
    .bind(limit)
    .fetch_all(state.store.read())
    .await?;
    Ok(axum::Json(TradeFeed {
        trades: rows.into_iter().map(FeedTrade::from).collect(),
    }))
}

impl From<Row> for FeedTrade {
    fn from(row: Row) -> Self {
        FeedTrade {
            trade_id: row.id,
            executed_at: rfc3339(from_millis(row.executed_at)),
            agent_name: row.name,
            agent_username: row.username,
            agent_class: row.class,
            wallet: row.wallet_address,
            side: row.side,
            base_token: row.base_token,
            base_amount: whole_tokens(row.base_raw),
            price: row.price,
            notional: Usdc::from_raw(row.notional_raw).ui(),
            fee: Usdc::from_raw(row.fee_raw).ui(),
            reason: row.reason,
            tx_signature: row.tx_hash,
        }
    }
}
