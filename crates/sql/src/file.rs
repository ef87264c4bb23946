//! A SQLite file's connections of the caller's own: one writer, and readers lent one at a time
//! (a read holds one only while its statements run, on the calling thread, so there are about
//! as many as threads read at once).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::Conn;
use crate::error::{away, from_sqlite};

/// The connections to one SQLite file (opened in WAL mode by whoever created it). Cheap to
/// clone.
///
/// The writer is lent to one batch at a time, and only to a caller that holds the process's
/// write lock (its sqlx writer pool's one connection), so it never meets another writer of the
/// process and never waits on `SQLITE_BUSY` behind one.
#[derive(Clone)]
pub struct SqliteFile {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Option<rusqlite::Connection>>,
    readers: Mutex<Vec<rusqlite::Connection>>,
}

impl std::fmt::Debug for SqliteFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteFile")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

/// Readers kept for reuse; more are opened when more read at once, and closed after.
const KEPT_READERS: usize = 8;

/// Page cache of the writer, which keeps what it wrote, and of each reader, whose cache SQLite
/// empties whenever another connection has committed (reads go through a memory map anyway).
const WRITER_CACHE_KIB: u32 = 16 * 1024;
const READER_CACHE_KIB: u32 = 2 * 1024;

/// WAL pages past which SQLite checkpoints inside the commit that crossed them (256 MiB): a
/// backstop only, for connections whose owner runs [`SqliteFile::checkpoint`] beside the writers.
/// A server opening its own connections to the file sets the same. The server's catch-ups
/// stay below it, and how often they stall the writers depends on how far below it they may
/// start: at 64 MiB, registrations (which write pages all over their wallets' index) caught up
/// twice a second, and those stalls were their paced p99 (docs/architecture.md, "Checkpoints").
pub const WAL_AUTOCHECKPOINT_PAGES: u32 = 65536;

/// Prepared statements each connection keeps (sets are read in many sizes).
const CACHED_STATEMENTS: usize = 256;

impl SqliteFile {
    /// Connections to the file at `path`, opened as they are first needed.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteFile {
            inner: Arc::new(Inner {
                path: path.into(),
                writer: Mutex::new(None),
                readers: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A connection for reads; each statement sees the newest committed data.
    pub fn lend_reader(&self) -> Result<Lent, sqlx::Error> {
        self.lend(false)
    }

    /// The writer connection, for one batch. The caller must hold the process's write lock.
    pub fn lend_writer(&self) -> Result<Lent, sqlx::Error> {
        self.lend(true)
    }

    /// Copy the pages the WAL holds into the database file without waiting for any reader or
    /// writer (SQLite's `PASSIVE` checkpoint), so the WAL can start over; how many frames the
    /// WAL held and how many of them are now in the file. It reads and writes the disk: call it
    /// on a blocking thread.
    ///
    /// Why a caller runs it, rather than leave it to the commit that crosses SQLite's
    /// `wal_autocheckpoint`: that commit copies the pages while it holds the write lock, so
    /// every writer waits for it; a checkpoint of its own runs beside the writers.
    pub fn checkpoint(&self) -> Result<(i64, i64), sqlx::Error> {
        let mut lent = self.lend(false)?;
        let (_busy, log, copied): (i64, i64, i64) = lent
            .raw()?
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .map_err(from_sqlite)?;
        Ok((log, copied))
    }

    /// A kept connection of the role, or a new one.
    fn lend(&self, writer: bool) -> Result<Lent, sqlx::Error> {
        let inner = &self.inner;
        let kept = if writer {
            lock(&inner.writer).take()
        } else {
            lock(&inner.readers).pop()
        };
        let conn = match kept {
            Some(conn) => conn,
            None => {
                let cache_kib = if writer {
                    WRITER_CACHE_KIB
                } else {
                    READER_CACHE_KIB
                };
                open(&inner.path, cache_kib).map_err(from_sqlite)?
            }
        };
        Ok(Lent {
            conn: Some(conn),
            home: self.inner.clone(),
            writer,
        })
    }
}

/// A lent connection, back to its [`SqliteFile`] when dropped — rolled back first if a failure
/// left it inside a transaction, and closed if even that fails.
pub struct Lent {
    conn: Option<rusqlite::Connection>,
    home: Arc<Inner>,
    writer: bool,
}

impl Lent {
    /// The connection to run statements on.
    pub fn conn(&mut self) -> Result<Conn<'_>, sqlx::Error> {
        Ok(Conn::Local(self.raw()?))
    }

    /// Run `sql` (one or more statements without parameters: `BEGIN IMMEDIATE`, `SAVEPOINT a`).
    pub fn execute_batch(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        self.raw()?.execute_batch(sql).map_err(from_sqlite)
    }

    /// Commit the open transaction. The commit waits for the disk (`synchronous = FULL`), so
    /// it runs on a blocking thread and the runtime goes on serving meanwhile.
    pub async fn commit(&mut self) -> Result<(), sqlx::Error> {
        let conn = self.conn.take().ok_or_else(away)?;
        let (conn, committed) = tokio::task::spawn_blocking(move || {
            let committed = conn.execute_batch("COMMIT");
            (conn, committed)
        })
        .await
        .map_err(|_| away())?;
        self.conn = Some(conn);
        committed.map_err(from_sqlite)
    }

    fn raw(&mut self) -> Result<&mut rusqlite::Connection, sqlx::Error> {
        self.conn.as_mut().ok_or_else(away)
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
            *lock(&self.home.writer) = Some(conn);
        } else {
            let mut readers = lock(&self.home.readers);
            if readers.len() < KEPT_READERS {
                readers.push(conn);
            }
        }
    }
}

