//! `GET /api/v1/webhooks/deliveries`: the recent webhook deliveries of the key owner's account,
//! with their status (pending, delivered, dead), so an operator can see what reached them.

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde::Deserialize;
use serde_json::Value;

use super::error::{V1Error, ok};
use super::extract::{AgentsRead, Query, V1Key};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/webhooks/deliveries", get(deliveries))
}

#[derive(Debug, Deserialize)]
struct Params {
    limit: Option<String>,
}

async fn deliveries(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Query(params): Query<Params>,
) -> Result<axum::Json<Value>, V1Error> {
    let max = crate::webhooks::MAX_LISTED;
    let limit = match params.limit.as_deref().filter(|s| !s.is_empty()) {
        None => 50,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                V1Error::field("limit", format!("must be a whole number from 1 to {max}"))
            })?,
    };
    let deliveries = crate::webhooks::recent_deliveries(&state, key.account_id(), limit).await?;
    Ok(ok(deliveries))
}
