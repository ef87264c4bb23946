//! What the HTTP load benchmarks share: a server pinned to one core on a fresh database, a
//! closed-loop load generator, and latency percentiles.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "shared by benches that each use part of it; a bench that cannot go on should fail loudly"
)]

pub mod disk;
pub mod postgres;
pub mod wrk;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crucible::config::{Config, sqlite_url_in};
use crucible::startup::Application;
use crucible::state::AppState;
use serde_json::{Value, json};

pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A fresh database: SQLite in `dir`, or a new schema in `TEST_DATABASE_URL`, dropped again
/// when the [`Database`] is (so that runs one after another, as in an A/B comparison, each
/// meet a PostgreSQL holding only their own data).
pub fn database_url(dir: &std::path::Path) -> Database {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(base) if !base.is_empty() => {
            let schema = format!(
                "bench_{}",
                crucible::crypto::random_base58(8).to_lowercase()
            );
            on_postgres(&base, &format!("CREATE SCHEMA \"{schema}\""));
            let separator = if base.contains('?') { '&' } else { '?' };
            Database {
                url: format!("{base}{separator}options=-c%20search_path%3D{schema}"),
                backend: "postgres",
                schema: Some((base, schema)),
            }
        }
        _ => Database {
            url: sqlite_url_in(dir),
            backend: "sqlite",
            schema: None,
        },
    }
}

/// A bench's database ([`database_url`]).
pub struct Database {
    /// What the server connects to.
    pub url: String,
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// On PostgreSQL, the server's URL and the schema made for this bench.
    schema: Option<(String, String)>,
}

impl Database {
    /// On PostgreSQL, the URL of the server the bench's schema is on (for the cluster's own
    /// counters, [`postgres`]).
    pub fn postgres_base(&self) -> Option<&str> {
        self.schema.as_ref().map(|(base, _)| base.as_str())
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some((base, schema)) = self.schema.take() {
            // A server still running may hold a lock for a moment; a schema left behind is
            // only disk, so give up after a while rather than hang the bench's end.
            on_postgres(
                &base,
                &format!("SET lock_timeout = '10s'; DROP SCHEMA \"{schema}\" CASCADE"),
            );
        }
    }
}

/// Run `sql` on PostgreSQL at `base` ([`on_postgres_thread`]).
fn on_postgres(base: &str, sql: &str) {
    let statement = sql.to_owned();
    let done = on_postgres_thread(base, move |mut conn| async move {
        sqlx::raw_sql(&statement).execute(&mut conn).await.map(drop)
    });
    if let Err(error) = done {
        eprintln!("{sql}: {error}");
    }
}

/// Connect to PostgreSQL at `base` and run `work` with the connection, on a thread of its own
/// with a runtime of its own (callers may be inside a runtime).
pub fn on_postgres_thread<T, F, Fut>(base: &str, work: F) -> sqlx::Result<T>
where
    T: Send + 'static,
    F: FnOnce(sqlx::AnyConnection) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = sqlx::Result<T>>,
{
    let base = base.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt");
        runtime.block_on(async {
            use sqlx::Connection;
            sqlx::any::install_default_drivers();
            work(sqlx::AnyConnection::connect(&base).await?).await
        })
    })
    .join()
    .expect("thread")
}

/// A server on one core over a fresh database, and what a bench reads from it.
pub struct Served {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub state: AppState,
    /// The server's data dir (and SQLite file): removed when this is dropped.
    pub dir: tempfile::TempDir,
    /// Its database (`database.backend` says which kind), dropped with this.
    pub database: Database,
}

impl Served {
    /// Its address, state and database kind (the data dir stays with `self`, which must live
    /// as long as the bench).
    pub fn parts(&self) -> (String, AppState, &'static str) {
        (self.base.clone(), self.state.clone(), self.database.backend)
    }
}

/// Start the server on its own thread with a single-threaded runtime (one core), on a fresh
/// database ([`database_url`]).
pub fn serve_on_one_core() -> Served {
    serve_on_one_core_with(|_| {})
}