/// A kept-connections lock; a panic while it was held cannot leave it half-changed (a `take`,
/// a `pop` or a `push`), so a poisoned one is used as it is.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Open a connection of the caller's own on the SQLite file at `path`, with the server's
/// settings: `synchronous = FULL` (a commit survives power loss), foreign keys, a wait
/// instead of `SQLITE_BUSY`, the statement journal in memory, reads through a memory map, and
/// SQLite's own checkpoints only past 256 MiB of WAL ([`SqliteFile::checkpoint`] says why).
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
         PRAGMA mmap_size = 268435456;
         PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES};"
    ))?;
    conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query;

    fn file() -> (tempfile::TempDir, SqliteFile) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("db.sqlite");
        let conn = rusqlite::Connection::open(&path).expect("create");
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n BIGINT PRIMARY KEY);")
            .expect("schema");
        (dir, SqliteFile::new(path))
    }

    #[tokio::test]
    async fn a_commit_is_seen_by_readers_and_a_dropped_transaction_by_none() {
        let (_dir, file) = file();
        let mut writer = file.lend_writer().expect("writer");
        writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
        query("INSERT INTO t (n) VALUES ($1)")
            .bind(1)
            .execute(&mut writer.conn().expect("conn"))
            .await
            .expect("insert");
        writer.commit().await.expect("commit");
        writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
        query("INSERT INTO t (n) VALUES ($1)")
            .bind(2)
            .execute(&mut writer.conn().expect("conn"))
            .await
            .expect("insert");
        // A failure between statements drops the lent writer inside its transaction.
        drop(writer);
        let mut reader = file.lend_reader().expect("reader");
        let rows: Vec<(i64,)> = query("SELECT n FROM t ORDER BY n")
            .fetch_all(&mut reader.conn().expect("conn"))
            .await
            .expect("rows");
        assert_eq!(rows, vec![(1,)]);
        // The writer came back rolled back, ready for the next batch.
        let mut writer = file.lend_writer().expect("writer again");
        writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
        writer.commit().await.expect("empty commit");
    }

    #[tokio::test]
    async fn a_checkpoint_copies_the_wal_into_the_file() {
        let (_dir, file) = file();
        let mut writer = file.lend_writer().expect("writer");
        writer
            .execute_batch("PRAGMA wal_autocheckpoint = 0")
            .expect("no automatic checkpoints");
        for n in 0..50 {
            writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
            query("INSERT INTO t (n) VALUES ($1)")
                .bind(n)
                .execute(&mut writer.conn().expect("conn"))
                .await
                .expect("insert");
            writer.commit().await.expect("commit");
        }
        let (log, copied) = file.checkpoint().expect("checkpoint");
        assert!(log >= 50, "{log} frames in the WAL");
        assert_eq!(copied, log);
    }
}
