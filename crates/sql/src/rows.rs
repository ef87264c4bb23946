//! Many rows for one statement, in the form each database takes best.
//!
//! On SQLite a batch's rows are a `VALUES` list of numbered parameters, a few dozen rows a
//! statement: binding a numbered parameter walks the statement's list of names, so one
//! statement's binding costs the square of its parameters, and in place a statement costs
//! microseconds anyway. On PostgreSQL every statement is a round trip to the server, and a
//! batch chunked for SQLite took ~35 of them for 256 dungeon turns (half of the batch's time
//! spent between statements). There the rows travel as one parameter — a JSON array of rows,
//! each an array of values — which the statement reads back as a table with
//! `jsonb_array_elements`: one statement a batch, and one statement text whatever its size, so
//! the connection's prepared statement serves every batch.
//!
//! Long texts (a dungeon turn's kilobyte of JSON) do not go inside that JSON: escaped there,
//! they were most of what the server escaped and PostgreSQL parsed back per batch. A column
//! declared [`LONG_TEXT`] travels as a second parameter instead, every value of it end to end as
//! raw bytes (`bytea`, sent as is), and the JSON holds where each value starts and how long it
//! is.
//!
//! Either way the rows read as a table whose columns are `column1`, `column2`, … (what SQLite
//! and PostgreSQL name a `VALUES` list's columns), so a statement's text differs only where the
//! rows come in: [`Rows::table`] for `FROM … AS v` and `IN (SELECT column1 FROM …)`,
//! [`Rows::insert`] after `INSERT INTO t (…)`.

use std::fmt::Write as _;

use crate::query::{Conn, Param, Query};

/// The type of a column of long texts: `text` to PostgreSQL, carried beside the rows' JSON
/// rather than inside it (see the module's documentation). Its values are texts or nulls.
pub const LONG_TEXT: &str = "long text";

/// The rows of one multi-row statement, gathered for the connection it will run on.
#[derive(Debug)]
pub struct Rows<'q> {
    /// The PostgreSQL type of each column (`text`, `int8`, `float8`, [`LONG_TEXT`]).
    types: &'static [&'static str],
    form: Form<'q>,
    rows: usize,
}

#[derive(Debug)]
enum Form<'q> {
    /// Numbered parameters, row after row.
    Values(Vec<Param<'q>>),
    /// One JSON text, `[[…], […]]` still open at its end, and the [`LONG_TEXT`] columns' values
    /// end to end.
    Json { json: String, long: Vec<u8> },
}

