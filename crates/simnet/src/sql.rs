//! One way to run the ledger's statements on either database: through sqlx on PostgreSQL (and
//! on a private in-memory SQLite), and in place on a SQLite file — on the calling thread, with
//! rusqlite on a connection of the ledger's own ([`crate::storage`]).
//!
//! Why in place: sqlx runs each SQLite connection on a worker thread of its own, so every
//! statement is a hand-off to that thread and back, and every row it returns another one. On
//! one core that is two context switches a row; measured side by side, 10–14 µs a statement
//! through sqlx against 0.5–2.3 µs in place (docs/simnet.md, "Statements in place"). A ledger
//! statement is a primary-key read or a small write: in place it costs less than the hand-off.
//!
//! Statements are written once, with PostgreSQL's `$1, $2, …` placeholders; in place they run
//! as SQLite's `?1, ?2, …` (the same numbers, so a statement may name them in any order).
//! Rows decode into tuples of `i64`, `String` and their `Option`s ([`FromRow`]), as with
//! sqlx's `query_as`.

use std::borrow::Cow;

use rusqlite::types::{ToSql, ToSqlOutput, Value as SqliteValue};
use sqlx::any::AnyRow;
use sqlx::{Any, AnyConnection, Row as _};

use crate::SimnetError;

/// A connection statements run on: sqlx's, or a SQLite connection used in place.
pub(crate) enum Conn<'c> {
    Any(&'c mut AnyConnection),
    Local(&'c mut rusqlite::Connection),
}

/// A bound value. Nulls carry their type: PostgreSQL types every parameter.
#[derive(Debug, Clone)]
pub(crate) enum Param<'q> {
    Int(i64),
    Text(Cow<'q, str>),
    NullText,
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Param::Int(value)
    }
}

impl<'q> From<&'q str> for Param<'q> {
    fn from(value: &'q str) -> Self {
        Param::Text(Cow::Borrowed(value))
    }
}

impl<'q> From<&'q String> for Param<'q> {
    fn from(value: &'q String) -> Self {
        Param::Text(Cow::Borrowed(value.as_str()))
    }
}

impl From<String> for Param<'_> {
    fn from(value: String) -> Self {
        Param::Text(Cow::Owned(value))
    }
}

impl<'q> From<Option<&'q str>> for Param<'q> {
    fn from(value: Option<&'q str>) -> Self {
        value.map_or(Param::NullText, Param::from)
    }
}

impl From<Option<String>> for Param<'_> {
    fn from(value: Option<String>) -> Self {
        value.map_or(Param::NullText, Param::from)
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(value) => ToSqlOutput::Owned(SqliteValue::Integer(*value)),
            Param::Text(text) => ToSqlOutput::Borrowed(text.as_ref().into()),
            Param::NullText => ToSqlOutput::Owned(SqliteValue::Null),
        })
    }
}

/// A column a row decodes into, from either kind of row.
pub(crate) trait Column: Sized + Send {
    fn from_any(row: &AnyRow, index: usize) -> Result<Self, sqlx::Error>;
    fn from_local(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Self>;
}

impl<T> Column for T
where
    T: for<'r> sqlx::Decode<'r, Any> + sqlx::Type<Any> + rusqlite::types::FromSql + Send,
{
    fn from_any(row: &AnyRow, index: usize) -> Result<Self, sqlx::Error> {
        row.try_get(index)
    }

    fn from_local(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Self> {
        row.get(index)
    }
}

/// A row as a tuple of columns.
pub(crate) trait FromRow: Sized + Send {
    fn from_any(row: &AnyRow) -> Result<Self, sqlx::Error>;
    fn from_local(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self>;
}

macro_rules! tuple_rows {
    ($($name:ident $index:tt),+) => {
        impl<$($name: Column),+> FromRow for ($($name,)+) {
            fn from_any(row: &AnyRow) -> Result<Self, sqlx::Error> {
                Ok(($($name::from_any(row, $index)?,)+))
            }

            fn from_local(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
                Ok(($($name::from_local(row, $index)?,)+))
            }
        }
    };
}

tuple_rows!(A 0);
tuple_rows!(A 0, B 1);
tuple_rows!(A 0, B 1, C 2);
tuple_rows!(A 0, B 1, C 2, D 3);
tuple_rows!(A 0, B 1, C 2, D 3, E 4);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// A statement and its parameters, run with [`Query::execute`] or fetched as rows.
#[derive(Debug)]
pub(crate) struct Query<'q> {
    sql: &'q str,
    params: Vec<Param<'q>>,
}

/// A statement (`$N` placeholders) to bind and run.
pub(crate) fn query(sql: &str) -> Query<'_> {
    Query {
        sql,
        params: Vec::new(),
    }
}

impl<'q> Query<'q> {
    /// Bind the next parameter (`$1` first).
    pub(crate) fn bind(mut self, value: impl Into<Param<'q>>) -> Self {
        self.params.push(value.into());
        self
    }

    /// Run the statement; the rows it changed.
    pub(crate) async fn execute(self, conn: &mut Conn<'_>) -> Result<u64, SimnetError> {
        match conn {
            Conn::Any(conn) => Ok(self.any().execute(&mut **conn).await?.rows_affected()),
            Conn::Local(conn) => Ok(self.execute_local(conn)?),
        }
    }

