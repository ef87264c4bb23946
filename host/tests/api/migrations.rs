//! The two migration sets describe one schema: every table and column of the SQLite migrations
//! exists in the PostgreSQL ones and the other way round. Both are applied to real, fresh
//! databases and compared by what the databases report, so a column added in one dialect only
//! fails here instead of on the first multi-node deployment. PostgreSQL's due queue is the one
//! table of its own ([`POSTGRES_ONLY`]), and SQLite's chain of a run's events the only columns
//! of SQLite's own ([`SQLITE_ONLY`]).

use std::collections::{BTreeMap, BTreeSet};

use crucible::db::Store;
use sqlx::Row;

use crate::helpers::fresh_database_url;

type Schema = BTreeMap<String, BTreeSet<String>>;

/// Tables PostgreSQL has and SQLite does not, each standing in for an index SQLite keeps.
const POSTGRES_ONLY: &[&str] = &["agent_due"];

/// Columns SQLite has and PostgreSQL does not: the chain along which SQLite finds a run's
/// events, where PostgreSQL keeps an index by run (docs/architecture.md, "A run's events").
const SQLITE_ONLY: &[(&str, &str)] = &[
    ("dungeon_run_events", "id"),
    ("dungeon_run_events", "prev"),
    ("dungeon_runs", "last_event_id"),
];

#[tokio::test]
async fn sqlite_and_postgres_migrations_define_the_same_tables_and_columns() {
    let on_postgres =
        std::env::var("TEST_DATABASE_URL").is_ok_and(|url| url.starts_with("postgres"));
    if !on_postgres {
        eprintln!("needs TEST_DATABASE_URL=postgres://… (the PostgreSQL suite runs it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::connect(&crucible::config::sqlite_url_in(dir.path()))
        .await
        .unwrap();
    sqlite.migrate().await.unwrap();
    let postgres = Store::connect(&fresh_database_url(dir.path()).await)
        .await
        .unwrap();
    postgres.migrate().await.unwrap();

    let mut sqlite_schema = sqlite_schema(&sqlite).await;
    for (table, column) in SQLITE_ONLY {
        let columns = sqlite_schema.get_mut(*table);
        assert!(
            columns.is_some_and(|columns| columns.remove(*column)),
            "{table}.{column} on SQLite"
        );
    }
    let mut postgres_schema = postgres_schema(&postgres).await;
    // The one table of PostgreSQL's own: the due queue, which stands in for SQLite's due index
    // on the agents (docs/architecture.md, "The due queue"). Nothing but the ticker reads it.
    for own in POSTGRES_ONLY {
        assert!(
            postgres_schema.remove(*own).is_some(),
            "{own} on PostgreSQL"
        );
    }
    assert!(
        sqlite_schema.len() > 10,
        "the SQLite schema has its tables: {sqlite_schema:?}"
    );
    assert_eq!(
        sqlite_schema, postgres_schema,
        "migrations/sqlite and migrations/postgres must define the same tables and columns"
    );
}

async fn sqlite_schema(store: &Store) -> Schema {
    let rows = sqlx::query(
        "SELECT m.name AS table_name, p.name AS column_name \
         FROM sqlite_master m JOIN pragma_table_info(m.name) p \
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations'",
    )
    .fetch_all(store.read())
    .await
    .unwrap();
    collect(rows)
}

async fn postgres_schema(store: &Store) -> Schema {
    let rows = sqlx::query(
        "SELECT table_name::TEXT AS table_name, column_name::TEXT AS column_name \
         FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name <> '_sqlx_migrations'",
    )
    .fetch_all(store.read())
    .await
    .unwrap();
    collect(rows)
}

fn collect(rows: Vec<sqlx::any::AnyRow>) -> Schema {
    let mut schema = Schema::new();
    for row in rows {
        let table: String = row.get("table_name");
        let column: String = row.get("column_name");
        schema.entry(table).or_default().insert(column);
    }
    schema
}
