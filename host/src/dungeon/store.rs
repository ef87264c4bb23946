//! The dungeon's rows: a run (its game state as a cache, guarded by a version so concurrent
//! turns are serialized), and its events (the durable, ordered record every watcher replays).
//! A change to a run is one transaction: the run row moves forward only if nobody else moved
//! it first, and its events are written with it; the bus hears of them after the commit.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use crucible_sql::{self as sql, Conn, LONG_TEXT, Rows};
use futures_util::future::BoxFuture;

use serde_json::Value;

use super::DungeonError;
use super::game::{Action, Run, RunStatus};
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::db::{BatchWrite, Outcomes, Store};
use crate::events::Bus;
use crate::events::Event;

/// Event kinds of the watch stream.
pub(crate) const TURN: &str = "run:turn";
pub(crate) const BROADCAST: &str = "run:broadcast";
/// A run's broadcasts since a time: the kind is written out (not bound) so the planner can use
/// the partial index of broadcasts.
const BROADCASTS_IN_WINDOW: &str = "SELECT COUNT(*), MIN(created_at) FROM dungeon_run_events
     WHERE run_id = $1 AND kind = 'run:broadcast' AND created_at > $2";
pub(crate) const ENDED: &str = "run:ended";

/// On SQLite, a run's events with a sequence number above `$2` as a table `chain(id)`: walked
/// back from the event `start` names along each event's `prev`, until the one at `$2`. There
/// the events are in the order they were appended and no index by run is written per turn
/// (migration 0043; docs/architecture.md, "A run's events"). Each step checks the run, so a
/// run whose events retention deleted finds none, never another's. PostgreSQL finds them along
/// its primary key `(run_id, seq)` ([`is_chained`]).
fn chain_above(start: &str) -> String {
    format!(
        "WITH RECURSIVE chain(id, prev) AS (
             SELECT id, prev FROM dungeon_run_events
             WHERE id = {start} AND run_id = $1 AND seq > $2
             UNION ALL
             SELECT e.id, e.prev FROM chain JOIN dungeon_run_events e ON e.id = chain.prev
             WHERE e.run_id = $1 AND e.seq > $2)"
    )
}

/// Where [`chain_above`] starts for every event above `$2`: the run's last event.
const LAST_EVENT: &str = "(SELECT last_event_id FROM dungeon_runs WHERE id = $1)";

/// Where [`chain_above`] starts for a page of at most `$3` events: at the run's first marked
/// event (every 64th, a partial index) at or past the page's end, or at its last event when
/// none is, so the walk is at most the page and 63 events long however long the run is.
const PAGE_END: &str = "COALESCE(
         (SELECT id FROM dungeon_run_events
          WHERE run_id = $1 AND seq % 64 = 0 AND seq >= $2 + $3 ORDER BY seq LIMIT 1),
         (SELECT last_event_id FROM dungeon_runs WHERE id = $1))";

/// Whether `store` keeps a run's events chained ([`chain_above`]): SQLite's layout.
fn is_chained(store: &Store) -> bool {
    store.backend() == crate::db::Backend::Sqlite
}

/// A run as stored, without its game state: what a key check and a turn's checks read.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct RunHead {
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
    pub created_at: i64,
    pub last_action_at: i64,
    pub ended_at: Option<i64>,
}

impl RunHead {
    pub(crate) fn is_active(&self) -> bool {
        self.status == RunStatus::Active
    }
}

/// A run as stored, with its game state's last snapshot: the state as of event `state_seq`
/// (the turns after it, up to `last_seq`, are replayed from their events by [`game`]).
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct RunRow {
    #[sqlx(flatten)]
    pub head: RunHead,
    pub state: String,
    pub state_seq: i64,
    pub last_seq: i64,
}

impl std::ops::Deref for RunRow {
    type Target = RunHead;

    fn deref(&self) -> &RunHead {
        &self.head
    }
}

/// A run's head, from `dungeon_runs r` (a macro, so [`COLUMNS`] extends it at compile time).
macro_rules! head_columns {
    () => {
        "r.id, r.dungeon_id, r.wallet, r.class, r.status, r.score, r.deepest_floor, r.turn_number, r.version, r.created_at, r.last_action_at, r.ended_at"
    };
}
const HEAD_COLUMNS: &str = head_columns!();
/// A run's head, its snapshot (`state` as of `state_seq`) and its last sequence number, from
/// `dungeon_runs r JOIN dungeon_run_snapshots s`.
const COLUMNS: &str = concat!(head_columns!(), ", s.state, s.seq AS state_seq, r.last_seq");
const FROM_RUNS: &str = "dungeon_runs r JOIN dungeon_run_snapshots s ON s.run_id = r.id";

/// A snapshot of the state is stored every this many legal turns (and when the run ends): a
/// turn writes a few hundred bytes instead of the whole state (about 14 KB), and a node that
/// does not hold the run replays at most this many turns' actions.
pub(crate) const SNAPSHOT_EVERY: u64 = 32;

/// Whether the turn that reaches `turn_number` stores a snapshot of `run_id`'s state: every
/// [`SNAPSHOT_EVERY`] turns, at a phase of its own. Runs entered together and played at one
/// pace (a day's opening, an operator's fleet) would otherwise all store their ~14 KB state on
/// the same turn, and those turns' batches would write several megabytes at once while every
/// other request waits behind them. The phase is a hash of the id, so it is the same on every
/// node; nothing depends on it ([`game`] replays from whichever snapshot is stored).
pub fn snapshot_due(run_id: &str, turn_number: u64) -> bool {
    // The engine's stable hash of text (the one that seeds the run's dice): FNV-1a, mixed, so
    // ids that differ only in their last characters still spread over every phase.
    let phase = super::game::rng::seed_from_str(run_id) % SNAPSHOT_EVERY;
    (turn_number + phase).is_multiple_of(SNAPSHOT_EVERY)
}

/// The game state of the run at `row`: its snapshot, and the actions of the turns stored after
/// it (up to the row's own last event, so a turn committed since the row was read is not
/// replayed into it) played again. The engine is deterministic: the same actions on the same
/// state give the same state.
pub(crate) async fn game(store: &Store, row: &RunRow) -> Result<Run, DungeonError> {
    let mut run: Run = serde_json::from_str(&row.state).map_err(DungeonError::internal)?;
    if row.state_seq >= row.last_seq {
        return Ok(run);
    }
    static CHAINED: LazyLock<String> = LazyLock::new(|| {
        format!(
            "{} SELECT e.action FROM chain JOIN dungeon_run_events e ON e.id = chain.id
             WHERE e.seq <= $3 AND e.kind = $4 ORDER BY e.seq",
            chain_above(LAST_EVENT)
        )
    });
    let sql = if is_chained(store) {
        CHAINED.as_str()
    } else {
        "SELECT action FROM dungeon_run_events
         WHERE run_id = $1 AND seq > $2 AND seq <= $3 AND kind = $4 ORDER BY seq"
    };
    let actions: Vec<(Option<String>,)> = sqlx::query_as(sql)
        .bind(&row.id)
        .bind(row.state_seq)
        .bind(row.last_seq)
        .bind(TURN)
        .fetch_all(store.read())
        .await?;
    for (action,) in actions {
        let action = action.ok_or_else(|| {
            DungeonError::internal(anyhow::anyhow!("a turn of {} without its action", row.id))
        })?;
        let action: Action = serde_json::from_str(&action).map_err(DungeonError::internal)?;
        // Legal or not, the turn was played (an illegal one charged its AP): replaying it does
        // the same.
        let _ = run.apply(&action);
    }
    Ok(run)
}

