//! Storage: one [`Store`] over SQLite (the embedded default) or PostgreSQL (multi-node).
//!
//! Both back ends run the same SQL through sqlx's `Any` driver, so every query is written once
//! with `$1, $2, …` placeholders (SQLite reads `$N` as the N-th argument). To keep that true the
//! schema sticks to types both agree on: `TEXT` ids, `BIGINT` integers (timestamps are Unix
//! milliseconds, money is raw token units), `DOUBLE PRECISION`/`REAL` only for derived figures,
//! and `0/1` integers instead of booleans. Where the dialects really differ (row locks, upsert
//! details) a query asks [`Store::backend`].
//!
//! SQLite allows one writer at a time; instead of letting concurrent transactions collide on
//! `SQLITE_BUSY`, writes go through a single-connection pool ([`Store::write`]) while reads use
//! the rest. On PostgreSQL both are the same pool.

mod due_queue;
mod group_commit;
mod outage;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crucible_sql::{Reader, SqliteFile};
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::Migrator;
use sqlx::{Any, AnyPool, Executor, Transaction};

pub(crate) use group_commit::{
    BATCH_SECONDS_BOUNDS, BatchSeconds, BatchWrite, GroupCommit, Outcomes, bucket_of,
};
pub use outage::Outage;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/postgres");

/// Which database a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        })
    }
}

