//! The statement: one text with PostgreSQL's `$1, $2, …` placeholders, run through sqlx or in
//! place (as SQLite's `?1, ?2, …`: the same numbers, so a statement may name them in any
//! order). Rows decode into tuples of `i64`, `f64`, `String` and their `Option`s ([`FromRow`]),
//! as with sqlx's `query_as`.

use std::borrow::Cow;

use rusqlite::types::{ToSql, ToSqlOutput, Value as SqliteValue};
use sqlx::any::{AnyRow, AnyTypeInfoKind};
use sqlx::{Any, AnyConnection, Row as _};
use sqlx_core::any::AnyValueKind;

use crate::error::from_sqlite;

/// A connection statements run on: sqlx's, or a SQLite connection used in place.
pub enum Conn<'c> {
    /// Through sqlx: PostgreSQL, an in-memory SQLite database, a pooled connection.
    Any(&'c mut AnyConnection),
    /// In place on a SQLite file, on the calling thread.
    Local(&'c mut rusqlite::Connection),
}

impl Conn<'_> {
    /// True on PostgreSQL, where every statement is a round trip to the server.
    pub fn is_postgres(&self) -> bool {
        match self {
            Conn::Any(conn) => conn.backend_name() == <sqlx::Postgres as sqlx::Database>::NAME,
            Conn::Local(_) => false,
        }
    }
}

/// A bound value. Nulls carry their type: PostgreSQL types every parameter.
#[derive(Debug, Clone)]
#[expect(missing_docs, reason = "each variant is the SQL value it names")]
pub enum Param<'q> {
    Int(i64),
    Real(f64),
    Text(Cow<'q, str>),
    Blob(Cow<'q, [u8]>),
    NullInt,
    NullReal,
    NullText,
}

impl From<Option<f64>> for Param<'_> {
    fn from(value: Option<f64>) -> Self {
        value.map_or(Param::NullReal, Param::Real)
    }
}

impl<'q> From<&'q [u8]> for Param<'q> {
    fn from(value: &'q [u8]) -> Self {
        Param::Blob(Cow::Borrowed(value))
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(value: Option<i64>) -> Self {
        value.map_or(Param::NullInt, Param::Int)
    }
}

impl From<bool> for Param<'_> {
    fn from(value: bool) -> Self {
        Param::Int(i64::from(value))
    }
}

impl From<f64> for Param<'_> {
    fn from(value: f64) -> Self {
        Param::Real(value)
    }
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
            Param::Real(value) => ToSqlOutput::Owned(SqliteValue::Real(*value)),
            Param::Text(text) => ToSqlOutput::Borrowed(text.as_ref().into()),
            Param::Blob(bytes) => ToSqlOutput::Borrowed(bytes.as_ref().into()),
            Param::NullInt | Param::NullReal | Param::NullText => {
                ToSqlOutput::Owned(SqliteValue::Null)
            }
        })
    }
}