/// A run a key opens: its head, and why its account is suspended if it is.
pub(crate) struct KeyedRun {
    pub head: RunHead,
    pub suspension: Option<String>,
}

/// The run a key hash belongs to, with its account's suspension, in one read (a turn needs no
/// other when this node holds the run's state, [`super::run_cache`]).
pub(crate) async fn load_by_key_hash(
    store: &Store,
    hash: &str,
) -> Result<Option<KeyedRun>, DungeonError> {
    // Every turn starts here: run in place on a SQLite file (docs/architecture.md,
    // "Statements in place"), with the statement's text made once.
    static BY_KEY_HASH: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {HEAD_COLUMNS},
                    CASE WHEN a.suspended_at IS NOT NULL
                         THEN COALESCE(a.suspension_reason, 'no reason given') END AS suspension
             FROM dungeon_runs r LEFT JOIN accounts a ON a.id = r.account_id
             WHERE r.key_hash = $1"
        )
    });
    let mut reader = store.reader().await?;
    let row: Option<KeyedRow> = sql::query(&BY_KEY_HASH)
        .bind(hash)
        .fetch_optional(&mut reader.conn()?)
        .await?;
    drop(reader);
    row.map(|row| {
        let status = RunStatus::try_from(row.4)
            .map_err(|error| DungeonError::internal(anyhow::anyhow!("{error}")))?;
        Ok(KeyedRun {
            head: RunHead {
                id: row.0,
                dungeon_id: row.1,
                wallet: row.2,
                class: row.3,
                status,
                score: row.5,
                deepest_floor: row.6,
                turn_number: row.7,
                version: row.8,
                created_at: row.9,
                last_action_at: row.10,
                ended_at: row.11,
            },
            suspension: row.12,
        })
    })
    .transpose()
}

/// [`HEAD_COLUMNS`] and the account's suspension, as a row decodes them.
type KeyedRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<String>,
);

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

pub(crate) async fn load(store: &Store, run_id: &str) -> Result<Option<RunRow>, DungeonError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM {FROM_RUNS} WHERE r.id = $1"
    ))
    .bind(run_id)
    .fetch_optional(store.read())
    .await?)
}

pub(crate) async fn list_for_account(
    store: &Store,
    account_id: &str,
) -> Result<Vec<RunRow>, DungeonError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM {FROM_RUNS} WHERE r.account_id = $1 ORDER BY r.created_at DESC, r.id LIMIT 500"
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
    static CHAINED: LazyLock<String> = LazyLock::new(|| {
        format!(
            "{} SELECT e.seq, e.kind, e.payload, e.created_at
             FROM chain JOIN dungeon_run_events e ON e.id = chain.id ORDER BY e.seq LIMIT $3",
            chain_above(PAGE_END)
        )
    });
    let sql = if is_chained(store) {
        CHAINED.as_str()
    } else {
        "SELECT seq, kind, payload, created_at FROM dungeon_run_events
         WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
    };
    let rows: Vec<EventRow> = sqlx::query_as(sql)
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
    // No index holds turn numbers (migration 0039): the run's events are walked from the
    // earliest place turn N can be, since each legal turn before it has an event of its own.
    static CHAINED: LazyLock<String> = LazyLock::new(|| {
        format!(
            "{} SELECT e.payload FROM chain JOIN dungeon_run_events e ON e.id = chain.id
             WHERE e.turn_number = $3 AND e.kind = $4 ORDER BY e.seq LIMIT 1",
            chain_above(LAST_EVENT)
        )
    });
    let query = if is_chained(store) {
        sqlx::query_as(CHAINED.as_str())
            .bind(run_id)
            .bind(turn_number - 1)
            .bind(turn_number)
            .bind(TURN)
    } else {
        sqlx::query_as(
            "SELECT payload FROM dungeon_run_events
             WHERE run_id = $1 AND seq >= $2 AND turn_number = $2 AND kind = $3
             ORDER BY seq LIMIT 1",
        )
        .bind(run_id)
        .bind(turn_number)
        .bind(TURN)
    };
    let row: Option<(String,)> = query.fetch_optional(store.read()).await?;
    row.map(|(payload,)| serde_json::from_str(&payload).map_err(DungeonError::internal))
        .transpose()
}

/// An event to append: kind, the legal turn it records (if any), payload.
pub(crate) struct NewEvent {
    pub kind: &'static str,
    pub turn_number: Option<i64>,
    /// The event's JSON, serialized.
    pub payload: String,
    /// A turn's action as it was sent (JSON), replayed after the run's last snapshot.
    pub action: Option<String>,
}

/// Why [`advance`] did not write.
pub(crate) enum Advance {
    Written,
    /// Someone else moved the run first: reload and try again.
    Raced,
}

/// Who moves a run: its player (a turn, refused once the account is suspended) or the server
/// (an abandonment, which ends a suspended account's run too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mover {
    Player,
    Server,
}

/// Store `run` as the new state of the run at `head` (if `head.version` is still current)
/// together with `events`, then announce them. The write shares its transaction and its flush
/// with the other turns of the moment ([`crate::db::GroupCommit`]); it is answered once durable.
pub(crate) async fn advance(
    store: &Store,
    clock: &dyn Clock,
    bus: &Bus,
    head: &RunHead,
    run: &Run,
    events: Vec<NewEvent>,
    mover: Mover,
) -> Result<Advance, DungeonError> {
    let write = RunWrite {
        run_id: head.id.clone(),
        version: head.version,
        by_player: mover == Mover::Player,
        ranked: run.status() != head.status || run.score() != head.score,
        state: (run.status().is_over() || snapshot_due(&head.id, run.turn_number()))
            .then(|| serde_json::to_string(run))
            .transpose()
            .map_err(DungeonError::internal)?,
        status: run.status().as_str(),
        score: run.score(),
        deepest_floor: i64::from(run.tally().deepest_floor),
        turn_number: run.turn_number() as i64,
        over: run.status().is_over(),
        now: to_millis(clock.now()),
        events: events
            .into_iter()
            .map(|event| StoredTurnEvent {
                kind: event.kind,
                turn_number: event.turn_number,
                payload: event.payload,
                action: event.action,
            })
            .collect(),
    };
    let written = store.group().write(write).await?;
    Ok(match written {
        Some(last_seq) => {
            announce(bus, &head.id, last_seq);
            Advance::Written
        }
        None => Advance::Raced,
    })
}

/// One turn's (or ending's) write: the run row moved forward under its version guard, and its
/// events appended after the run's last sequence number.
struct RunWrite {
    run_id: String,
    version: i64,
    /// A player's turn: refused when the run's account is suspended.
    by_player: bool,
    /// The write changes the run's status or its score ([`Sets::All`]); most turns change
    /// neither ([`Sets::KeepingRank`]).
    ranked: bool,
    /// A new snapshot of the state, when this write takes one.
    state: Option<String>,
    status: &'static str,
    score: i64,
    deepest_floor: i64,
    turn_number: i64,
    over: bool,
    now: i64,
    events: Vec<StoredTurnEvent>,
}

/// An event as [`RunWrite`] stores it.
struct StoredTurnEvent {
    kind: &'static str,
    turn_number: Option<i64>,
    payload: String,
    action: Option<String>,
}

