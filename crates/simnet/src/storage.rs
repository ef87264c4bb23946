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

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool, Transaction};

use crate::SimnetError;
use crate::sql::Conn;

/// The simnet's tables, as the server's migrations leave them (`migrations/*/0002_simnet.sql`,
/// `0015_flows.sql`, `0025_simnet_clients.sql`); a test in the server compares the two.
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
    local: Option<Arc<Local>>,
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

    /// The pools of the SQLite file at `path` (opened in WAL mode by whoever made them), with
    /// the ledger's hot statements run in place on connections of its own to the same file.
    ///
    /// The writer pool stays the file's write lock: a batch of the ledger's writes holds the
    /// pool's one connection while it writes on its own, so it never meets another writer of
    /// the process.
    pub fn with_sqlite_file(reader: AnyPool, writer: AnyPool, path: impl Into<PathBuf>) -> Self {
        Storage {
            local: Some(Arc::new(Local {
                path: path.into(),
                writer: Mutex::new(None),
                readers: Mutex::new(Vec::new()),
            })),
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
        Ok(match &self.local {
            Some(local) => Reader::Local(local.lend_reader()?),
            None => Reader::Any(self.reader.acquire().await?),
        })
    }

    /// The SQLite file's own connections, when statements run in place.
    pub(crate) fn local(&self) -> Option<&Arc<Local>> {
        self.local.as_ref()
    }

    /// The writer pool's connection, held as the write lock of a batch run in place.
    pub(crate) async fn write_lock(&self) -> Result<PoolConnection<Any>, SimnetError> {
        Ok(self.writer.acquire().await?)
    }
}

/// A connection lent for reads.
pub(crate) enum Reader {
    Any(PoolConnection<Any>),
    Local(Lent),
}

impl Reader {
    pub(crate) fn conn(&mut self) -> Result<Conn<'_>, SimnetError> {
        Ok(match self {
            Reader::Any(conn) => Conn::Any(&mut *conn),
            Reader::Local(lent) => Conn::Local(lent.conn_mut()?),
        })
    }
}

/// A SQLite file's connections of the ledger's own: one writer, and readers lent one at a time
/// (a read holds one only while its statements run, on the calling thread, so there are about
/// as many as threads read at once).
pub(crate) struct Local {
    path: PathBuf,
    writer: Mutex<Option<rusqlite::Connection>>,
    readers: Mutex<Vec<rusqlite::Connection>>,
}

/// Readers kept for reuse; more are opened when more read at once, and closed after.
const KEPT_READERS: usize = 8;

/// Page cache of the writer, which keeps what it wrote, and of each reader, whose cache SQLite
/// empties whenever another connection has committed (reads go through a memory map anyway).
const WRITER_CACHE_KIB: u32 = 16 * 1024;
const READER_CACHE_KIB: u32 = 2 * 1024;

/// Prepared statements each connection keeps (reads of sets come in every size up to
/// [`crate::ledger::KEYS_PER_STATEMENT`]).
const CACHED_STATEMENTS: usize = 256;

impl Local {
    fn lend_reader(self: &Arc<Self>) -> Result<Lent, SimnetError> {
        self.lend(false)
    }

    /// The writer connection, lent to one batch at a time (the caller holds the write lock).
    pub(crate) fn lend_writer(self: &Arc<Self>) -> Result<Lent, SimnetError> {
        self.lend(true)
    }

    /// A kept connection of the role, or a new one.
    fn lend(self: &Arc<Self>, writer: bool) -> Result<Lent, SimnetError> {
        let (kept, cache_kib) = if writer {
            let kept = self
                .writer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            (kept, WRITER_CACHE_KIB)
        } else {
            let kept = self
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            (kept, READER_CACHE_KIB)
        };
        let conn = match kept {
            Some(conn) => conn,
            None => open(&self.path, cache_kib)?,
        };
        Ok(Lent {
            conn: Some(conn),
            home: self.clone(),
            writer,
        })
    }
}

/// A lent connection, back to its [`Local`] when dropped — rolled back first if a failure left
/// it inside a transaction, and closed if even that fails.
pub(crate) struct Lent {
    conn: Option<rusqlite::Connection>,
    home: Arc<Local>,
    writer: bool,
}

impl Lent {
    /// The connection, unless [`Lent::take`] has it.
    pub(crate) fn conn_mut(&mut self) -> Result<&mut rusqlite::Connection, SimnetError> {
        self.conn.as_mut().ok_or_else(|| {
            SimnetError::Store(sqlx::Error::Protocol(
                "the ledger's connection is away (its commit did not return)".into(),
            ))
        })
    }

    /// Take the connection out, for a blocking thread; [`Lent::put`] returns it.
    pub(crate) fn take(&mut self) -> Option<rusqlite::Connection> {
        self.conn.take()
    }

    pub(crate) fn put(&mut self, conn: rusqlite::Connection) {
        self.conn = Some(conn);
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err() {
            return;
        }
        if self.writer {
            *self
                .home
                .writer
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(conn);
        } else {
            let mut readers = self
                .home
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if readers.len() < KEPT_READERS {
                readers.push(conn);
            }
        }
    }
}

/// Open a connection of the ledger's own on the SQLite file at `path`, with the server's
/// settings: `synchronous = FULL` (a commit survives power loss), foreign keys, a wait
/// instead of `SQLITE_BUSY`, the statement journal in memory and reads through a memory map.
fn open(path: &Path, cache_kib: u32) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute_batch(&format!(
        "PRAGMA synchronous = FULL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -{cache_kib};
         PRAGMA mmap_size = 268435456;"
    ))?;
    conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    Ok(conn)
}
