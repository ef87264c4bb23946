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

    /// Begin a write transaction through `writer`'s pool (never in place) with `begin`, a
    /// `BEGIN` and the statements that go with it in one round trip: on PostgreSQL a simple
    /// query may hold several (`BEGIN; SELECT pg_advisory_xact_lock(…)`), so a transaction that
    /// always starts the same way does not wait for its first statement's answer twice. Its
    /// text is sent as it is: constants only, never a caller's value.
    pub async fn begin_with(writer: &AnyPool, begin: String) -> Result<Self, sqlx::Error> {
        Ok(Transaction::Pool(writer.begin_with(begin).await?))
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

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::any::{AnyPoolOptions, install_default_drivers};

    /// A SQLite file with a table, its writer pool (one connection, the write lock) and reader
    /// pool, and the file's own connections.
    async fn file() -> (tempfile::TempDir, AnyPool, AnyPool, SqliteFile) {
        install_default_drivers();
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("db.sqlite");
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let writer = AnyPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .expect("writer");
        sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&writer)
            .await
            .expect("wal");
        sqlx::query("CREATE TABLE t (n BIGINT PRIMARY KEY)")
            .execute(&writer)
            .await
            .expect("table");
        let reader = AnyPoolOptions::new()
            .max_connections(2)
            .connect(&url)
            .await
            .expect("reader");
        (dir, writer, reader, SqliteFile::new(path))
    }

    async fn insert(tx: &mut Transaction, n: i64) -> Result<u64, sqlx::Error> {
        query("INSERT INTO t (n) VALUES ($1)")
            .bind(n)
            .execute(&mut tx.conn()?)
            .await
    }

    async fn stored(reader: &AnyPool, file: Option<&SqliteFile>) -> Vec<i64> {
        let mut reader = Reader::lend(reader, file).await.expect("reader");
        let rows: Vec<(i64,)> = query("SELECT n FROM t ORDER BY n")
            .fetch_all(&mut reader.conn().expect("conn"))
            .await
            .expect("rows");
        rows.into_iter().map(|(n,)| n).collect()
    }

    #[tokio::test]
    async fn savepoints_commits_and_rollbacks_behave_alike_in_place_and_through_the_pool() {
        for in_place in [true, false] {
            let (_dir, writer, reader, file) = file().await;
            let file = in_place.then_some(&file);
            let mut tx = Transaction::begin(&writer, file).await.expect("begin");
            insert(&mut tx, 1).await.expect("1");
            tx.savepoint("item").await.expect("savepoint");
            insert(&mut tx, 2).await.expect("2");
            // A duplicate fails as sqlx reports it, whichever way it ran.
            let duplicate = insert(&mut tx, 2).await.expect_err("duplicate");
            let sqlx::Error::Database(db) = duplicate else {
                panic!("not a database error: {duplicate}");
            };
            assert!(db.is_unique_violation(), "in place: {in_place}");
            tx.rollback_to("item").await.expect("rollback to");
            tx.release("item").await.expect("release");
            insert(&mut tx, 3).await.expect("3");
            // Nothing is seen before the commit.
            assert_eq!(stored(&reader, file).await, Vec::<i64>::new());
            tx.commit().await.expect("commit");
            assert_eq!(
                stored(&reader, file).await,
                vec![1, 3],
                "in place: {in_place}"
            );

            let mut tx = Transaction::begin(&writer, file).await.expect("begin");
            insert(&mut tx, 4).await.expect("4");
            tx.rollback().await.expect("rollback");
            let mut tx = Transaction::begin(&writer, file).await.expect("begin");
            insert(&mut tx, 5).await.expect("5");
            // Dropped without a commit (a failure between statements): nothing of it stays,
            // and the write lock is free again.
            drop(tx);
            let tx = Transaction::begin(&writer, file)
                .await
                .expect("begin again");
            tx.commit().await.expect("empty commit");
            assert_eq!(
                stored(&reader, file).await,
                vec![1, 3],
                "in place: {in_place}"
            );
        }
    }
}
