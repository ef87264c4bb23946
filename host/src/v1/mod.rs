//! The machine-to-machine `v1` family: v1 keys (minted with the
//! session), agents, uploaded strategies, webhook deliveries and the tournament list.
//!
//! Everything under `/api/v1` answers errors in the v1 envelope — including unknown routes,
//! wrong methods and unparsable bodies — and is outside the OpenAPI document.

mod agents;
pub mod error;
pub mod extract;
mod keys;
mod tournaments;
mod webhooks;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};

pub use error::V1Error;

use crate::state::AppState;

/// Body limit of this family, except uploads (which set their own).
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The routes of `/api/v1`, to be nested there; strategy uploads may be `upload_limit` bytes.
pub fn router(upload_limit: usize) -> Router<AppState> {
    Router::new()
        .merge(keys::router().layer(DefaultBodyLimit::max(MAX_BODY_BYTES)))
        .merge(tournaments::router())
        .merge(webhooks::router())
        .merge(agents::router(upload_limit))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

async fn not_found(uri: Uri) -> V1Error {
    V1Error::NotFound(format!("no route for {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> V1Error {
    V1Error::MethodNotAllowed(format!("{} is not allowed on {}", method, uri.path()))
}
