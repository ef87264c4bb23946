//! `crucible master-key rotate` (`docs/operations.md`, "The master key"): every secret sealed
//! under the master key is opened with the current key and sealed again under a new one, in one
//! database transaction, while no server runs on the data dir.
//!
//! The new key is written to `<data_dir>/master.key.next` *before* the transaction commits, so a
//! crash at any point leaves either the old secrets with the old key, or the new secrets with a
//! key that is on disk. Then:
//! - a key that lived in `<data_dir>/master.key` is replaced there (the old one kept as
//!   `master.key.old-<time>`);
//! - a key given in `CRUCIBLE_MASTER_KEY` is printed once, for the host to put in its secret
//!   store (and the environment of every node) before starting the server again.
//!
//! What is derived from the master key rather than sealed with it changes with it: cached
//! compiled strategy components are recompiled (the cache only ever misses), and dungeon quotes
//! issued before the rotation are no longer accepted (a new quote is one request away).

use std::path::PathBuf;

use anyhow::{Context, bail};
use rand::RngCore;

use crate::config::{Config, StorageArgs};
use crate::crypto::{MASTER_KEY_FILE, Sealer};
use crate::db::Store;
use crate::secret::Secret;

/// Every sealed column: (table, key column, sealed column).
const SEALED: &[(&str, &str, &str)] = &[
    ("custodial_wallets", "address", "secret_sealed"),
    ("chain_wallets", "role", "sealed_secret"),
    ("api_keys", "id", "webhook_secret_sealed"),
    ("dungeon_secrets", "name", "sealed"),
    ("dungeon_runs", "id", "key_sealed"),
    ("model_keys", "id", "key_sealed"),
];

pub(crate) const NEXT_KEY_FILE: &str = "master.key.next";

/// What a rotation did.
#[derive(Debug)]
pub struct Rotated {
    /// Secrets sealed again, over every table.
    pub resealed: usize,
    /// The new key (64 hex characters).
    pub new_key: Secret,
    /// Where the new key now lives: the data dir's key file, or `None` when the host must put it
    /// in `CRUCIBLE_MASTER_KEY` (it is also in `master.key.next` until then).
    pub key_file: Option<PathBuf>,
}

pub async fn rotate(storage: &StorageArgs) -> anyhow::Result<Rotated> {
    let config = Config::offline(storage);
    let data_dir = config.data_dir.clone();
    let configured = config.master_key.as_ref().map(Secret::expose);
    let key_file = data_dir.join(MASTER_KEY_FILE);
    if configured.is_none() && !key_file.exists() {
        bail!(
            "no master key to rotate: neither CRUCIBLE_MASTER_KEY nor {} is set",
            key_file.display()
        );
    }
    let _lock = crate::data_dir_lock::exclusive(&data_dir, "rotating the master key")?;
    let old = Sealer::load(configured, &data_dir)?;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let new_hex = hex::encode(bytes);
    let new = Sealer::new(bytes);

    // The new key reaches the disk before any secret depends on it.
    let next = data_dir.join(NEXT_KEY_FILE);
    write_private(&next, &new_hex)?;

    let store = Store::connect(&config.database_url).await?;
    store.migrate().await?;
    let mut tx = store.begin().await?;
    let mut resealed = 0;
    for (table, id, column) in SEALED {
        let rows: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT {id}, {column} FROM {table} WHERE {column} IS NOT NULL"
        ))
        .fetch_all(&mut *tx)
        .await?;
        for (key, sealed) in rows {
            let plain = old.open(&sealed).with_context(|| {
                format!("{table} {key}: cannot open its secret with the current master key")
            })?;
            sqlx::query(&format!("UPDATE {table} SET {column} = $1 WHERE {id} = $2"))
                .bind(new.seal(&plain))
                .bind(&key)
                .execute(&mut *tx)
                .await?;
            resealed += 1;
        }
    }
    tx.commit().await?;
    store.close().await;

    let key_file = if configured.is_none() {
        let kept = data_dir.join(format!(
            "{MASTER_KEY_FILE}.old-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ));
        std::fs::rename(&key_file, &kept)
            .with_context(|| format!("cannot keep the old key as {}", kept.display()))?;
        std::fs::rename(&next, &key_file)?;
        Some(key_file)
    } else {
        None
    };
    Ok(Rotated {
        resealed,
        new_key: Secret::new(new_hex),
        key_file,
    })
}

/// Write `text` to `path` readable by the owner only, durably.
fn write_private(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    Ok(())
}
