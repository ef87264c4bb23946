//! A failure in place, as sqlx reports the same failure: [`sqlx::Error::Database`] with SQLite's
//! extended result code (`2067` for a unique violation, `13` for a full disk), so code that
//! reads codes and kinds needs no second path.

use std::borrow::Cow;

use sqlx::error::{DatabaseError, ErrorKind};

/// SQLite's extended constraint codes that have a kind of their own.
const CONSTRAINT_CHECK: i32 = 275;
const CONSTRAINT_FOREIGNKEY: i32 = 787;
const CONSTRAINT_NOTNULL: i32 = 1299;
const CONSTRAINT_PRIMARYKEY: i32 = 1555;
const CONSTRAINT_UNIQUE: i32 = 2067;

/// `error` from rusqlite as sqlx's error.
pub(crate) fn from_sqlite(error: rusqlite::Error) -> sqlx::Error {
    match error {
        rusqlite::Error::SqliteFailure(failure, message) => {
            sqlx::Error::Database(Box::new(InPlaceError {
                code: failure.extended_code,
                message: message.unwrap_or_else(|| failure.to_string()),
            }))
        }
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::InvalidColumnIndex(_) => sqlx::Error::Decode(Box::new(error)),
        other => sqlx::Error::Protocol(format!("sqlite in place: {other}")),
    }
}

/// The connection a statement needed is not there (its last commit's thread panicked).
pub(crate) fn away() -> sqlx::Error {
    sqlx::Error::Protocol("the SQLite connection is away: its last commit did not return".into())
}

#[derive(Debug)]
struct InPlaceError {
    code: i32,
    message: String,
}

impl std::fmt::Display for InPlaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InPlaceError {}

impl DatabaseError for InPlaceError {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(self.code.to_string().into())
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> ErrorKind {
        match self.code {
            CONSTRAINT_UNIQUE | CONSTRAINT_PRIMARYKEY => ErrorKind::UniqueViolation,
            CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
            CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
            CONSTRAINT_CHECK => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_violation_in_place_reads_as_sqlx_reports_it() {
        let conn = rusqlite::Connection::open_in_memory().expect("sqlite");
        conn.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY); INSERT INTO t VALUES ('a');")
            .expect("schema");
        let error = conn
            .execute_batch("INSERT INTO t VALUES ('a')")
            .expect_err("a duplicate");
        let sqlx::Error::Database(db) = from_sqlite(error) else {
            panic!("not a database error");
        };
        assert!(db.is_unique_violation());
        assert_eq!(db.code().as_deref(), Some("1555"));
    }
}
