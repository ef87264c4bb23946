//! A write transaction and a read connection, in place on a SQLite file when the caller has
//! one ([`SqliteFile`]), through sqlx's pools otherwise.

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool};

use crate::{Conn, Lent, SqliteFile, query};

/// A write transaction: committed whole by [`Transaction::commit`], rolled back when dropped.
pub enum Transaction {
    /// A transaction of sqlx's pool (PostgreSQL, in-memory SQLite).
    Pool(sqlx::Transaction<'static, Any>),
    /// On the file's writer connection, while `_lock` (the writer pool's one connection) keeps
    /// every other writer of the process out.
    InPlace {
        /// Held, never used: the write lock.
        _lock: PoolConnection<Any>,
        /// The file's writer connection, inside `BEGIN IMMEDIATE`.
        lent: Lent,
    },
}

impl Transaction {
    /// Begin a write transaction on `writer` — in place on `file` when there is one, holding
    /// `writer`'s connection (which must be the process's only writer connection to the file)
    /// as the write lock.
    pub async fn begin(writer: &AnyPool, file: Option<&SqliteFile>) -> Result<Self, sqlx::Error> {
        let Some(file) = file else {
            return Ok(Transaction::Pool(writer.begin().await?));
        };
        let lock = writer.acquire().await?;
        let mut lent = file.lend_writer()?;
        // IMMEDIATE takes the file's write lock now, so no statement of the batch meets
        // `SQLITE_BUSY` half-way (another process — a backup — may hold it for a while).
        lent.execute_batch("BEGIN IMMEDIATE")?;
        Ok(Transaction::InPlace { _lock: lock, lent })
    }

    /// The connection to run the transaction's statements on.
    pub fn conn(&mut self) -> Result<Conn<'_>, sqlx::Error> {
        match self {
            Transaction::Pool(tx) => Ok(Conn::Any(&mut *tx)),
            Transaction::InPlace { lent, .. } => lent.conn(),
        }
    }

    /// Mark a savepoint named `name`, to roll back to with [`Transaction::rollback_to`].
    pub async fn savepoint(&mut self, name: &str) -> Result<(), sqlx::Error> {
        self.run(&format!("SAVEPOINT {name}")).await
    }

    /// Undo everything since savepoint `name` (which stays open).
    pub async fn rollback_to(&mut self, name: &str) -> Result<(), sqlx::Error> {
        self.run(&format!("ROLLBACK TO SAVEPOINT {name}")).await
    }

    /// Forget savepoint `name`, keeping what was done since.
    pub async fn release(&mut self, name: &str) -> Result<(), sqlx::Error> {
        self.run(&format!("RELEASE SAVEPOINT {name}")).await
    }

    /// Make the transaction durable; an error leaves nothing of it.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Transaction::Pool(tx) => tx.commit().await,
            Transaction::InPlace { _lock, mut lent } => lent.commit().await,
        }
    }

    /// Undo the transaction.
    pub async fn rollback(self) -> Result<(), sqlx::Error> {
        match self {
            Transaction::Pool(tx) => tx.rollback().await,
            Transaction::InPlace { _lock, mut lent } => lent.execute_batch("ROLLBACK"),
        }
    }

    async fn run(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        match self {
            Transaction::Pool(tx) => query(sql).execute(&mut Conn::Any(&mut *tx)).await.map(drop),
            Transaction::InPlace { lent, .. } => lent.execute_batch(sql),
        }
    }
}

/// A connection lent for a few reads: in place on a SQLite file, from the read pool otherwise.
/// Each statement sees the newest committed data.
pub enum Reader {
    /// A connection of the read pool.
    Pool(PoolConnection<Any>),
    /// A reader connection of the file, lent until dropped.
    InPlace(Lent),
}

impl Reader {
    /// A reader from `pool`, or in place on `file` when there is one.
    pub async fn lend(pool: &AnyPool, file: Option<&SqliteFile>) -> Result<Self, sqlx::Error> {
        Ok(match file {
            Some(file) => Reader::InPlace(file.lend_reader()?),
            None => Reader::Pool(pool.acquire().await?),
        })
    }

    /// The connection to run statements on.
    pub fn conn(&mut self) -> Result<Conn<'_>, sqlx::Error> {
        match self {
            Reader::Pool(conn) => Ok(Conn::Any(&mut *conn)),
            Reader::InPlace(lent) => lent.conn(),
        }
    }
}
