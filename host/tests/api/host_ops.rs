//! A host's tools: online backups of the embedded database and their restore, and master-key
//! rotation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use crucible::config::{Config, StorageArgs};
use crucible::domain::WalletAddress;
use crucible::secret::Secret;
use serde_json::json;

fn on_postgres() -> bool {
    std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty())
}

fn crucible(args: &[&str], data_dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_crucible"))
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("DATABASE_URL")
        .env("CRUCIBLE_MASTER_KEY", "00".repeat(32))
        .output()
        .expect("run crucible")
}

pub(crate) fn storage_of(config: &Config) -> StorageArgs {
    StorageArgs {
        data_dir: config.data_dir.clone(),
        database_url: Some(config.database_url.clone()),
        master_key: config.master_key.clone(),
    }
}

#[tokio::test]
async fn a_backup_taken_under_write_load_restores_every_committed_registration() {
    if on_postgres() {
        // PostgreSQL deployments back up with pg_dump; these commands copy the SQLite file.
        return;
    }
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_bk", 0, 100_000, Duration::hours(1), 4))
        .await;
    // Registrations keep landing while the backup runs.
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (client, address) = (app.client.clone(), app.address.clone());
        let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
        tokio::spawn(async move {
            let mut seed = 0u32;
            while !stop.load(Ordering::Relaxed) {
                seed += 1;
                let mut key = [7u8; 32];
                key[..4].copy_from_slice(&seed.to_le_bytes());
                let wallet = WalletAddress::from_public_key(&key).to_string();
                let response = client
                    .post(format!("{address}/api/tournaments/trn_bk/register"))
                    .json(&json!({"registeredWallet": wallet, "txSignature": null}))
                    .send()
                    .await
                    .expect("register");
                assert_eq!(response.status().as_u16(), 201);
                acknowledged.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    while acknowledged.load(Ordering::SeqCst) < 50 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let before = acknowledged.load(Ordering::SeqCst);
    let file = app.data_dir.path().join("backups").join("crucible-1.db");
    let data_dir = app.data_dir.path().to_path_buf();
    let file_arg = file.display().to_string();
    let output =
        tokio::task::spawn_blocking(move || crucible(&["backup", "--out", &file_arg], &data_dir))
            .await
            .expect("join");
    stop.store(true, Ordering::Relaxed);
    writer.await.expect("writer");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.contains("integrity ok"), "{said}");
    // A second backup to the same file is refused rather than overwriting it.
    let again = crucible(
        &["backup", "--out", &file.display().to_string()],
        app.data_dir.path(),
    );
    assert!(!again.status.success());

    // Restored into a fresh data dir: whole, and holding every registration acknowledged
    // before the backup began.
    let fresh = tempfile::tempdir().expect("dir");
    let restored = crucible(&["restore", &file.display().to_string()], fresh.path());
    assert!(
        restored.status.success(),
        "{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    let checked = crucible::backup::check(&fresh.path().join("crucible.db"))
        .await
        .expect("a whole database");
    assert!(
        checked.registrations as usize >= before,
        "{} registrations restored, {before} acknowledged before the backup",
        checked.registrations
    );
    // The restored data dir serves: the tournament is there with those registrations.
    let config = Config::for_tests(
        fresh.path().to_path_buf(),
        crucible::config::sqlite_url_in(fresh.path()),
    );
    let app2 = crucible::startup::Application::build(config)
        .await
        .expect("build");
    let (count,): (i64,) =
        sqlx::query_as("SELECT current_participants FROM tournaments WHERE id = 'trn_bk'")
            .fetch_one(app2.state().store.read())
            .await
            .expect("tournament");
    assert_eq!(count, checked.registrations);
}

#[tokio::test]
async fn restore_refuses_what_is_not_a_backup_and_a_running_servers_data_dir() {
    if on_postgres() {
        return;
    }
    let app = TestApp::spawn().await;
    let junk = app.data_dir.path().join("junk.db");
    std::fs::write(&junk, b"not a database at all").expect("write");
    let fresh = tempfile::tempdir().expect("dir");
    let refused = crucible(&["restore", &junk.display().to_string()], fresh.path());
    assert!(!refused.status.success());
    assert!(
        !fresh.path().join("crucible.db").exists(),
        "nothing written"
    );

    let file = app.data_dir.path().join("good.db");
    let made = crucible(
        &["backup", "--out", &file.display().to_string()],
        app.data_dir.path(),
    );
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    // The server of `app` runs on its data dir: restoring there is refused, nothing changes.
    let running = crucible(
        &["restore", &file.display().to_string()],
        app.data_dir.path(),
    );
    assert!(!running.status.success());
    assert!(
        String::from_utf8_lossy(&running.stderr).contains("a server is running"),
        "{}",
        String::from_utf8_lossy(&running.stderr)
    );
    assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
    // Stopped, the restore goes through and keeps the database it replaced.
    let dir = app.data_dir.path().to_path_buf();
    let file_arg = file.display().to_string();
    let app = app
        .restart_after(
            |_config| async move {
                let output = crucible(&["restore", &file_arg], &dir);
                assert!(
                    output.status.success(),
                    "{}",
                    String::from_utf8_lossy(&output.stderr)
                );
                let kept = std::fs::read_dir(&dir)
                    .expect("dir")
                    .filter_map(Result::ok)
                    .any(|entry| {
                        entry
                            .file_name()
                            .to_string_lossy()
                            .starts_with("crucible.db.before-restore-")
                    });
                assert!(kept, "the replaced database is kept");
            },
            |_| {},
        )
        .await;
    assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
}

#[tokio::test]
async fn master_key_rotation_keeps_every_secret_readable() {
    let app = TestApp::spawn().await;
    // A secret of every kind: an embedded wallet, a webhook secret, the server wallets, and a
    // dungeon run key with the dungeon's map salt.
    let session = app.session("keeper@example.com").await;
    let embedded = app.get("/api/account", Auth::Session(&session)).await.body["allChainWallets"]
        [0]
    .as_str()
    .expect("wallet")
    .to_owned();
    app.create_key(
        &session,
        json!({"name": "hooks", "scopes": ["read"], "webhookUrl": "https://hooks.example.com/in"}),
    )
    .await;
    app.dungeon_noon();
    let player = app
        .dungeon_player("runner@example.com", 61, 5_000_000)
        .await;
    app.dungeon_run(&player, "fighter").await;
    let escrow = app.state.chain.escrow().address.to_string();

    let rotated = Arc::new(std::sync::Mutex::new(None));
    let app = app
        .restart_after(
            {
                let rotated = rotated.clone();
                |config: Config| async move {
                    let done = crucible::master_key::rotate(&storage_of(&config))
                        .await
                        .expect("rotate");
                    *rotated.lock().expect("lock") = Some(done);
                }
            },
            |config| {
                let new_key = rotated
                    .lock()
                    .expect("lock")
                    .as_ref()
                    .map(|r| r.new_key.clone())
                    .expect("rotated");
                config.master_key = Some(new_key);
            },
        )
        .await;
    let done = rotated.lock().expect("lock").take().expect("rotated");
    assert!(done.resealed >= 6, "{} secrets", done.resealed);
    assert!(done.key_file.is_none(), "the key came from the environment");
    assert_ne!(done.new_key.expose(), "00".repeat(32));

    // Every sealed secret opens under the new key, and none under the old.
    let old = crucible::crypto::Sealer::new([0u8; 32]);
    for (table, column) in [
        ("custodial_wallets", "secret_sealed"),
        ("chain_wallets", "sealed_secret"),
        ("api_keys", "webhook_secret_sealed"),
        ("dungeon_secrets", "sealed"),
        ("dungeon_runs", "key_sealed"),
    ] {
        let sealed: Vec<(String,)> = sqlx::query_as(&format!(
            "SELECT {column} FROM {table} WHERE {column} IS NOT NULL"
        ))
        .fetch_all(app.state.store.read())
        .await
        .expect("read");
        assert!(!sealed.is_empty(), "{table} has a secret");
        for (value,) in sealed {
            assert!(app.state.sealer.open(&value).is_ok(), "{table} opens");
            assert!(
                old.open(&value).is_err(),
                "{table} no longer opens with the old key"
            );
        }
    }
    // The server works with them: the same escrow, the embedded wallet's key, new dungeon runs.
    assert_eq!(app.state.chain.escrow().address.to_string(), escrow);
    assert!(app.state.chain.escrow().keypair().is_some());
    let key = crucible::custodial::signing_key(
        &app.state.store,
        &app.state.sealer,
        &WalletAddress::parse(&embedded).expect("w"),
    )
    .await
    .expect("opens")
    .expect("custodial");
    assert_eq!(
        WalletAddress::from_public_key(&key.verifying_key().to_bytes()).to_string(),
        embedded
    );
    let second = app
        .dungeon_player("second@example.com", 62, 5_000_000)
        .await;
    app.dungeon_run(&second, "rogue").await;
    // A rotation needs the data dir to itself.
    let refused = crucible::master_key::rotate(&StorageArgs {
        data_dir: app.data_dir.path().to_path_buf(),
        database_url: Some(app.config.database_url.clone()),
        master_key: Some(Secret::new(done.new_key.expose())),
    })
    .await;
    assert!(format!("{:#}", refused.expect_err("running")).contains("a server is running"));
}
