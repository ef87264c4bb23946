//! What PostgreSQL itself did while a load ran, beside the load's own tail.
//!
//! Two things in a cluster's own housekeeping hold up every commit for tens of milliseconds
//! (docs/benchmarks.md, session 61):
//! - **a young cluster's WAL**: until it has about `max_wal_size` of WAL segments to recycle,
//!   PostgreSQL creates each new 16 MB segment as the WAL reaches it, filling it with zeros and
//!   syncing it while the commits behind wait;
//! - **a checkpoint's sync**: at its end a checkpoint `fsync`s every data file written since
//!   the last one, and the WAL's flushes queue behind those writes.
//!
//! So a paced load on PostgreSQL reports how many segments the cluster created meanwhile and
//! how long the sync phases of the checkpoints that ended meanwhile took, read from
//! `pg_ls_waldir()` (a superuser's or `pg_monitor`'s) and the checkpointer's statistics.

use std::fmt;

/// The counters read before and after a load.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// WAL segment files in `pg_wal`, when this role may list them.
    segments: Option<i64>,
    /// Milliseconds spent in checkpoints' sync phase, since the statistics were reset.
    sync_ms: f64,
}

/// The cluster at `base` now, read on a thread of its own (the caller may be inside a
/// runtime); `None` (said on stderr) when it cannot be read.
pub fn sample(base: &str) -> Option<Sample> {
    let read = super::on_postgres_thread(base, |mut conn| async move {
        // PostgreSQL 17 moved the checkpointer's counters to a view of their own.
        let sync_ms: (f64,) =
            match sqlx::query_as("SELECT checkpoint_sync_time::float8 FROM pg_stat_bgwriter")
                .fetch_one(&mut conn)
                .await
            {
                Ok(row) => row,
                Err(_) => {
                    sqlx::query_as("SELECT sync_time::float8 FROM pg_stat_checkpointer")
                        .fetch_one(&mut conn)
                        .await?
                }
            };
        // Segments only: `pg_wal` holds the archive status directory and history files too.
        let segments: Option<(i64,)> = sqlx::query_as(
            "SELECT count(*)::int8 FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'",
        )
        .fetch_one(&mut conn)
        .await
        .ok();
        Ok(Sample {
            segments: segments.map(|(count,)| count),
            sync_ms: sync_ms.0,
        })
    });
    match read {
        Ok(sample) => Some(sample),
        Err(error) => {
            eprintln!("PostgreSQL's counters: {error}");
            None
        }
    }
}

/// What changed between two [`Sample`]s.
pub struct Meanwhile {
    before: Sample,
    after: Sample,
}

impl Meanwhile {
    pub fn between(before: Sample, after: Sample) -> Self {
        Meanwhile { before, after }
    }
}

impl fmt::Display for Meanwhile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgreSQL meanwhile: ")?;
        match (self.before.segments, self.after.segments) {
            // A checkpoint ending in the window may also remove segments: at least this many
            // were created.
            (Some(before), Some(after)) if after > before => write!(
                f,
                "{} WAL segments created ({after} now: a young cluster)",
                after - before
            )?,
            (Some(_), Some(after)) => write!(f, "no WAL segment created ({after})")?,
            _ => write!(f, "WAL segments not listed (pg_ls_waldir needs pg_monitor)")?,
        }
        // Counted when a checkpoint ends, for the whole of its sync phase.
        let sync_ms = self.after.sync_ms - self.before.sync_ms;
        write!(f, "; checkpoints' sync {sync_ms:.0} ms")
    }
}