impl FromStr for Backend {
    type Err = StoreError;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Backend::Postgres)
        } else {
            Err(StoreError::UnsupportedUrl)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("DATABASE_URL must start with sqlite: or postgres://")]
    UnsupportedUrl,
    #[error("cannot open the database: {0}")]
    Connect(#[source] sqlx::Error),
    #[error("migrations failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error(transparent)]
    Query(#[from] sqlx::Error),
}

/// The database handle shared by the whole server. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    reader: AnyPool,
    writer: AnyPool,
    backend: Backend,
    group: GroupCommit,
    /// On PostgreSQL, the committer of the writes that take a tournament's seats
    /// ([`Store::seats`]).
    seats: Option<GroupCommit>,
    /// The SQLite file, whose hot statements run in place (none in memory or on PostgreSQL).
    sqlite_file: Option<SqliteFile>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Open the database at `url`. Migrations are applied separately by [`Store::migrate`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        install_default_drivers();
        let backend: Backend = url.parse()?;
        match backend {
            Backend::Sqlite => {
                let reader = sqlite_pool(url, 8).await?;
                let writer = sqlite_pool(url, 1).await?;
                let file = sqlite_file(url).map(SqliteFile::new);
                Ok(Store {
                    reader,
                    group: GroupCommit::new(writer.clone(), file.clone()),
                    // One writer: a second committer would only take turns with the first.
                    seats: None,
                    writer,
                    backend,
                    sqlite_file: file,
                })
            }
            Backend::Postgres => {
                let pool = pool_options()
                    .max_connections(16)
                    // sqlx pings every connection it hands out by default: a round trip before
                    // each pooled statement. One in use a moment ago is known to be alive; one
                    // idle longer may have been cut (a restarted database, a dropped link) and
                    // is pinged first, and replaced when that fails.
                    .test_before_acquire(false)
                    .before_acquire(|conn, meta| {
                        Box::pin(async move {
                            if meta.idle_for >= PING_WHEN_IDLE_FOR {
                                sqlx::Connection::ping(conn).await?;
                            }
                            Ok(true)
                        })
                    })
                    .after_connect(|conn, _meta| {
                        Box::pin(async move {
                            for setting in POSTGRES_SESSION {
                                conn.execute(*setting).await?;
                            }
                            // Speed, not safety: a server that refuses it still serves.
                            if let Err(error) = conn.execute(POSTGRES_WRITEBACK).await {
                                tracing::warn!(%error, "backend_flush_after left as it was");
                            }
                            Ok(())
                        })
                    })
                    .connect(url)
                    .await
                    .map_err(StoreError::Connect)?;
                Ok(Store {
                    reader: pool.clone(),
                    group: GroupCommit::with_lanes(pool.clone(), None, POSTGRES_LANES),
                    seats: Some(GroupCommit::new(pool.clone(), None)),
                    writer: pool,
                    backend,
                    sqlite_file: None,
                })
            }
        }
    }

    /// Apply this SQLite store's migrations up to `version` only: to write rows in an older
    /// layout and check what a later migration makes of them.
    #[cfg(test)]
    pub(crate) async fn migrate_sqlite_up_to(&self, version: i64) -> Result<(), StoreError> {
        let older = sqlx::migrate::Migrator {
            migrations: std::borrow::Cow::Owned(
                SQLITE_MIGRATIONS
                    .iter()
                    .filter(|migration| migration.version <= version)
                    .cloned()
                    .collect(),
            ),
            ..sqlx::migrate::Migrator::DEFAULT
        };
        older.run(&self.writer).await?;
        Ok(())
    }

    /// Apply every pending migration of this back end; on PostgreSQL, then put the due queue
    /// back in step with the agents ([`due_queue`]).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let migrator = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator.run(&self.writer).await?;
        if self.backend == Backend::Postgres {
            let (stale, missing) = due_queue::repair(&self.writer).await?;
            if stale + missing > 0 {
                tracing::warn!(
                    stale,
                    missing,
                    "the due queue was out of step with the agents, and is repaired"
                );
            }
        }
        Ok(())
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool for reads.
    pub fn read(&self) -> &AnyPool {
        &self.reader
    }

    /// The SQLite database's file, once opened (`None` on PostgreSQL and in memory).
    /// The SQLite file's own connections, for statements in place.
    pub(crate) fn sqlite_file(&self) -> Option<&SqliteFile> {
        self.sqlite_file.as_ref()
    }

    /// A connection for a few reads: in place on a SQLite file, from the read pool otherwise
    /// (docs/architecture.md, "Statements in place").
    pub(crate) async fn reader(&self) -> Result<Reader, sqlx::Error> {
        Reader::lend(&self.reader, self.sqlite_file.as_ref()).await
    }

    /// The pool for single-statement writes (one connection on SQLite).
    pub fn write(&self) -> &AnyPool {
        &self.writer
    }

    /// A write transaction: whole or absent.
    pub async fn begin(&self) -> Result<Transaction<'static, Any>, StoreError> {
        Ok(self.writer.begin().await?)
    }

    /// A write transaction whose statements run in place on a SQLite file (docs/architecture.md,
    /// "Statements in place"), through the writer pool otherwise. For hot paths whose
    /// statements are written with [`crucible_sql::query`].
    pub(crate) async fn begin_in_place(&self) -> Result<crucible_sql::Transaction, sqlx::Error> {
        crucible_sql::Transaction::begin(&self.writer, self.sqlite_file.as_ref()).await
    }

    /// The group committer of the hot write paths: a write that shares its transaction and its
    /// flush with the writes running at the same time ([`GroupCommit::run`]).
    pub(crate) fn group(&self) -> &GroupCommit {
        &self.group
    }

    /// Transactions the group committer has committed and the writes they carried (what
    /// `GET /metrics` reports as `crucible_group_commit_*`).
    pub fn group_commit_counts(&self) -> (u64, u64) {
        let (batches, writes) = self.group.counts();
        let (seat_batches, seat_writes) = self.seats.as_ref().map_or((0, 0), GroupCommit::counts);
        (batches + seat_batches, writes + seat_writes)
    }

    /// How long the group committers' batches took, from their first statement to their
    /// commit's return (`GET /metrics`).
    pub(crate) fn group_commit_batch_seconds(&self) -> BatchSeconds {
        self.both_committers(GroupCommit::batch_seconds)
    }

    /// How long the group committers' writes waited, from being queued to their answer
    /// (`GET /metrics`).
    pub(crate) fn group_commit_wait_seconds(&self) -> BatchSeconds {
        self.both_committers(GroupCommit::wait_seconds)
    }

    /// How long the group committers held every write to catch up SQLite's WAL after a
    /// checkpoint beside the writers (`GET /metrics`; none on PostgreSQL).
    pub(crate) fn group_commit_catch_up_seconds(&self) -> BatchSeconds {
        self.both_committers(GroupCommit::catch_up_seconds)
    }

    /// The WAL catch-ups so far ([`Store::group_commit_catch_up_seconds`]): how many, and the
    /// seconds they held the writes in all.
    pub fn wal_catch_ups(&self) -> (u64, f64) {
        let stalls = self.group_commit_catch_up_seconds();
        (stalls.count, stalls.seconds)
    }

    /// `read` of the hot paths' committer and the seats' summed.
    fn both_committers(&self, read: fn(&GroupCommit) -> BatchSeconds) -> BatchSeconds {
        let seats = self.seats.as_ref().map(read).unwrap_or_default();
        read(&self.group) + seats
    }

    /// The group committer of the writes that take seats of a tournament (registrations).
    /// Each such write locks its tournament's row until its commit is flushed, so on PostgreSQL
    /// their batches in the hot paths' four lanes queued on that row, each behind the flushes
    /// of those before it; a committer of their own runs one batch at a time, and a request
    /// waits for at most the batch in flight and its own (docs/architecture.md, "Group
    /// commit"). On SQLite, the one committer of [`Store::group`].
    pub(crate) fn seats(&self) -> &GroupCommit {
        self.seats.as_ref().unwrap_or(&self.group)
    }

    /// A trivial round trip, for the health check.
    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.reader).await?;
        Ok(())
    }

    /// Close every connection (graceful shutdown, tests).
    pub async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
    }
}