/// A run's columns in a turn batch's `UPDATE`: id, version, status, score, deepest floor, turn
/// number, events appended, time, over, by the player.
const RUN_TYPES: [&str; 10] = [
    "text", "int8", "text", "int8", "int8", "int8", "int8", "int8", "int8", "int8",
];
/// Runs per statement on SQLite ([`Rows`]), where a statement reads their last events.
const HEADS_PER_STATEMENT: usize = crate::db::rows_per_statement(1);
/// A snapshot's columns: run, sequence number, state.
const SNAPSHOT_TYPES: [&str; 3] = ["text", "int8", "text"];
/// A snapshot's columns when its sequence number comes from the run's `UPDATE` (PostgreSQL): run,
/// state (kilobytes of JSON: beside the batch's rows, [`LONG_TEXT`]).
const NEW_SNAPSHOT_TYPES: [&str; 2] = ["text", LONG_TEXT];
/// Snapshots per statement on SQLite ([`Rows`]).
const SNAPSHOTS_PER_STATEMENT: usize = crate::db::rows_per_statement(SNAPSHOT_TYPES.len());
/// An event's columns: run, sequence number (in the one statement on PostgreSQL: how many of its
/// write's events follow it), kind, turn number, payload (a turn's record, most of a batch's
/// bytes: [`LONG_TEXT`]), time, action.
const EVENT_TYPES: [&str; 7] = ["text", "int8", "text", "int8", LONG_TEXT, "int8", "text"];
/// On SQLite, where events are chained ([`chain_above`]), a run's row carries its new last
/// event too ([`RUN_TYPES`] and that id), and an event its own id and the one before it in its
/// run ([`EVENT_TYPES`] after those two).
const CHAINED_RUN_TYPES: [&str; 11] = [
    "text", "int8", "text", "int8", "int8", "int8", "int8", "int8", "int8", "int8", "int8",
];
const CHAINED_RUNS_PER_STATEMENT: usize = crate::db::rows_per_statement(CHAINED_RUN_TYPES.len());
const CHAINED_EVENT_TYPES: [&str; 9] = [
    "int8", "int8", "text", "int8", "text", "int8", LONG_TEXT, "int8", "text",
];
const CHAINED_EVENTS_PER_STATEMENT: usize =
    crate::db::rows_per_statement(CHAINED_EVENT_TYPES.len());

impl BatchWrite for RunWrite {
    /// The run's new last sequence number, or `None` when its version had moved on.
    type Output = Option<i64>;
    type Error = DungeonError;

    const ONE_STATEMENT_ON_POSTGRES: bool = true;
    const SPREAD_OVER_LANES: bool = true;

    /// Every run of the batch moved under its version guard, then the snapshots the batch
    /// takes and every event of the runs that moved: on SQLite an `UPDATE … FROM (VALUES …)`
    /// per couple of dozen runs and then the other tables', on PostgreSQL all of it in one
    /// statement ([`apply_on_postgres`]). Two writes of one run in one batch read the same
    /// version at best, so only the first is tried; the others lost the race.
    fn apply_all<'c, 'd>(
        writes: &'c [Arc<Self>],
        conn: &'c mut Conn<'d>,
    ) -> BoxFuture<'c, Outcomes<Option<i64>, DungeonError>> {
        Box::pin(async move {
            let mut first_of_run: HashMap<&str, usize> = HashMap::new();
            let mut tried: Vec<usize> = (0..writes.len())
                .filter(|&index| {
                    *first_of_run
                        .entry(writes[index].run_id.as_str())
                        .or_insert(index)
                        == index
                })
                .collect();
            // Runs in one order, so two batches in flight at once (PostgreSQL's lanes, or two
            // nodes) never wait on each other's rows in a cycle.
            tried.sort_unstable_by(|a, b| writes[*a].run_id.cmp(&writes[*b].run_id));
            let moved = if conn.is_postgres() {
                apply_on_postgres(writes, &tried, conn).await?
            } else {
                apply_in_steps(writes, &tried, conn).await?
            };
            Ok(writes
                .iter()
                .enumerate()
                .map(|(index, write)| {
                    let first = first_of_run.get(write.run_id.as_str()) == Some(&index);
                    Ok(if first {
                        moved.get(&write.run_id).copied()
                    } else {
                        None
                    })
                })
                .collect())
        })
    }
}

/// The runs (`tried`, positions in `writes`, in the runs' order) moved, their snapshots taken
/// and their events appended by one statement, which commits by itself when it runs alone
/// ([`BatchWrite::ONE_STATEMENT_ON_POSTGRES`]): the runs' `UPDATE` returns each moved run's new
/// last sequence number, and the snapshots' `UPDATE` and the events' `INSERT` read it from
/// there, so no answer has to come back to this process between them. Each event carries how
/// many of its run's events follow it in this write (`behind`): its sequence number is the
/// run's new last one less that. The moved runs and their last sequence numbers.
async fn apply_on_postgres(
    writes: &[Arc<RunWrite>],
    tried: &[usize],
    conn: &mut Conn<'_>,
) -> sqlx::Result<HashMap<String, i64>> {
    let mut runs = Rows::new(conn, &RUN_TYPES);
    let mut snapshots = Rows::new(conn, &NEW_SNAPSHOT_TYPES);
    let mut events = Rows::new(conn, &EVENT_TYPES);
    // Room for the long texts as they come, and for the rest of each row with its escapes.
    let (mut state_bytes, mut payload_bytes, mut event_rows) = (0, 0, 0);
    for &index in tried {
        let write = &*writes[index];
        state_bytes += write.state.as_ref().map_or(0, String::len);
        payload_bytes += write
            .events
            .iter()
            .map(|event| event.payload.len())
            .sum::<usize>();
        event_rows += write
            .events
            .iter()
            .map(|event| {
                128 + event
                    .action
                    .as_ref()
                    .map_or(0, |action| action.len() * 6 / 5)
            })
            .sum::<usize>();
    }
    runs.reserve(tried.len() * 128, 0);
    snapshots.reserve(tried.len() * 48, state_bytes);
    events.reserve(event_rows, payload_bytes);
    for &index in tried {
        let write = &*writes[index];
        runs.push(run_row(write));
        if let Some(state) = &write.state {
            snapshots.push([write.run_id.as_str().into(), state.as_str().into()]);
        }
        let count = write.events.len();
        for n in 0..count {
            events.push(event_row(write, n, (count - 1 - n) as i64));
        }
    }
    let sql = format!(
        "WITH moved AS ({moved}),
              snapshots AS (
                  UPDATE dungeon_run_snapshots SET seq = moved.last_seq, state = s.column2
                  FROM {snapshot_rows} AS s JOIN moved ON moved.id = s.column1
                  WHERE dungeon_run_snapshots.run_id = s.column1),
              appended AS (
                  INSERT INTO dungeon_run_events
                      (run_id, seq, kind, turn_number, payload, created_at, action)
                  SELECT e.column1, moved.last_seq - e.column2, e.column3, e.column4, e.column5,
                         e.column6, e.column7
                  FROM {event_rows} AS e JOIN moved ON moved.id = e.column1)
         SELECT id, last_seq FROM moved",
        moved = move_runs_sql(&runs.table(0), true, Sets::All),
        snapshot_rows = snapshots.table(runs.params()),
        event_rows = events.table(runs.params() + snapshots.params()),
    );
    let query = events.bind(snapshots.bind(runs.bind(sql::query(&sql))));
    let moved: Vec<(String, i64)> = query.fetch_all(conn).await?;
    Ok(moved.into_iter().collect())
}

/// A run's row in the runs' `UPDATE` ([`RUN_TYPES`]).
fn run_row(write: &RunWrite) -> [sql::Param<'_>; 10] {
    [
        write.run_id.as_str().into(),
        write.version.into(),
        write.status.into(),
        write.score.into(),
        write.deepest_floor.into(),
        write.turn_number.into(),
        (write.events.len() as i64).into(),
        write.now.into(),
        write.over.into(),
        write.by_player.into(),
    ]
}

