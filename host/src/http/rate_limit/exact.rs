//! Exact limits across nodes: the admissions of each key are rows (`rate_limit_hits`), and a
//! check is one short transaction holding an advisory lock on the key, so two nodes checking
//! the same key at once take turns and the budget holds to the request. Used only on
//! PostgreSQL, and only for limits that guard writes (see [`super::Sharing::Exact`]).

use chrono::{DateTime, Utc};

use super::{Limited, refusal};
use crate::clock::{from_millis, to_millis};
use crate::db::Store;

/// The first key of the two-key advisory locks this module takes: a space of its own, apart
/// from any other lock of the schema.
const LOCK_SPACE: i32 = 0x726c; // "rl"

/// Check and, when within the budget, record one admission of `key` under `limiter`.
pub(super) async fn check(
    store: &Store,
    limiter: &str,
    key: &str,
    count: usize,
    window: chrono::Duration,
    now: DateTime<Utc>,
) -> sqlx::Result<Result<(), Limited>> {
    let now_ms = to_millis(now);
    let mut tx = store.write().begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
        .bind(LOCK_SPACE)
        .bind(format!("{limiter}|{key}"))
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM rate_limit_hits WHERE limiter = $1 AND client = $2 AND at <= $3")
        .bind(limiter)
        .bind(key)
        .bind(now_ms - window.num_milliseconds())
        .execute(&mut *tx)
        .await?;
    let admitted: Vec<(i64,)> = sqlx::query_as(
        "SELECT at FROM rate_limit_hits WHERE limiter = $1 AND client = $2 ORDER BY at",
    )
    .bind(limiter)
    .bind(key)
    .fetch_all(&mut *tx)
    .await?;
    if admitted.len() >= count {
        tx.rollback().await?;
        let admitted: Vec<DateTime<Utc>> =
            admitted.into_iter().map(|(at,)| from_millis(at)).collect();
        return Ok(Err(refusal(&admitted, count, window, now)));
    }
    sqlx::query("INSERT INTO rate_limit_hits (limiter, client, at) VALUES ($1, $2, $3)")
        .bind(limiter)
        .bind(key)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Ok(()))
}

/// Delete admissions older than the longest window (an hour): keys that went quiet leave
/// rows behind, since each check only prunes its own key.
pub(super) async fn prune(store: &Store, now: DateTime<Utc>) -> sqlx::Result<u64> {
    let oldest_kept = to_millis(now) - chrono::Duration::hours(1).num_milliseconds();
    Ok(sqlx::query("DELETE FROM rate_limit_hits WHERE at <= $1")
        .bind(oldest_kept)
        .execute(store.write())
        .await?
        .rows_affected())
}
