//! A batch's rows reach the database whole, on either backend: as a `VALUES` list on SQLite and
//! as one JSON parameter on PostgreSQL (`crucible_sql::Rows`, docs/architecture.md, "A batch's
//! rows on PostgreSQL"). Values that JSON carries awkwardly — quotes, backslashes, newlines,
//! non-ASCII text, integers past 2^53, fractions, bytes and nulls — read back exactly as bound.
//! The notes are long texts (`crucible_sql::LONG_TEXT`): on PostgreSQL they travel beside the
//! JSON as bytes and are sliced back out, multi-byte characters, empty texts and nulls included.

use crucible_sql::{Conn, LONG_TEXT, Param, Rows, query};
use sqlx::Connection;

const TYPES: [&str; 5] = ["text", "int8", "float8", "bytea", LONG_TEXT];

type Row = (String, i64, Option<f64>, Option<String>);

async fn connection(dir: &std::path::Path) -> sqlx::AnyConnection {
    sqlx::any::install_default_drivers();
    let url = crate::helpers::fresh_database_url(dir).await;
    let mut conn = sqlx::AnyConnection::connect(&url).await.expect("connect");
    let blob = if url.starts_with("postgres") {
        "BYTEA"
    } else {
        "BLOB"
    };
    sqlx::query(&format!(
        "CREATE TABLE rows_test (id TEXT PRIMARY KEY, n BIGINT NOT NULL, x DOUBLE PRECISION,
                                 b {blob}, note TEXT)"
    ))
    .execute(&mut conn)
    .await
    .expect("table");
    conn
}

fn values() -> Vec<[Param<'static>; 5]> {
    vec![
        [
            "quote \" backslash \\ newline \n tab \t bell \u{7}".into(),
            i64::MAX.into(),
            Some(0.1).into(),
            Param::Blob(vec![0, 1, 127, 128, 255].into()),
            Some("café ☕ 𝄞").into(),
        ],
        [
            "plain".into(),
            (-9_007_199_254_740_993_i64).into(),
            Some(-1.5e-7).into(),
            Param::Blob(Vec::new().into()),
            Param::NullText,
        ],
        [
            "nulls".into(),
            0_i64.into(),
            Param::NullReal,
            Param::Blob(vec![42].into()),
            Some("").into(),
        ],
    ]
}

/// A fresh table holding [`values`], inserted as one batch.
async fn table_with_values(dir: &std::path::Path) -> sqlx::AnyConnection {
    let mut any = connection(dir).await;
    let mut conn = Conn::Any(&mut any);
    let mut rows = Rows::new(&conn, &TYPES);
    for row in values() {
        rows.push(row);
    }
    assert_eq!(rows.len(), 3);
    let sql = format!(
        "INSERT INTO rows_test (id, n, x, b, note) {}",
        rows.insert(0)
    );
    rows.bind(query(&sql))
        .execute(&mut conn)
        .await
        .expect("insert");
    any
}

async fn stored(conn: &mut Conn<'_>) -> Vec<Row> {
    query("SELECT id, n, x, note FROM rows_test ORDER BY n")
        .fetch_all(conn)
        .await
        .expect("read")
}

#[tokio::test]
async fn a_batch_of_rows_reads_back_exactly_as_bound() {
    let dir = tempfile::tempdir().expect("dir");
    let mut any = table_with_values(dir.path()).await;
    let mut conn = Conn::Any(&mut any);

    let expected: Vec<Row> = vec![
        ("plain".into(), -9_007_199_254_740_993, Some(-1.5e-7), None),
        ("nulls".into(), 0, None, Some(String::new())),
        (
            "quote \" backslash \\ newline \n tab \t bell \u{7}".into(),
            i64::MAX,
            Some(0.1),
            Some("café ☕ 𝄞".into()),
        ),
    ];
    assert_eq!(stored(&mut conn).await, expected);
    let blobs: Vec<(String, Vec<u8>)> = sqlx::query_as("SELECT id, b FROM rows_test ORDER BY n")
        .fetch_all(&mut any)
        .await
        .expect("blobs");
    let blobs: Vec<Vec<u8>> = blobs.into_iter().map(|(_, b)| b).collect();
    assert_eq!(blobs, vec![vec![], vec![42], vec![0, 1, 127, 128, 255]]);
}

#[tokio::test]
async fn an_update_from_a_batch_of_rows_matches_each_by_its_key() {
    let dir = tempfile::tempdir().expect("dir");
    let mut any = table_with_values(dir.path()).await;
    let mut conn = Conn::Any(&mut any);

    // Two of the three rows get a new count and note; a row for an unknown id changes nothing.
    let mut updates = Rows::new(&conn, &["text", "int8", LONG_TEXT]);
    updates.push(["plain".into(), 7_i64.into(), Some("it's 'quoted'").into()]);
    updates.push(["nulls".into(), 8_i64.into(), Param::NullText]);
    updates.push(["nobody".into(), 9_i64.into(), Some("x").into()]);
    let sql = format!(
        "UPDATE rows_test SET n = v.column2, note = v.column3
         FROM {} AS v WHERE rows_test.id = v.column1 AND rows_test.n <> $1",
        updates.table(1)
    );
    let changed = updates
        .bind(query(&sql).bind(-1_i64))
        .execute(&mut conn)
        .await
        .expect("update");
    assert_eq!(changed, 2);
    let rows = stored(&mut conn).await;
    assert_eq!(
        rows.iter()
            .map(|(id, n, _, note)| (id.as_str(), *n, note.as_deref()))
            .collect::<Vec<_>>(),
        vec![
            ("plain", 7, Some("it's 'quoted'")),
            ("nulls", 8, None),
            (
                "quote \" backslash \\ newline \n tab \t bell \u{7}",
                i64::MAX,
                Some("café ☕ 𝄞")
            ),
        ]
    );
}
