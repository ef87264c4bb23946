//! The integration-test harness: every test gets its own server on a free port, its own fresh
//! database (a temp SQLite file, or a fresh schema in `TEST_DATABASE_URL` when it is set, so the
//! same suite runs on PostgreSQL) and a manual clock; `TestApp` has a method per API call.
#![allow(dead_code, reason = "each area uses its own part of the harness")]

pub mod fuzz;
pub mod model_provider;
pub mod server_process;
pub mod trades;
pub mod webhooks;

use std::sync::Arc;

use chrono::{Duration, Utc};
use crucible::clock::ManualClock;
use crucible::config::{Config, sqlite_url_in};
use crucible::startup::Application;
use crucible::state::AppState;
use crucible::tournaments::queries::{self, NewTournament};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub clock: Arc<ManualClock>,
    pub state: AppState,
    pub config: Config,
    pub data_dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

/// How a request authenticates.
#[derive(Clone, Copy)]
pub enum Auth<'a> {
    None,
    Session(&'a str),
    Bearer(&'a str),
    XApiKey(&'a str),
}

#[derive(Debug)]
pub struct TestResponse {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl TestResponse {
    /// The `error` member of a platform error body.
    pub fn error(&self) -> &str {
        self.body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no `error` in {}", self.body))
    }

    /// The session token set by this response.
    pub fn session_token(&self) -> String {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find_map(|cookie| cookie.strip_prefix("session-token="))
            .and_then(|rest| rest.split(';').next())
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no session-token cookie in {:?}", self.headers))
    }
}

/// `TEST_LOG=1` shows the servers' logs (or `TEST_LOG=<filter>` in `RUST_LOG` syntax); quiet
/// otherwise, so that a failing test's output is its own.
fn init_test_log() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        let Ok(filter) = std::env::var("TEST_LOG") else {
            return;
        };
        let filter = match filter.as_str() {
            "" | "0" | "false" => return,
            "1" | "true" => "info,sqlx=warn".to_string(),
            _ => filter,
        };
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_test_writer()
            .try_init();
    });
}

