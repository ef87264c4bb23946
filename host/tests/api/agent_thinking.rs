//! Agents that think (`docs/agents.md`): a built-in class asks its agent's model once per tick,
//! through the host's endpoint with the operator's key and the personality as the system message,
//! and follows a well-formed answer; anything else leaves the decision to the class rule, with
//! why. Against local servers speaking the OpenAI and Anthropic formats.

use std::time::Duration;

use chrono::Duration as Span;
use serde_json::{Value, json};

use crate::helpers::model_provider::{FakeProvider, Reply};
use crate::helpers::server_process::ServerProcess;
use crate::helpers::{Auth, Body, TestApp, trades};

const PERSONALITY: &str = "You are a cautious contrarian.\nNever chase a pump.";
const ACCOUNT_KEY: &str = "sk-operator-own-key-123456";

fn buy_half() -> Reply {
    Reply::answer(r#"{"action":"buy","fraction":0.5,"reason":"the model sees a dip worth buying"}"#)
}

/// An operator with a v1 key (the agent permissions, and a webhook receiver) and its session.
struct Operator {
    session: String,
    key: String,
}

async fn operator(app: &TestApp, email: &str) -> Operator {
    let session = app.session(email).await;
    let key = app
        .v1_key_with(
            &session,
            &["agents:read", "agents:write", "agents:start", "agents:stop"],
            Some("https://hooks.example.com/in"),
        )
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    Operator { session, key }
}

impl Operator {
    async fn put_model_key(&self, app: &TestApp, vendor: &str, key: &str) {
        let put = app
            .request(
                "PUT",
                &format!("/api/account/model-keys/{vendor}"),
                Auth::Session(&self.session),
                Some(Body::Json(json!({"apiKey": key}))),
            )
            .await;
        assert_eq!(put.status, 200, "{}", put.body);
    }

    /// Create, fund and start a fighter on `model_id` with the test personality; its id.
    async fn agent(&self, app: &TestApp, username: &str, model_id: &str, extra: Value) -> String {
        let mut body = json!({
            "name": format!("Agent {username}"), "username": username, "class": "fighter",
            "modelId": model_id, "personality": PERSONALITY,
            "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                         "timeInterval": "1h"}
        });
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let created = app
            .post(
                "/api/v1/public/agents/create",
                Auth::XApiKey(&self.key),
                body,
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        app.fund_and_start(&self.key, &created.body["data"]).await
    }

    async fn decisions(&self, app: &TestApp, agent_id: &str) -> Vec<Value> {
        let page = app
            .get(
                &format!("/api/v1/public/agents/{agent_id}/decisions"),
                Auth::XApiKey(&self.key),
            )
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        page.body["data"].as_array().expect("decisions").clone()
    }

    async fn view(&self, app: &TestApp, agent_id: &str) -> Value {
        let view = app
            .get(
                &format!("/api/v1/public/agents/{agent_id}"),
                Auth::XApiKey(&self.key),
            )
            .await;
        assert_eq!(view.status, 200, "{}", view.body);
        view.body["data"].clone()
    }

    async fn trades(&self, app: &TestApp, agent_id: &str) -> Vec<Value> {
        let trades = app
            .get(
                &format!("/api/v1/public/agents/{agent_id}/trades"),
                Auth::XApiKey(&self.key),
            )
            .await;
        assert_eq!(trades.status, 200, "{}", trades.body);
        trades.body["data"].as_array().expect("trades").clone()
    }
}

/// A node whose OpenAI endpoint is `provider` and whose model calls time out after
/// `timeout_ms`, at noon (budgets count tokens per UTC day: a test's ticks must not straddle
/// midnight), with an operator `email` whose account key is set there.
async fn node_asking(provider: &FakeProvider, timeout_ms: u64, email: &str) -> (TestApp, Operator) {
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
        config.model_timeout_ms = timeout_ms;
    })
    .await;
    app.dungeon_noon();
    let op = operator(&app, email).await;
    op.put_model_key(&app, "openai", ACCOUNT_KEY).await;
    (app, op)
}

/// One tick for every due agent, then an hour on.
async fn tick(app: &TestApp) {
    tick_by(app, Span::hours(1)).await;
}

/// One tick for every due agent, then `step` on.
async fn tick_by(app: &TestApp, step: Span) {
    let pass = app.run_scheduler().await;
    if pass.agent_ticks.faulted > 0 {
        let faults: Vec<(Option<String>,)> = sqlx::query_as("SELECT last_fault FROM agents")
            .fetch_all(app.state.store.read())
            .await
            .expect("faults");
        panic!("{pass:?}: {faults:?}");
    }
    app.advance(step);
}

