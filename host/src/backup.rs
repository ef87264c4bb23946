//! Backups of the embedded SQLite database (`docs/operations.md`, "Backups"):
//! `crucible backup --out FILE` copies it while the server runs, and checks the copy;
//! `crucible restore FILE` puts a checked copy in place in a stopped data dir. PostgreSQL
//! deployments use `pg_dump`. Secrets in a backup are sealed with the master key, which is not in
//! the backup: keep it separately.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use sqlx::{Connection, SqliteConnection};

use crate::config::{Config, StorageArgs};

/// What a checked copy holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The newest migration applied to it.
    pub schema_version: i64,
    pub accounts: i64,
    pub registrations: i64,
    pub payouts: i64,
}

fn sqlite_file(storage: &StorageArgs) -> anyhow::Result<PathBuf> {
    let config = Config::offline(storage);
    if !config.database_url.starts_with("sqlite:") {
        bail!(
            "this deployment runs on PostgreSQL: back it up with `pg_dump` and restore it with \
             `pg_restore` (docs/operations.md); these commands copy the embedded SQLite database"
        );
    }
    Ok(config.data_dir.join("crucible.db"))
}

fn url_of(file: &Path, mode: &str) -> String {
    format!("sqlite://{}?mode={mode}", file.display())
}

/// Open `file` read-only and check that it is a whole Crucible database.
pub async fn check(file: &Path) -> anyhow::Result<Checked> {
    if !file.is_file() {
        bail!("{} is not a file", file.display());
    }
    let mut conn = SqliteConnection::connect(&url_of(file, "ro"))
        .await
        .with_context(|| format!("{} is not an SQLite database", file.display()))?;
    let (integrity,): (String,) = sqlx::query_as("PRAGMA integrity_check")
        .fetch_one(&mut conn)
        .await
        .with_context(|| format!("{} is not an SQLite database", file.display()))?;
    if integrity != "ok" {
        bail!(
            "{} fails SQLite's integrity check: {integrity}",
            file.display()
        );
    }
    let version: Option<(i64,)> = sqlx::query_as("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_optional(&mut conn)
        .await
        .ok()
        .flatten();
    let Some((schema_version,)) = version else {
        bail!(
            "{} is not a Crucible database (no migrations table)",
            file.display()
        );
    };
    let mut counts = [0i64; 3];
    for (count, table) in counts
        .iter_mut()
        .zip(["accounts", "tournament_registrations", "payouts"])
    {
        let (rows,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&mut conn)
            .await
            .with_context(|| format!("{} has no {table} table", file.display()))?;
        *count = rows;
    }
    let [accounts, registrations, payouts] = counts;
    conn.close().await.ok();
    Ok(Checked {
        schema_version,
        accounts,
        registrations,
        payouts,
    })
}

/// Copy the data dir's database to `out` while the server may be running: SQLite's
/// `VACUUM INTO` writes one consistent snapshot (every commit before it, none after) into a new
/// file, which is checked, then renamed into place — a failed or interrupted backup never leaves
/// a half file at `out`.
pub(crate) async fn backup(storage: &StorageArgs, out: &Path) -> anyhow::Result<Checked> {
    let source = sqlite_file(storage)?;
    if !source.is_file() {
        bail!("there is no database at {} to back up", source.display());
    }
    if out.exists() {
        bail!("{} exists already; choose a new file name", out.display());
    }
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let partial = dir.join(format!(
        ".{}.partial-{}",
        out.file_name().and_then(|n| n.to_str()).unwrap_or("backup"),
        crate::crypto::random_base58(6)
    ));
    let outcome = async {
        let mut conn = SqliteConnection::connect(&url_of(&source, "rw")).await?;
        sqlx::query("PRAGMA busy_timeout = 10000")
            .execute(&mut conn)
            .await?;
        let target = partial.to_str().context("the backup path is not UTF-8")?;
        sqlx::query(&format!("VACUUM INTO '{}'", target.replace('\'', "''")))
            .execute(&mut conn)
            .await
            .context("copying the database")?;
        conn.close().await.ok();
        let checked = check(&partial).await?;
        std::fs::File::open(&partial)?.sync_all()?;
        std::fs::rename(&partial, out)?;
        anyhow::Ok(checked)
    }
    .await;
    if outcome.is_err() {
        std::fs::remove_file(&partial).ok();
    }
    outcome
}

/// Put the checked backup `file` in place as the data dir's database. Refused while a server
/// runs on the data dir. The database it replaces is kept as `crucible.db.before-restore-<time>`.
pub(crate) async fn restore(storage: &StorageArgs, file: &Path) -> anyhow::Result<Checked> {
    let target = sqlite_file(storage)?;
    let checked = check(file).await?;
    let data_dir = target.parent().unwrap_or(Path::new("."));
    let _lock = crate::data_dir_lock::exclusive(data_dir, "restoring a backup")?;
    if target.is_file() {
        // Fold the write-ahead log into the file first, so the kept copy is whole on its own.
        let mut conn = SqliteConnection::connect(&url_of(&target, "rw")).await?;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await?;
        conn.close().await.ok();
        let kept = target.with_file_name(format!(
            "crucible.db.before-restore-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ));
        std::fs::rename(&target, &kept)
            .with_context(|| format!("cannot keep the current database as {}", kept.display()))?;
        eprintln!("the database it replaces is kept as {}", kept.display());
    }
    for suffix in ["-wal", "-shm"] {
        let stale = PathBuf::from(format!("{}{suffix}", target.display()));
        if stale.exists() {
            std::fs::remove_file(&stale)?;
        }
    }
    let incoming = target.with_file_name(format!(
        ".crucible.db.restoring-{}",
        crate::crypto::random_base58(6)
    ));
    std::fs::copy(file, &incoming)?;
    std::fs::File::open(&incoming)?.sync_all()?;
    std::fs::rename(&incoming, &target)?;
    Ok(checked)
}