impl<'q> Rows<'q> {
    /// No rows yet, for a statement on `conn` whose columns have the PostgreSQL `types`.
    pub fn new(conn: &Conn<'_>, types: &'static [&'static str]) -> Self {
        let form = if conn.is_postgres() {
            Form::Json {
                json: String::from("["),
                long: Vec::new(),
            }
        } else {
            Form::Values(Vec::new())
        };
        Rows {
            types,
            form,
            rows: 0,
        }
    }

    /// How many rows one statement on `conn` should carry, with `per_statement` the most a
    /// `VALUES` list carries: every row on PostgreSQL, where they are one parameter.
    pub fn per_statement(conn: &Conn<'_>, per_statement: usize) -> usize {
        if conn.is_postgres() {
            usize::MAX
        } else {
            per_statement.max(1)
        }
    }

    /// Add a row: one value per column, in the columns' order.
    pub fn push<const N: usize>(&mut self, row: [Param<'q>; N]) {
        debug_assert_eq!(N, self.types.len(), "a row has a value per column");
        match &mut self.form {
            Form::Values(params) => params.extend(row),
            Form::Json { json, long } => {
                json.push_str(if self.rows == 0 { "[" } else { ",[" });
                for (n, value) in row.iter().enumerate() {
                    if n > 0 {
                        json.push(',');
                    }
                    match value {
                        Param::Text(text) if self.types[n] == LONG_TEXT => {
                            // Where it starts (`substring` counts from 1) and its length.
                            let _ = write!(json, "[{},{}]", long.len() + 1, text.len());
                            long.extend_from_slice(text.as_bytes());
                        }
                        value => {
                            debug_assert!(
                                self.types[n] != LONG_TEXT || is_null(value),
                                "a long-text column holds texts"
                            );
                            write_json(json, value);
                        }
                    }
                }
                json.push(']');
            }
        }
        self.rows += 1;
    }

    /// Make room for about `bytes` more of values and `long_bytes` more of [`LONG_TEXT`]
    /// values, where the rows are one text (PostgreSQL): a batch that knows its rows' sizes
    /// spares them their growing copies (a batch of dungeon turns is a few hundred kilobytes
    /// of events).
    pub fn reserve(&mut self, bytes: usize, long_bytes: usize) {
        if let Form::Json { json, long } = &mut self.form {
            json.reserve(bytes);
            long.reserve(long_bytes);
        }
    }

    /// How many parameters the rows take: to number a statement's next ones after them.
    pub fn params(&self) -> usize {
        match &self.form {
            Form::Values(params) => params.len(),
            Form::Json { .. } => 1 + usize::from(self.has_long_texts()),
        }
    }

    fn has_long_texts(&self) -> bool {
        self.types.contains(&LONG_TEXT)
    }

    /// How many rows were added.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows as a table (`(VALUES …)` or a `SELECT`), its parameters numbered after the
    /// statement's first `skip`: for `FROM {table} AS v`.
    pub fn table(&self, skip: usize) -> String {
        match &self.form {
            Form::Values(_) => format!("(VALUES {})", self.placeholders(skip)),
            Form::Json { .. } => {
                let mut sql = String::from("(SELECT ");
                for (n, column_type) in self.types.iter().enumerate() {
                    if n > 0 {
                        sql.push_str(", ");
                    }
                    if *column_type == LONG_TEXT {
                        let _ = write!(
                            sql,
                            "convert_from(substring(${}::bytea FROM (e->{n}->>0)::int4 \
                             FOR (e->{n}->>1)::int4), 'UTF8') AS column{}",
                            skip + 2,
                            n + 1
                        );
                    } else {
                        let _ = write!(sql, "(e->>{n})::{column_type} AS column{}", n + 1);
                    }
                }
                let _ = write!(
                    sql,
                    " FROM jsonb_array_elements(${}::text::jsonb) AS e)",
                    skip + 1
                );
                sql
            }
        }
    }

    /// The rows as an `INSERT`'s source: `VALUES …`, or a `SELECT` of every column.
    pub fn insert(&self, skip: usize) -> String {
        match &self.form {
            Form::Values(_) => format!("VALUES {}", self.placeholders(skip)),
            Form::Json { .. } => format!("SELECT * FROM {} AS v", self.table(skip)),
        }
    }

    /// Bind the rows' parameters to `query` (after the statement's first ones).
    pub fn bind(self, mut query: Query<'q>) -> Query<'q> {
        let long_texts = self.has_long_texts();
        match self.form {
            Form::Values(params) => {
                for param in params {
                    query = query.bind(param);
                }
                query
            }
            Form::Json { mut json, long } => {
                json.push(']');
                let query = query.bind(json);
                if long_texts {
                    query.bind(Param::Blob(long.into()))
                } else {
                    query
                }
            }
        }
    }

    fn placeholders(&self, skip: usize) -> String {
        value_rows(self.rows, self.types.len(), skip)
    }
}

/// The numbered placeholders of a multi-row statement: `rows` parenthesised groups of `per_row`,
/// after the statement's first `skip` parameters. `value_rows(2, 3, 1)` is
/// `($2, $3, $4), ($5, $6, $7)`: a `VALUES` list (or, one per row, an `IN` list).
pub fn value_rows(rows: usize, per_row: usize, skip: usize) -> String {
    let mut sql = String::with_capacity(rows * per_row * 5);
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..per_row {
            if column > 0 {
                sql.push_str(", ");
            }
            let _ = write!(sql, "${}", skip + row * per_row + column + 1);
        }
        sql.push(')');
    }
    sql
}

fn is_null(value: &Param<'_>) -> bool {
    matches!(value, Param::NullInt | Param::NullReal | Param::NullText)
}

/// `value` as JSON, read back by `->>` as the text PostgreSQL parses into its column's type.
fn write_json(json: &mut String, value: &Param<'_>) {
    match value {
        Param::Int(n) => {
            let _ = write!(json, "{n}");
        }
        // JSON has no NaN or infinities; as strings they read back as float8's own spellings.
        Param::Real(x) if x.is_nan() => json.push_str("\"NaN\""),
        Param::Real(x) if x.is_infinite() => {
            json.push_str(if *x > 0.0 {
                "\"Infinity\""
            } else {
                "\"-Infinity\""
            });
        }
        Param::Real(x) => {
            // `{:?}` is the shortest text that reads back as the same f64.
            let _ = write!(json, "{x:?}");
        }
        Param::Text(text) => write_json_string(json, text),
        // bytea's hex input form: `(e->>n)::bytea` reads it back.
        Param::Blob(bytes) => {
            json.push_str("\"\\\\x");
            for byte in bytes.iter() {
                let _ = write!(json, "{byte:02x}");
            }
            json.push('"');
        }
        Param::NullInt | Param::NullReal | Param::NullText => json.push_str("null"),
    }
}

fn write_json_string(json: &mut String, text: &str) {
    json.push('"');
    // Copy the runs that need no escape whole: a turn's event is a kilobyte of them, its
    // quotes every few bytes. Bytes, not chars: every byte that needs an escape is ASCII, and
    // no byte of a multi-byte character is below 0x80, so a run ends only on a whole character.
    let bytes = text.as_bytes();
    let mut plain = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        json.push_str(&text[plain..at]);
        if escape.is_empty() {
            let _ = write!(json, "\\u{byte:04x}");
        } else {
            json.push_str(escape);
        }
        plain = at + 1;
    }
    json.push_str(&text[plain..]);
    json.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_of(values: &[Param<'_>]) -> String {
        let mut json = String::new();
        for value in values {
            write_json(&mut json, value);
            json.push(' ');
        }
        json
    }

    #[test]
    fn values_read_back_as_their_column_types_expect() {
        assert_eq!(
            json_of(&[
                Param::Int(-9_007_199_254_740_993),
                Param::Real(0.1),
                Param::Real(1e-7),
                Param::Real(f64::NAN),
                Param::Real(f64::NEG_INFINITY),
                Param::NullText,
                Param::Blob(vec![0, 255].into()),
            ]),
            r#"-9007199254740993 0.1 1e-7 "NaN" "-Infinity" null "\\x00ff" "#
        );
    }

    #[test]
    fn text_is_escaped_as_json() {
        assert_eq!(
            json_of(&[Param::Text("a\"b\\c\nd\u{1}é".into())]),
            r#""a\"b\\c\nd\u0001é" "#
        );
    }

    #[test]
    fn a_values_list_numbers_its_parameters_after_the_skipped_ones() {
        let mut rows = Rows {
            types: &["text", "int8"],
            form: Form::Values(Vec::new()),
            rows: 0,
        };
        rows.push(["a".into(), 1.into()]);
        rows.push(["b".into(), 2.into()]);
        assert_eq!(rows.table(1), "(VALUES ($2, $3), ($4, $5))");
        assert_eq!(rows.insert(0), "VALUES ($1, $2), ($3, $4)");
    }

    #[test]
    fn json_rows_are_one_parameter_read_as_a_typed_table() {
        let mut rows = Rows {
            types: &["text", "int8"],
            form: Form::Json {
                json: String::from("["),
                long: Vec::new(),
            },
            rows: 0,
        };
        rows.push(["a".into(), 1.into()]);
        rows.push([Param::NullText, 2.into()]);
        assert_eq!(
            rows.table(2),
            "(SELECT (e->>0)::text AS column1, (e->>1)::int8 AS column2 \
             FROM jsonb_array_elements($3::text::jsonb) AS e)"
        );
        assert_eq!(rows.params(), 1);
        let Form::Json { json, .. } = &rows.form else {
            unreachable!()
        };
        assert_eq!(json, r#"[["a",1],[null,2]"#);
    }

    #[test]
    fn long_texts_travel_beside_the_json_as_bytes_sliced_back_out() {
        let mut rows = Rows {
            types: &["text", LONG_TEXT],
            form: Form::Json {
                json: String::from("["),
                long: Vec::new(),
            },
            rows: 0,
        };
        rows.push(["a".into(), "{\"é\":1}".into()]);
        rows.push(["b".into(), Param::NullText]);
        rows.push(["c".into(), "xy".into()]);
        assert_eq!(
            rows.table(1),
            "(SELECT (e->>0)::text AS column1, convert_from(substring($3::bytea \
             FROM (e->1->>0)::int4 FOR (e->1->>1)::int4), 'UTF8') AS column2 \
             FROM jsonb_array_elements($2::text::jsonb) AS e)"
        );
        assert_eq!(rows.params(), 2);
        let Form::Json { json, long } = &rows.form else {
            unreachable!()
        };
        // Lengths in bytes: `é` is two.
        assert_eq!(json, r#"[["a",[1,8]],["b",null],["c",[9,2]]"#);
        assert_eq!(long.as_slice(), "{\"é\":1}xy".as_bytes());
    }
}