#[tokio::test]
async fn a_models_answer_becomes_the_trade_with_the_models_reason() {
    let provider = FakeProvider::openai(vec![buy_half()]).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
    })
    .await;
    // Budgets count tokens per UTC day: the test's ticks must not straddle midnight.
    app.dungeon_noon();
    let op = operator(&app, "thinker@example.com").await;
    op.put_model_key(&app, "openai", ACCOUNT_KEY).await;
    let agent_id = op
        .agent(&app, "thinker", "openai/gpt-test", json!({}))
        .await;
    let before = op.view(&app, &agent_id).await;
    assert_eq!(before["model"]["status"], "ready", "{before}");
    assert_eq!(before["model"]["vendor"], "openai");
    assert_eq!(before["model"]["name"], "gpt-test");
    tick(&app).await;

    // What the provider was sent: the account's key, the model, the personality first and
    // verbatim, then the briefing, with the answer's schema.
    let seen = provider.seen();
    assert_eq!(seen.len(), 1, "one call per tick");
    let request = &seen[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.headers["authorization"],
        format!("Bearer {ACCOUNT_KEY}").as_str()
    );
    assert_eq!(request.body["model"], "gpt-test");
    let messages = request.body["messages"].as_array().expect("messages");
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": PERSONALITY})
    );
    let briefing = messages[1]["content"].as_str().expect("briefing");
    assert_eq!(messages[1]["role"], "user");
    for part in [
        "SOL/USDC on 1h candles as a fighter agent",
        "Last 24 candles",
        "Holdings: 0 SOL and 10000 USDC",
        "The fighter rule proposes:",
        "Your last decisions: none yet.",
    ] {
        assert!(briefing.contains(part), "{part} in {briefing}");
    }
    assert_eq!(
        request.body["response_format"]["type"], "json_schema",
        "{}",
        request.body
    );

    // The model decided: a buy of half the equity, with its reason everywhere the trade shows.
    let reason = "the model sees a dip worth buying";
    let trades = op.trades(&app, &agent_id).await;
    assert_eq!(trades.len(), 1, "{trades:?}");
    assert_eq!(trades[0]["side"], "buy");
    assert_eq!(trades[0]["reason"], reason);
    let notional = trades[0]["notional"].as_f64().expect("notional");
    assert!(
        (4_900.0..=5_000.0).contains(&notional),
        "half of 10,000: {notional}"
    );
    let hooks = trades::webhook_trades(&app).await;
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0]["reason"], reason);

    let decisions = op.decisions(&app, &agent_id).await;
    assert_eq!(decisions.len(), 1);
    let decision = &decisions[0];
    assert_eq!(decision["decidedBy"], "model", "{decision}");
    assert_eq!(decision["why"], Value::Null);
    assert_eq!(decision["model"], "openai/gpt-test");
    assert_eq!(decision["action"], "buy");
    assert_eq!(decision["fraction"], 0.5);
    assert_eq!(decision["reason"], reason);
    assert_eq!(decision["promptTokens"], 17);
    assert_eq!(decision["completionTokens"], 3);
    assert!(decision["latencyMs"].as_i64().is_some());
    let hash = decision["promptHash"].as_str().expect("hash");
    assert_eq!(hash.len(), 64);
    assert_eq!(decision["prompt"], briefing);

    let after = op.view(&app, &agent_id).await;
    assert_eq!(after["model"]["status"], "ready");
    assert_eq!(after["model"]["tokensToday"], 20);
    assert_eq!(after["model"]["tokensPerDay"], 200_000);

    // The next tick recalls the decision, so an exit can follow the entry.
    provider.then([Reply::answer(
        r#"{"action":"sell","fraction":1,"reason":"taking the bounce"}"#,
    )]);
    tick(&app).await;
    let seen = provider.seen();
    let second = seen[1].body["messages"][1]["content"]
        .as_str()
        .expect("briefing");
    assert!(
        second.contains(&format!("by model: buy 0.5 ({reason})")),
        "{second}"
    );
    let trades = op.trades(&app, &agent_id).await;
    assert_eq!(trades[0]["side"], "sell");
    assert_eq!(trades[0]["reason"], "taking the bounce");
    let decisions = op.decisions(&app, &agent_id).await;
    assert_eq!(decisions.len(), 2);
    assert_eq!(decisions[0]["action"], "sell", "newest first");
    // Nothing of the key anywhere the operator reads.
    for body in [
        json!(decisions),
        op.view(&app, &agent_id).await,
        json!(op.trades(&app, &agent_id).await),
    ] {
        assert!(!body.to_string().contains(ACCOUNT_KEY));
    }
}