/// A database URL for a fresh, empty database: SQLite in `dir`, or a new PostgreSQL schema.
pub async fn fresh_database_url(dir: &std::path::Path) -> String {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(base) if !base.is_empty() => {
            use sqlx::Connection;
            sqlx::any::install_default_drivers();
            let schema = format!("t_{}", crucible::crypto::random_base58(12).to_lowercase());
            let mut conn = sqlx::AnyConnection::connect(&base)
                .await
                .expect("connect TEST_DATABASE_URL");
            sqlx::query(&format!("CREATE SCHEMA \"{schema}\""))
                .execute(&mut conn)
                .await
                .expect("create schema");
            conn.close().await.ok();
            let separator = if base.contains('?') { '&' } else { '?' };
            format!("{base}{separator}options=-c%20search_path%3D{schema}")
        }
        _ => sqlite_url_in(dir),
    }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(|_| {}).await
    }

    /// Spawn with a tweaked configuration (e.g. rate limits on).
    pub async fn spawn_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
        init_test_log();
        let data_dir = tempfile::tempdir().expect("tempdir");
        let database_url = fresh_database_url(data_dir.path()).await;
        let mut config = Config::for_tests(data_dir.path().to_path_buf(), database_url);
        tweak(&mut config);
        Self::start(config, data_dir, Arc::new(ManualClock::new(Utc::now()))).await
    }

    async fn start(
        config: Config,
        data_dir: tempfile::TempDir,
        clock: Arc<ManualClock>,
    ) -> TestApp {
        let app = Application::build_with_clock(config.clone(), clock.clone())
            .await
            .expect("build app");
        let address = format!("http://{}", app.local_addr());
        let state = app.state().clone();
        let server = tokio::spawn(async move {
            app.run_until_stopped(std::future::pending())
                .await
                .expect("server");
        });
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        TestApp {
            address,
            client,
            clock,
            state,
            config,
            data_dir,
            server,
        }
    }

    /// A second node on this one's database (its own data dir and port, the same clock and
    /// master key), as a host runs several behind a load balancer. PostgreSQL only: SQLite is
    /// one node's database.
    pub async fn spawn_peer(&self) -> TestApp {
        assert!(
            self.config.database_url.starts_with("postgres"),
            "several nodes share a PostgreSQL database"
        );
        let data_dir = tempfile::tempdir().expect("tempdir");
        let mut config = self.config.clone();
        config.data_dir = data_dir.path().to_path_buf();
        Self::start(config, data_dir, self.clock.clone()).await
    }

    /// Stop this server at once, as a node that crashes: nothing is released or drained.
    pub async fn kill(self) {
        self.server.abort();
        let _ = self.server.await;
    }

    /// Stop this server and start a new one on the same database and data dir (a restart).
    pub async fn restart(self) -> TestApp {
        self.server.abort();
        let _ = self.server.await;
        self.state.store.close().await;
        let TestApp {
            config,
            data_dir,
            clock,
            ..
        } = self;
        Self::start(config, data_dir, clock).await
    }

    /// Stop this server and start another on the same database and data dir, with `tweak`
    /// applied to the configuration first (e.g. a rotated master key). Between the two, while
    /// nothing runs, `between` gets the configuration (to run an offline tool).
    pub async fn restart_after<F: std::future::Future<Output = ()>>(
        self,
        between: impl FnOnce(Config) -> F,
        tweak: impl FnOnce(&mut Config),
    ) -> TestApp {
        self.server.abort();
        let _ = self.server.await;
        self.state.store.close().await;
        let TestApp {
            mut config,
            data_dir,
            clock,
            state,
            ..
        } = self;
        drop(state);
        between(config.clone()).await;
        tweak(&mut config);
        Self::start(config, data_dir, clock).await
    }

    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    pub async fn request(
        &self,
        method: &str,
        path: &str,
        auth: Auth<'_>,
        body: Option<Body>,
    ) -> TestResponse {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self
            .client
            .request(method, format!("{}{}", self.address, path));
        request = match auth {
            Auth::None => request,
            // A session writes as the web app's pages do: from this server's origin, with the
            // session's cross-site token (docs/web.md).
            Auth::Session(token) => request
                .header("cookie", format!("session-token={token}"))
                .header("origin", &self.address)
                .header("x-csrf-token", crucible::web::csrf_token(token)),
            Auth::Bearer(key) => request.header("authorization", format!("Bearer {key}")),
            Auth::XApiKey(key) => request.header("x-api-key", key),
        };
        request = match body {
            None => request,
            Some(Body::Json(value)) => request.json(&value),
            Some(Body::Raw(content_type, bytes)) => {
                request.header("content-type", content_type).body(bytes)
            }
        };
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        TestResponse {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, auth: Auth<'_>) -> TestResponse {
        self.request("GET", path, auth, None).await
    }

    pub async fn post(&self, path: &str, auth: Auth<'_>, body: Value) -> TestResponse {
        self.request("POST", path, auth, Some(Body::Json(body)))
            .await
    }

    pub async fn patch(&self, path: &str, auth: Auth<'_>, body: Value) -> TestResponse {
        self.request("PATCH", path, auth, Some(Body::Json(body)))
            .await
    }

    pub async fn delete(&self, path: &str, auth: Auth<'_>) -> TestResponse {
        self.request("DELETE", path, auth, None).await
    }

    /// Sign up `email` with a valid password; returns the response (account + cookie).
    pub async fn signup(&self, email: &str) -> TestResponse {
        self.post(
            "/api/auth/signup",
            Auth::None,
            json!({"email": email, "password": "correct horse 9", "acceptTerms": true, "acceptPrivacy": true}),
        )
        .await
    }

    /// Sign up and return the session token.
    pub async fn session(&self, email: &str) -> String {
        let response = self.signup(email).await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.session_token()
    }

    /// Create an account key with the given request body; returns the creation response body.
    pub async fn create_key(&self, session: &str, body: Value) -> Value {
        let response = self
            .post("/api/api-keys", Auth::Session(session), body)
            .await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.body
    }

    /// A session plus a key with `scopes`; returns (session, key secret).
    pub async fn account_with_key(&self, email: &str, scopes: &[&str]) -> (String, String) {
        let session = self.session(email).await;
        let key = self
            .create_key(&session, json!({"name": "agent", "scopes": scopes}))
            .await;
        (session, key["key"].as_str().expect("key").to_owned())
    }
}

