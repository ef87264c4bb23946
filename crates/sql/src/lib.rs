//! Statements written once, run on either database: through sqlx on PostgreSQL (and on
//! in-memory SQLite), and in place on a SQLite file — on the calling thread, with rusqlite on
//! connections of the caller's own ([`SqliteFile`]).
//!
//! Errors are sqlx's on both paths: a statement that fails in place reports SQLite's extended
//! result code as a database error, the same code and kind sqlx would report (a unique
//! violation, a full disk), so callers classify failures one way.
//!
//! Why in place: sqlx runs each SQLite connection on a worker thread of its own, so every
//! statement is a hand-off to that thread and back, and every row it returns another one. On
//! one core that is two context switches a row; measured side by side, 10–14 µs a statement
//! through sqlx against 0.5–2.3 µs in place (docs/architecture.md, "Statements in place"). A
//! hot statement is a primary-key read or a small write: in place it costs less than the
//! hand-off.
//!
//! Both the server and its simnet use this crate, so a batch of the server's writes and a batch
//! of the ledger's run the same way: on the file's one writer connection, while the caller
//! holds its sqlx writer pool's one connection as the process's write lock, with the commit —
//! the only step that waits for the disk — on a blocking thread.

#![warn(unreachable_pub, missing_docs)]

mod error;
mod file;
mod query;
mod rows;
mod transaction;

pub use file::{Lent, SqliteFile, WAL_AUTOCHECKPOINT_PAGES};
pub use query::{Column, Conn, FromRow, Param, Query, query};
pub use rows::{LONG_TEXT, Rows, value_rows};
pub use transaction::{Reader, Transaction};

/// What [`from_row!`] names, so its callers need not depend on sqlx and rusqlite themselves.
#[doc(hidden)]
pub mod __private {
    pub use rusqlite::Error as SqliteError;
    pub use rusqlite::Row as SqliteRow;
    pub use sqlx::Error as SqlxError;
    pub use sqlx::any::AnyRow;
}