/// A runtime on the calling thread, for a bench's own work.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// One worker thread for a load generator, beside the server's core.
pub fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// One simnet JSON-RPC call to the server at `base`; the whole reply, which must not be an error.
pub async fn simnet_rpc(
    client: &reqwest::Client,
    base: &str,
    method: &str,
    params: Value,
) -> Value {
    let reply: Value = client
        .post(format!("{base}/simnet/rpc"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("rpc")
        .json()
        .await
        .expect("json");
    assert!(reply["error"].is_null(), "{method}: {reply}");
    reply
}

/// `concurrency` clients each sending GET `url` back to back for `seconds`; latencies in µs.
pub async fn closed_loop(
    client: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
    concurrency: usize,
    seconds: u64,
) -> (Vec<u32>, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, bearer, stop) = (
                client.clone(),
                url.to_owned(),
                bearer.map(str::to_owned),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(4096);
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let mut request = client.get(&url);
                    if let Some(key) = &bearer {
                        request = request.bearer_auth(key);
                    }
                    let response = request.send().await.expect("request");
                    assert_eq!(response.status(), 200);
                    response.bytes().await.expect("body");
                    latencies.push(sent.elapsed().as_micros() as u32);
                }
                latencies
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.expect("worker"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    (latencies, elapsed)
}

/// The `p` quantile (0..=1) of sorted latencies, in milliseconds.
pub fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)] as f64 / 1000.0
}

/// Resident memory of this process in MiB (Linux).
/// CPU time this process has used so far (user and system, every thread; 10 ms steps).
#[allow(dead_code, reason = "not every bench reads it")]
pub fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command's name (in parentheses, which may hold spaces): state is field 3,
    // utime and stime fields 14 and 15, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(14) + ticks(15)) * 10)
}

pub fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmRSS:")
                    .map(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            })
        })
        .flatten()
        .map_or(0.0, |kib| kib / 1024.0)
}

/// One account, one linked and funded wallet, `runs` quotes paid and entered: (runId, key).
pub async fn enter_runs(
    client: &reqwest::Client,
    base: &str,
    state: &crucible::state::AppState,
    email: &str,
    runs: usize,
) -> Vec<(String, String)> {
    let cookie = session(client, base, email).await;
    let account: Value = client
        .get(format!("{base}/api/account"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("account")
        .json()
        .await
        .expect("json");
    let account_id = account["id"].as_str().expect("account id").to_owned();

    // The wallet proof is tested elsewhere; here the service layer links the wallet directly.
    let payer = crucible::chain::Keypair::generate();
    let wallet = payer.pubkey().to_string();
    let mut conn = state.store.write().acquire().await.expect("conn");
    crucible::account::link_wallet(
        &mut conn,
        &account_id,
        &crucible::domain::WalletAddress::parse(&wallet).expect("wallet"),
        "linked",
        state.now(),
    )
    .await
    .expect("link");
    drop(conn);
    let airdrop: Value = client
        .post(format!("{base}/simnet/rpc"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "requestAirdrop",
                      "params": [wallet, 100_000_000_000u64, {"stablecoinAmount": runs as u64 * 1_000_000}]}))
        .send()
        .await
        .expect("airdrop")
        .json()
        .await
        .expect("json");
    assert!(airdrop["error"].is_null(), "{airdrop}");

    let today = state.now().format("%Y-%m-%d").to_string();
    let dungeon = state.chain.dungeon().address.clone();
    let mint = state.chain.stablecoin_mint().to_owned();
    let mut keys = Vec::with_capacity(runs);
    for _ in 0..runs {
        let quote: Value = client
            .get(format!("{base}/api/dungeons/{today}/quote?wallet={wallet}"))
            .send()
            .await
            .expect("quote")
            .json()
            .await
            .expect("json");
        let memo = quote["memo"].as_str().expect("memo");
        let signature = state
            .chain
            .transfer_token(&payer, &dungeon, &mint, 1_000_000, memo)
            .await
            .expect("pay");
        let url = format!("{base}/api/dungeons/{today}/enter");
        let entered = as_session(client.post(&url), &url, &cookie)
            .json(&json!({"quoteId": quote["quoteId"], "payerWallet": wallet, "txSignature": signature}))
            .send()
            .await
            .expect("enter");
        assert_eq!(entered.status(), 201);
        let body: Value = entered.json().await.expect("json");
        keys.push((
            body["runId"].as_str().expect("run").to_owned(),
            body["registrationKey"].as_str().expect("key").to_owned(),
        ));
    }
    keys
}

/// [`serve_on_one_core`] with the configuration changed by `tweak` first (e.g. background work on).
pub fn serve_on_one_core_with(tweak: impl FnOnce(&mut Config) + Send + 'static) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = database_url(dir.path());
    let mut config = Config::for_tests(dir.path().to_path_buf(), database.url.clone());
    tweak(&mut config);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let app = Application::build(config).await.expect("build");
            tx.send((app.local_addr(), app.state().clone()))
                .expect("send");
            app.run_until_stopped(std::future::pending())
                .await
                .expect("serve");
        });
    });
    let (address, state) = rx.recv().expect("server started");
    Served {
        base: format!("http://{address}"),
        state,
        dir,
        database,
    }
}