impl TestApp {
    /// A public `highest_pnl` tournament paid into the server's escrow, winner takes all, no
    /// rake; starting `starts_in` from now and lasting `hours`. Adjust fields before creating.
    pub fn new_tournament(
        &self,
        id: &str,
        fee_raw: i64,
        max: i64,
        starts_in: Duration,
        hours: i64,
    ) -> NewTournament {
        let start = self.state.now() + starts_in;
        NewTournament {
            id: id.into(),
            name: format!("Cup {id}"),
            description: String::new(),
            kind: "highest_pnl".into(),
            visibility: "public".into(),
            entry_fee_raw: fee_raw,
            max_participants: max,
            escrow_wallet: self.state.chain.escrow().address.to_string(),
            payout_split: vec![100],
            rake_bps: 0,
            is_paper_trading: false,
            transfer_policy: crucible::tournaments::rules::TransferPolicy::Adjust,
            evaluation_metric: crucible::tournaments::rules::EvaluationMetric::PnlPercent,
            start_date: start,
            end_date: start + Duration::hours(hours),
            series: None,
            registration_deadline: None,
            invite_code_hash: None,
            min_participants: 0,
        }
    }

    /// Create a tournament (and its lifecycle jobs) as the CLI would.
    pub async fn create_tournament(&self, new: NewTournament) {
        new.validate().expect("a valid tournament");
        let mut conn = self.state.store.write().acquire().await.expect("conn");
        assert!(
            queries::insert(&mut conn, &new, self.state.now())
                .await
                .expect("insert"),
            "id taken"
        );
        // As every writer of tournaments does: lists cached on this node are dropped.
        self.state
            .events
            .publish(crucible::events::Event::TournamentsChanged);
    }

