//! The outbox table `webhook_deliveries`: queueing rows, claiming due ones under a lease, and
//! recording what each attempt did. Every state change here is one statement; none holds a
//! transaction (or SQLite's single writer) across an HTTP request.

use chrono::{DateTime, Duration, Utc};
use sqlx::AnyConnection;

use crate::clock::{from_millis, to_millis};
use crate::db::Store;

/// Longest error text kept per delivery.
const MAX_ERROR_CHARS: usize = 500;

/// A live key of the account that wants webhooks.
pub(super) struct Subscriber {
    pub key_id: String,
    pub url: String,
}

/// The account's live (unrevoked, unexpired) keys of both families that have a webhook URL.
pub(super) async fn subscribers(
    conn: &mut AnyConnection,
    account_id: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<Subscriber>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT id, webhook_url FROM api_keys
         WHERE account_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
           AND webhook_url IS NOT NULL AND webhook_secret_sealed IS NOT NULL
         ORDER BY created_at, id",
    )
    .bind(account_id)
    .bind(to_millis(now))
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(key_id, url)| Subscriber { key_id, url })
        .collect())
}

/// A new pending row, due at once.
pub(super) struct NewDelivery<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub key_id: &'a str,
    pub event: &'a str,
    pub url: &'a str,
    pub payload: &'a str,
    pub now: DateTime<Utc>,
}

pub(super) async fn insert(conn: &mut AnyConnection, new: NewDelivery<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, account_id, key_id, event, url, payload, status,
                                         next_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $7)",
    )
    .bind(new.id)
    .bind(new.account_id)
    .bind(new.key_id)
    .bind(new.event)
    .bind(new.url)
    .bind(new.payload)
    .bind(to_millis(new.now))
    .execute(conn)
    .await?;
    Ok(())
}

/// A row leased to one worker for one attempt.
#[derive(Debug, Clone)]
pub(super) struct Claimed {
    pub id: String,
    pub key_id: String,
    pub event: String,
    pub url: String,
    pub payload: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
    pub created_at: DateTime<Utc>,
}

/// Lease up to `limit` due pending rows to `lease_owner` until `now + lease`, oldest due first,
/// and at most `per_url` of them for one URL, so that a receiver with a long queue does not
/// fill the claim and other tenants' rows are reached. A lease that ran out (its worker died
/// mid-attempt) is taken over. The attempt is counted here, so an attempt cut short by a crash
/// still counts.
pub(super) async fn claim(
    store: &Store,
    lease_owner: &str,
    now: DateTime<Utc>,
    lease: Duration,
    limit: i64,
    per_url: i64,
) -> sqlx::Result<Vec<Claimed>> {
    // The conditions are checked again on the row being updated: on PostgreSQL a concurrent
    // claimer that picked the same row waits for the first one's update, then finds the row
    // leased and leaves it (row locks cannot be taken beside a window function). SQLite's single
    // writer serialises claimers anyway.
    let sql = "UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM (
                          SELECT id, next_attempt_at,
                                 ROW_NUMBER() OVER (PARTITION BY url ORDER BY next_attempt_at, id) AS place
                          FROM webhook_deliveries
                          WHERE status = 'pending' AND next_attempt_at <= $3
                            AND (lease_until IS NULL OR lease_until <= $3)) due
                      WHERE place <= $5
                      ORDER BY next_attempt_at, id LIMIT $4)
           AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $3)
         RETURNING id, key_id, event, url, payload, attempts, created_at";
    type Row = (String, String, String, String, String, i64, i64);
    let rows: Vec<Row> = sqlx::query_as(sql)
        .bind(lease_owner)
        .bind(to_millis(now + lease))
        .bind(to_millis(now))
        .bind(limit)
        .bind(per_url)
        .fetch_all(store.write())
        .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, key_id, event, url, payload, attempts, created_at)| Claimed {
                id,
                key_id,
                event,
                url,
                payload,
                attempts,
                created_at: from_millis(created_at),
            },
        )
        .collect())
}

/// The key a claimed row is signed for: its sealed secret, and whether it still stands.
pub(super) struct KeyState {
    pub secret_sealed: Option<String>,
    pub revoked: bool,
    pub expired: bool,
}

