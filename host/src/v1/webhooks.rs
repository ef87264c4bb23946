//! `GET /api/v1/webhooks/deliveries`: the recent webhook deliveries of the key owner's account,
//! with their status (pending, delivered, dead), so an operator can see what reached them.

use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::envelope::{V1Ok, ok, whole_number};
use super::error::{V1Error, V1ErrorBody};
use super::extract::{AgentsRead, Query, V1Key};
use crate::state::AppState;
use crate::webhooks::DeliveryView;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(deliveries))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct Params {
    /// 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
}

/// The account's recent webhook deliveries, newest first.
#[utoipa::path(get, path = "/webhooks/deliveries", operation_id = "v1_list_webhook_deliveries",
    security(("v1Key" = [])), tag = "v1", params(Params),
    responses((status = 200, body = V1Ok<Vec<DeliveryView>>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 429, body = V1ErrorBody)))]
async fn deliveries(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Query(params): Query<Params>,
) -> Result<axum::Json<V1Ok<Vec<DeliveryView>>>, V1Error> {
    let max = crate::webhooks::MAX_LISTED;
    let limit = whole_number(params.limit.as_deref(), 50, 1..=max).ok_or_else(|| {
        V1Error::field("limit", format!("must be a whole number from 1 to {max}"))
    })?;
    let deliveries =
        crate::webhooks::recent_deliveries(&state.store, key.account_id(), limit).await?;
    Ok(ok(deliveries))
}
