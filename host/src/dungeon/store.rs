//! The dungeon's rows: a run (its game state as a cache, guarded by a version so concurrent
//! turns are serialized), and its events (the durable, ordered record every watcher replays).
//! A change to a run is one transaction: the run row moves forward only if nobody else moved
//! it first, and its events are written with it; the bus hears of them after the commit.

use serde_json::Value;

use super::DungeonError;
use super::game::{Run, RunStatus};
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::db::Store;
use crate::events::Bus;
use crate::events::Event;

/// Event kinds of the watch stream.
pub(crate) const TURN: &str = "run:turn";
pub(crate) const BROADCAST: &str = "run:broadcast";
pub(crate) const ENDED: &str = "run:ended";

/// A run as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct RunRow {
    pub id: String,
    pub dungeon_id: String,
    pub wallet: String,
    pub class: String,
    #[sqlx(try_from = "String")]
    pub status: RunStatus,
    pub score: i64,
    pub deepest_floor: i64,
    pub turn_number: i64,
    pub version: i64,
    pub state: String,
    pub created_at: i64,
    pub last_action_at: i64,
    pub ended_at: Option<i64>,
}

const COLUMNS: &str = "id, dungeon_id, wallet, class, status, score, deepest_floor, turn_number, version, state, created_at, last_action_at, ended_at";

impl RunRow {
    /// The game run this row caches.
    pub(crate) fn game(&self) -> Result<Run, DungeonError> {
        serde_json::from_str(&self.state).map_err(DungeonError::internal)
    }

    pub(crate) fn is_active(&self) -> bool {
        self.status == RunStatus::Active
    }
}

pub(crate) async fn load(store: &Store, run_id: &str) -> Result<Option<RunRow>, DungeonError> {
    load_where(store, "id", run_id).await
}

/// The run a key hash belongs to (the run-key check reads the whole row, so a turn needs no
/// second read).
pub(crate) async fn load_by_key_hash(
    store: &Store,
    hash: &str,
) -> Result<Option<RunRow>, DungeonError> {
    load_where(store, "key_hash", hash).await
}

/// Why the account that plays `run_id` is suspended, if it is.
pub(crate) async fn suspension_of_run(
    store: &Store,
    run_id: &str,
) -> Result<Option<String>, DungeonError> {
    let row: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT a.suspension_reason FROM dungeon_runs r JOIN accounts a ON a.id = r.account_id
         WHERE r.id = $1 AND a.suspended_at IS NOT NULL",
    )
    .bind(run_id)
    .fetch_optional(store.read())
    .await?;
    Ok(row.map(|(reason,)| reason.unwrap_or_else(|| "no reason given".to_owned())))
}

/// The run whose unique `column` equals `value`.
async fn load_where(
    store: &Store,
    column: &'static str,
    value: &str,
) -> Result<Option<RunRow>, DungeonError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM dungeon_runs WHERE {column} = $1"
    ))
    .bind(value)
    .fetch_optional(store.read())
    .await?)
}

pub(crate) async fn list_for_account(
    store: &Store,
    account_id: &str,
) -> Result<Vec<RunRow>, DungeonError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM dungeon_runs WHERE account_id = $1 ORDER BY created_at DESC, id LIMIT 500"
    ))
    .bind(account_id)
    .fetch_all(store.read())
    .await?)
}

/// One stored event.
#[derive(Debug, Clone)]
pub(crate) struct StoredEvent {
    pub seq: i64,
    pub kind: String,
    pub payload: Value,
    pub created_at: i64,
}

/// An event row; its payload is JSON text until [`StoredEvent`] parses it.
#[derive(sqlx::FromRow)]
struct EventRow {
    seq: i64,
    kind: String,
    payload: String,
    created_at: i64,
}

/// A run's events after `after_seq`, in order.
pub(crate) async fn events_after(
    store: &Store,
    run_id: &str,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<StoredEvent>, DungeonError> {
    let rows: Vec<EventRow> = sqlx::query_as(
        "SELECT seq, kind, payload, created_at FROM dungeon_run_events
         WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(run_id)
    .bind(after_seq)
    .bind(limit)
    .fetch_all(store.read())
    .await?;
    rows.into_iter()
        .map(|row| {
            Ok(StoredEvent {
                seq: row.seq,
                kind: row.kind,
                payload: serde_json::from_str(&row.payload).map_err(DungeonError::internal)?,
                created_at: row.created_at,
            })
        })
        .collect()
}

/// The stored `run:turn` payload of legal turn `turn_number`, if it was played.
pub(crate) async fn turn_record(
    store: &Store,
    run_id: &str,
    turn_number: i64,
) -> Result<Option<Value>, DungeonError> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT payload FROM dungeon_run_events WHERE run_id = $1 AND turn_number = $2 AND kind = $3",
    )
    .bind(run_id)
    .bind(turn_number)
    .bind(TURN)
    .fetch_optional(store.read())
    .await?;
    row.map(|(payload,)| serde_json::from_str(&payload).map_err(DungeonError::internal))
        .transpose()
}

