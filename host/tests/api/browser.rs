//! The web app in a real browser: Debian's headless Chromium driven over the W3C WebDriver
//! protocol (`chromedriver`) against the real server on a real socket. Ignored by a plain
//! `cargo test` (they need Chromium); `.ci/run` installs it and runs them with
//! `cargo test -p crucible --test api browser -- --ignored --test-threads=1`.
//!
//! Each test writes screenshots of the pages it visits to `target/screenshots/`.
//!
//! The WebDriver client is the few commands these tests use, spoken over `reqwest` (see
//! docs/web.md for why not a client crate).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use chrono::Duration as Span;
use serde_json::{Value, json};

use crate::helpers::{Auth, TestApp, TestWallet, trades};

/// The W3C name of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium under its own chromedriver and throw-away profile.
struct Browser {
    http: reqwest::Client,
    /// `http://127.0.0.1:<port>/session/<id>`
    session: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn chromium_binary() -> String {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
        .unwrap_or("chromium")
        .to_owned()
}

/// A WebDriver command failed: its error code and message.
#[derive(Debug)]
struct DriverError(String);

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Browser {
    async fn start() -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (apt-get install chromium-driver)");
        let profile = tempfile::tempdir().expect("profile dir");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {
                "binary": chromium_binary(),
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        }}});
        let mut last_error = String::new();
        for _ in 0..100 {
            match http
                .post(format!("{base}/session"))
                .json(&capabilities)
                .send()
                .await
            {
                Ok(response) => {
                    let body: Value = response.json().await.expect("session answer");
                    let id = body["value"]["sessionId"]
                        .as_str()
                        .unwrap_or_else(|| panic!("no session: {body}"))
                        .to_owned();
                    return Browser {
                        http,
                        session: format!("{base}/session/{id}"),
                        driver,
                        _profile: profile,
                    };
                }
                Err(error) => {
                    last_error = error.to_string();
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        panic!("chromedriver did not start: {last_error}");
    }

    /// One WebDriver command: its `value`, or the driver's error.
    async fn command(&self, method: &str, path: &str, body: Value) -> Result<Value, DriverError> {
        let url = format!("{}{path}", self.session);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body),
        };
        let response = request
            .send()
            .await
            .map_err(|error| DriverError(error.to_string()))?;
        let status = response.status();
        let answer: Value = response
            .json()
            .await
            .map_err(|error| DriverError(error.to_string()))?;
        if status.is_success() {
            Ok(answer["value"].clone())
        } else {
            Err(DriverError(format!(
                "{}: {}",
                answer["value"]["error"], answer["value"]["message"]
            )))
        }
    }

    async fn find(&self, css: &str) -> Result<String, DriverError> {
        let found = self
            .command(
                "POST",
                "/element",
                json!({"using": "css selector", "value": css}),
            )
            .await?;
        found[ELEMENT]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| DriverError(format!("no element reference in {found}")))
    }

    async fn goto(&self, url: &str) {
        self.command("POST", "/url", json!({"url": url}))
            .await
            .unwrap_or_else(|error| panic!("navigate to {url}: {error}"));
    }

    async fn current_url(&self) -> String {
        self.command("GET", "/url", Value::Null)
            .await
            .ok()
            .and_then(|url| url.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    async fn screenshot(&self, name: &str) {
        let encoded = self
            .command("GET", "/screenshot", Value::Null)
            .await
            .expect("screenshot");
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().expect("base64"))
            .expect("png");
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots");
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
    }

    async fn fill(&self, css: &str, text: &str) {
        let element = self.find(css).await.unwrap_or_else(|_| panic!("no {css}"));
        self.command("POST", &format!("/element/{element}/clear"), json!({}))
            .await
            .expect("clear");
        self.command(
            "POST",
            &format!("/element/{element}/value"),
            json!({"text": text}),
        )
        .await
        .expect("type");
    }

    async fn click(&self, css: &str) {
        let element = self.find(css).await.unwrap_or_else(|_| panic!("no {css}"));
        self.command("POST", &format!("/element/{element}/click"), json!({}))
            .await
            .unwrap_or_else(|error| panic!("click {css}: {error}"));
    }

    async fn text(&self, css: &str) -> String {
        let Ok(element) = self.find(css).await else {
            return String::new();
        };
        self.command("GET", &format!("/element/{element}/text"), Value::Null)
            .await
            .ok()
            .and_then(|text| text.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    async fn execute(&self, script: &str) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
        .expect("script")
    }

    async fn accept_alert(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self
            .command("POST", "/alert/accept", json!({}))
            .await
            .is_err()
        {
            assert!(tokio::time::Instant::now() < deadline, "no dialog opened");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Wait until the text of `css` satisfies `ok`, up to `within`; the last text.
    async fn wait_text(&self, css: &str, within: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let text = self.text(css).await;
            if ok(&text) {
                return text;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("{css} never matched; last text: {text:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn wait_url(&self, within: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let url = self.current_url().await;
            if ok(&url) {
                return url;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("the page never moved on; still at {url}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn source(&self) -> String {
        self.command("GET", "/source", Value::Null)
            .await
            .ok()
            .and_then(|source| source.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    async fn close(mut self) {
        let _ = self.command("DELETE", "", Value::Null).await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}

const LONG: Duration = Duration::from_secs(15);

/// Sign up through the page; ends on the account page.
async fn sign_up(browser: &Browser, app: &TestApp, email: &str) {
    browser.goto(&format!("{}/signup", app.address)).await;
    browser.screenshot("signup").await;
    browser.fill("#email", email).await;
    browser.fill("#password", "correct horse 42").await;
    browser.click("#accept-terms").await;
    browser.click("#accept-privacy").await;
    browser.click("form[data-api] button[type=submit]").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    browser.screenshot("signup-sent").await;
    browser
        .wait_url(LONG, |url| url.ends_with("/account"))
        .await;
    browser
        .wait_text("h1", LONG, |text| text == "Account")
        .await;
}

/// No key secret anywhere the page's scripts can read: the document and the tab's storage.
async fn assert_no_key_secret(browser: &Browser) {
    let held = browser
        .execute(
            "return document.documentElement.outerHTML + JSON.stringify(sessionStorage) + \
             JSON.stringify(localStorage);",
        )
        .await;
    let held = held.as_str().unwrap_or_default();
    assert!(!held.contains("svc_live_"), "a page holds a key secret");
    assert!(!held.contains("Agent key"), "a page asks for a key");
}

/// On an agent's page: fund it on simnet, start it, and wait until it is active.
async fn fund_and_start_in_page(browser: &Browser) {
    browser.click("#agent-fund").await;
    browser
        .wait_text("#agent-action-status", LONG, |text| {
            text.starts_with("Funded")
        })
        .await;
    browser.click("#agent-start").await;
    browser
        .wait_text("#agent-status", LONG, |text| text == "active")
        .await;
}

/// The cells of `table`'s first body row, and the number each starts with (`NaN` if none).
async fn first_row(browser: &Browser, table: &str) -> (Vec<String>, Vec<f64>) {
    let cells = browser
        .execute(&format!(
            "return Array.from(document.querySelectorAll('{table} tbody tr:first-child td'))\
             .map(function (td) {{ return td.textContent; }});"
        ))
        .await;
    let cells: Vec<String> = serde_json::from_value(cells).expect("cells");
    let numbers = cells
        .iter()
        .map(|text| {
            text.split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(f64::NAN)
        })
        .collect();
    (cells, numbers)
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_a_signed_in_operator_runs_an_agent_without_any_key_then_mints_and_revokes_one() {
    let app = TestApp::spawn().await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "walk@example.com").await;
    browser.screenshot("account").await;

    // Create an agent with the session alone; the API's validation shows beside the field first.
    browser.goto(&format!("{}/agents", app.address)).await;
    browser
        .wait_text("#agents-list", LONG, |text| text.contains("No agent yet"))
        .await;
    assert_no_key_secret(&browser).await;
    browser.fill("#agent-name", "Walker").await;
    browser.fill("#agent-username", "walker_1").await;
    browser.click("#agent-class option[value=gambler]").await;
    // Hourly: the cost-aware gambler trades a few times a day, not every few 5m candles.
    browser.click("#agent-interval option[value='1h']").await;
    browser.click("#agent-strategy option[value=builtin]").await;
    // The form offers what the gambler's strategy declares, with ranges and defaults; a value
    // set here goes with the agent, the rest keep their defaults.
    let offered = browser
        .wait_text("#agent-params", LONG, |text| text.contains("trail_atr"))
        .await;
    assert!(
        offered.contains("1 to 12") && offered.contains("default 6"),
        "{offered}"
    );
    browser.fill("#param-size", "0.5").await;
    browser.fill("#agent-model", "not-a-slug").await;
    browser.click("#create-agent button[type=submit]").await;
    let complaint = browser
        .wait_text(".field-error", LONG, |text| !text.is_empty())
        .await;
    assert!(complaint.contains("modelId"), "{complaint}");
    browser.screenshot("agents-validation").await;
    browser.fill("#agent-model", "openai/gpt-4o").await;
    browser.click("#create-agent button[type=submit]").await;
    let url = browser
        .wait_url(LONG, |url| url.contains("/agents/agt_"))
        .await;
    let agent_id = url.rsplit('/').next().expect("agent id").to_owned();
    browser
        .wait_text("#agent-status", LONG, |text| text == "unfunded")
        .await;
    browser.wait_text("h1", LONG, |text| text == "Walker").await;
    browser
        .wait_text("#agent-strategy", LONG, |text| {
            text.contains("parameters size=0.5")
        })
        .await;

    // Fund it on simnet and start it.
    fund_and_start_in_page(&browser).await;

    // The server ticks it (the test's clock moves the market); the page shows ticks and trades.
    let traded = trades::tick_until_traded(&app, Some(&agent_id), 1, Span::hours(1), 400).await;
    assert!(traded > 0, "the gambler traded");
    browser
        .wait_text("#agent-ticks", LONG, |text| {
            text.parse::<u64>().is_ok_and(|ticks| ticks > 0)
        })
        .await;
    browser
        .wait_text("#agent-trades", LONG, |text| {
            text.parse::<u64>().is_ok_and(|shown| shown > 0)
        })
        .await;
    // The trade itself, with the strategy's reason, in the page's trade list; its amount at its
    // price is its value.
    browser
        .wait_text("#agent-trade-list tbody", LONG, |text| {
            (text.contains("buy") || text.contains("sell")) && text.contains("paper")
        })
        .await;
    // When, side, amount, price, value, fee, …
    let (cells, n) = first_row(&browser, "#agent-trade-list").await;
    trades::assert_adds_up(&format!("the agent page {cells:?}"), n[2], n[3], n[4], n[5]);
    // Equity: the hourly marks the server kept, drawn as a chart.
    browser
        .wait_text("#agent-equity", LONG, |text| text.ends_with("USDC"))
        .await;
    let chart = browser
        .execute("return document.querySelectorAll('#equity-chart canvas').length;")
        .await;
    assert!(chart.as_u64().unwrap_or(0) > 0, "the equity chart is drawn");
    browser.screenshot("agent-running").await;
    assert_no_key_secret(&browser).await;

    browser.click("#agent-stop").await;
    browser
        .wait_text("#agent-status", LONG, |text| text == "idle")
        .await;
    browser.screenshot("agent-stopped").await;
    browser.goto(&format!("{}/agents", app.address)).await;
    browser
        .wait_text("#agents-list", LONG, |text| text.contains("Walker"))
        .await;
    browser.screenshot("agents-list").await;
    browser.goto(&format!("{}/webhooks", app.address)).await;
    browser
        .wait_text("#deliveries", LONG, |text| !text.contains("Loading"))
        .await;
    browser.screenshot("webhooks").await;
    assert_no_key_secret(&browser).await;
    let (keys,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM api_keys")
        .fetch_one(app.state.store.read())
        .await
        .expect("count");
    assert_eq!(keys, 0, "the whole walk needed no key");

    // A machine's key: minted on the keys page, its secret shown once, then revoked.
    browser.goto(&format!("{}/keys", app.address)).await;
    browser.click("#v1-keys ~ details summary").await;
    browser.fill("#v1-name", "walk key").await;
    browser
        .click("form[data-family=v1] button[type=submit]")
        .await;
    let secret = browser
        .wait_text("#secret-key", LONG, |text| text.starts_with("svc_live_"))
        .await;
    browser.screenshot("keys-secret-shown-once").await;
    browser.click("#secret-box a.button").await;
    browser
        .wait_text("table.keys[data-family=v1] code.prefix", LONG, |text| {
            !text.is_empty()
        })
        .await;
    let listed = browser.source().await;
    assert!(!listed.contains(&secret), "the secret is never shown again");
    let prefix = browser.text("table.keys[data-family=v1] code.prefix").await;
    assert!(
        secret.starts_with(prefix.trim_end_matches('…')),
        "{prefix} is the start of the secret"
    );
    browser.screenshot("keys-list").await;
    let listed = app
        .get("/api/v1/public/agents", Auth::XApiKey(&secret))
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    browser
        .click("table.keys[data-family=v1] button[data-revoke]")
        .await;
    browser.accept_alert().await;
    browser
        .wait_text("table.keys[data-family=v1] .badge", LONG, |text| {
            text == "revoked"
        })
        .await;
    browser.screenshot("keys-revoked").await;
    let refused = app
        .get("/api/v1/public/agents", Auth::XApiKey(&secret))
        .await;
    assert_eq!(refused.status, 401, "a revoked key stops working");
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_a_fresh_embedded_start_shows_the_demo_agents_trades_on_the_home_page() {
    // The README's first command on a fresh data dir: demo data on, the embedded database.
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        return;
    }
    let app = TestApp::spawn_with(|config| config.demo_data = true).await;
    let browser = Browser::start().await;
    // The demo agents are seeded once the node serves; the home page then has its live board.
    for _ in 0..200 {
        let live = app
            .get("/api/tournaments?status=live&search=Demo", Auth::None)
            .await;
        if live.body["tournaments"][0]["currentParticipants"] == 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    browser.goto(&app.address).await;
    browser
        .wait_text("#live-board", LONG, |text| {
            text.contains("Demo Free-for-All")
        })
        .await;
    browser.screenshot("home-demo-start").await;
    // A minute of the node's time at the scheduler's beat; the page polls for new trades.
    let traded = trades::tick_until_traded(&app, None, 2, Span::seconds(1), 60).await >= 2;
    assert!(traded, "the demo agents traded within a minute");
    let shown = browser
        .wait_text("#live-trades tbody", LONG, |text| text.contains("Demo "))
        .await;
    assert!(shown.contains("buy") || shown.contains("sell"), "{shown}");
    // Each row: when, the agent, the side, the amount at its price, its value and the reason.
    let (cells, n) = first_row(&browser, "#live-trades").await;
    // The pool's fee (0.3 %) is inside the value of a live swap.
    trades::assert_adds_up(
        &format!("the home page {cells:?}"),
        n[3],
        n[4],
        n[5],
        n[5] * 0.004,
    );
    assert!(
        !cells[6].trim().is_empty() && cells[6] != "—",
        "a reason: {cells:?}"
    );
    let board = browser.text("#board tbody").await;
    assert!(
        board.contains("Demo "),
        "the board names the agents: {board}"
    );
    browser.screenshot("home-demo-trading").await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_a_spectator_sees_a_new_registration_within_two_seconds() {
    let app = TestApp::spawn().await;
    let new = app.new_tournament("trn_live", 0, 10, Span::hours(-1), 24);
    app.create_tournament(new).await;
    let browser = Browser::start().await;
    browser.goto(&format!("{}/", app.address)).await;
    browser.screenshot("home").await;
    browser.goto(&format!("{}/tournaments", app.address)).await;
    browser.screenshot("tournaments").await;
    browser
        .goto(&format!("{}/tournaments/trn_live", app.address))
        .await;
    browser
        .wait_text("#board tbody", LONG, |text| text.contains("No wallet"))
        .await;
    // The stream is open once the first board arrived (the page notes the update time).
    browser
        .wait_text("#board-state", LONG, |text| text.contains("Updated"))
        .await;
    let wallet = TestWallet::new(21).address();
    app.register_free("trn_live", &wallet).await;
    let shown = &wallet[..4];
    browser
        .wait_text("#board tbody", Duration::from_secs(2), |text| {
            text.contains(shown)
        })
        .await;
    browser
        .wait_text("#seats", Duration::from_secs(2), |text| {
            text.starts_with("1 /")
        })
        .await;
    browser.screenshot("tournament-live").await;

    // A paid tournament's page shows the payment and its Solana Pay QR code.
    let paid = app.new_tournament("trn_paid", 5_000_000, 10, Span::hours(1), 24);
    app.create_tournament(paid).await;
    browser
        .goto(&format!("{}/tournaments/trn_paid", app.address))
        .await;
    browser.fill("#memo-wallets", &wallet).await;
    browser.click("#memo-form button").await;
    browser
        .wait_text("#pay-memo", LONG, |text| text.starts_with("reg:trn_paid:"))
        .await;
    let qr_loaded = "const img = document.getElementById('pay-qr'); return img.complete && img.naturalWidth > 0;";
    let mut loaded = false;
    for _ in 0..50 {
        if browser.execute(qr_loaded).await == json!(true) {
            loaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(loaded, "the QR code image loaded");
    browser.screenshot("tournament-paid-entry").await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_a_dungeon_run_page_follows_a_run_being_played() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app
        .dungeon_player("runner@example.com", 31, 5_000_000)
        .await;
    let run = app.dungeon_run(&player, "fighter").await;
    let run_id = run["runId"].as_str().expect("run id").to_owned();
    let key = run["registrationKey"].as_str().expect("key").to_owned();
    let browser = Browser::start().await;
    browser
        .goto(&format!("{}/dungeon/runs/{run_id}", app.address))
        .await;
    browser
        .wait_text("#run-status", LONG, |text| text == "active")
        .await;
    let first = app
        .dungeon_turn(
            &run_id,
            &key,
            json!({"action": "inventory", "turnNumber": 1}),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    browser
        .wait_text("#run-turns", LONG, |text| text == "1")
        .await;
    browser
        .wait_text("#run-events", LONG, |text| text.contains("Turn 1"))
        .await;
    browser.screenshot("dungeon-run-live").await;
    app.dungeon_play_to_end(&run_id, &key).await;
    browser
        .wait_text("#run-status", LONG, |text| text != "active")
        .await;
    browser.click("#replay-first").await;
    browser
        .wait_text("#replay-label", LONG, |text| text.starts_with("1 /"))
        .await;
    browser.screenshot("dungeon-run-replay").await;
    browser.goto(&format!("{}/dungeon", app.address)).await;
    browser.screenshot("dungeon").await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_a_cross_site_form_post_is_refused() {
    let app = TestApp::spawn().await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "victim@example.com").await;

    // Another origin (same host, another port: the same *site*, so SameSite=Lax still sends
    // the cookie) serves a page that posts forms at the web app.
    let target = app.address.clone();
    let attacker = axum::Router::new()
        .route(
            "/mint",
            axum::routing::get(move || {
                let target = target.clone();
                async move {
                    axum::response::Html(format!(
                        r#"<!DOCTYPE html><form id=f method=post enctype="text/plain" action="{target}/web-api/api-keys">
                        <input name='{{"name":"stolen","x":"' value='"}}'></form>
                        <script>document.getElementById("f").submit()</script>"#
                    ))
                }
            }),
        )
        .route(
            "/logout",
            axum::routing::get({
                let target = app.address.clone();
                move || {
                    let target = target.clone();
                    async move {
                        axum::response::Html(format!(
                            r#"<!DOCTYPE html><form id=f method=post action="{target}/logout"><input name=csrf value=guess></form>
                            <script>document.getElementById("f").submit()</script>"#
                        ))
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let evil = format!("http://{}", listener.local_addr().expect("addr"));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, attacker).await;
    });

    browser.goto(&format!("{evil}/mint")).await;
    browser
        .wait_url(LONG, |url| url.contains("/web-api/api-keys"))
        .await;
    let answer = browser
        .wait_text("body", LONG, |text| text.contains("refused"))
        .await;
    assert!(answer.contains("another site"), "{answer}");
    browser.screenshot("cross-site-refused").await;

    browser.goto(&format!("{evil}/logout")).await;
    browser.wait_url(LONG, |url| url.ends_with("/logout")).await;
    browser
        .wait_text("body", LONG, |text| text.contains("refused"))
        .await;

    // Nothing happened: no key, and the victim is still signed in.
    browser.goto(&format!("{}/keys", app.address)).await;
    browser
        .wait_text("h1", LONG, |text| text == "API keys")
        .await;
    assert!(browser.source().await.contains("No key yet."));
    browser.goto(&format!("{}/login", app.address)).await;
    browser.screenshot("login").await;
    server.abort();
    browser.close().await;
}

/// Sign the message the page shows with `wallet` and paste the signature back, as a person
/// with a wallet outside the browser would (headless Chromium has no wallet extension).
async fn sign_shown_message(browser: &Browser, wallet: &TestWallet) {
    browser.fill("#wallet-address", &wallet.address()).await;
    browser.click("#wallet-nonce").await;
    browser
        .wait_text("#wallet-message", LONG, |text| !text.is_empty())
        .await;
    let message = browser
        .execute("return document.getElementById('wallet-message').textContent;")
        .await;
    let signature = wallet.sign(message.as_str().expect("message"));
    browser.fill("#wallet-signature", &signature).await;
    browser.click("#wallet-submit").await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_a_wallet_signs_up_then_links_a_second_wallet() {
    let app = TestApp::spawn().await;
    let browser = Browser::start().await;
    browser.goto(&format!("{}/signup", app.address)).await;
    browser
        .wait_text("#wallet-found", LONG, |text| {
            text.starts_with("No browser wallet")
        })
        .await;
    browser.click("#accept-terms").await;
    browser.click("#accept-privacy").await;
    let first = TestWallet::new(41);
    sign_shown_message(&browser, &first).await;
    browser
        .wait_url(LONG, |url| url.ends_with("/account"))
        .await;
    browser
        .wait_text("#wallets ~ div table", LONG, |text| {
            text.contains(&first.address())
        })
        .await;

    let second = TestWallet::new(42);
    sign_shown_message(&browser, &second).await;
    browser
        .wait_text("#wallets ~ div table", LONG, |text| {
            text.contains(&second.address())
        })
        .await;
    browser.screenshot("account-wallets-linked").await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_an_admin_bans_a_component_and_lifts_the_ban() {
    let app = TestApp::spawn().await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "boss@example.com").await;
    crucible::admin::service::set_admin(
        &app.state.store,
        "boss@example.com",
        true,
        app.state.now(),
    )
    .await
    .expect("grant");
    let sha = "c0ffee".repeat(10) + "c0ff";

    browser
        .goto(&format!("{}/admin/components", app.address))
        .await;
    browser.fill("#sha256", &sha).await;
    browser.fill("#ban-reason", "drains the pool").await;
    browser
        .click("form[data-api] button.danger[type=submit]")
        .await;
    browser.accept_alert().await;
    browser
        .wait_text("table code.wrap", LONG, |text| text == sha)
        .await;
    browser.screenshot("admin-component-banned").await;
    let banned = crucible::admin::service::ban_of(&app.state.store, &sha)
        .await
        .expect("read");
    assert_eq!(banned.as_deref(), Some("drains the pool"));

    browser.click("table form[data-api] button").await;
    browser.accept_alert().await;
    browser
        .wait_text("main", LONG, |text| !text.contains(&sha))
        .await;
    assert!(
        crucible::admin::service::ban_of(&app.state.store, &sha)
            .await
            .expect("read")
            .is_none()
    );
    browser.goto(&format!("{}/admin/audit", app.address)).await;
    browser.screenshot("admin-audit").await;
    assert!(browser.source().await.contains("component.unban"));
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_pages_fit_a_phone_screen() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_phone", 0, 10, Span::hours(-1), 24))
        .await;
    let browser = Browser::start().await;
    // A common phone viewport: 390 × 844 CSS pixels.
    browser
        .command("POST", "/window/rect", json!({"width": 390, "height": 844}))
        .await
        .expect("resize");
    for (path, name) in [
        ("/", "phone-home"),
        ("/tournaments", "phone-tournaments"),
        ("/tournaments/trn_phone", "phone-tournament"),
        ("/dungeon", "phone-dungeon"),
        ("/signup", "phone-signup"),
    ] {
        browser.goto(&format!("{}{path}", app.address)).await;
        browser.screenshot(name).await;
        // Nothing wider than the screen: the page never scrolls sideways.
        let overflow = browser
            .execute("return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
            .await;
        assert!(
            overflow.as_i64().is_some_and(|px| px <= 1),
            "{path} is {overflow} px wider than a phone"
        );
    }
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium; .ci/run runs them"]
async fn browser_an_operator_adds_a_model_key_and_reads_the_agents_decisions() {
    use crate::helpers::model_provider::{FakeProvider, Reply};
    const MODEL_KEY: &str = "sk-browser-model-key-987654";
    let provider = FakeProvider::openai(vec![Reply::answer(
        r#"{"action":"buy","fraction":0.25,"reason":"a calm dip in an uptrend"}"#,
    )])
    .await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
    })
    .await;
    let browser = Browser::start().await;
    sign_up(&browser, &app, "thinker@example.com").await;

    // The key, on the keys page: saved, shown back only by how it starts.
    browser.goto(&format!("{}/keys", app.address)).await;
    browser.click("#model-keys ~ details summary").await;
    browser.click("#model-vendor option[value=openai]").await;
    browser.fill("#model-key", MODEL_KEY).await;
    browser
        .click("form[data-api^='PUT /web-api/account/model-keys'] button[type=submit]")
        .await;
    browser
        .wait_text("table.keys[data-family=model]", LONG, |text| {
            text.contains("openai") && text.contains("sk-b")
        })
        .await;
    assert!(!browser.source().await.contains(MODEL_KEY), "never shown");
    browser.screenshot("model-key-saved").await;

    // An agent on that vendor's model, funded and started in the browser.
    browser.goto(&format!("{}/agents", app.address)).await;
    browser
        .wait_text("#agents-list", LONG, |text| text.contains("No agent yet"))
        .await;
    browser.fill("#agent-name", "Thinker").await;
    browser.fill("#agent-username", "thinker_1").await;
    browser.click("#agent-interval option[value='1h']").await;
    browser.click("#agent-strategy option[value=builtin]").await;
    browser.fill("#agent-model", "openai/gpt-test").await;
    browser.click("#create-agent button[type=submit]").await;
    browser
        .wait_url(LONG, |url| url.contains("/agents/agt_"))
        .await;
    fund_and_start_in_page(&browser).await;
    browser
        .wait_text("#agent-model-status", LONG, |text| text == "ready")
        .await;

    // One tick: the model decides, and the page shows the conversation and the tokens.
    app.run_scheduler().await;
    let said = browser
        .wait_text("#agent-decisions", LONG, |text| {
            text.contains("a calm dip in an uptrend")
        })
        .await;
    assert!(said.contains("buy 25 %"), "{said}");
    assert!(said.contains("openai/gpt-test"), "{said}");
    browser
        .wait_text("#agent-tokens", LONG, |text| {
            text.starts_with("20 of 200,000")
        })
        .await;
    browser
        .wait_text("#agent-trade-list tbody", LONG, |text| {
            text.contains("a calm dip in an uptrend")
        })
        .await;
    // What the model was told, folded under the answer.
    let told = browser
        .execute(
            "return document.querySelector('#agent-decisions details.prompt pre').textContent;",
        )
        .await;
    assert!(
        told.as_str()
            .unwrap_or_default()
            .contains("as a fighter agent"),
        "{told}"
    );
    browser.screenshot("agent-decisions").await;
    assert!(!browser.source().await.contains(MODEL_KEY));
    browser.close().await;
}