/// Write batches in flight at once on PostgreSQL, each on a connection of the pool's 16.
const POSTGRES_LANES: usize = 4;

/// Every PostgreSQL session's settings: the server drops a session whose node stopped
/// answering, so a node cut off from the database (its packets dropped, not refused) cannot hold
/// row locks past its leases and keep the other nodes from taking its work over
/// (docs/operations.md, "Leases and fencing"). A transaction left idle for 15 s is rolled back
/// (Crucible never holds one across a network round trip, so only a lost node's does); data
/// sent and not acknowledged for 15 s, or a silent peer (keepalives after 15 s idle, 3 probes
/// 5 s apart), ends the session.
const POSTGRES_SESSION: &[&str] = &[
    "SET idle_in_transaction_session_timeout = '15s'",
    "SET tcp_user_timeout = 15000",
    "SET tcp_keepalives_idle = 15",
    "SET tcp_keepalives_interval = 5",
    "SET tcp_keepalives_count = 3",
];

/// Every PostgreSQL session asks the kernel to start writing out the data pages it writes,
/// every 256 kB, unless the host set `backend_flush_after` itself. PostgreSQL's default leaves
/// them in the page cache: under sustained writes the sessions wrote about 20 MB a second of
/// evicted pages there, and every 30 s the kernel wrote 100–190 MB of them at once, stalling the
/// WAL's flush, and every acknowledged write behind it, for 60–185 ms (docs/operations.md,
/// "PostgreSQL's data pages").
const POSTGRES_WRITEBACK: &str = "SELECT set_config('backend_flush_after', '256kB', false) \
     WHERE current_setting('backend_flush_after') = '0'";

/// What every pool shares: a bounded wait for a connection (so a request meets a 503, not a
/// hang, when the database is away), and no connection goes back to the pool still inside a
/// transaction.
///
/// The second matters after a failed write. When SQLite cannot write (a full disk), it rolls the
/// whole transaction back itself; sqlx's own `ROLLBACK` then fails ("no transaction is active")
/// and sqlx goes on counting the connection as inside a transaction. Every later `begin()` on it
/// became a `SAVEPOINT` inside a transaction that never commits: writes were acknowledged and
/// then lost (the fault harness found it, docs/operations.md). Closing such a connection makes
/// the pool open a fresh one. A connection released while its dropped transaction's rollback is
/// still queued is closed too; that only happens on error paths and costs one reconnect.
/// How long a pooled PostgreSQL connection may sit idle before it is pinged when taken again.
const PING_WHEN_IDLE_FOR: Duration = Duration::from_secs(1);