    /// One JSON-RPC call to this server's simnet: the whole reply, error or not.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.client
            .post(format!("{}/simnet/rpc", self.address))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json")
    }

    /// The `result` of a JSON-RPC call that must succeed.
    pub async fn rpc_result(&self, method: &str, params: Value) -> Value {
        let reply = self.rpc(method, params).await;
        assert!(reply["error"].is_null(), "{method}: {reply}");
        reply["result"].clone()
    }

    /// The simnet's newest blockhash, as bytes to sign a message with.
    pub async fn latest_blockhash(&self) -> [u8; 32] {
        blockhash_bytes(&self.rpc_result("getLatestBlockhash", json!([])).await)
    }

    /// Give `address` SOL (lamports) and simnet stablecoin (raw units) through simnet's RPC.
    pub async fn airdrop(&self, address: &str, lamports: u64, usdc_raw: u64) {
        self.rpc_result(
            "requestAirdrop",
            json!([address, lamports, {"stablecoinAmount": usdc_raw}]),
        )
        .await;
    }

    /// Sign and send `instructions` from `payer` on the simnet; returns the signature.
    pub async fn send_as(
        &self,
        payer: &crucible::chain::Keypair,
        instructions: &[crucible::chain::tx::message::Instruction],
    ) -> String {
        self.send_signed_by(payer, &[], instructions).await
    }

    /// Sign `instructions` by `payer` (who pays the fee) and every one of `cosigners`, and send
    /// them on the simnet; returns the signature.
    pub async fn send_signed_by(
        &self,
        payer: &crucible::chain::Keypair,
        cosigners: &[&crucible::chain::Keypair],
        instructions: &[crucible::chain::tx::message::Instruction],
    ) -> String {
        use base64::Engine;
        let blockhash = self.latest_blockhash().await;
        let message =
            crucible::chain::tx::Message::new_legacy(instructions, &payer.pubkey(), blockhash);
        let keys: Vec<&ed25519_dalek::SigningKey> = std::iter::once(payer)
            .chain(cosigners.iter().copied())
            .map(|k| k.signing_key())
            .collect();
        let wire = crucible::chain::tx::Transaction::sign(message, &keys)
            .expect("sign")
            .serialize()
            .expect("wire");
        let encoded = base64::engine::general_purpose::STANDARD.encode(wire);
        self.rpc_result("sendTransaction", json!([encoded, {"encoding": "base64"}]))
            .await
            .as_str()
            .expect("signature")
            .to_owned()
    }

    /// A swap through the simnet pool from `user` (who holds a stablecoin account).
    pub async fn swap_as(
        &self,
        user: &crucible::chain::Keypair,
        direction: crucible::chain::pool::Direction,
        amount_in: u64,
    ) -> String {
        use crucible::chain::tx;
        let mint: tx::Pubkey = self.state.chain.stablecoin_mint().parse().expect("mint");
        let account = tx::associated_token_address(&user.pubkey(), &mint, &tx::token_program());
        let ix = crucible::chain::pool::swap(&user.pubkey(), &account, direction, amount_in, 0);
        self.send_as(user, &[ix]).await
    }

    /// Raise SOL's price on the simnet: a wallet outside every tournament buys SOL with
    /// `usdc_raw` of stablecoin. Registered wallets holding SOL gain, and nothing moved into
    /// them, so it is a gain and not a flow.
    pub async fn pump_sol(&self, usdc_raw: u64) {
        let whale = crucible::chain::Keypair::generate();
        self.airdrop(&whale.pubkey().to_string(), 1_000_000_000, usdc_raw)
            .await;
        self.swap_as(&whale, crucible::chain::pool::Direction::SellUsdc, usdc_raw)
            .await;
    }
}

pub enum Body {
    Json(Value),
    Raw(&'static str, Vec<u8>),
}

/// A wallet the test controls.
pub struct TestWallet {
    pub key: SigningKey,
}

impl TestWallet {
    pub fn new(seed: u8) -> Self {
        TestWallet {
            key: SigningKey::from_bytes(&[seed; 32]),
        }
    }

    pub fn address(&self) -> String {
        bs58::encode(self.key.verifying_key().to_bytes()).into_string()
    }

    pub fn sign(&self, message: &str) -> String {
        bs58::encode(self.key.sign(message.as_bytes()).to_bytes()).into_string()
    }

    /// Ask for a nonce and sign its message: (nonce, signature).
    pub async fn prove(&self, app: &TestApp) -> (String, String) {
        let response = app
            .post(
                "/api/auth/nonce",
                Auth::None,
                json!({"wallet": self.address()}),
            )
            .await;
        assert_eq!(response.status, 200, "{}", response.body);
        let nonce = response.body["nonce"].as_str().expect("nonce").to_owned();
        let signature = self.sign(response.body["message"].as_str().expect("message"));
        (nonce, signature)
    }
}

/// A dungeon player: an account (session and a `read`+`write` key) with a linked wallet whose
/// keypair the test holds, funded on simnet with SOL and stablecoin.
pub struct DungeonPlayer {
    pub session: String,
    pub key: String,
    pub payer: crucible::chain::Keypair,
}

impl DungeonPlayer {
    pub fn wallet(&self) -> String {
        self.payer.pubkey().to_string()
    }
}

impl TestApp {
    /// Link `wallet` to the account of `session`, proved by its signature over a fresh nonce.
    pub async fn link_wallet(&self, session: &str, wallet: &TestWallet) {
        let (nonce, signature) = wallet.prove(self).await;
        let linked = self
            .post(
                "/api/account/wallets",
                Auth::Session(session),
                json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
            )
            .await;
        assert_eq!(linked.status, 201, "{}", linked.body);
    }

