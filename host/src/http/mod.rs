//! The HTTP surface: one router assembled from each module's own `router()`, the OpenAPI
//! document generated from the same handlers, and the JSON answers for unknown routes.

pub(crate) mod compression;
mod deadline;
pub(crate) mod error;
mod idle;
pub(crate) mod json;
pub(crate) mod openapi;
pub mod rate_limit;
mod rejections;
pub(crate) mod serve;
pub(crate) mod streams;

use axum::Router;
use axum::http::{Method, Uri};
use axum::routing::get;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub(crate) use error::ApiError;

use crate::state::AppState;

/// Largest request body accepted anywhere (uploads of strategy components set their own).
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The platform's routes (outside `/api/v1`) together with the OpenAPI document describing them.
fn platform_api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(crate::health::router())
        .merge(crate::auth::router())
        .merge(crate::account::router())
        .merge(crate::models::router())
        .merge(crate::api_keys::router())
        .merge(crate::tournaments::router())
        .merge(crate::admin::router())
        .merge(crate::dungeon::router())
        .split_for_parts()
}

/// Every route and the one OpenAPI document describing them all (the v1 paths under their
/// prefix): the platform's routes, and the v1 family's (uploads up to `upload_limit` bytes), which
/// the caller nests at `/api/v1`.
fn api(upload_limit: usize) -> (Router<AppState>, Router<AppState>, utoipa::openapi::OpenApi) {
    let (routes, platform) = platform_api();
    let (v1_routes, v1_document) = crate::v1::router(upload_limit);
    let mut document = platform.nest("/api/v1", v1_document);
    openapi::add_shared_answers(&mut document);
    (routes, v1_routes, document)
}

/// The OpenAPI document of every route (what `GET /api/openapi.json` answers).
#[cfg(test)]
pub(crate) fn openapi_document() -> utoipa::openapi::OpenApi {
    api(MAX_BODY_BYTES).2
}

/// The complete application router, ready to serve.
pub(crate) fn router(state: AppState) -> Router {
    let (routes, v1_routes, openapi) = api(state.agents.limits().max_component_bytes);
    let mcp_document = openapi.clone();
    let openapi = std::sync::Arc::new(openapi);
    let api = routes
        .route(
            "/api/openapi.json",
            get(move || async move { axum::Json(openapi.as_ref().clone()) }),
        )
        // Outside the OpenAPI document: the simulated chain's JSON-RPC (Solana's protocol).
        .merge(crate::chain::simnet::rpc::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        // Added after the limit above: the v1 family answers in its own error envelope and
        // sets its own body limits (strategy uploads are larger).
        .nest("/api/v1", v1_routes)
        // `/api/v1/` (what a client makes of `/api/v1/x/..`) is the family's too, not the
        // platform's: the nest above matches `/api/v1` and what follows a non-empty segment.
        .route("/api/v1/", axum::routing::any(crate::v1::no_route))
        .route("/metrics", get(crate::metrics::scrape))
        // Route-level: runs once a route matched, so it can name the template.
        .layer(axum::middleware::from_fn(crate::metrics::label_route))
        .layer(TraceLayer::new_for_http())
        .with_state(state.clone());
    let metrics = state.metrics.clone();
    let request_timeout_ms = state.config.request_timeout_ms;
    // MCP is another client of the same API: its tools call these routes in process.
    let mcp = crate::mcp::router(state.clone(), api.clone(), &mcp_document);
    // The web app answers the paths it serves and hands everything else to the API unchanged.
    crate::web::router(state, api)
        .merge(mcp)
        // The session cookie writes to `/api/…` only past the web app's cross-site guard.
        .layer(axum::middleware::from_fn(crate::web::guard_api_writes))
        .layer(axum::middleware::from_fn(crate::metrics::label_route))
        .layer(axum::middleware::from_fn_with_state(
            std::time::Duration::from_millis(request_timeout_ms),
            deadline::bound,
        ))
        .layer(axum::middleware::from_fn_with_state(
            metrics,
            crate::metrics::track,
        ))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{} is not allowed on {}", method, uri.path()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_covers_both_families_and_every_reference_resolves() {
        let (_, _, document) = api(1024);
        let document = serde_json::to_value(document).expect("serializes");
        let paths = document["paths"].as_object().expect("paths");
        for (path, method) in [
            ("/api/dungeons/{dungeonId}/enter", "post"),
            ("/api/dungeons/runs/{runId}/turn", "post"),
            ("/api/account/dungeon-runs", "get"),
            ("/api/v1/public/agents", "get"),
            (
                "/api/v1/public/agents/{agentId}/tournaments/{tournamentId}/enter",
                "post",
            ),
            ("/api/v1/public/tournaments", "get"),
            ("/api/v1/api-keys/{keyId}", "delete"),
        ] {
            assert!(
                paths.get(path).and_then(|item| item.get(method)).is_some(),
                "{method} {path} is missing"
            );
        }
        // Every `$ref` names a schema the document defines.
        let schemas = document["components"]["schemas"]
            .as_object()
            .expect("schemas");
        let text = document.to_string();
        for reference in text.split("\"#/components/schemas/").skip(1) {
            let name = reference.split('"').next().unwrap_or_default();
            assert!(schemas.contains_key(name), "no schema `{name}`");
        }
    }
}