/// Sign `email` up through the API; the `session-token=…` cookie to send with later requests.
pub async fn session(client: &reqwest::Client, base: &str, email: &str) -> String {
    let signup = client
        .post(format!("{base}/api/auth/signup"))
        .json(&json!({"email": email, "password": "correct horse 9", "acceptTerms": true, "acceptPrivacy": true}))
        .send()
        .await
        .expect("signup");
    assert_eq!(signup.status(), 201);
    signup
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| {
            c.split(';')
                .next()
                .filter(|c| c.starts_with("session-token="))
        })
        .expect("session cookie")
        .to_owned()
}

/// A new account API key with `scopes`, minted through the API with the session `cookie`.
pub async fn api_key(
    client: &reqwest::Client,
    base: &str,
    cookie: &str,
    scopes: &[&str],
) -> String {
    let key = post_as(
        client,
        &format!("{base}/api/api-keys"),
        cookie,
        &json!({"name": "bench", "scopes": scopes}),
    )
    .await;
    key["key"].as_str().expect("key").to_owned()
}

/// `request` to `url` as the signed-in `cookie` (`session-token=…`), with what every
/// cookie-authenticated write carries: this server as its origin and the session's token.
pub fn as_session(
    request: reqwest::RequestBuilder,
    url: &str,
    cookie: &str,
) -> reqwest::RequestBuilder {
    let origin = reqwest::Url::parse(url)
        .map(|url| url.origin().ascii_serialization())
        .expect("url");
    let session = cookie.trim_start_matches("session-token=");
    request
        .header("cookie", cookie)
        .header("origin", origin)
        .header("x-csrf-token", crucible::web::csrf_token(session))
}

/// `POST url` with `body` as the signed-in `cookie`: the answer's JSON.
pub async fn post_as(client: &reqwest::Client, url: &str, cookie: &str, body: &Value) -> Value {
    as_session(client.post(url), url, cookie)
        .json(body)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json")
}

/// The operator account `acc_bench` that seeded agents belong to.
pub async fn insert_account(conn: &mut sqlx::AnyConnection, now_ms: i64) {
    sqlx::query(
        "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at, created_at, updated_at)
         VALUES ('acc_bench', 'bench@example.com', $1, $1, $1, $1)",
    )
    .bind(now_ms)
    .execute(conn)
    .await
    .expect("account");
}

/// A free public tournament for `max_participants` wallets, live from a minute before `now`
/// for a day (benches change what they need with `..`).
pub fn live_tournament(
    state: &AppState,
    id: &str,
    max_participants: usize,
) -> crucible::tournaments::queries::NewTournament {
    let now = state.now();
    crucible::tournaments::queries::NewTournament {
        id: id.into(),
        name: "Bench Cup".into(),
        description: String::new(),
        kind: "highest_pnl".into(),
        visibility: "public".into(),
        entry_fee_raw: 0,
        max_participants: max_participants as i64,
        escrow_wallet: state.chain.escrow().address.to_string(),
        payout_split: vec![100],
        rake_bps: 0,
        is_paper_trading: false,
        transfer_policy: crucible::tournaments::rules::TransferPolicy::Adjust,
        evaluation_metric: crucible::tournaments::rules::EvaluationMetric::PnlPercent,
        start_date: now - chrono::Duration::minutes(1),
        end_date: now + chrono::Duration::days(1),
        series: None,
        registration_deadline: None,
        invite_code_hash: None,
        min_participants: 0,
    }
}