    /// Sign up `email`, mint a key, link the wallet of `seed` (proved by signature) and fund it
    /// with 1 SOL and `usdc_raw` of the stablecoin.
    pub async fn dungeon_player(&self, email: &str, seed: u8, usdc_raw: u64) -> DungeonPlayer {
        let (session, key) = self.account_with_key(email, &["read", "write"]).await;
        let wallet = TestWallet::new(seed);
        self.link_wallet(&session, &wallet).await;
        let payer = crucible::chain::Keypair::from_secret([seed; 32]);
        assert_eq!(payer.pubkey().to_string(), wallet.address());
        self.airdrop(&wallet.address(), 1_000_000_000, usdc_raw)
            .await;
        DungeonPlayer {
            session,
            key,
            payer,
        }
    }

    /// Today's dungeon id (the manual clock's UTC date).
    pub fn dungeon_today(&self) -> String {
        self.state.now().format("%Y-%m-%d").to_string()
    }

    /// A quote for `wallet` on `dungeon_id`; asserts 200.
    pub async fn dungeon_quote(&self, dungeon_id: &str, wallet: &str) -> Value {
        let quote = self
            .get(
                &format!("/api/dungeons/{dungeon_id}/quote?wallet={wallet}"),
                Auth::None,
            )
            .await;
        assert_eq!(quote.status, 200, "{}", quote.body);
        quote.body
    }

    /// Pay `amount_raw` of the stablecoin from `payer` to the dungeon wallet with `memo`.
    pub async fn dungeon_pay(
        &self,
        payer: &crucible::chain::Keypair,
        amount_raw: u64,
        memo: &str,
    ) -> String {
        let to = self.state.chain.dungeon().address.clone();
        let mint = self.state.chain.stablecoin_mint().to_owned();
        self.state
            .chain
            .transfer_token(payer, &to, &mint, amount_raw, memo)
            .await
            .expect("transfer")
    }

    /// `POST /api/dungeons/{id}/enter` with `auth` and `body`.
    pub async fn dungeon_enter(
        &self,
        dungeon_id: &str,
        auth: Auth<'_>,
        body: Value,
    ) -> TestResponse {
        self.post(&format!("/api/dungeons/{dungeon_id}/enter"), auth, body)
            .await
    }

    /// Quote, pay 1 USDC with the memo and enter today's dungeon (finality must be immediate);
    /// returns the 201 body.
    pub async fn dungeon_run(&self, player: &DungeonPlayer, class: &str) -> Value {
        let today = self.dungeon_today();
        let quote = self.dungeon_quote(&today, &player.wallet()).await;
        let signature = self
            .dungeon_pay(
                &player.payer,
                1_000_000,
                quote["memo"].as_str().expect("memo"),
            )
            .await;
        let entered = self
            .dungeon_enter(
                &today,
                Auth::Bearer(&player.key),
                json!({"quoteId": quote["quoteId"], "payerWallet": player.wallet(),
                       "txSignature": signature, "class": class}),
            )
            .await;
        assert_eq!(entered.status, 201, "{}", entered.body);
        entered.body
    }
}

/// The `v1/public` family: keys, agents and the ticker.
impl TestApp {
    /// Mint a v1 key with `permissions` (and optionally a webhook URL) for the session; returns
    /// the creation response's `data`.
    pub async fn v1_key_with(
        &self,
        session: &str,
        permissions: &[&str],
        webhook_url: Option<&str>,
    ) -> Value {
        let mut body = json!({"name": "operator", "permissions": permissions});
        if let Some(url) = webhook_url {
            body["webhookUrl"] = json!(url);
        }
        let response = self
            .post("/api/v1/api-keys", Auth::Session(session), body)
            .await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.body["data"].clone()
    }

