//! Strategy components uploaded by authors (`POST /api/v1/public/strategies`): validated by the
//! sandbox (size, component format, our world), stored once by content (SHA-256 id), and usable
//! by the uploading accounts' agents as `strategy.type = "custom:<id>"`.

use serde::Serialize;

use super::AgentError;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::crypto::sha256_hex;
use crate::sandbox::LoadError;
use crate::state::AppState;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyView {
    pub strategy_id: String,
    /// What to put in an agent's `strategy.type`.
    pub strategy_type: String,
    pub name: String,
    pub size_bytes: i64,
    pub uploaded_at: String,
}

/// Validate and store an uploaded component for the account. Uploading the same bytes again
/// (by anyone) stores nothing new; the account's name for it is updated.
pub async fn upload(
    state: &AppState,
    account_id: &str,
    name: &str,
    bytes: Vec<u8>,
) -> Result<StrategyView, AgentError> {
    let limit = state.agents.limits().max_component_bytes;
    if bytes.len() > limit {
        return Err(AgentError::ComponentTooLarge(format!(
            "the component is {} bytes; the limit is {limit}",
            bytes.len()
        )));
    }
    let runtime = state.agents.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let id = sha256_hex(&bytes);
        let loaded = runtime.sandbox()?.load(&bytes);
        loaded.map(|_| (id, bytes))
    })
    .await
    .map_err(AgentError::internal)?;
    let (id, bytes) = checked.map_err(|error| match error {
        LoadError::TooLarge { .. } => AgentError::ComponentTooLarge(error.to_string()),
        LoadError::Cache(_) | LoadError::Engine(_) => AgentError::internal(error),
        other => AgentError::invalid("body", other.to_string()),
    })?;

    let now = to_millis(state.now());
    let mut tx = state.store.begin().await?;
    sqlx::query(
        "INSERT INTO strategy_components (id, size_bytes, bytes, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(&id)
    .bind(bytes.len() as i64)
    .bind(bytes)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO account_strategies (account_id, strategy_id, name, uploaded_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (account_id, strategy_id) DO UPDATE SET name = excluded.name",
    )
    .bind(account_id)
    .bind(&id)
    .bind(name)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!(account_id, strategy_id = id, "strategy uploaded");
    list(state, account_id)
        .await?
        .into_iter()
        .find(|view| view.strategy_id == id)
        .ok_or_else(|| AgentError::internal(anyhow::anyhow!("strategy {id} vanished")))
}

/// The account's uploaded strategies, newest first.
pub async fn list(state: &AppState, account_id: &str) -> Result<Vec<StrategyView>, AgentError> {
    let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "SELECT s.strategy_id, s.name, c.size_bytes, s.uploaded_at
         FROM account_strategies s JOIN strategy_components c ON c.id = s.strategy_id
         WHERE s.account_id = $1 ORDER BY s.uploaded_at DESC, s.strategy_id",
    )
    .bind(account_id)
    .fetch_all(state.store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, name, size_bytes, uploaded_at)| StrategyView {
            strategy_type: format!("custom:{id}"),
            strategy_id: id,
            name,
            size_bytes,
            uploaded_at: rfc3339(from_millis(uploaded_at)),
        })
        .collect())
}

/// Whether the account uploaded component `id`.
pub async fn owned_by(state: &AppState, account_id: &str, id: &str) -> Result<bool, AgentError> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT strategy_id FROM account_strategies WHERE account_id = $1 AND strategy_id = $2",
    )
    .bind(account_id)
    .bind(id)
    .fetch_optional(state.store.read())
    .await?;
    Ok(row.is_some())
}

/// The bytes of component `id`.
pub async fn bytes(state: &AppState, id: &str) -> anyhow::Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT bytes FROM strategy_components WHERE id = $1")
            .bind(id)
            .fetch_optional(state.store.read())
            .await?;
    Ok(row.map(|(bytes,)| bytes))
}
