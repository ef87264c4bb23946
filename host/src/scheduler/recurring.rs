//! Recurring schedules: a cron expression per name, the next run time stored in `schedules`.
//! A node runs an occurrence only if it moves `next_run_at` forward first (compare-and-set), so
//! with several nodes each occurrence runs once; after downtime the overdue occurrences collapse
//! into a single run.

use std::str::FromStr;

use chrono::{DateTime, Utc};

use crate::clock::to_millis;
use crate::db::Store;

/// A named cron schedule (seconds-first, seven fields allowed: `sec min hour dom mon dow [year]`).
pub struct Recurring {
    pub name: &'static str,
    schedule: cron::Schedule,
}

impl Recurring {
    pub fn new(name: &'static str, expression: &str) -> anyhow::Result<Self> {
        let schedule = cron::Schedule::from_str(expression).map_err(|error| {
            anyhow::anyhow!("schedule `{name}`: invalid cron expression `{expression}`: {error}")
        })?;
        Ok(Recurring { name, schedule })
    }

    /// The first occurrence strictly after `at`.
    pub(crate) fn next_after(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.schedule.after(&at).next()
    }
}

/// True if `schedule` is due at `now` and this caller won the right to run it.
pub(crate) async fn claim_if_due(
    store: &Store,
    schedule: &Recurring,
    now: DateTime<Utc>,
) -> sqlx::Result<bool> {
    let Some(next) = schedule.next_after(now) else {
        return Ok(false);
    };
    // First sight of a schedule: its first run is its next occurrence, not now.
    sqlx::query(
        "INSERT INTO schedules (name, next_run_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind(schedule.name)
    .bind(to_millis(next))
    .execute(store.write())
    .await?;
    let moved = sqlx::query(
        "UPDATE schedules SET next_run_at = $1, last_run_at = $2 WHERE name = $3 AND next_run_at <= $2",
    )
    .bind(to_millis(next))
    .bind(to_millis(now))
    .bind(schedule.name)
    .execute(store.write())
    .await?;
    Ok(moved.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::from_millis;

    #[test]
    fn cron_expressions_give_the_next_occurrence() {
        let daily = Recurring::new("daily", "0 0 0 * * *").expect("valid");
        let at = DateTime::parse_from_rfc3339("2026-11-23T10:15:00Z")
            .expect("time")
            .with_timezone(&Utc);
        let next = daily.next_after(at).expect("next");
        assert_eq!(next.to_rfc3339(), "2026-11-24T00:00:00+00:00");
        assert!(Recurring::new("bad", "every day").is_err());
        let _ = from_millis(0);
    }
}