fn pool_options() -> AnyPoolOptions {
    AnyPoolOptions::new()
        .acquire_timeout(Duration::from_secs(10))
        .after_release(|conn, _meta| {
            Box::pin(async move {
                let clean = !sqlx::Connection::is_in_transaction(conn);
                if !clean {
                    tracing::warn!("a database connection left inside a transaction is closed");
                }
                Ok(clean)
            })
        })
}

/// The file a SQLite URL names, once it exists (an in-memory database has none).
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    use std::str::FromStr as _;
    if url.contains("mode=memory") {
        return None;
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename();
    path.is_file().then(|| path.to_path_buf())
}

async fn sqlite_pool(url: &str, max_connections: u32) -> Result<AnyPool, StoreError> {
    pool_options()
        .max_connections(max_connections)
        // A pool checks a connection before handing it out with a `ping`, by default: a round
        // trip to the connection's worker thread, as dear as the statement itself. An embedded
        // SQLite connection cannot lose its server, and a failed write is caught on release
        // (`pool_options`), so the check only doubles the cost of every pooled statement.
        .test_before_acquire(false)
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                // WAL lets readers proceed while the single writer commits. FULL sync makes
                // every commit durable across power loss, not only across a crash: the same
                // database records payments, claims and payouts, and a registration or a payout
                // that was answered must not roll back when the machine loses power. With WAL
                // it costs one fsync per commit of the single writer.
                // The rest is speed, not durability (docs/architecture.md, "Group commit"):
                // a statement journal (the undo log of one statement inside a transaction, which
                // group-committed batches use for every multi-row statement) kept in memory
                // instead of a temporary file written through system calls; a larger page
                // cache; reads through a memory map instead of a `pread` a page; and a WAL
                // checkpoint left to SQLite only past 256 MiB of WAL, as a backstop: the group
                // committer has the WAL copied into the file ten times a second beside the writers
                // (`group_commit.rs`, `Checkpoints`), where SQLite's default (every 4 MiB) copied
                // it inside the commit that crossed the line, holding every writer up.
                for pragma in [
                    "PRAGMA journal_mode = WAL",
                    "PRAGMA synchronous = FULL",
                    "PRAGMA foreign_keys = ON",
                    "PRAGMA busy_timeout = 5000",
                    "PRAGMA temp_store = MEMORY",
                    "PRAGMA cache_size = -32768",
                    "PRAGMA mmap_size = 268435456",
                ] {
                    conn.execute(pragma).await?;
                }
                let backstop = format!(
                    "PRAGMA wal_autocheckpoint = {}",
                    crucible_sql::WAL_AUTOCHECKPOINT_PAGES
                );
                conn.execute(backstop.as_str()).await?;
                Ok(())
            })
        })
        .connect(url)
        .await
        .map_err(StoreError::Connect)
}

/// Parameters one multi-row statement binds at most.
///
/// Far below either database's limit, and small on purpose: SQLite finds a numbered parameter's
/// name by walking the statement's list of names (`sqlite3_bind_parameter_name`, which sqlx calls
/// for every parameter it binds), so binding a statement costs the square of its parameters. At
/// 8,704 parameters (512 decisions of 17 columns) that walk took a third of the agent ticker's
/// time; at a hundred or so it is noise, and a statement still carries several rows.
const PARAMETERS_PER_STATEMENT: usize = 128;

/// How many rows of `columns` parameters each one multi-row statement should carry (at least
/// one): chunk the rows by this, and each statement stays at [`PARAMETERS_PER_STATEMENT`].
pub(crate) const fn rows_per_statement(columns: usize) -> usize {
    let rows = PARAMETERS_PER_STATEMENT / if columns == 0 { 1 } else { columns };
    if rows == 0 { 1 } else { rows }
}

/// The numbered placeholders of a multi-row statement (`crucible_sql::value_rows`).
pub(crate) use crucible_sql::value_rows;

/// `From<sqlx::Error>` for service errors with a `Store(StoreError)` variant, so `?` works on a
/// query inside a service that returns its own error.
macro_rules! store_error_from_sqlx {
    ($($error:ty),+ $(,)?) => {$(
        impl From<sqlx::Error> for $error {
            fn from(error: sqlx::Error) -> Self {
                Self::Store($crate::db::StoreError::from(error))
            }
        }
    )+};
}
pub(crate) use store_error_from_sqlx;

