//! `/mcp`: the Model Context Protocol over Streamable HTTP (rmcp), another front door to the same
//! API (docs/mcp.md). Every tool is a REST operation called in process with the caller's key, so
//! keys, scopes, permissions, rate limits, validation and error messages are the API's own. Any
//! node serves any request: a session's `initialize` and its subscriptions are stored, not kept
//! in one node's memory.

mod call;
mod catalog;
mod gate;
mod handler;
mod resources;
mod schema;
pub(crate) mod sessions;
mod subscriptions;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// Largest request body `/mcp` reads, as the API's.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The `/mcp` route: the gate, then rmcp's Streamable HTTP service over [`handler::Server`].
/// `api` is the API router the tools call; `document` its OpenAPI document, from which every
/// tool's input schema is derived.
pub(crate) fn router(state: AppState, api: Router, document: &utoipa::openapi::OpenApi) -> Router {
    let document = serde_json::to_value(document).unwrap_or_default();
    let tools = catalog::TOOLS
        .iter()
        .filter_map(|spec| match schema::arguments(&document, spec) {
            Ok(arguments) => Some(handler::ReadyTool::new(spec, arguments)),
            Err(error) => {
                // A unit test derives every tool; this only guards a build that skipped it.
                tracing::error!(tool = spec.name, %error, "MCP tool left out");
                None
            }
        })
        .collect();
    let token: Arc<str> = crate::crypto::random_base58(32).into();
    let shared = Arc::new(handler::Shared {
        state: state.clone(),
        api: call::Api { router: api },
        tools,
        token: token.clone(),
    });
    let sessions = Arc::new(LocalSessionManager::default());
    let gate = gate::Gate::new(state.clone(), sessions.clone());
    let cancel = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        // The gate checked Host and Origin already, with the API's error bodies; rmcp checks
        // the same lists again.
        .with_allowed_hosts(gate.hosts.iter().cloned())
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_json_response(true)
        .with_cancellation_token(cancel.clone());
    if !gate.origin.is_empty() {
        config = config.with_allowed_origins([gate.origin.to_string()]);
    }
    config.session_store = Some(Arc::new(sessions::DbSessions {
        store: state.store.clone(),
        clock: state.clock.clone(),
    }));
    let service = StreamableHttpService::new(
        move || Ok(handler::Server(shared.clone())),
        sessions.clone(),
        config,
    );
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(
            subscriptions::Notifier {
                store: state.store.clone(),
                events: state.events.clone(),
                sessions,
                token,
            }
            .run(),
        );
        // Shutting down ends every session's streams, as it ends the API's SSE streams.
        let mut closing = state.streams.closing_signal();
        runtime.spawn(async move {
            let _ = closing.wait_for(|closing| *closing).await;
            cancel.cancel();
        });
    }
    Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate, gate::check))
}