    /// A v1 key secret holding every agent permission.
    pub async fn v1_key(&self, session: &str) -> String {
        let all = ["agents:read", "agents:write", "agents:start", "agents:stop"];
        self.v1_key_with(session, &all, None).await["key"]
            .as_str()
            .expect("key")
            .to_owned()
    }

    /// Create a builtin-strategy agent; returns its `data` (agentId, walletAddress, …).
    pub async fn create_agent(
        &self,
        key: &str,
        username: &str,
        class: &str,
        interval: &str,
    ) -> Value {
        let response = self
            .post(
                "/api/v1/public/agents/create",
                Auth::XApiKey(key),
                json!({
                    "name": format!("Agent {username}"), "username": username, "class": class,
                    "modelId": "openai/gpt-4o",
                    "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                                 "timeInterval": interval}
                }),
            )
            .await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.body["data"].clone()
    }

    /// Fund a created agent's wallet on simnet with the fee reserve and start it; its id.
    pub async fn fund_and_start(&self, key: &str, agent: &Value) -> String {
        let agent_id = agent["agentId"].as_str().expect("agentId").to_owned();
        let wallet = agent["walletAddress"].as_str().expect("walletAddress");
        self.airdrop(wallet, 50_000_000, 0).await;
        let started = self
            .post(
                &format!("/api/v1/public/agents/{agent_id}/start"),
                Auth::XApiKey(key),
                json!(null),
            )
            .await;
        assert_eq!(started.status, 200, "{}", started.body);
        agent_id
    }

    /// Register `wallet` for the free tournament `id` without a key (201 asserted).
    pub async fn register_free(&self, id: &str, wallet: &str) {
        let response = self
            .post(
                &format!("/api/tournaments/{id}/register"),
                Auth::None,
                json!({"registeredWallet": wallet, "txSignature": null}),
            )
            .await;
        assert_eq!(response.status, 201, "{}", response.body);
    }

    /// `payer` pays `fee_per_wallet` × wallets to the escrow with the registration memo of
    /// `wallets` and registers them (201 asserted); the signature. Each wallet pays for itself
    /// when `wallets` is just the payer's.
    pub async fn pay_and_register(
        &self,
        tournament_id: &str,
        payer: &crucible::chain::Keypair,
        wallets: &[String],
        fee_per_wallet: u64,
        auth: Auth<'_>,
    ) -> String {
        let memo = crucible::tournaments::registration_memo(tournament_id, wallets);
        let signature = self
            .state
            .chain
            .transfer_token(
                payer,
                &self.state.chain.escrow().address,
                self.state.chain.stablecoin_mint(),
                fee_per_wallet * wallets.len() as u64,
                &memo,
            )
            .await
            .expect("pay the entry fee");
        let registered = self
            .post(
                &format!("/api/tournaments/{tournament_id}/register"),
                auth,
                json!({"registeredWallets": wallets, "txSignature": signature,
                       "payerWallet": payer.pubkey().to_string()}),
            )
            .await;
        assert_eq!(registered.status, 201, "{}", registered.body);
        signature
    }

    /// Upload a strategy component with a v1 key (`?name=` when given).
    pub async fn upload_strategy(
        &self,
        key: &str,
        name: Option<&str>,
        bytes: Vec<u8>,
    ) -> TestResponse {
        let path = match name {
            Some(name) => format!("/api/v1/public/strategies?name={name}"),
            None => "/api/v1/public/strategies".to_owned(),
        };
        self.request(
            "POST",
            &path,
            Auth::XApiKey(key),
            Some(Body::Raw("application/wasm", bytes)),
        )
        .await
    }

