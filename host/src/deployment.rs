//! Values a deployment generates once and keeps with its data (`deployment_settings`), so every
//! restart and every node on the same database agrees on them.
//!
//! The market seed: the simulated market is a pure function of its seed, so a seed everyone
//! knows lets anyone compute tomorrow's prices. Unless one is configured
//! (`CRUCIBLE_MARKET_SEED`, for tests and demos), the first start draws one from the OS and
//! stores it; later starts read it back.

use rand::RngCore;

use crate::db::{Store, StoreError};

const MARKET_SEED: &str = "market_seed";

/// The market seed: `configured` when given, else this deployment's stored seed (drawn on
/// first use; when two nodes race, the first insert wins and both read it).
pub async fn market_seed(store: &Store, configured: Option<u64>) -> Result<u64, StoreError> {
    if let Some(seed) = configured {
        return Ok(seed);
    }
    let drawn = rand::rngs::OsRng.next_u64();
    let mut tx = store.begin().await?;
    sqlx::query(
        "INSERT INTO deployment_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind(MARKET_SEED)
    .bind(drawn.to_string())
    .execute(&mut *tx)
    .await?;
    let (stored,): (String,) =
        sqlx::query_as("SELECT value FROM deployment_settings WHERE name = $1")
            .bind(MARKET_SEED)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    stored.parse().map_err(|_| {
        StoreError::Query(sqlx::Error::Decode(
            format!("the stored market seed `{stored}` is not a number").into(),
        ))
    })
}
