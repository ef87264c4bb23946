//! Where the ledger lives: sqlx pools over SQLite or PostgreSQL. A server that already has a
//! database hands the simnet its pools ([`Storage::new`], tables from its own migrations); a
//! test or a standalone simnet takes a private in-memory SQLite database
//! ([`Storage::in_memory`]) with the tables [`Storage::create_schema`] creates.
//!
//! Every query is written once with `$1, $2, …` placeholders, and the schema uses only `TEXT`
//! and `BIGINT`, so the same SQL runs on both back ends. On a SQLite file
//! ([`Storage::with_sqlite_file`]) the hot statements — a landing's writes, the reads of
//! accounts, statuses and transactions — run in place on connections of the ledger's own
//! ([`crate::sql`]); everything else, and every statement on PostgreSQL, goes through sqlx.

use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{Any, AnyPool, Transaction};

use crucible_sql::{Reader, SqliteFile};

use crate::SimnetError;

/// The simnet's tables, as the server's migrations leave them (`migrations/*/0002_simnet.sql`,
/// `0015_flows.sql`, `0025_simnet_clients.sql`, the address index of postgres/0050 and
/// sqlite/0046); a test in the server compares the two.
const SCHEMA: &str = include_str!("schema.sql");

/// Which database the ledger is in: PostgreSQL writers also take an advisory lock, so several
/// processes sharing one database write the ledger one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite: writes go through a single-connection pool, so they never collide.
    Sqlite,
    /// PostgreSQL: possibly shared by several processes.
    Postgres,
}

/// The pools the simnet reads and writes through. Cheap to clone.
#[derive(Clone)]
pub struct Storage {
    reader: AnyPool,
    writer: AnyPool,
    backend: Backend,
    /// A SQLite file's connections for statements in place.
    local: Option<SqliteFile>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Storage {
    /// The pools of a database that holds the simnet's tables: `reader` for reads, `writer` for
    /// write transactions (on SQLite, a pool of one connection, so writers queue instead of
    /// failing with `SQLITE_BUSY`; on PostgreSQL it may be the same pool).
    pub fn new(reader: AnyPool, writer: AnyPool, backend: Backend) -> Self {
        Storage {
            reader,
            writer,
            backend,
            local: None,
        }
    }

    /// The pools of a SQLite file (opened in WAL mode by whoever made them), with the ledger's
    /// hot statements run in place on `file`'s connections. A server hands over the
    /// [`SqliteFile`] its own statements run on, so the two share one writer connection.
    ///
    /// The writer pool stays the file's write lock: a batch of the ledger's writes holds the
    /// pool's one connection while it writes on its own, so it never meets another writer of
    /// the process.
    pub fn with_sqlite_file(reader: AnyPool, writer: AnyPool, file: SqliteFile) -> Self {
        Storage {
            local: Some(file),
            ..Storage::new(reader, writer, Backend::Sqlite)
        }
    }

    /// A private in-memory SQLite ledger with its tables created: gone when the last clone is
    /// dropped. One connection serves reads and writes (every simnet operation holds at most
    /// one at a time), and it is never closed for idleness, which would lose the database.
    pub async fn in_memory() -> Result<Self, sqlx::Error> {
        install_default_drivers();
        let pool = AnyPoolOptions::new()
            .min_connections(1)
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(Duration::from_secs(30))
            .connect("sqlite::memory:")
            .await?;
        let storage = Storage::new(pool.clone(), pool, Backend::Sqlite);
        storage.create_schema().await?;
        Ok(storage)
    }

    /// Create the simnet's tables and indexes where they do not exist yet (for a database no
    /// server's migrations manage).
    pub async fn create_schema(&self) -> Result<(), sqlx::Error> {
        // Comment lines go first, so a semicolon in a comment cannot split a statement.
        let sql: String = SCHEMA
            .lines()
            .filter(|line| !line.trim_start().starts_with("--"))
            .map(|line| format!("{line}\n"))
            .collect();
        let mut tx = self.writer.begin().await?;
        for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        tx.commit().await
    }

    /// Close every connection (a private in-memory database is gone afterwards).
    pub async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool for reads.
    pub fn read(&self) -> &AnyPool {
        &self.reader
    }

    /// A write transaction: whole or absent.
    pub async fn begin(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        self.writer.begin().await
    }

    /// A connection for a few reads: in place on a SQLite file, from the read pool otherwise.
    /// Each statement sees the newest committed ledger.
    pub(crate) async fn reader(&self) -> Result<Reader, SimnetError> {
        Ok(Reader::lend(&self.reader, self.local.as_ref()).await?)
    }

    /// The SQLite file's own connections, when statements run in place.
    pub(crate) fn local(&self) -> Option<&SqliteFile> {
        self.local.as_ref()
    }

    /// The pool for write transactions (on SQLite its one connection is the process's write
    /// lock, held by batches run in place too).
    pub(crate) fn writer(&self) -> &AnyPool {
        &self.writer
    }
}
