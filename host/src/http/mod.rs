//! The HTTP surface: one router assembled from each module's own `router()`, the OpenAPI
//! document generated from the same handlers, and the JSON answers for unknown routes.

pub mod error;
pub mod json;
pub mod rate_limit;
pub mod serve;
pub mod streams;

use axum::Router;
use axum::http::{Method, Uri};
use axum::routing::get;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub use error::ApiError;

use crate::state::AppState;

/// Largest request body accepted anywhere (uploads of strategy components set their own).
const MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Crucible API",
        description = "Tournaments, the daily dungeon and sandboxed strategy agents on Solana wallets."
    ),
    tags(
        (name = "platform", description = "Health and public platform endpoints"),
        (name = "auth", description = "Sign-up and sign-in (the web app's back end)"),
        (name = "account", description = "The signed-in account (session or account API key)"),
        (name = "api-keys", description = "Account API keys (session only)"),
        (name = "tournaments", description = "Trading tournaments: list, detail, registration"),
        (name = "admin", description = "Host operations for admins (session only; 403 for anyone else)"),
    )
)]
struct ApiDoc;

/// Every route of the server together with the OpenAPI document describing it.
pub fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(crate::health::router())
        .merge(crate::auth::router())
        .merge(crate::account::router())
        .merge(crate::api_keys::router())
        .merge(crate::tournaments::router())
        .merge(crate::admin::router())
        .split_for_parts()
}

/// The complete application router, ready to serve.
pub fn router(state: AppState) -> Router {
    let (routes, openapi) = api();
    let openapi = std::sync::Arc::new(openapi);
    let api = routes
        .route(
            "/api/openapi.json",
            get(move || async move { axum::Json(openapi.as_ref().clone()) }),
        )
        .merge(crate::chain::simnet::rpc::router())
        // Outside the OpenAPI document.
        .merge(crate::dungeon::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        // Added after the limit above: the v1 family answers in its own error envelope and
        // sets its own body limits (strategy uploads are larger).
        .nest(
            "/api/v1",
            crate::v1::router(state.agents.limits().max_component_bytes),
        )
        .route("/metrics", get(crate::metrics::scrape))
        // Route-level: runs once a route matched, so it can name the template.
        .layer(axum::middleware::from_fn(crate::metrics::label_route))
        .layer(TraceLayer::new_for_http())
        .with_state(state.clone());
    let metrics = state.metrics.clone();
    // The web app answers the paths it serves and hands everything else to the API unchanged.
    crate::web::router(state, api)
        .layer(axum::middleware::from_fn(crate::metrics::label_route))
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