pub(super) async fn key_state(
    store: &Store,
    key_id: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<Option<KeyState>> {
    let row: Option<(Option<String>, Option<i64>, Option<i64>)> = sqlx::query_as(
        "SELECT webhook_secret_sealed, revoked_at, expires_at FROM api_keys WHERE id = $1",
    )
    .bind(key_id)
    .fetch_optional(store.read())
    .await?;
    Ok(row.map(|(secret_sealed, revoked_at, expires_at)| KeyState {
        secret_sealed,
        revoked: revoked_at.is_some(),
        expired: expires_at.is_some_and(|at| at <= to_millis(now)),
    }))
}

/// How an attempt ended, as recorded on the row.
pub(super) enum Outcome<'a> {
    /// 2xx: done.
    Delivered { status_code: u16 },
    /// Failed; try again at `retry_at`. `error` is (category, what the owner is shown).
    Retry {
        status_code: Option<u16>,
        error: Option<(&'a str, &'a str)>,
        retry_at: DateTime<Utc>,
    },
    /// Failed for good (24 h of failures, or the key was revoked): the dead letter.
    Dead {
        status_code: Option<u16>,
        error: Option<(&'a str, &'a str)>,
    },
}

/// Record `outcome` and release the lease — only if `lease_owner` still holds it, so a worker
/// whose lease ran out cannot overwrite what its successor recorded. Returns whether it did.
pub(super) async fn record(
    store: &Store,
    id: &str,
    lease_owner: &str,
    now: DateTime<Utc>,
    outcome: Outcome<'_>,
) -> sqlx::Result<bool> {
    let now = to_millis(now);
    let (status, status_code, error, next_attempt_at, delivered_at, dead_at) = match outcome {
        Outcome::Delivered { status_code } => {
            ("delivered", Some(status_code), None, None, Some(now), None)
        }
        Outcome::Retry {
            status_code,
            error,
            retry_at,
        } => (
            "pending",
            status_code,
            error,
            Some(to_millis(retry_at)),
            None,
            None,
        ),
        Outcome::Dead { status_code, error } => ("dead", status_code, error, None, None, Some(now)),
    };
    let updated = sqlx::query(
        "UPDATE webhook_deliveries
         SET status = $1, last_status_code = $2, last_error = $3, last_error_category = $10,
             next_attempt_at = COALESCE($4, next_attempt_at), delivered_at = $5, dead_at = $6,
             last_attempt_at = $7, lease_owner = NULL, lease_until = NULL
         WHERE id = $8 AND lease_owner = $9",
    )
    .bind(status)
    .bind(status_code.map(i64::from))
    .bind(error.map(|(_, text)| text.chars().take(MAX_ERROR_CHARS).collect::<String>()))
    .bind(next_attempt_at)
    .bind(delivered_at)
    .bind(dead_at)
    .bind(now)
    .bind(id)
    .bind(lease_owner)
    .bind(error.map(|(category, _)| category))
    .execute(store.write())
    .await?;
    Ok(updated.rows_affected() == 1)
}

/// Give a claimed row back unsent (its destination had no free slot): the lease is released and
/// the attempt the claim counted is taken back.
pub(super) async fn hand_back(store: &Store, id: &str, lease_owner: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, attempts = attempts - 1
         WHERE id = $1 AND lease_owner = $2",
    )
    .bind(id)
    .bind(lease_owner)
    .execute(store.write())
    .await?;
    Ok(())
}

/// A row as the owner sees it.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct Listed {
    pub id: String,
    pub key_id: String,
    pub event: String,
    pub url: String,
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_category: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
    pub last_attempt_at: Option<i64>,
    pub next_attempt_at: i64,
    pub dead_at: Option<i64>,
}

/// The account's most recent rows, newest first.
pub(super) async fn recent(
    store: &Store,
    account_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as(
        "SELECT id, key_id, event, url, status, attempts, last_status_code, last_error,
                last_error_category, created_at, delivered_at, last_attempt_at, next_attempt_at, dead_at
         FROM webhook_deliveries WHERE account_id = $1
         ORDER BY created_at DESC, id DESC LIMIT $2",
    )
    .bind(account_id)
    .bind(limit)
    .fetch_all(store.read())
    .await
}