    /// Run one scheduler pass (jobs, schedules and agent ticks) at the current test time.
    pub async fn run_scheduler(&self) -> crucible::scheduler::Pass {
        crucible::scheduler::Scheduler::new(Vec::new())
            .run_due(&self.state)
            .await
            .expect("scheduler pass")
    }

    /// The agents a claim can find, as `(is_paper_trading, next_tick_at, id)` in id order: the
    /// active agents with a next tick. On PostgreSQL the claims read them off the due queue
    /// (migration 0047, kept by triggers), which must then hold exactly these: an entry missing
    /// would be an agent that never ticks again.
    pub async fn due_agents(&self) -> Vec<(i64, i64, String)> {
        let store = self.state.store.read();
        let scheduled: Vec<(i64, i64, String)> = sqlx::query_as(
            "SELECT is_paper_trading, next_tick_at, id FROM agents
             WHERE status = 'active' AND next_tick_at IS NOT NULL ORDER BY id",
        )
        .fetch_all(store)
        .await
        .expect("scheduled agents");
        if self.state.store.backend() == crucible::db::Backend::Postgres {
            let queued: Vec<(i64, i64, String)> = sqlx::query_as(
                "SELECT is_paper_trading, next_tick_at, agent_id FROM agent_due ORDER BY agent_id",
            )
            .fetch_all(store)
            .await
            .expect("due queue");
            assert_eq!(queued, scheduled, "the due queue against the agents");
        }
        scheduled
    }
}

/// The blockhash of a `getLatestBlockhash` result, as bytes to sign a message with.
pub fn blockhash_bytes(latest: &Value) -> [u8; 32] {
    bs58::decode(latest["value"]["blockhash"].as_str().expect("blockhash"))
        .into_vec()
        .expect("base58")
        .try_into()
        .expect("32 bytes")
}

/// The v1 error envelope's code, asserting the envelope's shape.
pub fn v1_code(response: &TestResponse) -> String {
    assert_eq!(response.body["success"], false, "{}", response.body);
    assert!(
        response.body["error"]["message"].is_string(),
        "{}",
        response.body
    );
    assert!(
        response.body["error"]["details"].is_object(),
        "{}",
        response.body
    );
    response.body["error"]["code"]
        .as_str()
        .expect("code")
        .to_owned()
}

/// Playing dungeon runs over HTTP.
/// The services tests drive directly, with the handles each takes (docs/architecture.md,
/// "Services take handles").
impl TestApp {
    /// One snapshot pass over every live tournament (what the scheduler runs each interval).
    pub async fn snapshot_live(&self) -> anyhow::Result<()> {
        let s = &self.state;
        crucible::tournaments::tracking::snapshot_live(&s.store, &*s.clock, &s.events, &s.chain)
            .await
    }

    /// Cancel `tournament_id` as an admin would; whether it was cancelled now.
    pub async fn cancel_tournament(&self, tournament_id: &str) -> anyhow::Result<bool> {
        let s = &self.state;
        crucible::tournaments::lifecycle::cancel(
            &s.store,
            &*s.clock,
            &s.events,
            &s.chain,
            tournament_id,
        )
        .await
    }

    /// The retention pass, as of the manual clock.
    pub async fn prune_retention(&self) -> anyhow::Result<crucible::retention::Pruned> {
        let s = &self.state;
        crucible::retention::prune(&s.store, &*s.clock, &s.config).await
    }
}

impl TestApp {
    /// Moves the manual clock to the next day's noon (UTC), so a test never straddles midnight.
    pub fn dungeon_noon(&self) {
        let now = self.state.now();
        let noon = (now.date_naive() + Duration::days(1))
            .and_hms_opt(12, 0, 0)
            .expect("noon")
            .and_utc();
        self.advance(noon - now);
    }

