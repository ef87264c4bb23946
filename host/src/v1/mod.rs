//! The machine-to-machine `v1` family: v1 keys (minted with the
//! session), agents, uploaded strategies, webhook deliveries and the tournament list.
//!
//! Everything under `/api/v1` answers errors in the v1 envelope — including unknown routes,
//! wrong methods and unparsable bodies. Its routes are in the OpenAPI document under the tag
//! `v1`, their bodies in the envelopes of [`envelope`].

mod agents;
mod envelope;
mod error;
mod extract;
mod keys;
mod tournaments;
mod webhooks;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};
use utoipa::openapi::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use error::V1Error;

use crate::state::AppState;

/// Body limit of this family, except uploads (which set their own).
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A 403 in this family's envelope, for a refusal made before any v1 handler runs (the
/// cross-site guard of cookie-authenticated writes).
pub(crate) fn forbidden(message: String) -> axum::response::Response {
    axum::response::IntoResponse::into_response(error::V1Error::Forbidden(message))
}

/// A 503 in this family's envelope, with `Retry-After`, for a request the server could not
/// answer in time (`http::deadline`).
pub(crate) fn unavailable(message: String) -> axum::response::Response {
    axum::response::IntoResponse::into_response(error::V1Error::Unavailable(message))
}

/// The routes of `/api/v1` and their document, to be nested there; strategy uploads may be
/// `upload_limit` bytes.
pub(crate) fn router(upload_limit: usize) -> (Router<AppState>, OpenApi) {
    let (routes, document) = OpenApiRouter::new()
        .merge(keys::router().layer(DefaultBodyLimit::max(MAX_BODY_BYTES)))
        .merge(tournaments::router())
        .merge(webhooks::router())
        .merge(agents::router(upload_limit))
        .split_for_parts();
    let routes = routes
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    (routes, document)
}

async fn not_found(uri: Uri) -> V1Error {
    V1Error::NotFound(format!("no route for {}", uri.path()))
}

/// The family's 404 for a path the router mounts outside the nest (`/api/v1/`).
pub(crate) async fn no_route(uri: Uri) -> axum::response::Response {
    axum::response::IntoResponse::into_response(not_found(uri).await)
}

async fn method_not_allowed(method: Method, uri: Uri) -> V1Error {
    V1Error::MethodNotAllowed(format!("{} is not allowed on {}", method, uri.path()))
}
