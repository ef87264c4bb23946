//! One-off jobs: `(kind, subject)` rows due at a time, claimed under a lease, completed or
//! retried with backoff. Enqueueing is idempotent, so "make sure this happens" is safe to repeat.

use chrono::{DateTime, Duration, Utc};
use sqlx::AnyConnection;

use crate::clock::to_millis;
use crate::db::{Backend, Store};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: String,
    pub kind: String,
    pub subject: String,
    pub due_at: i64,
    pub attempts: i64,
}

/// Schedule `kind` for `subject` at `due_at`. If the same job is pending it is moved to the new
/// time; if it already ran it stays done.
pub async fn enqueue(
    conn: &mut AnyConnection,
    kind: &str,
    subject: &str,
    due_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO jobs (id, kind, subject, due_at, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (id) DO UPDATE SET due_at = excluded.due_at WHERE jobs.done_at IS NULL",
    )
    .bind(format!("{kind}:{subject}"))
    .bind(kind)
    .bind(subject)
    .bind(to_millis(due_at))
    .bind(to_millis(now))
    .execute(conn)
    .await?;
    Ok(())
}

/// Lease up to `limit` due jobs to the claim `owner` (a token of its own per claim,
/// `leases::token`), earliest first. Expired leases (a node that died or was cut off mid-job)
/// are taken over.
pub async fn claim(
    store: &Store,
    owner: &str,
    now: DateTime<Utc>,
    lease: Duration,
    limit: i64,
) -> sqlx::Result<Vec<Job>> {
    // SQLite has a single writer, so the sub-select and update cannot interleave with another
    // claimer; PostgreSQL needs SKIP LOCKED so concurrent nodes take disjoint jobs.
    let lock = match store.backend() {
        Backend::Postgres => "FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    let sql = format!(
        "UPDATE jobs SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM jobs
                      WHERE done_at IS NULL AND due_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
                      ORDER BY due_at, id LIMIT $4 {lock})
         RETURNING id, kind, subject, due_at, attempts"
    );
    let rows: Vec<(String, String, String, i64, i64)> = sqlx::query_as(&sql)
        .bind(owner)
        .bind(to_millis(now + lease))
        .bind(to_millis(now))
        .bind(limit)
        .fetch_all(store.write())
        .await?;
    let mut jobs: Vec<Job> = rows
        .into_iter()
        .map(|(id, kind, subject, due_at, attempts)| Job {
            id,
            kind,
            subject,
            due_at,
            attempts,
        })
        .collect();
    jobs.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
    Ok(jobs)
}

/// Extend every unfinished job `owner` holds to `now + lease`: the one it is running and the
/// rest of the batch it claimed. Returns how many.
pub async fn renew_held(
    store: &Store,
    owner: &str,
    now: DateTime<Utc>,
    lease: Duration,
) -> sqlx::Result<u64> {
    let renewed =
        sqlx::query("UPDATE jobs SET lease_until = $1 WHERE lease_owner = $2 AND done_at IS NULL")
            .bind(to_millis(now + lease))
            .bind(owner)
            .execute(store.write())
            .await?;
    Ok(renewed.rows_affected())
}

/// Mark a job done, if the claim `owner` (its lease token) still holds it.
pub async fn complete(
    store: &Store,
    job: &Job,
    owner: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET done_at = $1, lease_owner = NULL, lease_until = NULL, last_error = NULL WHERE id = $2 AND lease_owner = $3")
        .bind(to_millis(now))
        .bind(&job.id)
        .bind(owner)
        .execute(store.write())
        .await?;
    Ok(())
}

/// Release a failed job with exponential backoff (5 s doubling, at most an hour), if the
/// claim `owner` still holds it.
pub async fn retry_later(
    store: &Store,
    job: &Job,
    owner: &str,
    now: DateTime<Utc>,
    error: &str,
) -> sqlx::Result<()> {
    let due = now + backoff(job.attempts);
    sqlx::query(
        "UPDATE jobs SET due_at = $1, lease_owner = NULL, lease_until = NULL, last_error = $2 WHERE id = $3 AND lease_owner = $4",
    )
    .bind(to_millis(due))
    .bind(error.chars().take(2000).collect::<String>())
    .bind(&job.id)
    .bind(owner)
    .execute(store.write())
    .await?;
    Ok(())
}

pub(crate) fn backoff(attempts: i64) -> Duration {
    let exponent = attempts.clamp(1, 20) as u32 - 1;
    Duration::seconds(
        5_i64
            .saturating_mul(2_i64.saturating_pow(exponent))
            .min(3600),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff(1), Duration::seconds(5));
        assert_eq!(backoff(2), Duration::seconds(10));
        assert_eq!(backoff(4), Duration::seconds(40));
        assert_eq!(backoff(50), Duration::seconds(3600));
    }
}