#[tokio::test]
async fn the_anthropic_format_carries_the_key_and_the_personality_as_system() {
    let provider = FakeProvider::anthropic(vec![Reply::answer(
        r#"{"action":"hold","fraction":0,"reason":"no edge here"}"#,
    )])
    .await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("anthropic")];
    })
    .await;
    // Budgets count tokens per UTC day: the test's ticks must not straddle midnight.
    app.dungeon_noon();
    let op = operator(&app, "claude@example.com").await;
    op.put_model_key(&app, "anthropic", ACCOUNT_KEY).await;
    let agent_id = op
        .agent(&app, "claude_fan", "anthropic/claude-test", json!({}))
        .await;
    tick(&app).await;
    let seen = provider.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].headers["x-api-key"], ACCOUNT_KEY);
    assert_eq!(seen[0].body["model"], "claude-test");
    assert_eq!(seen[0].body["system"], PERSONALITY);
    assert_eq!(
        seen[0].body["tool_choice"]["type"], "tool",
        "the schema is a forced tool"
    );
    let decision = &op.decisions(&app, &agent_id).await[0];
    assert_eq!(decision["decidedBy"], "model");
    assert_eq!(decision["action"], "hold");
    assert_eq!(decision["promptTokens"], 21);
    assert!(
        op.trades(&app, &agent_id).await.is_empty(),
        "a hold trades nothing"
    );
}

