//! JSON-RPC over HTTP POST: the simnet's [`crucible_simnet::rpc::handle`] behind an axum route,
//! with the PubSub websocket on the same path ([`super::pubsub`]). The server serves it at
//! `/simnet/rpc`; `crucible simnet` serves it alone ([`standalone_router`]). Not part of the
//! OpenAPI document: it speaks Solana's protocol, not Crucible's.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde_json::Value;
use tokio::sync::watch;

use super::{Simnet, pubsub};
use crate::state::AppState;

/// What `/simnet/rpc` answers on a server that talks to an external cluster instead.
pub(super) const DISABLED: &str = "simnet is disabled on this server (SOLANA_RPC_URL is set)";

/// The server's `/simnet/rpc`.
pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/simnet/rpc", post(handle).get(pubsub::upgrade))
}

async fn handle(State(state): State<AppState>, body: Bytes) -> axum::Json<Value> {
    let reply = match state.chain.simnet() {
        Some(simnet) => crucible_simnet::rpc::handle(simnet, &body).await,
        None => crucible_simnet::rpc::error_reply(Value::Null, -32601, DISABLED),
    };
    axum::Json(reply)
}

/// A simnet served alone: JSON-RPC and PubSub at `/` (where a validator serves them) and at
/// `/simnet/rpc` (where a Crucible server does). Websockets close when `closing` turns true.
pub(crate) fn standalone_router(simnet: Arc<Simnet>, closing: watch::Receiver<bool>) -> Router {
    let service = Router::new()
        .route("/", post(handle_alone).get(pubsub::upgrade_alone))
        .route("/simnet/rpc", post(handle_alone).get(pubsub::upgrade_alone));
    service.with_state(pubsub::Alone { simnet, closing })
}

async fn handle_alone(State(alone): State<pubsub::Alone>, body: Bytes) -> axum::Json<Value> {
    axum::Json(crucible_simnet::rpc::handle(&alone.simnet, &body).await)
}