/// A live tournament with `wallets` registrations, each with a baseline and a current value.
pub async fn seed_tournament(state: &AppState, id: &str, wallets: usize) {
    let now = state.now();
    let new = live_tournament(state, id, wallets);
    let mut tx = state.store.begin().await.expect("tx");
    crucible::tournaments::queries::insert(&mut tx, &new, now)
        .await
        .expect("tournament");
    let at = crucible::clock::to_millis(now);
    for n in 0..wallets {
        let wallet = crucible::domain::WalletAddress::from_public_key(
            &crucible::crypto::sha256_hex(n.to_string()).as_bytes()[..32]
                .try_into()
                .expect("32"),
        );
        sqlx::query(
            "INSERT INTO tournament_registrations (tournament_id, wallet, registered_at, start_value_usd, current_value_usd, snapshot_at)
             VALUES ($1, $2, $3, 1000.0, $4, $3)",
        )
        .bind(id)
        .bind(wallet.as_str())
        .bind(at + n as i64)
        .bind(1000.0 + (n % 997) as f64)
        .execute(&mut *tx)
        .await
        .expect("registration");
    }
    sqlx::query(
        "UPDATE tournaments SET current_participants = $1, last_snapshot_at = $2 WHERE id = $3",
    )
    .bind(wallets as i64)
    .bind(at)
    .bind(id)
    .execute(&mut *tx)
    .await
    .expect("count");
    tx.commit().await.expect("commit");
}

/// `agents` active paper agents of the bench account on 5m, all due at `now_ms`: ids
/// `agt_<prefix>_<n>`, classes taken in turn from `classes`, asking `model_id`.
pub async fn insert_active_agents(
    conn: &mut sqlx::AnyConnection,
    prefix: &str,
    classes: &[&str],
    model_id: &str,
    agents: usize,
    now_ms: i64,
) {
    let ledger = serde_json::to_string(&crucible::paper::Ledger::new(
        10_000.0,
        crucible::paper::PaperConfig::default(),
    ))
    .expect("ledger");
    for n in 0..agents {
        let name = format!("{prefix}_{n:05}");
        sqlx::query(
            "INSERT INTO agents (id, account_id, name, username, username_key, class, model_id, strategy_type,
                                 base_token, quote_token, time_interval, max_allocation, wallet_address, status,
                                 ledger, clock_origin_wall, clock_origin_market, next_tick_at, started_at,
                                 created_at, updated_at)
             VALUES ($1, 'acc_bench', $2, $2, $2, $3, $4, 'builtin', 'SOL', 'USDC', '5m', 100,
                     $5, 'active', $6, $7, $7, $7, $7, $7, $7)",
        )
        .bind(format!("agt_{name}"))
        .bind(&name)
        .bind(classes[n % classes.len()])
        .bind(model_id)
        .bind(format!("wallet_{name}"))
        .bind(&ledger)
        .bind(now_ms)
        .execute(&mut *conn)
        .await
        .expect("agent");
    }
}

/// A tournament `trn_bench` of `wallets` registered wallets on `state`'s server at `base`, and a
/// read-scoped account key minted through the API: what the read benches load.
pub fn seed_reads(
    runtime: &tokio::runtime::Runtime,
    state: &AppState,
    base: &str,
    wallets: usize,
) -> String {
    runtime.block_on(async {
        seed_tournament(state, "trn_bench", wallets).await;
        let client = reqwest::Client::new();
        let cookie = session(&client, base, "bench@example.com").await;
        api_key(&client, base, &cookie, &["read"]).await
    })
}