/// Each way the model can fail ends in a rule decision that says why.
#[tokio::test]
async fn garbage_a_timeout_a_429_and_a_spent_budget_leave_it_to_the_rule() {
    let provider = FakeProvider::openai(vec![
        Reply::answer("Buy! Definitely buy. Trust me."),
        Reply::Silent(Duration::from_secs(3)),
        Reply::Raw(
            429,
            r#"{"error":{"message":"slow down"}}"#.into(),
            Some("3600"),
        ),
    ])
    .await;
    let (app, op) = node_asking(&provider, 500, "failing@example.com").await;
    // Ticks every 5 minutes, within the 10 minutes a 429 backs its vendor off at most.
    let five_minutes = json!({"strategy": {"type": "builtin",
        "tokenPair": {"base": "SOL", "quote": "USDC"}, "timeInterval": "5m"}});
    let agent_id = op
        .agent(&app, "failing", "openai/gpt-test", five_minutes)
        .await;
    let step = Span::minutes(5);
    tick_by(&app, step).await; // garbage
    tick_by(&app, step).await; // no answer within 500 ms
    tick_by(&app, step).await; // 429, backed off
    tick_by(&app, step).await; // still backed off: no request at all
    assert_eq!(
        provider.seen().len(),
        3,
        "the back-off holds the fourth call"
    );

    let decisions = op.decisions(&app, &agent_id).await;
    let whys: Vec<&str> = decisions
        .iter()
        .rev()
        .map(|d| d["why"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(whys, ["malformed", "timeout", "refused", "refused"]);
    for decision in &decisions {
        assert_eq!(decision["decidedBy"], "rule", "{decision}");
        assert!(
            decision["whyDetail"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
    }
    assert!(
        decisions[3]["whyDetail"]
            .as_str()
            .unwrap_or_default()
            .contains("Definitely buy")
    );
    assert!(
        decisions[1]["whyDetail"]
            .as_str()
            .unwrap_or_default()
            .contains("429")
    );
    // Garbage still cost its tokens; the view says the model is failing, and why.
    assert_eq!(decisions[3]["promptTokens"], 17);
    let view = op.view(&app, &agent_id).await;
    assert_eq!(view["model"]["status"], "failing", "{view}");
    assert!(
        view["model"]["lastError"]
            .as_str()
            .unwrap_or_default()
            .starts_with("refused")
    );
}

#[tokio::test]
async fn a_spent_budget_and_a_missing_key_or_endpoint_leave_it_to_the_rule() {
    let provider = FakeProvider::openai(vec![buy_half()]).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
    })
    .await;
    // Budgets count tokens per UTC day: the test's ticks must not straddle midnight.
    app.dungeon_noon();
    let op = operator(&app, "budget@example.com").await;
    op.put_model_key(&app, "openai", ACCOUNT_KEY).await;
    // 20 tokens a call: the first spends the budget of 15.
    let frugal = op
        .agent(
            &app,
            "frugal",
            "openai/gpt-test",
            json!({"modelBudget": {"tokensPerDay": 15}}),
        )
        .await;
    tick(&app).await;
    tick(&app).await;
    let decisions = op.decisions(&app, &frugal).await;
    assert_eq!(decisions[1]["decidedBy"], "model");
    assert_eq!(decisions[0]["decidedBy"], "rule");
    assert_eq!(decisions[0]["why"], "budget_exhausted");
    let view = op.view(&app, &frugal).await;
    assert_eq!(view["model"]["status"], "budget_exhausted");
    assert_eq!(view["model"]["tokensPerDay"], 15);
    assert_eq!(provider.seen().len(), 1, "no call once the budget is spent");

    // Another operator has no key of its own: the first operator's key is never used for it.
    let other = operator(&app, "keyless@example.com").await;
    let keyless = other
        .agent(&app, "keyless", "openai/gpt-test", json!({}))
        .await;
    assert_eq!(
        other.view(&app, &keyless).await["model"]["status"],
        "no_key"
    );
    // A vendor this host has no endpoint for.
    let nowhere = other
        .agent(&app, "nowhere", "nosuchvendor/model", json!({}))
        .await;
    assert_eq!(
        other.view(&app, &nowhere).await["model"]["status"],
        "no_endpoint"
    );
    let calls = provider.seen().len();
    tick(&app).await;
    assert_eq!(
        provider.seen().len(),
        calls,
        "neither agent reached the provider"
    );
    assert_eq!(other.decisions(&app, &keyless).await[0]["why"], "no_key");
    let unserved = &other.decisions(&app, &nowhere).await[0];
    assert_eq!(unserved["why"], "no_endpoint");
    assert!(
        unserved["prompt"].is_null() && unserved["promptHash"].is_null(),
        "no briefing is written for a model nobody serves here: {unserved}"
    );
    // A new UTC day restores the budget.
    app.advance(Span::hours(24));
    provider.then([buy_half()]);
    tick(&app).await;
    assert_eq!(op.decisions(&app, &frugal).await[0]["decidedBy"], "model");
}

#[tokio::test]
async fn budgets_and_decision_pages_refuse_bad_input() {
    let app = TestApp::spawn().await;
    // Budgets count tokens per UTC day: the test's ticks must not straddle midnight.
    app.dungeon_noon();
    let op = operator(&app, "pages@example.com").await;
    for (budget, field) in [
        (json!({"tokensPerDay": -1}), "modelBudget.tokensPerDay"),
        (json!({"tokensPerDay": 1.5}), "modelBudget.tokensPerDay"),
        (json!({"tokensPerDay": "lots"}), "modelBudget.tokensPerDay"),
        (json!(7), "modelBudget"),
    ] {
        let created = app
            .post(
                "/api/v1/public/agents/create",
                Auth::XApiKey(&op.key),
                json!({"name": "B", "username": "budgeted", "class": "fighter",
                       "modelId": "openai/gpt-test", "modelBudget": budget,
                       "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"}}}),
            )
            .await;
        assert_eq!(created.status, 400, "{}", created.body);
        assert_eq!(
            created.body["error"]["details"]["field"], field,
            "{}",
            created.body
        );
    }
    let agent_id = op.agent(&app, "paged", "openai/gpt-test", json!({})).await;
    for _ in 0..5 {
        tick(&app).await;
    }
    let path = format!("/api/v1/public/agents/{agent_id}/decisions");
    let first = app
        .get(&format!("{path}?limit=2"), Auth::XApiKey(&op.key))
        .await;
    let page: Vec<Value> = first.body["data"].as_array().expect("page").clone();
    assert_eq!(page.len(), 2);
    let cursor = page[1]["decisionId"].as_str().expect("id");
    let rest = app
        .get(
            &format!("{path}?limit=10&before={cursor}"),
            Auth::XApiKey(&op.key),
        )
        .await;
    assert_eq!(rest.body["data"].as_array().expect("rest").len(), 3);
    for bad in ["?limit=0", "?limit=201", "?before=dec_nope"] {
        let refused = app
            .get(&format!("{path}{bad}"), Auth::XApiKey(&op.key))
            .await;
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
    }
    // Another operator's agent is answered as missing.
    let other = operator(&app, "other@example.com").await;
    let hidden = app.get(&path, Auth::XApiKey(&other.key)).await;
    assert_eq!(hidden.status, 404);
}