/// A stored value outside the set a typed column allows (a status, a kind): rows decode their
/// enum columns with `#[sqlx(try_from = "String")]` and refuse anything else with this.
#[derive(Debug, thiserror::Error)]
#[error("unknown stored value `{0}`")]
pub struct UnknownValue(pub String);

/// True when `error` is a unique-constraint violation: the database's answer to a race that
/// a check-then-insert would lose, mapped by callers to 409.
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => {
            db.is_unique_violation()
                || db
                    .code()
                    .is_some_and(|code| code == "23505" || code == "2067" || code == "1555")
        }
        _ => false,
    }
}

/// True when PostgreSQL refused a value because it holds a NUL character, which its text types
/// cannot store (SQLSTATE 22021, "invalid byte sequence for encoding UTF8: 0x00"): an id in a
/// path, a query parameter or a JSON string a request sent (`%00`, `\u0000`). SQLite stores
/// such text, so there the same value is answered as any other (an unknown id is not found).
pub(crate) fn is_nul_refused(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => db.code().is_some_and(|code| code == "22021"),
        _ => false,
    }
}

/// Turns the database's unique-constraint answer into the caller's own error in one call, so a
/// service says what a duplicate *means* (a taken username, a used signature) where it inserts:
/// `insert.await.on_unique(|| MyError::Taken(name))?`. Every other error converts as usual.
pub(crate) trait OnUnique<T> {
    fn on_unique<E: From<sqlx::Error>>(self, duplicate: impl FnOnce() -> E) -> Result<T, E>;
}

impl<T> OnUnique<T> for Result<T, sqlx::Error> {
    fn on_unique<E: From<sqlx::Error>>(self, duplicate: impl FnOnce() -> E) -> Result<T, E> {
        self.map_err(|error| {
            if is_unique_violation(&error) {
                duplicate()
            } else {
                E::from(error)
            }
        })
    }
}

/// A fresh, migrated store in a schema of its own on `TEST_DATABASE_URL`'s PostgreSQL; `None`
/// when the tests run on SQLite.
#[cfg(test)]
pub(crate) async fn postgres_test_store() -> Option<Store> {
    use sqlx::Connection;
    let base = postgres_test_url()?;
    install_default_drivers();
    let schema = format!("t_{}", crate::crypto::random_base58(12).to_lowercase());
    let mut admin = sqlx::AnyConnection::connect(&base).await.expect("connect");
    sqlx::query(&format!("CREATE SCHEMA \"{schema}\""))
        .execute(&mut admin)
        .await
        .expect("schema");
    let url = with_session_setting(&base, "search_path", &schema);
    let store = Store::connect(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    Some(store)
}

/// `TEST_DATABASE_URL` when it names a PostgreSQL server.
#[cfg(test)]
fn postgres_test_url() -> Option<String> {
    std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
}

/// `base` with `setting` set to `value` for every session it opens.
#[cfg(test)]
fn with_session_setting(base: &str, setting: &str, value: &str) -> String {
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}options=-c%20{setting}%3D{value}")
}

