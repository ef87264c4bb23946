//! `GET /api/health`: is the server up and can it reach its database. Never rate limited.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, extract::State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`, or `degraded` when a dependency fails.
    status: &'static str,
    version: &'static str,
    /// `ok`, or what failed.
    database: String,
}

/// Liveness and database reachability.
#[utoipa::path(get, path = "/api/health", tag = "platform",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
async fn health(State(state): State<AppState>) -> Response {
    let version = env!("CARGO_PKG_VERSION");
    match state.store.ping().await {
        Ok(()) => Json(Health {
            status: "ok",
            version,
            database: "ok".into(),
        })
        .into_response(),
        Err(error) => {
            tracing::warn!(%error, "health check: database unreachable");
            let body = Health {
                status: "degraded",
                version,
                database: format!("unreachable: {error}"),
            };
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    }
}