/// The key goes to its vendor and nowhere else: not into the server's log, even at `debug`.
#[tokio::test]
async fn the_key_never_reaches_the_log() {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        // A separate server process on the embedded database; what it logs is the same.
        return;
    }
    let provider = FakeProvider::openai(vec![
        buy_half(),
        Reply::Raw(401, format!(r#"{{"error":"bad key {ACCOUNT_KEY}"}}"#), None),
    ])
    .await;
    let log_dir = tempfile::tempdir().expect("dir");
    let log_path = log_dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).expect("log");
    let server = ServerProcess::start(|command| {
        command
            .env("RUST_LOG", "debug")
            .env(
                "CRUCIBLE_MODEL_ENDPOINTS",
                format!("openai={}", provider.base),
            )
            .stderr(log.try_clone().expect("log"))
            .stdout(log);
    })
    .await;
    let cookie = server.signup("logs@example.com").await;
    server
        .session_write(
            &cookie,
            "PUT",
            "/api/account/model-keys/openai",
            json!({"apiKey": ACCOUNT_KEY}),
        )
        .await;
    let key = server
        .v1_key(
            &cookie,
            &["agents:read", "agents:write", "agents:start"],
            None,
        )
        .await;
    server
        .start_agent(
            &key,
            json!({"name": "Logged", "username": "logged", "class": "fighter",
                   "modelId": "openai/gpt-test", "personality": PERSONALITY,
                   "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                                "timeInterval": "5m"}}),
        )
        .await;
    for _ in 0..200 {
        if !provider.seen().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!provider.seen().is_empty(), "the agent asked its model");
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(server);
    let logged = std::fs::read_to_string(&log_path).expect("read log");
    assert!(logged.contains("DEBUG"), "the log is at debug level");
    assert!(!logged.contains(ACCOUNT_KEY), "the key is not in the log");
    assert!(!logged.contains("sk-operator"), "not even in part");
}

/// `crucible strategy backtest` with a model: answers recorded from a live (local) provider
/// replay to the same report, byte for byte, without calling anyone; without a model the
/// report says the class rule decided.
#[tokio::test]
async fn a_replayed_backtest_equals_the_recorded_one() {
    let answers = (0..48).map(|i| match i % 3 {
        0 => Reply::answer(r#"{"action":"buy","fraction":0.3,"reason":"leaning long"}"#),
        1 => Reply::answer(r#"{"action":"hold","fraction":0,"reason":"waiting"}"#),
        _ => Reply::answer("no opinion today"),
    });
    let provider = FakeProvider::openai(answers.collect()).await;
    let dir = tempfile::tempdir().expect("dir");
    let recording = dir.path().join("answers.jsonl");
    let endpoint = format!("openai={}", provider.base);
    let run = |extra: Vec<String>| {
        let data_dir = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_crucible"))
                .env_remove("CRUCIBLE_DATA_DIR")
                .env("BACKTEST_MODEL_KEY", ACCOUNT_KEY)
                .args([
                    "strategy", "backtest", "fighter", "--days", "2", "--seed", "3",
                ])
                .args(["--json", "--data-dir"])
                .arg(&data_dir)
                .args(extra)
                .output()
                .expect("run crucible");
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).expect("utf-8")
        })
    };
    let model = |more: &[&str]| -> Vec<String> {
        ["--model", "openai/gpt-test", "--personality", PERSONALITY]
            .iter()
            .chain(more)
            .map(|s| s.to_string())
            .collect()
    };
    let recorded = run(model(&[
        "--model-endpoint",
        &endpoint,
        "--model-key-env",
        "BACKTEST_MODEL_KEY",
        "--model-record",
        recording.to_str().expect("path"),
    ]))
    .await
    .expect("recorded run");
    let calls = provider.seen().len();
    assert_eq!(calls, 48, "one call per tick of 2 days at 1h");
    assert_eq!(
        provider.seen()[0].headers["authorization"],
        format!("Bearer {ACCOUNT_KEY}").as_str()
    );
    assert_eq!(
        provider.seen()[0].body["messages"][0]["content"],
        PERSONALITY
    );
    let replayed = run(model(&[
        "--model-replay",
        recording.to_str().expect("path"),
    ]))
    .await
    .expect("replayed run");
    assert_eq!(provider.seen().len(), calls, "a replay calls no one");
    // The same report, but for where the answers came from.
    let mut report: Value = serde_json::from_str(&recorded).expect("json");
    let mut again: Value = serde_json::from_str(&replayed).expect("json");
    assert_eq!(report["decisions"]["source"], "recorded");
    assert_eq!(again["decisions"]["source"], "replayed");
    report["decisions"]["source"] = Value::Null;
    again["decisions"]["source"] = Value::Null;
    assert_eq!(report, again, "the replay is the recorded run");

    let decisions = &report["decisions"];
    assert_eq!(decisions["model"], "openai/gpt-test");
    assert_eq!(decisions["byModel"], 32, "{decisions}");
    assert_eq!(decisions["byRule"], 16);
    assert_eq!(decisions["ruleWhy"]["malformed"], 16);
    assert!(
        report["trades"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["reason"] == "leaning long"))
    );

    let alone = run(Vec::new()).await.expect("rule run");
    let alone: Value = serde_json::from_str(&alone).expect("json");
    assert_eq!(alone["decisions"]["source"], "none");
    assert_eq!(alone["decisions"]["model"], Value::Null);
}

