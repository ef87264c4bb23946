//! Sessions that any node can serve. A 2025-era client keeps one session (`Mcp-Session-Id`) for
//! all its requests, and behind a load balancer those requests reach different nodes. The
//! session's `initialize` request is stored here ([`DbSessions`], rmcp's `SessionStore`); a node
//! that is asked about a session it does not hold restores it by replaying that request. The
//! account whose key opened the session is stored beside it ([`bind`]), and a key of another
//! account is answered as if the session did not exist ([`owner`]).

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use crate::clock::Clock;
use crate::clock::to_millis;
use crate::db::{Store, StoreError};

/// Sessions idle longer than this are forgotten (with their subscriptions); a client that comes
/// back after that starts a new session, as the protocol expects of a 404.
pub(crate) const IDLE_FOR: chrono::Duration = chrono::Duration::days(1);

/// rmcp's session store on the server's database.
pub(crate) struct DbSessions {
    pub store: Store,
    pub clock: std::sync::Arc<dyn crate::clock::Clock>,
}

#[async_trait::async_trait]
impl SessionStore for DbSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT initialize_params FROM mcp_sessions WHERE id = $1")
                .bind(session_id)
                .fetch_optional(self.store.read())
                .await?;
        let Some((Some(params),)) = row else {
            return Ok(None);
        };
        Ok(Some(SessionState::new(serde_json::from_str(&params)?)))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let params = serde_json::to_string(&state.initialize_params)?;
        let now = to_millis(self.clock.now());
        sqlx::query(
            "INSERT INTO mcp_sessions (id, initialize_params, created_at, touched_at)
             VALUES ($1, $2, $3, $3)
             ON CONFLICT (id) DO UPDATE SET initialize_params = excluded.initialize_params,
                                            touched_at = excluded.touched_at",
        )
        .bind(session_id)
        .bind(params)
        .bind(now)
        .execute(self.store.write())
        .await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        forget(&self.store, session_id).await?;
        Ok(())
    }
}

/// Record that `account_id`'s key opened `session_id` (the answer to its `initialize`).
pub(crate) async fn bind(
    store: &Store,
    clock: &dyn Clock,
    session_id: &str,
    account_id: &str,
) -> Result<(), StoreError> {
    let now = to_millis(clock.now());
    sqlx::query(
        "INSERT INTO mcp_sessions (id, account_id, created_at, touched_at) VALUES ($1, $2, $3, $3)
         ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id",
    )
    .bind(session_id)
    .bind(account_id)
    .bind(now)
    .execute(store.write())
    .await?;
    Ok(())
}

/// The account that opened `session_id`, if the session is known; its use is noted (at most
/// once a minute, so a busy session does not write on every request).
pub(crate) async fn owner(
    store: &Store,
    clock: &dyn Clock,
    session_id: &str,
) -> Result<Option<String>, StoreError> {
    let row: Option<(Option<String>, i64)> =
        sqlx::query_as("SELECT account_id, touched_at FROM mcp_sessions WHERE id = $1")
            .bind(session_id)
            .fetch_optional(store.read())
            .await?;
    let Some((account_id, touched_at)) = row else {
        return Ok(None);
    };
    let now = to_millis(clock.now());
    if now - touched_at > 60_000 {
        sqlx::query("UPDATE mcp_sessions SET touched_at = $1 WHERE id = $2")
            .bind(now)
            .bind(session_id)
            .execute(store.write())
            .await?;
    }
    Ok(account_id)
}

/// Forget a session and its subscriptions (the client ended it, or it sat idle too long).
pub(crate) async fn forget(store: &Store, session_id: &str) -> Result<(), StoreError> {
    let mut tx = store.begin().await?;
    sqlx::query("DELETE FROM mcp_subscriptions WHERE session_id = $1")
        .bind(session_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM mcp_sessions WHERE id = $1")
        .bind(session_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Forget every session idle since before `cutoff`, with its subscriptions; how many.
pub(crate) async fn prune(
    store: &Store,
    cutoff: chrono::DateTime<chrono::Utc>,
) -> Result<u64, StoreError> {
    let cutoff = to_millis(cutoff);
    let mut tx = store.begin().await?;
    sqlx::query(
        "DELETE FROM mcp_subscriptions WHERE session_id IN
           (SELECT id FROM mcp_sessions WHERE touched_at < $1)",
    )
    .bind(cutoff)
    .execute(&mut *tx)
    .await?;
    let pruned = sqlx::query("DELETE FROM mcp_sessions WHERE touched_at < $1")
        .bind(cutoff)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(pruned.rows_affected())
}
