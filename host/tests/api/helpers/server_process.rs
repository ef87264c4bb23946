//! A `crucible serve` process of its own (embedded database, its own data dir), for what only a
//! real process shows: its environment's effect, its log output.

use serde_json::{Value, json};

/// A running server process, killed when dropped, however the test ends.
pub struct ServerProcess {
    pub base: String,
    pub client: reqwest::Client,
    child: std::process::Child,
    _data_dir: tempfile::TempDir,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServerProcess {
    /// Start `crucible serve` on a free port with a fresh data dir, no demo data, the embedded
    /// database and simnet, and `setup` applied to the command (environment, output); wait until
    /// it answers its health check.
    pub async fn start(setup: impl FnOnce(&mut std::process::Command)) -> ServerProcess {
        Self::start_at(None, "127.0.0.1", setup).await
    }

    /// The same inside the network namespace `namespace` (run with `ip netns exec`), listening
    /// on `address`, one of that namespace's addresses the test can reach.
    pub async fn start_in(
        namespace: &str,
        address: &str,
        setup: impl FnOnce(&mut std::process::Command),
    ) -> ServerProcess {
        Self::start_at(Some(namespace), address, setup).await
    }

    async fn start_at(
        namespace: Option<&str>,
        address: &str,
        setup: impl FnOnce(&mut std::process::Command),
    ) -> ServerProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("addr")
            .port();
        let data_dir = tempfile::tempdir().expect("dir");
        let binary = env!("CARGO_BIN_EXE_crucible");
        let mut command = match namespace {
            None => std::process::Command::new(binary),
            Some(namespace) => {
                let mut command = std::process::Command::new("ip");
                command.args(["netns", "exec", namespace, binary]);
                command
            }
        };
        command
            .arg("serve")
            .env("CRUCIBLE_BIND", format!("{address}:{port}"))
            .env("CRUCIBLE_DATA_DIR", data_dir.path())
            .env("CRUCIBLE_MASTER_KEY", "00".repeat(32))
            .env("CRUCIBLE_DEMO_DATA", "off")
            .env_remove("DATABASE_URL")
            .env_remove("SOLANA_RPC_URL")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        setup(&mut command);
        let child = command.spawn().expect("start crucible serve");
        let server = ServerProcess {
            base: format!("http://{address}:{port}"),
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client"),
            child,
            _data_dir: data_dir,
        };
        for _ in 0..100 {
            let health = server
                .client
                .get(format!("{}/api/health", server.base))
                .send()
                .await;
            if health.is_ok_and(|r| r.status() == 200) {
                return server;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the server did not start");
    }

    /// Its process id (to pause, resume or kill it from a fault test).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stop it as an operator would (SIGTERM), and wait until it has exited.
    pub async fn stop(mut self) {
        terminate(&mut self.child).await;
    }

    /// Sign `email` up; its session cookie (`session-token=…`).
    pub async fn signup(&self, email: &str) -> String {
        let signup = self
            .client
            .post(format!("{}/api/auth/signup", self.base))
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
            .expect("cookie")
            .to_owned()
    }

    /// A cookie-authenticated write, as the browser sends it (Origin and CSRF token).
    pub async fn session_write(
        &self,
        cookie: &str,
        method: &str,
        path: &str,
        body: Value,
    ) -> Value {
        let session = cookie.trim_start_matches("session-token=");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let response = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("cookie", cookie)
            .header("origin", &self.base)
            .header("x-csrf-token", crucible::web::csrf_token(session))
            .json(&body)
            .send()
            .await
            .expect("request");
        assert!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        response.json().await.unwrap_or(Value::Null)
    }

    /// A v1 key of the session's account with `permissions` (and a webhook URL).
    pub async fn v1_key(
        &self,
        cookie: &str,
        permissions: &[&str],
        webhook: Option<&str>,
    ) -> String {
        let mut body = json!({"name": "test", "permissions": permissions});
        if let Some(url) = webhook {
            body["webhookUrl"] = json!(url);
        }
        let key = self
            .session_write(cookie, "POST", "/api/v1/api-keys", body)
            .await;
        key["data"]["key"].as_str().expect("key").to_owned()
    }

    /// Create a built-in agent with `key` from `body`, fund its wallet on the server's simnet
    /// and start it; its id.
    pub async fn start_agent(&self, key: &str, body: Value) -> String {
        let agent: Value = self
            .client
            .post(format!("{}/api/v1/public/agents/create", self.base))
            .header("x-api-key", key)
            .json(&body)
            .send()
            .await
            .expect("create")
            .json()
            .await
            .expect("json");
        let agent_id = agent["data"]["agentId"]
            .as_str()
            .unwrap_or_else(|| panic!("not created: {agent}"))
            .to_owned();
        let wallet = agent["data"]["walletAddress"].as_str().expect("wallet");
        let airdrop = airdrop(&self.client, &self.base, wallet, 50_000_000, 0).await;
        assert!(
            airdrop.as_ref().is_some_and(|a| a["error"].is_null()),
            "{airdrop:?}"
        );
        let started = self
            .client
            .post(format!(
                "{}/api/v1/public/agents/{agent_id}/start",
                self.base
            ))
            .header("x-api-key", key)
            .send()
            .await
            .expect("start");
        assert_eq!(started.status(), 200);
        agent_id
    }
}

/// Send `child` SIGTERM and wait (up to 30 s) until it has exited; its exit status.
pub async fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "SIGTERM could not be sent");
    for _ in 0..600 {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the process did not stop within 30 s of SIGTERM");
}

/// An HTTP client for fault tests: no proxy from the environment, and `timeout_secs` per
/// request (past which a request counts as unanswered).
pub fn client(timeout_secs: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(timeout_secs))
        .build()
        .expect("client")
}

/// `requestAirdrop` of `lamports` and `usdc_raw` to `wallet` on the simnet of the server at
/// `base`: its JSON-RPC reply, or `None` when no reply came.
pub async fn airdrop(
    client: &reqwest::Client,
    base: &str,
    wallet: &str,
    lamports: u64,
    usdc_raw: u64,
) -> Option<Value> {
    client
        .post(format!("{base}/simnet/rpc"))
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "requestAirdrop",
                      "params": [wallet, lamports, {"stablecoinAmount": usdc_raw}]}),
        )
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()
}

/// The body of a sign-up by e-mail for `email` (the fault tests' clients all sign up alike).
pub fn sign_up_body(email: &str) -> Value {
    json!({"email": email, "password": "abcdefgh123", "acceptTerms": true, "acceptPrivacy": true})
}

/// A sign-up of `email` at the server at `base`, ready to send.
pub fn sign_up(client: &reqwest::Client, base: &str, email: &str) -> reqwest::RequestBuilder {
    client
        .post(format!("{base}/api/auth/signup"))
        .json(&sign_up_body(email))
}