#[tokio::test]
async fn decisions_are_pruned_after_their_retention_and_trades_stay() {
    let provider = FakeProvider::openai(vec![buy_half(), buy_half()]).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
    })
    .await;
    // Budgets count tokens per UTC day: the test's ticks must not straddle midnight.
    app.dungeon_noon();
    let op = operator(&app, "retained@example.com").await;
    op.put_model_key(&app, "openai", ACCOUNT_KEY).await;
    let agent_id = op
        .agent(&app, "retained", "openai/gpt-test", json!({}))
        .await;
    tick(&app).await;
    tick(&app).await;
    // Thirty-one days on, one more tick: only the old decisions are past 30 days.
    app.advance(Span::days(31));
    tick(&app).await;
    let pruned = app.prune_retention().await.expect("prune");
    assert_eq!(pruned.decisions, 2, "{pruned:?}");
    assert_eq!(op.decisions(&app, &agent_id).await.len(), 1);
    assert!(
        !op.trades(&app, &agent_id).await.is_empty(),
        "trades are never pruned"
    );
}

/// Upload `guest` and create, fund and start an agent on it; its id.
async fn uploaded_agent(
    app: &TestApp,
    op: &Operator,
    guest: &str,
    username: &str,
    personality: &str,
) -> String {
    let bytes = crucible::sandbox::test_guest(guest)
        .expect("guest")
        .to_vec();
    let uploaded = app.upload_strategy(&op.key, Some(guest), bytes).await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let created = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&op.key),
            json!({"name": format!("Agent {username}"), "username": username, "class": "fighter",
                   "modelId": "openai/gpt-test", "personality": personality,
                   "strategy": {"type": uploaded.body["data"]["strategyType"],
                                "tokenPair": {"base": "SOL", "quote": "USDC"}, "timeInterval": "1h"}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    app.fund_and_start(&op.key, &created.body["data"]).await
}

/// An uploaded `crucible:strategy@0.2.0` component asks through the `model` import: the host
/// adds the personality and the operator's key, meters the calls (at most 4 a tick) and records
/// them as the tick's decision; a 0.1.0 component runs beside it unchanged.
#[tokio::test]
async fn an_uploaded_component_asks_its_model_through_the_host() {
    let provider =
        FakeProvider::openai(vec![Reply::answer("buy 0.5"), Reply::answer("sell 0.2")]).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
    })
    .await;
    // Budgets count tokens per UTC day: the test's ticks must not straddle midnight.
    app.dungeon_noon();
    let op = operator(&app, "author@example.com").await;
    op.put_model_key(&app, "openai", ACCOUNT_KEY).await;
    let probe = uploaded_agent(&app, &op, "model-probe", "probe", "ask 2").await;
    let old = uploaded_agent(&app, &op, "v0.1.0", "old_timer", "").await;
    tick(&app).await;

    let seen = provider.seen();
    assert_eq!(
        seen.len(),
        2,
        "the probe asked twice; the 0.1.0 component asks nothing"
    );
    for request in &seen {
        assert_eq!(
            request.headers["authorization"],
            format!("Bearer {ACCOUNT_KEY}").as_str()
        );
        assert_eq!(request.body["model"], "gpt-test");
        assert_eq!(
            request.body["messages"][0],
            json!({"role": "system", "content": "ask 2"})
        );
        assert_eq!(request.body["max_tokens"], 16);
    }
    let question = seen[0].body["messages"][1]["content"]
        .as_str()
        .expect("turn");
    assert!(
        question.starts_with("tick ") && question.ends_with("question 0"),
        "{question}"
    );
    let trades = op.trades(&app, &probe).await;
    assert_eq!(trades.len(), 2, "{trades:?}");
    let reasons: Vec<&Value> = trades.iter().map(|t| &t["reason"]).collect();
    assert!(reasons.contains(&&json!("model: buy 0.5")), "{reasons:?}");
    assert!(reasons.contains(&&json!("model: sell 0.2")), "{reasons:?}");
    let decision = &op.decisions(&app, &probe).await[0];
    assert_eq!(decision["decidedBy"], "model", "{decision}");
    assert_eq!(decision["promptTokens"], 34);
    assert_eq!(decision["completionTokens"], 6);
    assert!(
        decision["prompt"]
            .as_str()
            .unwrap_or_default()
            .contains("user: tick")
    );
    assert_eq!(op.view(&app, &probe).await["model"]["tokensToday"], 40);
    // The 0.1.0 component ticked without a fault, and decided without a model.
    let old_view = op.view(&app, &old).await;
    assert_eq!(old_view["ticks"], 1, "{old_view}");
    assert_eq!(old_view["faults"], 0, "{old_view}");
    assert!(op.decisions(&app, &old).await.is_empty());
}