/// The `n`th event of `write` as a row ([`EVENT_TYPES`]), its second column `place`: its sequence
/// number, or (in the one statement on PostgreSQL) how many of the write's events follow it.
fn event_row(write: &RunWrite, n: usize, place: i64) -> [sql::Param<'_>; 7] {
    let event = &write.events[n];
    [
        write.run_id.as_str().into(),
        place.into(),
        event.kind.into(),
        event.turn_number.into(),
        event.payload.as_str().into(),
        write.now.into(),
        event.action.as_deref().into(),
    ]
}

/// What a batch's `UPDATE` of the runs sets ([`move_runs_sql`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sets {
    /// Every column a turn moves.
    All,
    /// All but the status and the score, which the rows must hold already (a guard beside the
    /// version's: a write that expected otherwise lost a race, and reads the run again). SQLite
    /// rewrites an index's entry for every row an `UPDATE` touches when the statement sets one
    /// of the index's columns (or one its `WHERE` reads), changed or not, and both are indexed:
    /// the day's board by score, the active runs by status. Most turns change neither.
    KeepingRank,
}

/// The `UPDATE` that moves the runs of `rows` (a table of [`run_row`]s) under their version
/// guards (and a player's turn only while the account is not suspended), returning each moved
/// run's id and new last sequence number.
///
/// On PostgreSQL the batch's ids come again as an array, which the primary key answers. The
/// planner takes a JSON batch for 100 rows whatever it holds, and where the runs' table looked
/// small to it (no statistics yet, a few hundred pages) it hashed the batch and read the whole
/// table per statement: every dead version of every run a busy day's turns leave behind until
/// pruning comes by (220 pages for 512 runs under load, 15 % of PostgreSQL's time during a turn
/// load).
///
/// On SQLite the rows carry an eleventh column, the run's new last event
/// ([`CHAINED_RUN_TYPES`]), which the runs' row names for the readers of the chain, and a
/// batch's runs that keep their status and score are moved by an `UPDATE` that leaves those
/// columns out ([`Sets::KeepingRank`]).
fn move_runs_sql(rows: &str, postgres: bool, sets: Sets) -> String {
    let (keys, last_event) = if postgres {
        (
            format!(" AND dungeon_runs.id = ANY(ARRAY(SELECT k.column1 FROM {rows} AS k))"),
            "",
        )
    } else {
        (
            String::new(),
            ",\n             last_event_id = COALESCE(v.column11, last_event_id)",
        )
    };
    let (rank, rank_kept) = match sets {
        Sets::All => ("status = v.column3, score = v.column4, ", ""),
        Sets::KeepingRank => (
            "",
            " AND dungeon_runs.status = v.column3 AND dungeon_runs.score = v.column4",
        ),
    };
    format!(
        "UPDATE dungeon_runs SET version = version + 1,
             {rank}deepest_floor = v.column5,
             turn_number = v.column6, last_seq = last_seq + v.column7,
             last_action_at = v.column8,
             ended_at = CASE WHEN v.column9 = 1 THEN v.column8 ELSE ended_at END{last_event}
         FROM {rows} AS v
         WHERE dungeon_runs.id = v.column1 AND dungeon_runs.version = v.column2{keys}{rank_kept}
           AND (v.column10 = 0 OR NOT EXISTS (SELECT 1 FROM accounts a
                           WHERE a.id = dungeon_runs.account_id
                             AND a.suspended_at IS NOT NULL))
         RETURNING id, last_seq"
    )
}

