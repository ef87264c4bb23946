//! Telling subscribers that a resource changed, fed by the event bus (the same events that move
//! the SSE streams, relayed between nodes on PostgreSQL).
//!
//! Two protocol generations ask for this differently:
//! - 2025-era sessions call `resources/subscribe`; the subscription is stored with the session
//!   ([`subscribe`]), because the session's next request, or its notification stream, may reach
//!   another node. Each node runs one [`Notifier`]: for every event it finds the stored
//!   subscriptions of the sessions it holds and has each session tell its client.
//! - 2026-07-28 clients open `subscriptions/listen`, one long request whose answer stream carries
//!   the notifications; the handler serving it listens to the bus itself (`handler::listen`).

use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, CustomNotification};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::resources::Changed;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::db::{Store, StoreError};
use crate::events::Event;

/// The in-process notification the [`Notifier`] hands a session so that its handler (which
/// holds the client's connection) sends `notifications/resources/updated`.
pub(crate) const CHANGED_METHOD: &str = "notifications/crucible/resource_changed";

/// At most this many subscriptions per session: a client cannot make every event a database
/// scan of its own.
pub(crate) const MAX_PER_SESSION: i64 = 100;

/// Why a subscription was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubscribeError {
    #[error(
        "a session may hold at most {MAX_PER_SESSION} subscriptions; unsubscribe from one first"
    )]
    TooMany,
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(SubscribeError);

/// Store that `session_id` wants to hear of `uri` (again is harmless).
pub(crate) async fn subscribe(
    store: &Store,
    clock: &dyn Clock,
    session_id: &str,
    uri: &str,
) -> Result<(), SubscribeError> {
    let (held,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM mcp_subscriptions WHERE session_id = $1")
            .bind(session_id)
            .fetch_one(store.write())
            .await?;
    if held >= MAX_PER_SESSION {
        return Err(SubscribeError::TooMany);
    }
    sqlx::query(
        "INSERT INTO mcp_subscriptions (session_id, uri, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (session_id, uri) DO NOTHING",
    )
    .bind(session_id)
    .bind(uri)
    .bind(to_millis(clock.now()))
    .execute(store.write())
    .await?;
    Ok(())
}

/// Forget `session_id`'s subscription to `uri` (none is harmless).
pub(crate) async fn unsubscribe(
    store: &Store,
    session_id: &str,
    uri: &str,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM mcp_subscriptions WHERE session_id = $1 AND uri = $2")
        .bind(session_id)
        .bind(uri)
        .execute(store.write())
        .await?;
    Ok(())
}

/// This node's messenger from the event bus to the sessions it holds.
pub(crate) struct Notifier {
    pub store: Store,
    pub events: crate::events::Bus,
    pub sessions: Arc<LocalSessionManager>,
    /// Proves a [`CHANGED_METHOD`] notification came from this process, not from a client.
    pub token: Arc<str>,
}

impl Notifier {
    /// Relay events until the node stops.
    pub(crate) async fn run(self) {
        let mut events = self.events.subscribe();
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                // Missed some: every subscription may have changed.
                Err(RecvError::Lagged(_)) => Event::Resync,
                Err(RecvError::Closed) => return,
            };
            // Every turn and trade passes here: with no session open, nothing is worked out.
            if self.sessions.sessions.read().await.is_empty() {
                continue;
            }
            let changed = Changed::of(&event);
            if changed == Changed::Nothing {
                continue;
            }
            if let Err(error) = self.tell(&changed).await {
                tracing::warn!(%error, "MCP resource notifications skipped");
            }
        }
    }

    async fn tell(&self, changed: &Changed) -> Result<(), StoreError> {
        let rows: Vec<(String, String)> = match changed {
            Changed::Uris(uris) => {
                let placeholders: Vec<String> =
                    (1..=uris.len()).map(|index| format!("${index}")).collect();
                let sql = format!(
                    "SELECT session_id, uri FROM mcp_subscriptions WHERE uri IN ({})",
                    placeholders.join(", ")
                );
                let mut query = sqlx::query_as(&sql);
                for uri in uris {
                    query = query.bind(uri);
                }
                query.fetch_all(self.store.read()).await?
            }
            Changed::Tournaments => {
                sqlx::query_as(
                    "SELECT session_id, uri FROM mcp_subscriptions WHERE uri LIKE 'crucible://tournaments/%'",
                )
                .fetch_all(self.store.read())
                .await?
            }
            Changed::Everything => {
                sqlx::query_as("SELECT session_id, uri FROM mcp_subscriptions")
                    .fetch_all(self.store.read())
                    .await?
            }
            Changed::Nothing => Vec::new(),
        };
        if rows.is_empty() {
            return Ok(());
        }
        // The handles are taken first: a session slow to take a message must not hold the map
        // (which every new session writes to) while it is awaited.
        let held: Vec<_> = {
            let sessions = self.sessions.sessions.read().await;
            rows.into_iter()
                .filter_map(|(session_id, uri)| {
                    sessions
                        .get(session_id.as_str())
                        .map(|session| (session.clone(), uri))
                })
                .collect()
        };
        for (session, uri) in held {
            let message = ClientJsonRpcMessage::notification(
                ClientNotification::CustomNotification(CustomNotification::new(
                    CHANGED_METHOD,
                    Some(json!({"uri": uri, "token": &*self.token})),
                )),
            );
            // A session that just ended has nobody to tell.
            let _ = session.push_message(message, None).await;
        }
        Ok(())
    }
}