#[tokio::test]
async fn a_components_calls_are_limited_per_tick_and_by_the_budget() {
    let provider = FakeProvider::openai((0..10).map(|_| Reply::answer("buy 0.01")).collect()).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
    })
    .await;
    // Budgets count tokens per UTC day: the test's ticks must not straddle midnight.
    app.dungeon_noon();
    let op = operator(&app, "greedy@example.com").await;
    op.put_model_key(&app, "openai", ACCOUNT_KEY).await;
    let greedy = uploaded_agent(&app, &op, "model-probe", "greedy", "ask 6").await;
    tick(&app).await;
    assert_eq!(
        provider.seen().len(),
        4,
        "four calls a tick reach the provider"
    );
    let reasons: Vec<String> = op
        .trades(&app, &greedy)
        .await
        .iter()
        .map(|t| t["reason"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        reasons.iter().filter(|r| *r == "model: buy 0.01").count() == 4,
        "{reasons:?}"
    );
    // Without a key of its own or the host's, every call says so to the component.
    let keyless = operator(&app, "keyless-author@example.com").await;
    let lost = uploaded_agent(&app, &keyless, "model-probe", "lost", "ask 1").await;
    let before = provider.seen().len();
    tick(&app).await;
    assert_eq!(
        provider.seen().len(),
        before + 4,
        "only the greedy agent's calls arrive"
    );
    let decision = &keyless.decisions(&app, &lost).await[0];
    assert_eq!(decision["decidedBy"], "rule", "{decision}");
    assert_eq!(decision["why"], "no_key");
    // The component's own answer to the error: a sell-all, which its reason explains.
    assert_eq!(decision["action"], "sell", "{decision}");
    assert_eq!(decision["reason"], "model error: no-key");
}

/// An uploaded component's own calls in a backtest go to the same source: recorded once,
/// replayed to the same report.
#[tokio::test]
async fn a_components_backtest_records_and_replays_its_own_calls() {
    let provider = FakeProvider::openai((0..24).map(|_| Reply::answer("buy 0.1")).collect()).await;
    let dir = tempfile::tempdir().expect("dir");
    let component = dir.path().join("probe.wasm");
    std::fs::write(
        &component,
        crucible::sandbox::test_guest("model-probe").expect("probe"),
    )
    .expect("write");
    let recording = dir.path().join("calls.jsonl");
    let base = provider.base.clone();
    let run = |replay: bool| {
        let (dir, component, recording, base) = (
            dir.path().to_owned(),
            component.clone(),
            recording.clone(),
            base.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_crucible"));
            command
                .env_remove("CRUCIBLE_DATA_DIR")
                .env("BACKTEST_MODEL_KEY", ACCOUNT_KEY)
                .args(["strategy", "backtest"])
                .arg(&component)
                .args(["--days", "1", "--json", "--model", "openai/gpt-test"])
                .args(["--personality", "ask 1", "--data-dir"])
                .arg(&dir);
            if replay {
                command.arg("--model-replay").arg(&recording);
            } else {
                command
                    .args(["--model-endpoint", &format!("openai={base}")])
                    .args(["--model-key-env", "BACKTEST_MODEL_KEY", "--model-record"])
                    .arg(&recording);
            }
            let output = command.output().expect("run crucible");
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let report: Value = serde_json::from_slice(&output.stdout).expect("json");
            report
        })
    };
    let mut recorded = run(false).await.expect("recorded");
    assert_eq!(provider.seen().len(), 24, "one call a tick");
    assert_eq!(provider.seen()[0].body["messages"][0]["content"], "ask 1");
    assert_eq!(recorded["decisions"]["componentCalls"], 24);
    assert!(recorded["trades"].as_array().is_some_and(|t| !t.is_empty()));
    let mut replayed = run(true).await.expect("replayed");
    assert_eq!(provider.seen().len(), 24, "the replay calls no one");
    recorded["decisions"]["source"] = Value::Null;
    replayed["decisions"]["source"] = Value::Null;
    assert_eq!(recorded, replayed);
}