    /// `POST /api/dungeons/runs/{run_id}/turn` with the run key.
    pub async fn dungeon_turn(&self, run_id: &str, key: &str, body: Value) -> TestResponse {
        self.post(
            &format!("/api/dungeons/runs/{run_id}/turn"),
            Auth::Bearer(key),
            body,
        )
        .await
    }

    /// Plays `run_id` to its end with the engine's greedy agent over HTTP; returns how many
    /// turns were legal (answered 200) and the final state.
    pub async fn dungeon_play_to_end(
        &self,
        run_id: &str,
        key: &str,
    ) -> (usize, crucible::dungeon::game::VisibleState) {
        use crucible::dungeon::game::agent::{Agent, GreedyAgent};
        let mut agent = GreedyAgent::new();
        let first = self
            .dungeon_turn(run_id, key, json!({"action": "inventory", "turnNumber": 1}))
            .await;
        assert_eq!(first.status, 200, "{}", first.body);
        let mut state: crucible::dungeon::game::VisibleState =
            serde_json::from_value(first.body).expect("visible state");
        let mut legal = 1;
        for _ in 0..2_000 {
            if state.status.is_over() {
                return (legal, state);
            }
            let action = agent.decide(&state);
            let reply = self
                .dungeon_turn(
                    run_id,
                    key,
                    json!({"action": action.action, "target": action.target,
                           "turnNumber": state.turn_number + 1}),
                )
                .await;
            let body = match reply.status {
                200 => {
                    legal += 1;
                    reply.body
                }
                400 => reply.body["state"].clone(),
                other => panic!("turn answered {other}: {}", reply.body),
            };
            state = serde_json::from_value(body).expect("visible state");
        }
        panic!("the run did not end in 2000 turns");
    }
}

/// The value of the counter `series` (its name and labels, as `GET /metrics` prints them) on
/// the server at `base`, with the metrics `token` when it needs one.
pub async fn metric(
    client: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    series: &str,
) -> Option<u64> {
    let mut request = client.get(format!("{base}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let text = request
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{series} ")))
        .and_then(|value| value.parse().ok())
}

/// The group committer's counters of the server at `base` (from this machine): (transactions,
/// the writes they carried).
pub async fn group_commit_counts(client: &reqwest::Client, base: &str) -> (u64, u64) {
    let batches = metric(client, base, None, "crucible_group_commit_batches_total").await;
    let writes = metric(client, base, None, "crucible_group_commit_writes_total").await;
    (
        batches.expect("crucible_group_commit_batches_total"),
        writes.expect("crucible_group_commit_writes_total"),
    )
}

/// The watch stream of a run, read from the real server socket until `run:ended` and the end of
/// the stream: (id, event, data) in arrival order.
pub async fn watch_to_end(mut response: reqwest::Response) -> Vec<(i64, String, Value)> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim().to_owned())
            };
            if let (Some(id), Some(event), Some(data)) =
                (field("id:"), field("event:"), field("data:"))
            {
                events.push((
                    id.parse().expect("numeric id"),
                    event,
                    serde_json::from_str(&data).expect("json data"),
                ));
            }
        }
        match tokio::time::timeout(std::time::Duration::from_secs(20), response.chunk())
            .await
            .expect("the stream keeps moving")
        {
            Ok(Some(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
            _ => return events,
        }
    }
}

/// Read SSE events (name, data) from a streaming response until `count` arrive or the stream ends.
pub async fn read_events(
    response: &mut reqwest::Response,
    count: usize,
    buffer: &mut String,
) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    while events.len() < count {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let name = block
                .lines()
                .find_map(|l| l.strip_prefix("event:"))
                .map(|n| n.trim().to_owned());
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            if let Some(name) = name {
                events.push((name, serde_json::from_str(&data).expect("json data")));
            }
        }
        if events.len() >= count {
            break;
        }
        match tokio::time::timeout(std::time::Duration::from_secs(10), response.chunk())
            .await
            .expect("event in time")
        {
            Ok(Some(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
            _ => break,
        }
    }
    events
}