/// Check PostgreSQL's plan for `explain` (an `EXPLAIN …` statement with its parameters bound):
/// some line of it names `uses` and none names `avoids`.
#[cfg(test)]
pub(crate) async fn assert_postgres_plan(
    explain: crucible_sql::Query<'_>,
    conn: &mut crucible_sql::Conn<'_>,
    uses: &str,
    avoids: &str,
) {
    let plan: Vec<(String,)> = explain.fetch_all(conn).await.expect("plan");
    let plan: Vec<String> = plan.into_iter().map(|(line,)| line).collect();
    assert!(plan.iter().any(|line| line.contains(uses)), "{plan:#?}");
    assert!(!plan.iter().any(|line| line.contains(avoids)), "{plan:#?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_carries_as_many_rows_as_its_parameters_allow() {
        assert_eq!(rows_per_statement(17), 7);
        assert_eq!(rows_per_statement(1), 128);
        assert_eq!(rows_per_statement(1_000), 1);
        assert_eq!(rows_per_statement(0), 128);
    }

    #[test]
    fn value_rows_number_every_placeholder_after_the_skipped_ones() {
        assert_eq!(value_rows(2, 3, 1), "($2, $3, $4), ($5, $6, $7)");
        assert_eq!(value_rows(1, 1, 0), "($1)");
        assert_eq!(value_rows(0, 4, 0), "");
    }

    #[test]
    fn backend_follows_the_url_scheme() {
        assert_eq!(
            "sqlite://x.db".parse::<Backend>().ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(
            "sqlite::memory:".parse::<Backend>().ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(
            "postgres://u@h/db".parse::<Backend>().ok(),
            Some(Backend::Postgres)
        );
        assert!("mysql://h/db".parse::<Backend>().is_err());
    }

    /// Every PostgreSQL session writes its data pages out as it goes (`POSTGRES_WRITEBACK`),
    /// unless the host chose its own `backend_flush_after` (here in the URL; `postgresql.conf`,
    /// a role's or a database's setting alike).
    #[tokio::test]
    async fn postgres_sessions_write_their_pages_out_unless_the_host_chose_otherwise() {
        let Some(base) = postgres_test_url() else {
            return;
        };
        let chosen = with_session_setting(&base, "backend_flush_after", "512kB");
        for (url, expected) in [(base.clone(), "256kB"), (chosen, "512kB")] {
            let store = Store::connect(&url).await.expect("open");
            let (value,): (String,) = sqlx::query_as("SHOW backend_flush_after")
                .fetch_one(store.read())
                .await
                .expect("show");
            assert_eq!(value, expected, "{url}");
            store.close().await;
        }
    }

    #[tokio::test]
    async fn sqlite_reads_dollar_placeholders_by_number() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::connect(&crate::config::sqlite_url_in(dir.path()))
            .await
            .expect("open");
        let (a, b): (i64, String) = sqlx::query_as("SELECT $2, $1")
            .bind("first")
            .bind(42_i64)
            .fetch_one(store.read())
            .await
            .expect("query");
        assert_eq!((a, b.as_str()), (42, "first"));
    }

    /// A write refused because the database is full is an outage (503), rolls back on its own,
    /// and the next write on the single writer commits for real. (The disk-full test that found
    /// acknowledged writes lost, `faults_disk` in the API suite, fills a real tmpfs; here
    /// `max_page_count` fills the file.)
    #[tokio::test]
    async fn a_write_after_a_full_database_commits_for_real() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::connect(&crate::config::sqlite_url_in(dir.path()))
            .await
            .expect("open");
        sqlx::query("CREATE TABLE filler (body TEXT)")
            .execute(store.write())
            .await
            .expect("create");
        let (pages,): (i64,) = sqlx::query_as("PRAGMA page_count")
            .fetch_one(store.write())
            .await
            .expect("page count");
        sqlx::query(&format!("PRAGMA max_page_count = {}", pages + 2))
            .execute(store.write())
            .await
            .expect("cap the file");

        let mut tx = store.begin().await.expect("begin");
        let mut refused = None;
        for _ in 0..100 {
            if let Err(error) = sqlx::query("INSERT INTO filler (body) VALUES ($1)")
                .bind("x".repeat(3_000))
                .execute(&mut *tx)
                .await
            {
                refused = Some(error);
                break;
            }
        }
        let refused = refused.expect("the capped file fills up");
        assert_eq!(Outage::of(&refused), Some(Outage::OutOfSpace), "{refused}");
        drop(tx);

        // Space again (a no-op when the pool already replaced the connection).
        sqlx::query("PRAGMA max_page_count = 1073741823")
            .execute(store.write())
            .await
            .expect("uncap");
        let mut tx = store.begin().await.expect("begin again");
        sqlx::query("INSERT INTO filler (body) VALUES ('after')")
            .execute(&mut *tx)
            .await
            .expect("insert");
        tx.commit().await.expect("commit");

        // Another connection sees it: it was committed, not parked in a savepoint.
        let (seen,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM filler WHERE body = 'after'")
            .fetch_one(store.read())
            .await
            .expect("read");
        assert_eq!(seen, 1);
    }
}