/// An agent's status, stored ticks and decisions, read from its row.
async fn stored_ticks(app: &TestApp, agent_id: &str) -> (String, i64, i64) {
    let (status, ticks): (String, i64) =
        sqlx::query_as("SELECT status, ticks FROM agents WHERE id = $1")
            .bind(agent_id)
            .fetch_one(app.state.store.read())
            .await
            .expect("agent");
    let (decisions,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM agent_decisions WHERE agent_id = $1")
            .bind(agent_id)
            .fetch_one(app.state.store.read())
            .await
            .expect("decisions");
    (status, ticks, decisions)
}

/// Wait until the provider has been asked `calls` times.
async fn asked(provider: &FakeProvider, calls: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while provider.seen().len() < calls {
        assert!(
            std::time::Instant::now() < deadline,
            "the model was not asked"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_tick_in_flight_is_dropped_whole_when_its_agent_is_stopped_or_restarted_meanwhile() {
    // Each tick waits for its model (1.5 s, then the rule decides): time to stop the agents.
    let provider = FakeProvider::openai(vec![
        Reply::Silent(Duration::from_secs(3)),
        Reply::Silent(Duration::from_secs(3)),
    ])
    .await;
    let (app, op) = node_asking(&provider, 1_500, "inflight@example.com").await;
    let stopped = op
        .agent(&app, "stopped", "openai/gpt-test", json!({}))
        .await;
    let restarted = op
        .agent(&app, "restarted", "openai/gpt-test", json!({}))
        .await;

    let ticking = app.state.ticking();
    let pass =
        tokio::spawn(async move { crucible::agents::ticker::run_due(&ticking, "test:a").await });
    asked(&provider, 2).await;
    let stop = |id: &str| format!("/api/v1/public/agents/{id}/stop");
    for id in [&stopped, &restarted] {
        let response = app.post(&stop(id), Auth::XApiKey(&op.key), json!({})).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    app.advance(Span::seconds(1));
    let start = app
        .post(
            &format!("/api/v1/public/agents/{restarted}/start"),
            Auth::XApiKey(&op.key),
            json!({}),
        )
        .await;
    assert_eq!(start.status, 200, "{}", start.body);
    let pass = pass.await.expect("task").expect("pass");
    assert_eq!(pass.ticked, 0, "both ticks were dropped: {pass:?}");
    assert_eq!(stored_ticks(&app, &stopped).await, ("idle".into(), 0, 0));
    assert_eq!(
        stored_ticks(&app, &restarted).await,
        ("active".into(), 0, 0)
    );

    // The restarted agent is due from its start, and its next tick is stored.
    provider.then([buy_half()]);
    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 1);
    assert_eq!(
        stored_ticks(&app, &restarted).await,
        ("active".into(), 1, 1)
    );
    assert_eq!(stored_ticks(&app, &stopped).await, ("idle".into(), 0, 0));
}

#[tokio::test]
async fn two_passes_at_once_store_each_due_tick_once() {
    // Every tick waits for its model, so both passes hold their batches at the same time.
    let provider = FakeProvider::openai(
        (0..6)
            .map(|_| Reply::Silent(Duration::from_secs(2)))
            .collect(),
    )
    .await;
    let (app, op) = node_asking(&provider, 800, "twice@example.com").await;
    let mut agents = Vec::new();
    for name in ["first", "second", "third"] {
        agents.push(op.agent(&app, name, "openai/gpt-test", json!({})).await);
    }

    // Two schedulers at once: two nodes on PostgreSQL, or a second pass on one node.
    let ticking = app.state.ticking();
    let (a, b) = tokio::join!(
        crucible::agents::ticker::run_due(&ticking, "test:a"),
        crucible::agents::ticker::run_due(&ticking, "test:b"),
    );
    let (a, b) = (a.expect("pass a"), b.expect("pass b"));
    assert_eq!(a.ticked + b.ticked, 3, "{a:?} {b:?}");
    for id in &agents {
        assert_eq!(
            stored_ticks(&app, id).await,
            ("active".into(), 1, 1),
            "{id}"
        );
    }
    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 0, "none due");
}
