//! PostgreSQL stopping and restarting under load, for real: the test starts a PostgreSQL of its
//! own (initdb in a temporary directory, on a free port, so the shared test database is never
//! touched), a `crucible serve` process on it, and clients signing up while the database is
//! stopped with `-m immediate` and `-m fast` and started again (docs/operations.md, "When the
//! database fails").
//!
//! It runs PostgreSQL's own binaries as the `postgres` user, so it needs root and a PostgreSQL
//! install: ignored by default, run by name in CI
//! (`cargo test -p crucible --test api faults_postgres -- --ignored`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::server_process::ServerProcess;

/// A PostgreSQL cluster of the test's own.
pub(crate) struct PrivatePostgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// `listen_addresses`: loopback, and the addresses of other test hosts' links.
    listen: String,
}

impl PrivatePostgres {
    pub(crate) fn init() -> PrivatePostgres {
        Self::init_listening(&[])
    }

    /// A cluster that also listens on `also` (each an address of this host that a test host in
    /// a network namespace reaches it by), trusting connections from anywhere: it is the test's
    /// own, on a private link.
    pub(crate) fn init_listening(also: &[&str]) -> PrivatePostgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is installed under /usr/lib/postgresql")
            .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
            .filter(|bin| bin.join("pg_ctl").exists())
            .max()
            .expect("a PostgreSQL version with pg_ctl");
        let dir = tempfile::tempdir().expect("tempdir");
        let chowned = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(dir.path())
            .status()
            .expect("chown");
        assert!(
            chowned.success(),
            "needs root to run PostgreSQL as postgres"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let listen = std::iter::once("127.0.0.1")
            .chain(also.iter().copied())
            .collect::<Vec<_>>()
            .join(",");
        let cluster = PrivatePostgres {
            bin,
            dir,
            port,
            listen,
        };
        let data = cluster.data();
        cluster.as_postgres(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        if !also.is_empty() {
            let hba = cluster.dir.path().join("data/pg_hba.conf");
            let mut rules = std::fs::read_to_string(&hba).expect("pg_hba.conf");
            rules.push_str("\nhost all all 0.0.0.0/0 trust\n");
            std::fs::write(&hba, rules).expect("pg_hba.conf");
        }
        cluster.start();
        cluster
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    pub(crate) fn url(&self) -> String {
        self.url_at("127.0.0.1")
    }

    /// The database's URL through `address` (one it listens on).
    pub(crate) fn url_at(&self, address: &str) -> String {
        format!("postgres://postgres@{address}:{}/postgres", self.port)
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    fn as_postgres(&self, tool: &str, args: &[&str]) {
        let output = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join(tool))
            .args(args)
            .output()
            .expect("run a PostgreSQL tool");
        assert!(
            output.status.success(),
            "{tool} {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    pub(crate) fn start(&self) {
        let options = format!(
            "-p {} -c listen_addresses={} -k {} -c fsync=off",
            self.port,
            self.listen,
            self.dir.path().display()
        );
        let log = self.dir.path().join("postgres.log").display().to_string();
        self.as_postgres(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
    }

    pub(crate) fn stop(&self, mode: &str) {
        self.as_postgres("pg_ctl", &["-D", &self.data(), "-m", mode, "-w", "stop"]);
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args(["-D", &self.data(), "-m", "immediate", "stop"])
            .output();
    }
}

/// `crucible serve` on `database_url`, rate limits off (eight clients sign up back to back).
pub(crate) async fn start(database_url: &str) -> ServerProcess {
    start_skewed(database_url, 0).await
}

/// The same with the node's clock `offset_ms` off the system clock (`--clock-offset-ms`).
pub(crate) async fn start_skewed(database_url: &str, offset_ms: i64) -> ServerProcess {
    ServerProcess::start(|command| node_settings(command, database_url, offset_ms)).await
}

/// A fault test node's settings: on `database_url`, its clock `offset_ms` off the system's.
pub(crate) fn node_settings(command: &mut Command, database_url: &str, offset_ms: i64) {
    command
        .env("DATABASE_URL", database_url)
        .env("CRUCIBLE_CLOCK_OFFSET_MS", offset_ms.to_string())
        // Paid entries register half a second after their fee lands, not three.
        .env("CRUCIBLE_SIMNET_FINALITY_MS", "500")
        // Within the clients' own 15 s: a request caught by a partition is answered 503.
        .env("CRUCIBLE_REQUEST_TIMEOUT_MS", "10000")
        // Webhooks go to a receiver of the test's, on a private address; a delivery a dead node
        // held is taken over 34 s later, not 50.
        .env("CRUCIBLE_WEBHOOK_ALLOW_PRIVATE", "true")
        .env("CRUCIBLE_WEBHOOK_TIMEOUT_MS", "2000")
        .args(["--rate-limits", "off"]);
}

/// What the clients were told, by e-mail.
type Told = Arc<Mutex<BTreeMap<String, u16>>>;

async fn health(client: &reqwest::Client, base: &str) -> (u16, Value) {
    match client.get(format!("{base}/api/health")).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.json().await.unwrap_or(Value::Null))
        }
        Err(error) => (0, json!({ "error": error.to_string() })),
    }
}

/// Sign up until `stop`, one request at a time; every answer is recorded.
async fn client_loop(base: String, id: usize, told: Told, stop: Arc<tokio::sync::Notify>) {
    // Longer than the server's own 10 s wait for a connection: a request that outlives it hung.
    let client = crate::helpers::server_process::client(15);
    for n in 0.. {
        let email = format!("c{id}-{n}@example.com");
        let request = crate::helpers::server_process::sign_up(&client, &base, &email).send();
        let status = tokio::select! {
            answer = request => match answer {
                Ok(response) => {
                    let status = response.status().as_u16();
                    if status == 503 {
                        assert!(
                            response.headers().get("retry-after").is_some(),
                            "a 503 carries Retry-After"
                        );
                    }
                    status
                }
                // No answer within 15 s, or the connection dropped without one.
                Err(error) => panic!("{email}: no answer: {error}"),
            },
            () = stop.notified() => return,
        };
        told.lock().expect("lock").insert(email, status);
        if status == 503 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// How long after `since` until a sign-up is answered 201 again.
async fn back_after(client: &reqwest::Client, base: &str, since: Instant, tag: &str) -> Duration {
    for n in 0.. {
        let answer = crate::helpers::server_process::sign_up(
            client,
            base,
            &format!("probe-{tag}-{n}@example.com"),
        )
        .send()
        .await;
        if answer.is_ok_and(|r| r.status().as_u16() == 201) {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "not back after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unreachable!()
}

/// How many of `values` match `sql` (a `COUNT(*)` with one parameter), summed.
pub(crate) async fn count_present(pool: &sqlx::AnyPool, sql: &str, values: &[String]) -> usize {
    let mut found = 0;
    for value in values {
        let (n,): (i64,) = sqlx::query_as(sql)
            .bind(value)
            .fetch_one(pool)
            .await
            .expect("count");
        found += usize::try_from(n).unwrap_or(0);
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "runs PostgreSQL as the postgres user: needs root (CI runs it by name)"]
async fn faults_postgres_restarts_under_load_lose_nothing_and_recover_within_5_s() {
    let postgres = PrivatePostgres::init();
    let server = start(&postgres.url()).await;
    let client = crate::helpers::server_process::client(15);
    assert_eq!(health(&client, &server.base).await.0, 200);

    let told: Told = Arc::default();
    let stop = Arc::new(tokio::sync::Notify::new());
    let clients: Vec<_> = (0..8)
        .map(|id| {
            tokio::spawn(client_loop(
                server.base.clone(),
                id,
                told.clone(),
                stop.clone(),
            ))
        })
        .collect();

    let mut recoveries = Vec::new();
    for (round, mode) in ["immediate", "fast", "immediate"].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_secs(2)).await;
        postgres.stop(mode);
        // The health check says so, and answers within its own 2 s even while the pool waits.
        let asked = Instant::now();
        let (status, body) = health(&client, &server.base).await;
        assert!(
            asked.elapsed() < Duration::from_secs(4),
            "health answered in {:?}",
            asked.elapsed()
        );
        assert_eq!(status, 503, "{body}");
        assert!(
            body["database"]
                .as_str()
                .is_some_and(|d| d.starts_with("unavailable")),
            "{body}"
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
        postgres.start();
        let up = Instant::now();
        recoveries.push(back_after(&client, &server.base, up, &round.to_string()).await);
        assert_eq!(health(&client, &server.base).await.0, 200);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.notify_waiters();
    for handle in clients {
        handle.await.expect("a client panicked");
    }

    let told = told.lock().expect("lock").clone();
    let by_status = told
        .values()
        .fold(BTreeMap::<u16, usize>::new(), |mut m, s| {
            *m.entry(*s).or_default() += 1;
            m
        });
    eprintln!("answers by status: {by_status:?}; back after {recoveries:?}");
    assert!(
        told.values().all(|s| *s == 201 || *s == 503),
        "only 201 or 503, never a 500: {by_status:?}"
    );
    assert!(
        by_status.get(&201).copied().unwrap_or(0) > 0,
        "{by_status:?}"
    );
    for recovery in &recoveries {
        assert!(
            *recovery < Duration::from_secs(5),
            "normal service within 5 s of the database accepting connections: {recoveries:?}"
        );
    }
    // Every acknowledged sign-up is there; none answered 503 is.
    let acknowledged: Vec<String> = told
        .iter()
        .filter(|(_, s)| **s == 201)
        .map(|(e, _)| e.clone())
        .collect();
    let refused: Vec<String> = told
        .iter()
        .filter(|(_, s)| **s == 503)
        .map(|(e, _)| e.clone())
        .collect();
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&postgres.url())
        .await
        .expect("connect");
    let by_email = "SELECT COUNT(*) FROM accounts WHERE email = $1";
    let found = count_present(&pool, by_email, &acknowledged).await;
    let ghosts = count_present(&pool, by_email, &refused).await;
    pool.close().await;
    assert_eq!(found, told.values().filter(|s| **s == 201).count());
    // A 503 is "try again": the request changed nothing, except when the connection died while
    // its COMMIT was on the wire — then it may have committed, and the retry answers 409 (the
    // e-mail is taken). At most one such request per client per stop.
    assert!(ghosts <= 8 * 3, "{ghosts} sign-ups answered 503 exist");
    eprintln!("503s whose commit landed anyway: {ghosts}");
    drop(server);
}

/// `crucible tournament create` on `database_url`: a free tournament starting in an hour; its id.
pub(crate) fn create_free_tournament(database_url: &str) -> String {
    let starts = chrono::Utc::now() + chrono::Duration::hours(1);
    create_tournament(
        database_url,
        "0",
        starts,
        starts + chrono::Duration::hours(1),
    )
}

/// A tournament of up to 100,000 wallets with an entry fee of `fee` USDC, held from `starts`
/// to `ends`, by the CLI; its id.
pub(crate) fn create_tournament(
    database_url: &str,
    fee: &str,
    starts: chrono::DateTime<chrono::Utc>,
    ends: chrono::DateTime<chrono::Utc>,
) -> String {
    let data_dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_crucible"))
        .args([
            "tournament",
            "create",
            "--name",
            "Fault Cup",
            "--entry-fee",
            fee,
        ])
        .args(["--min-participants", "0"])
        .args(["--max-participants", "100000", "--starts-at"])
        .arg(starts.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .arg("--ends-at")
        .arg(ends.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .arg("--data-dir")
        .arg(data_dir.path())
        .env("DATABASE_URL", database_url)
        .env("CRUCIBLE_MASTER_KEY", "00".repeat(32))
        .output()
        .expect("run the CLI");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .find(|word| word.starts_with("trn_"))
        .expect("the CLI prints the id")
        .to_owned()
}

/// Entries on `base`'s first leaderboard page of `id`.
async fn board_entries(client: &reqwest::Client, base: &str, id: &str) -> i64 {
    let (status, body) = match client
        .get(format!("{base}/api/tournaments/{id}/leaderboard"))
        .send()
        .await
    {
        Ok(response) => (
            response.status().as_u16(),
            response.json::<Value>().await.unwrap_or(Value::Null),
        ),
        Err(_) => (0, Value::Null),
    };
    if status == 200 {
        body["totalEntries"].as_i64().unwrap_or(-1)
    } else {
        -1
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "runs PostgreSQL as the postgres user: needs root (CI runs it by name)"]
async fn faults_postgres_a_second_node_follows_changes_after_the_database_restarts() {
    let postgres = PrivatePostgres::init();
    let a = start(&postgres.url()).await;
    let b = start(&postgres.url()).await;
    let client = crate::helpers::server_process::client(15);
    let id = create_free_tournament(&postgres.url());
    // B answers (and caches) the empty board.
    assert_eq!(board_entries(&client, &b.base, &id).await, 0);

    for (seed, mode) in [(1_u8, "immediate"), (2, "fast")] {
        postgres.stop(mode);
        tokio::time::sleep(Duration::from_secs(2)).await;
        postgres.start();
        // Both nodes serve again (A can write: a sign-up goes through).
        back_after(&client, &a.base, Instant::now(), &format!("a{seed}")).await;
        back_after(&client, &b.base, Instant::now(), &format!("b{seed}")).await;
        // B reads the board now, so its cached answer is fresh: only an announcement through
        // the relay, not the cache's 5 s age limit, can make it show A's change within 2.5 s.
        assert_eq!(
            board_entries(&client, &b.base, &id).await,
            i64::from(seed) - 1
        );
        let wallet = crucible::domain::WalletAddress::from_public_key(&[seed; 32]).to_string();
        let registered = client
            .post(format!("{}/api/tournaments/{id}/register", a.base))
            .json(&json!({"registeredWallet": wallet, "txSignature": null}))
            .send()
            .await
            .expect("register on A");
        assert_eq!(registered.status().as_u16(), 201);
        let registered = Instant::now();
        while board_entries(&client, &b.base, &id).await != i64::from(seed) {
            assert!(
                registered.elapsed() < Duration::from_millis(2_500),
                "node B still shows a stale board {:?} after A's registration",
                registered.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!(
            "after a {mode} restart, B showed A's registration in {:?}",
            registered.elapsed()
        );
    }
}