    /// Every row, in order.
    pub(crate) async fn fetch_all<T: FromRow>(
        self,
        conn: &mut Conn<'_>,
    ) -> Result<Vec<T>, SimnetError> {
        match conn {
            Conn::Any(conn) => {
                let rows = self.any().fetch_all(&mut **conn).await?;
                Ok(rows
                    .iter()
                    .map(T::from_any)
                    .collect::<Result<_, sqlx::Error>>()?)
            }
            Conn::Local(conn) => Ok(self.fetch_local(conn, usize::MAX)?),
        }
    }

    /// The first row, if any.
    pub(crate) async fn fetch_optional<T: FromRow>(
        self,
        conn: &mut Conn<'_>,
    ) -> Result<Option<T>, SimnetError> {
        match conn {
            Conn::Any(conn) => Ok(match self.any().fetch_optional(&mut **conn).await? {
                Some(row) => Some(T::from_any(&row)?),
                None => None,
            }),
            Conn::Local(conn) => Ok(self.fetch_local(conn, 1)?.pop()),
        }
    }

    /// The first row; an error when there is none.
    pub(crate) async fn fetch_one<T: FromRow>(self, conn: &mut Conn<'_>) -> Result<T, SimnetError> {
        self.fetch_optional(conn)
            .await?
            .ok_or(SimnetError::Store(sqlx::Error::RowNotFound))
    }

    fn any(&self) -> sqlx::query::Query<'_, Any, sqlx::any::AnyArguments<'_>> {
        let mut query = sqlx::query(self.sql);
        for param in &self.params {
            query = match param {
                Param::Int(value) => query.bind(*value),
                Param::Text(text) => query.bind(text.as_ref()),
                Param::NullText => query.bind(None::<String>),
            };
        }
        query
    }

    fn prepared<'c>(
        &self,
        conn: &'c rusqlite::Connection,
    ) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
        let mut statement = conn.prepare_cached(&numbered(self.sql))?;
        for (index, param) in self.params.iter().enumerate() {
            statement.raw_bind_parameter(index + 1, param)?;
        }
        Ok(statement)
    }

    fn execute_local(&self, conn: &rusqlite::Connection) -> rusqlite::Result<u64> {
        let mut statement = self.prepared(conn)?;
        // Stepped to the end, so a statement that returns rows (`… RETURNING`) runs whole.
        let mut rows = statement.raw_query();
        while rows.next()?.is_some() {}
        Ok(conn.changes())
    }

    fn fetch_local<T: FromRow>(
        &self,
        conn: &rusqlite::Connection,
        most: usize,
    ) -> rusqlite::Result<Vec<T>> {
        let mut statement = self.prepared(conn)?;
        let mut rows = statement.raw_query();
        let mut found = Vec::new();
        while found.len() < most {
            match rows.next()? {
                Some(row) => found.push(T::from_local(row)?),
                None => break,
            }
        }
        Ok(found)
    }
}

/// `sql` with its `$N` placeholders as SQLite's `?N` (the same numbers). The ledger's
/// statements carry no `$` inside string literals.
fn numbered(sql: &str) -> Cow<'_, str> {
    if !sql.contains('$') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_keep_their_numbers() {
        assert_eq!(
            numbered("INSERT INTO t VALUES ($3, $1, $2), ($4, $1, $2)"),
            "INSERT INTO t VALUES (?3, ?1, ?2), (?4, ?1, ?2)"
        );
        assert_eq!(numbered("SELECT 1"), "SELECT 1");
    }

    #[tokio::test]
    async fn a_statement_runs_the_same_in_place_and_through_sqlx() {
        sqlx::any::install_default_drivers();
        let mut local = rusqlite::Connection::open_in_memory().expect("sqlite");
        let mut any: AnyConnection = sqlx::Connection::connect("sqlite::memory:")
            .await
            .expect("sqlx sqlite");
        for conn in [Conn::Local(&mut local), Conn::Any(&mut any)].iter_mut() {
            query("CREATE TABLE t (k TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)")
                .execute(conn)
                .await
                .expect("create");
            // Numbers named out of order, a typed null, a statement that returns rows.
            let added = query("INSERT INTO t (n, k, note) VALUES ($2, $1, $3), ($4, $5, $6)")
                .bind("a")
                .bind(1)
                .bind(None::<&str>)
                .bind(2)
                .bind("b".to_owned())
                .bind(Some("second"))
                .execute(conn)
                .await
                .expect("insert");
            assert_eq!(added, 2);
            let updated = query("UPDATE t SET n = n + 10 WHERE k = $1 RETURNING n")
                .bind("a")
                .execute(conn)
                .await
                .expect("update returning");
            assert_eq!(updated, 1);
            let rows: Vec<(String, i64, Option<String>)> =
                query("SELECT k, n, note FROM t ORDER BY k")
                    .fetch_all(conn)
                    .await
                    .expect("rows");
            assert_eq!(
                rows,
                vec![
                    ("a".to_owned(), 11, None),
                    ("b".to_owned(), 2, Some("second".to_owned()))
                ]
            );
            let none: Option<(i64,)> = query("SELECT n FROM t WHERE k = $1")
                .bind("zz")
                .fetch_optional(conn)
                .await
                .expect("optional");
            assert_eq!(none, None);
            assert!(
                query("SELECT n FROM t WHERE k = $1")
                    .bind("zz")
                    .fetch_one::<(i64,)>(conn)
                    .await
                    .is_err()
            );
        }
    }
}