/// A column a row decodes into, from either kind of row.
pub trait Column: Sized + Send {
    /// The column at `index` of a row sqlx returned: a text or a blob moved out of the row
    /// (which is left holding a null there), any other value decoded from it.
    fn from_any(row: &mut AnyRow, index: usize) -> Result<Self, sqlx::Error>;
    /// The column at `index` of a row read in place.
    fn from_local(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Self>;
}

impl<T> Column for T
where
    T: for<'r> sqlx::Decode<'r, Any> + sqlx::Type<Any> + rusqlite::types::FromSql + Send + 'static,
{
    fn from_any(row: &mut AnyRow, index: usize) -> Result<Self, sqlx::Error> {
        match take_owned(row, index) {
            Some(value) => Ok(value),
            None => row.try_get(index),
        }
    }

    fn from_local(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Self> {
        row.get(index)
    }
}

/// The text or blob at `index` of `row`, moved out, when `T` is what it decodes to (`String`,
/// `Vec<u8>` or their `Option`s); `None` (the row untouched) for anything else, which sqlx then
/// decodes. sqlx's driver for PostgreSQL already copies each value out of the message into the
/// row it returns; decoding a `String` from that row copied it once more (docs/architecture.md,
/// "Rows read back through sqlx").
fn take_owned<T: 'static>(row: &mut AnyRow, index: usize) -> Option<T> {
    let value = row.values.get_mut(index)?;
    let mut slot: Option<T> = None;
    let wanted = &mut slot as &mut dyn std::any::Any;
    let moved = match &mut value.kind {
        AnyValueKind::Text(text) => move_into(wanted, text),
        AnyValueKind::Blob(bytes) => move_into(wanted, bytes),
        _ => false,
    };
    if moved {
        // What was moved out reads as a null from now on, not as an empty value.
        value.kind = AnyValueKind::Null(AnyTypeInfoKind::Null);
    }
    slot
}

/// Move `value` into `slot` when the slot is an `Option` of its owned form or of that form's
/// `Option`; whether it did.
fn move_into<B>(slot: &mut dyn std::any::Any, value: &mut Cow<'static, B>) -> bool
where
    B: ToOwned + ?Sized,
    B::Owned: Default + 'static,
{
    if let Some(slot) = slot.downcast_mut::<Option<B::Owned>>() {
        *slot = Some(std::mem::take(value).into_owned());
    } else if let Some(slot) = slot.downcast_mut::<Option<Option<B::Owned>>>() {
        *slot = Some(Some(std::mem::take(value).into_owned()));
    } else {
        return false;
    }
    true
}

/// A row as a tuple of columns.
pub trait FromRow: Sized + Send {
    /// A row sqlx returned, its texts and blobs moved out ([`Column::from_any`]).
    fn from_any(row: &mut AnyRow) -> Result<Self, sqlx::Error>;
    /// A row read in place.
    fn from_local(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self>;
}

macro_rules! tuple_rows {
    ($($name:ident $index:tt),+) => {
        impl<$($name: Column),+> FromRow for ($($name,)+) {
            fn from_any(row: &mut AnyRow) -> Result<Self, sqlx::Error> {
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
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_rows!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);

/// [`FromRow`] for a struct whose fields are the statement's columns, in order:
/// `crucible_sql::from_row!(DueRow { id, account_id, ledger });`.
#[macro_export]
macro_rules! from_row {
    ($row:ty { $($field:ident),+ $(,)? }) => {
        impl $crate::FromRow for $row {
            fn from_any(row: &mut $crate::__private::AnyRow) -> Result<Self, $crate::__private::SqlxError> {
                let mut index = 0usize;
                $(
                    let $field = $crate::Column::from_any(row, index)?;
                    index += 1;
                )+
                let _ = index;
                Ok(Self { $($field),+ })
            }

            fn from_local(
                row: &$crate::__private::SqliteRow<'_>,
            ) -> Result<Self, $crate::__private::SqliteError> {
                let mut index = 0usize;
                $(
                    let $field = $crate::Column::from_local(row, index)?;
                    index += 1;
                )+
                let _ = index;
                Ok(Self { $($field),+ })
            }
        }
    };
}

/// A statement and its parameters, run with [`Query::execute`] or fetched as rows.
#[derive(Debug)]
pub struct Query<'q> {
    sql: &'q str,
    params: Vec<Param<'q>>,
}

/// A statement (`$N` placeholders) to bind and run.
pub fn query(sql: &str) -> Query<'_> {
    Query {
        sql,
        params: Vec::new(),
    }
}

impl<'q> Query<'q> {
    /// Bind the next parameter (`$1` first).
    pub fn bind(mut self, value: impl Into<Param<'q>>) -> Self {
        self.params.push(value.into());
        self
    }

    /// Run the statement; the rows it changed.
    pub async fn execute(self, conn: &mut Conn<'_>) -> Result<u64, sqlx::Error> {
        match conn {
            Conn::Any(conn) => Ok(self.any().execute(&mut **conn).await?.rows_affected()),
            Conn::Local(conn) => self.execute_local(conn).map_err(from_sqlite),
        }
    }

    /// Every row, in order.
    pub async fn fetch_all<T: FromRow>(self, conn: &mut Conn<'_>) -> Result<Vec<T>, sqlx::Error> {
        match conn {
            Conn::Any(conn) => {
                let rows = self.any().fetch_all(&mut **conn).await?;
                // Sized once: collected through `Result`, the rows grew by doubling, a batch of
                // wide rows copied over and over.
                let mut decoded = Vec::with_capacity(rows.len());
                for mut row in rows {
                    decoded.push(T::from_any(&mut row)?);
                }
                Ok(decoded)
            }
            Conn::Local(conn) => self.fetch_local(conn, usize::MAX).map_err(from_sqlite),
        }
    }

    /// The first row, if any.
    pub async fn fetch_optional<T: FromRow>(
        self,
        conn: &mut Conn<'_>,
    ) -> Result<Option<T>, sqlx::Error> {
        match conn {
            Conn::Any(conn) => Ok(match self.any().fetch_optional(&mut **conn).await? {
                Some(mut row) => Some(T::from_any(&mut row)?),
                None => None,
            }),
            Conn::Local(conn) => Ok(self.fetch_local(conn, 1).map_err(from_sqlite)?.pop()),
        }
    }

    /// The first row; an error when there is none.
    pub async fn fetch_one<T: FromRow>(self, conn: &mut Conn<'_>) -> Result<T, sqlx::Error> {
        self.fetch_optional(conn)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    fn any(&self) -> sqlx::query::Query<'_, Any, sqlx::any::AnyArguments<'_>> {
        let mut query = sqlx::query(self.sql);
        for param in &self.params {
            query = match param {
                Param::Int(value) => query.bind(*value),
                Param::Real(value) => query.bind(*value),
                Param::Text(text) => query.bind(text.as_ref()),
                Param::Blob(bytes) => query.bind(bytes.as_ref()),
                Param::NullInt => query.bind(None::<i64>),
                Param::NullReal => query.bind(None::<f64>),
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

/// `sql` with its `$N` placeholders as SQLite's `?N` (the same numbers). Statements carry no
/// `$` inside string literals.
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

    struct Named {
        k: String,
        n: i64,
        note: Option<String>,
    }

    crate::from_row!(Named { k, n, note });

    #[tokio::test]
    async fn a_struct_reads_its_columns_in_order() {
        let mut local = rusqlite::Connection::open_in_memory().expect("sqlite");
        let mut conn = Conn::Local(&mut local);
        let row: Named = query("SELECT 'a', 7, NULL")
            .fetch_one(&mut conn)
            .await
            .expect("row");
        assert_eq!((row.k.as_str(), row.n, row.note), ("a", 7, None));
    }

    #[test]
    fn placeholders_keep_their_numbers() {
        assert_eq!(
            numbered("INSERT INTO t VALUES ($3, $1, $2), ($4, $1, $2)"),
            "INSERT INTO t VALUES (?3, ?1, ?2), (?4, ?1, ?2)"
        );
        assert_eq!(numbered("SELECT 1"), "SELECT 1");
    }

    /// A text or a blob is moved out of a row sqlx returned, not copied: read again, the
    /// column is a null. Other values decode as sqlx decodes them, its type checks included.
    #[tokio::test]
    async fn a_row_from_sqlx_hands_its_texts_and_blobs_over_once() {
        sqlx::any::install_default_drivers();
        let mut any: AnyConnection = sqlx::Connection::connect("sqlite::memory:")
            .await
            .expect("sqlx sqlite");
        let mut row = sqlx::query("SELECT 'moved', x'0102', NULL, 7, 'also'")
            .fetch_one(&mut any)
            .await
            .expect("row");
        assert_eq!(String::from_any(&mut row, 0).expect("text"), "moved");
        assert_eq!(
            <Option<String>>::from_any(&mut row, 0).expect("moved text"),
            None
        );
        assert!(String::from_any(&mut row, 0).is_err(), "no text is left");
        assert_eq!(<Vec<u8>>::from_any(&mut row, 1).expect("blob"), [1, 2]);
        assert_eq!(<Option<String>>::from_any(&mut row, 2).expect("null"), None);
        assert!(
            String::from_any(&mut row, 3).is_err(),
            "an integer is no text"
        );
        assert_eq!(i64::from_any(&mut row, 3).expect("integer"), 7);
        assert!(i64::from_any(&mut row, 4).is_err(), "a text is no integer");
        assert_eq!(
            <Option<String>>::from_any(&mut row, 4).expect("text"),
            Some("also".to_owned())
        );
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