/// The runs (`tried`) moved, then their snapshots and events written, a few dozen rows a
/// statement (SQLite, in place: a statement costs microseconds there). The moved runs and their
/// last sequence numbers.
///
/// Events are chained, not indexed by run ([`chain_above`]): the batch numbers its events after
/// the table's last (the lane holds the file's write lock, so nobody appends meanwhile), links
/// each run's first new event to the run's last one, and the runs' update names each run's new
/// last event.
async fn apply_in_steps(
    writes: &[Arc<RunWrite>],
    tried: &[usize],
    conn: &mut Conn<'_>,
) -> sqlx::Result<HashMap<String, i64>> {
    let (last_id,): (i64,) = sql::query("SELECT COALESCE(MAX(id), 0) FROM dungeon_run_events")
        .fetch_one(conn)
        .await?;
    // Each tried write's events get the ids after `first_ids[n]` (a write whose run does not
    // move leaves its ids unused).
    let mut first_ids = Vec::with_capacity(tried.len());
    let mut next_id = last_id;
    for &index in tried {
        first_ids.push(next_id + 1);
        next_id += writes[index].events.len() as i64;
    }
    let mut last_events: HashMap<String, Option<i64>> = HashMap::with_capacity(tried.len());
    for chunk in tried.chunks(Rows::per_statement(conn, HEADS_PER_STATEMENT)) {
        let mut runs = Rows::new(conn, &["text"]);
        for &index in chunk {
            runs.push([writes[index].run_id.as_str().into()]);
        }
        let sql = format!(
            "SELECT id, last_event_id FROM dungeon_runs WHERE id IN (SELECT column1 FROM {})",
            runs.table(0)
        );
        let rows: Vec<(String, Option<i64>)> = runs.bind(sql::query(&sql)).fetch_all(conn).await?;
        last_events.extend(rows);
    }
    let mut moved: HashMap<String, i64> = HashMap::new();
    let tried_with_ids: Vec<(usize, i64)> = tried.iter().copied().zip(first_ids).collect();
    // The runs whose rank moves apart from the others, each with the `UPDATE` that sets what
    // it must (`Sets`).
    let (ranked, keeping): (Vec<_>, Vec<_>) = tried_with_ids
        .iter()
        .partition(|(index, _)| writes[*index].ranked);
    for (group, sets) in [(ranked, Sets::All), (keeping, Sets::KeepingRank)] {
        for chunk in group.chunks(Rows::per_statement(conn, CHAINED_RUNS_PER_STATEMENT)) {
            let mut runs = Rows::new(conn, &CHAINED_RUN_TYPES);
            for &&(index, first_id) in chunk {
                let write = &*writes[index];
                let count = write.events.len() as i64;
                let last_event = (count > 0).then_some(first_id + count - 1);
                let [a, b, c, d, e, f, g, h, i, j] = run_row(write);
                runs.push([a, b, c, d, e, f, g, h, i, j, last_event.into()]);
            }
            let sql = move_runs_sql(&runs.table(0), false, sets);
            let rows: Vec<(String, i64)> = runs.bind(sql::query(&sql)).fetch_all(conn).await?;
            moved.extend(rows);
        }
    }
    // The snapshots the batch takes, each as of its run's new last event.
    let snapshots: Vec<(&RunWrite, &String, i64)> = tried
        .iter()
        .filter_map(|&index| {
            let write = &*writes[index];
            Some((write, write.state.as_ref()?, *moved.get(&write.run_id)?))
        })
        .collect();
    for chunk in snapshots.chunks(Rows::per_statement(conn, SNAPSHOTS_PER_STATEMENT)) {
        let mut rows = Rows::new(conn, &SNAPSHOT_TYPES);
        for (write, state, last_seq) in chunk {
            rows.push([
                write.run_id.as_str().into(),
                (*last_seq).into(),
                state.as_str().into(),
            ]);
        }
        let sql = format!(
            "UPDATE dungeon_run_snapshots SET seq = v.column2, state = v.column3
             FROM {} AS v WHERE dungeon_run_snapshots.run_id = v.column1",
            rows.table(0)
        );
        rows.bind(sql::query(&sql)).execute(conn).await?;
    }
    // Each moved run's events: (write, event, its id, the one before it, its sequence number).
    let mut events: Vec<(&RunWrite, usize, i64, Option<i64>, i64)> = Vec::new();
    for &(index, first_id) in &tried_with_ids {
        let write = &*writes[index];
        let Some(&last_seq) = moved.get(&write.run_id) else {
            continue;
        };
        let first_seq = last_seq - write.events.len() as i64 + 1;
        let mut prev = last_events.get(&write.run_id).copied().flatten();
        for n in 0..write.events.len() {
            let id = first_id + n as i64;
            events.push((write, n, id, prev, first_seq + n as i64));
            prev = Some(id);
        }
    }
    for chunk in events.chunks(Rows::per_statement(conn, CHAINED_EVENTS_PER_STATEMENT)) {
        let mut rows = Rows::new(conn, &CHAINED_EVENT_TYPES);
        for &(write, n, id, prev, seq) in chunk {
            let [a, b, c, d, e, f, g] = event_row(write, n, seq);
            rows.push([id.into(), prev.into(), a, b, c, d, e, f, g]);
        }
        let sql = format!(
            "INSERT INTO dungeon_run_events
                 (id, prev, run_id, seq, kind, turn_number, payload, created_at, action)
             {}",
            rows.insert(0)
        );
        rows.bind(sql::query(&sql)).execute(conn).await?;
    }
    Ok(moved)
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

/// Append a broadcast to an active run, outside the turn pipeline, at most `limit.max` per
/// window.
///
/// The window is counted on a partial index that holds broadcasts only
/// (`dungeon_run_events_broadcasts`, migration 0038), so a turn's event, which is most of what
/// the table receives, never writes to it; the query names the kind as a literal, which is what
/// lets the planner use a partial index.
///
/// The limit is checked inside the transaction, after the run's row is updated: that update
/// takes the row's write lock (PostgreSQL) or the database's (SQLite), so concurrent appends to
/// one run count one after the other and the window can never be overfilled.
pub(crate) async fn append_broadcast(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    run_id: &str,
    event: NewEvent,
    limit: WindowLimit,
) -> Result<Appended, DungeonError> {
    if event.kind != BROADCAST {
        return Err(DungeonError::internal(anyhow::anyhow!(
            "only broadcasts are appended outside a turn, not `{}`",
            event.kind
        )));
    }
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
    let (count, oldest): (i64, Option<i64>) = sqlx::query_as(BROADCASTS_IN_WINDOW)
        .bind(run_id)
        .bind(now - limit.window_ms)
        .fetch_one(&mut *tx)
        .await?;
    if count >= limit.max {
        // Dropping the transaction rolls the sequence bump back.
        return Ok(Appended::Limited {
            oldest_at: oldest.unwrap_or(now),
        });
    }
    insert_event(
        &mut tx,
        is_chained(store),
        run_id,
        seq,
        event.kind,
        event.turn_number,
        &event.payload,
        now,
    )
    .await?;
    tx.commit().await?;
    announce(events, run_id, seq);
    Ok(Appended::Written(seq))
}

/// Append one event to `run_id`, whose row the caller's transaction has already moved; where
/// events are chained ([`chain_above`]), after the run's last one, which it becomes.
#[allow(clippy::too_many_arguments, reason = "one event's columns")]
async fn insert_event(
    conn: &mut sqlx::AnyConnection,
    chained: bool,
    run_id: &str,
    seq: i64,
    kind: &str,
    turn_number: Option<i64>,
    payload: &str,
    now: i64,
) -> Result<(), DungeonError> {
    let sql = if chained {
        "INSERT INTO dungeon_run_events (run_id, seq, kind, turn_number, payload, created_at, prev)
         VALUES ($1, $2, $3, $4, $5, $6, (SELECT last_event_id FROM dungeon_runs WHERE id = $1))"
    } else {
        "INSERT INTO dungeon_run_events (run_id, seq, kind, turn_number, payload, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)"
    };
    sqlx::query(sql)
        .bind(run_id)
        .bind(seq)
        .bind(kind)
        .bind(turn_number)
        .bind(payload)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    if chained {
        sqlx::query("UPDATE dungeon_runs SET last_event_id = last_insert_rowid() WHERE id = $1")
            .bind(run_id)
            .execute(&mut *conn)
            .await?;
    }
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
    fn runs_snapshot_once_every_32_turns_each_at_a_phase_of_its_own() {
        let mut phases = [0_usize; SNAPSHOT_EVERY as usize];
        for n in 0..1_024 {
            let run_id = format!("run_{n:08x}");
            let due: Vec<u64> = (1..=96)
                .filter(|&turn| snapshot_due(&run_id, turn))
                .collect();
            assert_eq!(due.len(), 3, "{run_id}: {due:?}");
            assert!(
                due.windows(2)
                    .all(|pair| pair[1] - pair[0] == SNAPSHOT_EVERY)
            );
            phases[(due[0] % SNAPSHOT_EVERY) as usize] += 1;
        }
        // 1,024 runs over 32 phases: about 32 each, none crowded.
        assert!(
            phases.iter().all(|&runs| (10..=60).contains(&runs)),
            "{phases:?}"
        );
        assert_eq!(
            snapshot_due("run_a", 7),
            snapshot_due("run_a", 7 + SNAPSHOT_EVERY)
        );
    }

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

    /// On PostgreSQL a batch of turns finds each run by its id, before the runs' table has
    /// statistics (autovacuum held off): hashing the batch instead read the whole table per
    /// statement ([`move_runs_sql`]).
    #[tokio::test]
    async fn a_batch_of_turns_on_postgres_finds_each_run_by_its_id() {
        let Some(store) = crate::db::postgres_test_store().await else {
            return;
        };
        let mut tx = store.begin_in_place().await.expect("tx");
        let mut conn = tx.conn().expect("conn");
        for statement in [
            "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at, created_at,
                                   updated_at)
             VALUES ('acc_plan', 'plan@example.com', 0, 0, 0, 0)",
            "ALTER TABLE dungeon_runs SET (autovacuum_enabled = false)",
            "INSERT INTO dungeon_runs (id, dungeon_id, account_id, wallet, class, quote_id,
                 tx_signature, amount_raw, key_hash, key_sealed, status, score, deepest_floor,
                 turn_number, version, last_seq, created_at, last_action_at)
             SELECT 'run_' || n, 'dgn', 'acc_plan', 'w', 'fighter', 'q' || n, 's' || n, 0,
                    'k' || n, 'k', 'active', 0, 1, 0, 0, 0, 0, 0
             FROM generate_series(1, 3000) AS n",
        ] {
            sql::query(statement)
                .execute(&mut conn)
                .await
                .expect("set up");
        }
        let mut runs = Rows::new(&conn, &RUN_TYPES);
        for n in 1..=100_i64 {
            runs.push([
                format!("run_{n}").into(),
                0_i64.into(),
                "active".into(),
                0_i64.into(),
                1_i64.into(),
                1_i64.into(),
                1_i64.into(),
                0_i64.into(),
                false.into(),
                true.into(),
            ]);
        }
        let explain = format!("EXPLAIN {}", move_runs_sql(&runs.table(0), true, Sets::All));
        crate::db::assert_postgres_plan(
            runs.bind(sql::query(&explain)),
            &mut conn,
            "dungeon_runs_pkey",
            "Seq Scan on dungeon_runs",
        )
        .await;
    }

    /// A batch of turns as the committer runs it (on PostgreSQL one statement outside a
    /// transaction block, on SQLite in place in a transaction): each run moved once under its
    /// version, a second write of a run in the batch and a stale version losing the race, a
    /// player's turn on a suspended account refused while the game's own write on such a run
    /// goes on, and each moved run's events numbered after its last one, its snapshot (when
    /// the write takes one) at its new last.
    #[tokio::test]
    async fn a_batch_of_turns_moves_each_run_once_and_numbers_its_events() {
        let dir = tempfile::tempdir().expect("tempdir");
        for store in sqlite_and_postgres(&dir).await {
            a_batch_of_turns_on(&store).await;
        }
    }

    /// A player's turn `turn_number` on an active run at `version`, with an event per payload
    /// (the first recording the turn).
    fn player_turn(
        run_id: &str,
        version: i64,
        turn_number: i64,
        payloads: Vec<String>,
    ) -> Arc<RunWrite> {
        Arc::new(RunWrite {
            run_id: run_id.to_owned(),
            version,
            by_player: true,
            ranked: false,
            state: None,
            status: "active",
            score: 0,
            deepest_floor: 1,
            turn_number,
            over: false,
            now: 1_000 + turn_number,
            events: payloads
                .into_iter()
                .enumerate()
                .map(|(n, payload)| StoredTurnEvent {
                    kind: TURN,
                    turn_number: (n == 0).then_some(turn_number),
                    payload,
                    action: Some("{\"action\":\"inventory\"}".to_owned()),
                })
                .collect(),
        })
    }

    /// A fresh SQLite store in `dir`, and a PostgreSQL one when the suite has a database.
    async fn sqlite_and_postgres(dir: &tempfile::TempDir) -> Vec<Store> {
        let sqlite = Store::connect(&crate::config::sqlite_url_in(dir.path()))
            .await
            .expect("open");
        sqlite.migrate().await.expect("migrate");
        let mut stores = vec![sqlite];
        stores.extend(crate::db::postgres_test_store().await);
        stores
    }

    /// `writes` run as the committer runs a batch of them (on PostgreSQL one statement outside
    /// a transaction block, on SQLite in place in a transaction).
    async fn apply_batch(
        store: &Store,
        writes: &[Arc<RunWrite>],
    ) -> Outcomes<Option<i64>, DungeonError> {
        if store.backend() == crate::db::Backend::Postgres {
            let mut conn = store.write().acquire().await.expect("conn");
            RunWrite::apply_all(writes, &mut Conn::Any(&mut conn)).await
        } else {
            let mut tx = store.begin_in_place().await.expect("tx");
            let outcomes = RunWrite::apply_all(writes, &mut tx.conn().expect("conn")).await;
            tx.commit().await.expect("commit");
            outcomes
        }
    }

    async fn a_batch_of_turns_on(store: &Store) {
        for (id, suspended) in [("acc_ok", None), ("acc_out", Some(1_i64))] {
            sqlx::query(
                "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at,
                                       created_at, updated_at, suspended_at)
                 VALUES ($1, $2, 0, 0, 0, 0, $3)",
            )
            .bind(id)
            .bind(format!("{id}@example.com"))
            .bind(suspended)
            .execute(store.write())
            .await
            .expect("account");
        }
        for (id, account, version, last_seq) in [
            ("run_a", "acc_ok", 0_i64, 3_i64),
            ("run_b", "acc_ok", 5, 7),
            ("run_c", "acc_out", 0, 1),
            ("run_d", "acc_out", 0, 2),
        ] {
            sqlx::query(
                "INSERT INTO dungeon_runs (id, dungeon_id, account_id, wallet, class, quote_id,
                     tx_signature, amount_raw, key_hash, key_sealed, status, score,
                     deepest_floor, turn_number, version, last_seq, created_at, last_action_at)
                 VALUES ($1, 'dgn', $2, 'w', 'fighter', $1, $1, 0, $1, 'k', 'active', 0, 1, 0,
                         $3, $4, 0, 0)",
            )
            .bind(id)
            .bind(account)
            .bind(version)
            .bind(last_seq)
            .execute(store.write())
            .await
            .expect("run");
            sqlx::query(
                "INSERT INTO dungeon_run_snapshots (run_id, seq, state) VALUES ($1, 0, '{}')",
            )
            .bind(id)
            .execute(store.write())
            .await
            .expect("snapshot");
        }
        // Text that JSON must escape, as a turn's event carries.
        let payload = |n: usize| format!("{{\"n\":{n},\"text\":\"a \\\"quoted\\\" line\"}}");
        let write =
            |run_id: &str, version: i64, by_player: bool, events: usize, state: Option<&str>| {
                Arc::new(RunWrite {
                    run_id: run_id.to_owned(),
                    version,
                    by_player,
                    ranked: true,
                    state: state.map(str::to_owned),
                    status: "active",
                    score: 10,
                    deepest_floor: 2,
                    turn_number: 1,
                    over: false,
                    now: 1_000,
                    events: (0..events)
                        .map(|n| StoredTurnEvent {
                            kind: "turn",
                            turn_number: Some(1),
                            payload: payload(n),
                            action: Some(format!("act{n}")),
                        })
                        .collect(),
                })
            };
        let writes = [
            write("run_d", 0, false, 1, None),
            write("run_a", 0, true, 2, Some("{\"floor\":2}")),
            write("run_a", 0, true, 1, None),
            write("run_b", 4, true, 1, None),
            write("run_c", 0, true, 1, Some("{}")),
        ];
        let outcomes: Vec<Option<i64>> = apply_batch(store, &writes)
            .await
            .expect("batch")
            .into_iter()
            .map(|outcome| outcome.expect("write"))
            .collect();
        assert_eq!(outcomes, [Some(3), Some(5), None, None, None]);
        let runs: Vec<(String, i64, i64)> =
            sqlx::query_as("SELECT id, version, last_seq FROM dungeon_runs ORDER BY id")
                .fetch_all(store.read())
                .await
                .expect("runs");
        let expected = [
            ("run_a", 1, 5),
            ("run_b", 5, 7),
            ("run_c", 0, 1),
            ("run_d", 1, 3),
        ];
        let expected: Vec<(String, i64, i64)> = expected
            .into_iter()
            .map(|(id, version, seq)| (id.to_owned(), version, seq))
            .collect();
        assert_eq!(runs, expected);
        let events: Vec<(String, i64, String, Option<String>)> = sqlx::query_as(
            "SELECT run_id, seq, payload, action FROM dungeon_run_events ORDER BY run_id, seq",
        )
        .fetch_all(store.read())
        .await
        .expect("events");
        assert_eq!(
            events,
            [
                ("run_a".to_owned(), 4, payload(0), Some("act0".to_owned())),
                ("run_a".to_owned(), 5, payload(1), Some("act1".to_owned())),
                ("run_d".to_owned(), 3, payload(0), Some("act0".to_owned())),
            ]
        );
        let snapshots: Vec<(String, i64, String)> =
            sqlx::query_as("SELECT run_id, seq, state FROM dungeon_run_snapshots ORDER BY run_id")
                .fetch_all(store.read())
                .await
                .expect("snapshots");
        let snapshot = |id: &str, seq: i64, state: &str| (id.to_owned(), seq, state.to_owned());
        assert_eq!(
            snapshots,
            [
                snapshot("run_a", 5, "{\"floor\":2}"),
                snapshot("run_b", 0, "{}"),
                snapshot("run_c", 0, "{}"),
                snapshot("run_d", 0, "{}"),
            ]
        );
    }

    /// An account `account` and, on it, an active run for each `(id, score)`: at version 0,
    /// with no events yet.
    async fn active_runs(store: &Store, account: &str, runs: &[(&str, i64)]) {
        sqlx::query(
            "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at, created_at,
                                   updated_at)
             VALUES ($1, $1 || '@example.com', 0, 0, 0, 0)",
        )
        .bind(account)
        .execute(store.write())
        .await
        .expect("account");
        for &(id, score) in runs {
            sqlx::query(
                "INSERT INTO dungeon_runs (id, dungeon_id, account_id, wallet, class, quote_id,
                     tx_signature, amount_raw, key_hash, key_sealed, status, score,
                     deepest_floor, turn_number, version, last_seq, created_at, last_action_at)
                 VALUES ($1, 'dgn', $2, 'w', 'fighter', $1, $1, 0, $1, 'k', 'active', $3,
                         1, 0, 0, 0, 0, 0)",
            )
            .bind(id)
            .bind(account)
            .bind(score)
            .execute(store.write())
            .await
            .expect("run");
        }
    }

    /// On SQLite a turn that keeps its run's status and score leaves them out of its update,
    /// guarded: the row must hold them already, or the write lost a race (its caller reads the
    /// run again). Turns that change them, in the same batch, set them.
    #[tokio::test]
    async fn a_turn_that_keeps_its_rank_moves_only_a_run_that_holds_that_rank() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = sqlite_and_postgres(&dir).await.remove(0);
        active_runs(
            &store,
            "acc_rank",
            &[("run_p", 0), ("run_q", 7), ("run_r", 0)],
        )
        .await;
        let scored = |run_id: &str, score: i64| {
            let mut write = player_turn(run_id, 0, 1, vec!["{}".to_owned()]);
            let turn = Arc::get_mut(&mut write).expect("one owner");
            (turn.score, turn.ranked) = (score, true);
            write
        };
        let writes = [
            // Keeps score 0, as stored.
            player_turn("run_p", 0, 1, vec!["{}".to_owned()]),
            // Expects score 0 where 7 is stored: another write got there first.
            player_turn("run_q", 0, 1, vec!["{}".to_owned()]),
            scored("run_r", 25),
        ];
        let outcomes: Vec<Option<i64>> = apply_batch(&store, &writes)
            .await
            .expect("batch")
            .into_iter()
            .map(|outcome| outcome.expect("write"))
            .collect();
        assert_eq!(outcomes, [Some(1), None, Some(1)]);
        let runs: Vec<(String, i64, i64, String)> =
            sqlx::query_as("SELECT id, version, score, status FROM dungeon_runs ORDER BY id")
                .fetch_all(store.read())
                .await
                .expect("runs");
        let run = |id: &str, version: i64, score: i64| {
            (id.to_owned(), version, score, "active".to_owned())
        };
        assert_eq!(
            runs,
            [run("run_p", 1, 0), run("run_q", 0, 7), run("run_r", 1, 25)]
        );
    }

    /// A run's events read back the same on both layouts (SQLite's chain, PostgreSQL's index):
    /// batches of turns of two runs interleaved with a broadcast, each run's events whole and
    /// in order from any point, a turn's record found by its number, and a run whose events
    /// retention deleted reads none even where its last event's id was taken again by another
    /// run's event (the walk checks the run at each step).
    #[tokio::test]
    async fn a_runs_events_read_back_in_order_from_any_point() {
        let dir = tempfile::tempdir().expect("tempdir");
        for store in sqlite_and_postgres(&dir).await {
            a_runs_events_read_back_on(&store).await;
        }
    }

    async fn a_runs_events_read_back_on(store: &Store) {
        active_runs(store, "acc_read", &[("run_x", 0), ("run_y", 0)]).await;
        let turn = |run_id: &str, version: i64, turn_number: i64, events: usize| {
            let payloads = (0..events)
                .map(|n| format!("{{\"run\":\"{run_id}\",\"turn\":{turn_number},\"n\":{n}}}"))
                .collect();
            player_turn(run_id, version, turn_number, payloads)
        };
        let apply = |writes: Vec<Arc<RunWrite>>| async move {
            for outcome in apply_batch(store, &writes).await.expect("batch") {
                assert!(outcome.expect("write").is_some(), "each run moves");
            }
        };
        apply(vec![turn("run_x", 0, 1, 2), turn("run_y", 0, 1, 1)]).await;
        let clock = crate::clock::ManualClock::new(chrono::Utc::now());
        let limit = WindowLimit {
            max: 10,
            window_ms: 60_000,
        };
        let broadcast = NewEvent {
            kind: BROADCAST,
            turn_number: None,
            payload: "{\"message\":\"hello\"}".to_owned(),
            action: None,
        };
        let appended = append_broadcast(store, &clock, &Bus::new(), "run_x", broadcast, limit)
            .await
            .expect("broadcast");
        assert!(matches!(appended, Appended::Written(3)), "{appended:?}");
        apply(vec![turn("run_y", 1, 2, 1), turn("run_x", 1, 2, 1)]).await;
        apply(vec![turn("run_x", 2, 3, 2)]).await;

        let kinds_and_seqs = |events: Vec<StoredEvent>| -> Vec<(i64, String)> {
            events
                .into_iter()
                .map(|event| (event.seq, event.kind))
                .collect()
        };
        let all = events_after(store, "run_x", 0, 100).await.expect("events");
        assert_eq!(
            kinds_and_seqs(all.clone()),
            [
                (1, TURN),
                (2, TURN),
                (3, BROADCAST),
                (4, TURN),
                (5, TURN),
                (6, TURN)
            ]
            .map(|(seq, kind)| (seq, kind.to_owned()))
        );
        assert!(
            all.iter()
                .filter(|event| event.kind == TURN)
                .all(|event| event.payload["run"] == "run_x"),
            "{all:?}"
        );
        let page = events_after(store, "run_x", 2, 2).await.expect("page");
        assert_eq!(
            kinds_and_seqs(page),
            [(3, BROADCAST.to_owned()), (4, TURN.to_owned())]
        );
        assert!(
            events_after(store, "run_x", 6, 10)
                .await
                .expect("none")
                .is_empty()
        );
        let other = events_after(store, "run_y", 0, 100).await.expect("other");
        assert_eq!(kinds_and_seqs(other).len(), 2);

        let record = turn_record(store, "run_x", 2).await.expect("record");
        assert_eq!(record.map(|record| record["turn"].clone()), Some(2.into()));
        let record = turn_record(store, "run_x", 3).await.expect("record");
        assert_eq!(record.map(|record| record["n"].clone()), Some(0.into()));
        assert!(
            turn_record(store, "run_x", 4)
                .await
                .expect("none")
                .is_none()
        );

        // Retention takes run_x's events, the newest of them included; run_y's next events
        // may take their ids.
        sqlx::query("DELETE FROM dungeon_run_events WHERE run_id = 'run_x'")
            .execute(store.write())
            .await
            .expect("prune");
        apply(vec![turn("run_y", 2, 3, 3)]).await;
        assert!(
            events_after(store, "run_x", 0, 100)
                .await
                .expect("pruned")
                .is_empty()
        );
        assert!(
            turn_record(store, "run_x", 2)
                .await
                .expect("pruned")
                .is_none()
        );
        let other = events_after(store, "run_y", 0, 100).await.expect("other");
        assert_eq!(
            other.iter().map(|event| event.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
    }

    /// A SQLite file written before the chain (migration 0043) reads back the same after it:
    /// each run's events linked in order and its row naming its last, so its events, its turn
    /// records and the next batch's turns carry on from where they were.
    #[tokio::test]
    async fn events_stored_before_the_chain_are_chained_by_its_migration() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::connect(&crate::config::sqlite_url_in(dir.path()))
            .await
            .expect("open");
        store.migrate_sqlite_up_to(42).await.expect("older layout");
        for statement in [
            "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at, created_at,
                                   updated_at)
             VALUES ('acc_old', 'old@example.com', 0, 0, 0, 0)",
            "INSERT INTO dungeon_runs (id, dungeon_id, account_id, wallet, class, quote_id,
                 tx_signature, amount_raw, key_hash, key_sealed, status, score, deepest_floor,
                 turn_number, version, last_seq, created_at, last_action_at)
             VALUES ('run_p', 'dgn', 'acc_old', 'w', 'fighter', 'qp', 'sp', 0, 'kp', 'k',
                     'active', 0, 1, 3, 3, 3, 0, 0),
                    ('run_q', 'dgn', 'acc_old', 'w', 'fighter', 'qq', 'sq', 0, 'kq', 'k',
                     'active', 0, 1, 2, 2, 2, 0, 0),
                    ('run_r', 'dgn', 'acc_old', 'w', 'fighter', 'qr', 'sr', 0, 'kr', 'k',
                     'active', 0, 1, 0, 0, 0, 0, 0)",
            // Interleaved as batches leave them, one stored out of order.
            "INSERT INTO dungeon_run_events (run_id, seq, kind, turn_number, payload, created_at)
             VALUES ('run_p', 1, 'run:turn', 1, '{\"p\":1}', 1),
                    ('run_q', 1, 'run:turn', 1, '{\"q\":1}', 1),
                    ('run_p', 3, 'run:turn', 3, '{\"p\":3}', 3),
                    ('run_q', 2, 'run:turn', 2, '{\"q\":2}', 2),
                    ('run_p', 2, 'run:turn', 2, '{\"p\":2}', 2)",
        ] {
            sqlx::query(statement)
                .execute(store.write())
                .await
                .expect("old rows");
        }
        store.migrate().await.expect("migrate");

        let seqs = |events: Vec<StoredEvent>| -> Vec<(i64, Value)> {
            events
                .into_iter()
                .map(|event| (event.seq, event.payload))
                .collect()
        };
        let p = events_after(&store, "run_p", 0, 10).await.expect("run_p");
        assert_eq!(
            seqs(p),
            [
                (1, serde_json::json!({"p": 1})),
                (2, serde_json::json!({"p": 2})),
                (3, serde_json::json!({"p": 3}))
            ]
        );
        let q = events_after(&store, "run_q", 1, 10).await.expect("run_q");
        assert_eq!(seqs(q), [(2, serde_json::json!({"q": 2}))]);
        assert!(
            events_after(&store, "run_r", 0, 10)
                .await
                .expect("run_r")
                .is_empty()
        );
        let record = turn_record(&store, "run_p", 2).await.expect("record");
        assert_eq!(record, Some(serde_json::json!({"p": 2})));

        // The next turn of run_q goes on after its last event, as does run_r's first.
        let next = |run_id: &str, version: i64| {
            let payload = format!("{{\"{run_id}\":{}}}", version + 1);
            player_turn(run_id, version, version + 1, vec![payload])
        };
        let outcomes = apply_batch(&store, &[next("run_q", 2), next("run_r", 0)])
            .await
            .expect("batch");
        assert_eq!(
            outcomes
                .into_iter()
                .map(|outcome| outcome.expect("write"))
                .collect::<Vec<_>>(),
            [Some(3), Some(1)]
        );
        let q = events_after(&store, "run_q", 0, 10).await.expect("run_q");
        assert_eq!(
            q.iter().map(|event| event.seq).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let r = events_after(&store, "run_r", 0, 10).await.expect("run_r");
        assert_eq!(seqs(r), [(1, serde_json::json!({"run_r": 1}))]);
    }

    /// A page of a long run's events is found from the mark past its end (every 64th event,
    /// a partial index) on SQLite, so a page costs the same however long the run: pages at the
    /// start, across a mark and at the end of a 150-event run read back whole and in order,
    /// and the page's statement reads the marks' index.
    #[tokio::test]
    async fn a_page_of_a_long_runs_events_starts_at_the_next_mark() {
        let dir = tempfile::tempdir().expect("tempdir");
        for store in sqlite_and_postgres(&dir).await {
            sqlx::query(
                "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at,
                                       created_at, updated_at)
                 VALUES ('acc_long', 'long@example.com', 0, 0, 0, 0)",
            )
            .execute(store.write())
            .await
            .expect("account");
            sqlx::query(
                "INSERT INTO dungeon_runs (id, dungeon_id, account_id, wallet, class, quote_id,
                     tx_signature, amount_raw, key_hash, key_sealed, status, score,
                     deepest_floor, turn_number, version, last_seq, created_at, last_action_at)
                 VALUES ('run_long', 'dgn', 'acc_long', 'w', 'fighter', 'ql', 'sl', 0, 'kl',
                         'k', 'active', 0, 1, 0, 0, 0, 0, 0)",
            )
            .execute(store.write())
            .await
            .expect("run");
            for version in 0..3_i64 {
                let payloads = (0..50).map(|n| format!("{{\"n\":{n}}}")).collect();
                let outcomes = apply_batch(
                    &store,
                    &[player_turn("run_long", version, version + 1, payloads)],
                )
                .await
                .expect("batch");
                assert_eq!(outcomes.len(), 1);
            }
            for (after, limit, expected) in [
                (0, 10, 1..=10),
                (60, 10, 61..=70),
                (63, 1, 64..=64),
                (64, 64, 65..=128),
                (140, 20, 141..=150),
            ] {
                let page = events_after(&store, "run_long", after, limit)
                    .await
                    .expect("page");
                assert_eq!(
                    page.iter().map(|event| event.seq).collect::<Vec<_>>(),
                    expected.collect::<Vec<_>>(),
                    "after {after}, {limit} at most"
                );
            }
            if is_chained(&store) {
                let sql = format!("{} SELECT id FROM chain", chain_above(PAGE_END));
                assert_sqlite_plan_reads(&store, &sql, 2, "dungeon_run_events_marks").await;
            }
        }
    }

    /// The broadcast window is counted on the partial index of broadcasts, not by walking the
    /// run's events (a turn's event is never in that index).
    #[tokio::test]
    async fn the_broadcast_window_reads_the_partial_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::connect(&crate::config::sqlite_url_in(dir.path()))
            .await
            .expect("open");
        store.migrate().await.expect("migrate");
        assert_sqlite_plan_reads(
            &store,
            BROADCASTS_IN_WINDOW,
            1,
            "dungeon_run_events_broadcasts",
        )
        .await;
    }

    /// SQLite's plan for `sql` reads `index`, its parameters bound to a run id and then
    /// `numbers` zeros.
    async fn assert_sqlite_plan_reads(store: &Store, sql: &str, numbers: usize, index: &str) {
        let explain = format!("EXPLAIN QUERY PLAN {sql}");
        let mut query = sqlx::query_as(&explain).bind("run_x");
        for _ in 0..numbers {
            query = query.bind(0_i64);
        }
        let plan: Vec<(i64, i64, i64, String)> = query.fetch_all(store.read()).await.expect("plan");
        let details: Vec<&str> = plan.iter().map(|(.., detail)| detail.as_str()).collect();
        assert!(
            details.iter().any(|detail| detail.contains(index)),
            "{details:?}"
        );
    }
}