/// An event to append: kind, the legal turn it records (if any), payload.
pub(crate) struct NewEvent {
    pub kind: &'static str,
    pub turn_number: Option<i64>,
    pub payload: Value,
}

/// Why [`advance`] did not write.
pub(crate) enum Advance {
    Written,
    /// Someone else moved the run first: reload and try again.
    Raced,
}

/// Store `run` as the new state of `row` (if `row.version` is still current) together with
/// `events`, then announce them.
pub(crate) async fn advance(
    store: &Store,
    clock: &dyn Clock,
    bus: &Bus,
    row: &RunRow,
    run: &Run,
    events: Vec<NewEvent>,
) -> Result<Advance, DungeonError> {
    let now = to_millis(clock.now());
    let over = run.status().is_over();
    let serialized = serde_json::to_string(run).map_err(DungeonError::internal)?;
    let count = events.len() as i64;
    let mut tx = store.begin().await?;
    let updated: Option<(i64,)> = sqlx::query_as(
        "UPDATE dungeon_runs SET state = $1, version = version + 1, status = $2, score = $3,
             deepest_floor = $4, turn_number = $5, last_seq = last_seq + $6, last_action_at = $7,
             ended_at = CASE WHEN $8 = 1 THEN $7 ELSE ended_at END
         WHERE id = $9 AND version = $10
         RETURNING last_seq",
    )
    .bind(&serialized)
    .bind(run.status().as_str())
    .bind(run.score())
    .bind(i64::from(run.tally().deepest_floor))
    .bind(run.turn_number() as i64)
    .bind(count)
    .bind(now)
    .bind(i64::from(over))
    .bind(&row.id)
    .bind(row.version)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((last_seq,)) = updated else {
        return Ok(Advance::Raced);
    };
    let first = last_seq - count + 1;
    for (offset, event) in events.iter().enumerate() {
        insert_event(&mut tx, &row.id, first + offset as i64, event, now).await?;
    }
    tx.commit().await?;
    announce(bus, &row.id, last_seq);
    Ok(Advance::Written)
}

/// At most `max` events of the appended kind in the last `window_ms` (a rate per run).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WindowLimit {
    pub max: i64,
    pub window_ms: i64,
}

/// What [`append`] did.
#[derive(Debug)]
pub(crate) enum Appended {
    /// Stored with this sequence number.
    Written(i64),
    /// The run is no longer active.
    Ended,
    /// The window is full; the oldest event in it was at this time (Unix ms).
    Limited { oldest_at: i64 },
}

/// Append one event to an active run (broadcasts), outside the turn pipeline, at most
/// `limit.max` of its kind per window.
///
/// The limit is checked inside the transaction, after the run's row is updated: that update
/// takes the row's write lock (PostgreSQL) or the database's (SQLite), so concurrent appends to
/// one run count one after the other and the window can never be overfilled.
pub(crate) async fn append(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    run_id: &str,
    event: NewEvent,
    limit: WindowLimit,
) -> Result<Appended, DungeonError> {
    let now = to_millis(clock.now());
    let mut tx = store.begin().await?;
    let updated: Option<(i64,)> = sqlx::query_as(
        "UPDATE dungeon_runs SET last_seq = last_seq + 1 WHERE id = $1 AND status = 'active' RETURNING last_seq",
    )
    .bind(run_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((seq,)) = updated else {
        return Ok(Appended::Ended);
    };
    let (count, oldest): (i64, Option<i64>) = sqlx::query_as(
        "SELECT COUNT(*), MIN(created_at) FROM dungeon_run_events
         WHERE run_id = $1 AND kind = $2 AND created_at > $3",
    )
    .bind(run_id)
    .bind(event.kind)
    .bind(now - limit.window_ms)
    .fetch_one(&mut *tx)
    .await?;
    if count >= limit.max {
        // Dropping the transaction rolls the sequence bump back.
        return Ok(Appended::Limited {
            oldest_at: oldest.unwrap_or(now),
        });
    }
    insert_event(&mut tx, run_id, seq, &event, now).await?;
    tx.commit().await?;
    announce(events, run_id, seq);
    Ok(Appended::Written(seq))
}

async fn insert_event(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    run_id: &str,
    seq: i64,
    event: &NewEvent,
    now: i64,
) -> Result<(), DungeonError> {
    sqlx::query(
        "INSERT INTO dungeon_run_events (run_id, seq, kind, turn_number, payload, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(run_id)
    .bind(seq)
    .bind(event.kind)
    .bind(event.turn_number)
    .bind(event.payload.to_string())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn announce(events: &Bus, run_id: &str, seq: i64) {
    events.publish(Event::DungeonRunEvent {
        run_id: run_id.to_owned(),
        seq,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_statuses_read_back_and_unknown_ones_are_refused() {
        for status in [
            RunStatus::Active,
            RunStatus::Cleared,
            RunStatus::Dead,
            RunStatus::Exhausted,
            RunStatus::Abandoned,
        ] {
            let read = RunStatus::try_from(status.as_str().to_owned()).ok();
            assert_eq!(read, Some(status));
        }
        assert!(RunStatus::try_from("paused".to_owned()).is_err());
        assert!(RunStatus::try_from("Active".to_owned()).is_err());
    }
}
