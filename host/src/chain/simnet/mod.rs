//! The embedded simnet: the `crucible-simnet` crate (the ledger, its programs, JSON-RPC and
//! PubSub), opened on the server's database and clock, and served at `/simnet/rpc` by the thin
//! axum adapters here ([`rpc`] for JSON-RPC over HTTP POST, [`pubsub`] for the websocket) when
//! no external `SOLANA_RPC_URL` is configured. See `docs/simnet.md`.

pub mod pubsub;
pub(crate) mod rpc;
pub(crate) mod standalone;

use std::sync::Arc;

use crate::clock::Clock;
use crate::db::{Backend, Store};

pub use crucible_simnet::{
    MAX_AIRDROP_LAMPORTS, MAX_AIRDROP_STABLECOIN, PoolReserves, STABLECOIN_DECIMALS, Simnet,
    SimnetError, default_stablecoin_mint, executor, render,
};

/// Open the simnet on the server's database (its tables come from the server's migrations) and
/// clock, so tests that move the clock move the simnet's finality and slots with it.
pub(crate) async fn open(
    store: &Store,
    clock: Arc<dyn Clock>,
    finality_ms: u64,
    mint: crate::chain::tx::Pubkey,
) -> Result<Simnet, SimnetError> {
    let clock = move || crate::clock::to_millis(clock.now());
    Simnet::open(storage_of(store), Arc::new(clock), finality_ms, mint).await
}

/// The simnet's handle on the server's database: the same pools (reads, the single writer),
/// and on a SQLite file the file itself, for the ledger's statements run in place (its writes
/// still hold the writer pool's one connection, the server's write lock).
pub(crate) fn storage_of(store: &Store) -> crucible_simnet::Storage {
    let (reader, writer) = (store.read().clone(), store.write().clone());
    match (store.backend(), store.sqlite_file()) {
        (Backend::Sqlite, Some(file)) => {
            crucible_simnet::Storage::with_sqlite_file(reader, writer, file.clone())
        }
        (Backend::Sqlite, None) => {
            crucible_simnet::Storage::new(reader, writer, crucible_simnet::Backend::Sqlite)
        }
        (Backend::Postgres, _) => {
            crucible_simnet::Storage::new(reader, writer, crucible_simnet::Backend::Postgres)
        }
    }
}

#[cfg(test)]
mod tests {
    use sqlx::AnyPool;

    use crate::db::Store;

    /// Every `simnet_*` table's columns and every index on them, as SQLite reports them.
    async fn simnet_schema(pool: &AnyPool) -> Vec<String> {
        let tables: Vec<(String,)> = sqlx::query_as(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'simnet%' \
             ORDER BY name",
        )
        .fetch_all(pool)
        .await
        .expect("tables");
        let mut schema = Vec::new();
        for (table,) in tables {
            let columns: Vec<(String,)> = sqlx::query_as(
                "SELECT name || ' ' || type || ' notnull=' || \"notnull\" || ' default=' || \
                 COALESCE(dflt_value, '-') || ' pk=' || pk FROM pragma_table_info($1) ORDER BY cid",
            )
            .bind(&table)
            .fetch_all(pool)
            .await
            .expect("columns");
            schema.extend(columns.into_iter().map(|(c,)| format!("{table}: {c}")));
            let indexes: Vec<(String,)> = sqlx::query_as(
                "SELECT l.name || ' unique=' || l.\"unique\" || ' (' || \
                 (SELECT group_concat(i.name, ',') FROM pragma_index_info(l.name) i) || ')' \
                 FROM pragma_index_list($1) l ORDER BY l.name",
            )
            .bind(&table)
            .fetch_all(pool)
            .await
            .expect("indexes");
            schema.extend(indexes.into_iter().map(|(i,)| format!("{table} index {i}")));
        }
        schema
    }

    /// A database the simnet crate creates for itself must be the one the server's migrations
    /// leave, or a standalone simnet and the server's would drift apart.
    #[tokio::test]
    async fn the_simnet_crates_schema_is_what_the_migrations_leave() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::connect(&crate::config::sqlite_url_in(dir.path()))
            .await
            .expect("connect");
        store.migrate().await.expect("migrate");
        let migrated = simnet_schema(store.read()).await;
        let own = crucible_simnet::Storage::in_memory()
            .await
            .expect("in-memory simnet");
        let created = simnet_schema(own.read()).await;
        assert!(migrated.len() > 20, "{migrated:#?}");
        assert_eq!(created, migrated);
    }
}
