//! Agents over `v1/public`: creation and its validation, the
//! caller's list, start (402 while unfunded), stop, performance, and isolation between accounts.

use crate::helpers::{Auth, TestApp, v1_code};
use serde_json::{Value, json};

fn agent_body(username: &str) -> Value {
    json!({
        "name": "Scout", "username": username, "class": "ranger", "modelId": "anthropic/claude-sonnet-4",
        "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                     "timeInterval": "15m", "maxAllocation": 40},
        "personality": "patient", "avatarUrl": "https://example.com/a.png", "isPaperTrading": true
    })
}

#[tokio::test]
async fn create_returns_the_agent_unfunded_with_its_own_wallet() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    let response = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            agent_body("scout_1"),
        )
        .await;
    assert_eq!(response.status, 201, "{}", response.body);
    assert_eq!(response.body["success"], true);
    let data = &response.body["data"];
    assert!(data["agentId"].as_str().expect("id").starts_with("agt_"));
    assert_eq!(data["name"], "Scout");
    assert_eq!(data["username"], "scout_1");
    assert_eq!(data["status"], "unfunded");
    assert_eq!(data["class"], "ranger");
    assert_eq!(data["strategy"]["maxAllocation"], 40.0);
    assert_eq!(data["strategy"]["timeInterval"], "15m");
    let wallet = data["walletAddress"].as_str().expect("wallet");
    assert_eq!(bs58::decode(wallet).into_vec().expect("base58").len(), 32);

    // The agent has its own custodial wallet, which is one of the account's wallets.
    let account = app.get("/api/account", Auth::Session(&session)).await;
    let wallets = account.body["allChainWallets"].as_array().expect("wallets");
    assert!(wallets.iter().any(|w| w == wallet));
    assert!(
        wallets.len() >= 2,
        "the account's own wallet and the agent's: {wallets:?}"
    );

    let listed = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["pagination"]["totalCount"], 1);
    assert_eq!(listed.body["data"][0]["agentId"], data["agentId"]);
}

#[tokio::test]
async fn every_create_rule_is_a_validation_error_naming_its_field_and_creates_nothing() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    app.create_agent(&key, "taken_name", "fighter", "1h").await;
    let set = |pointer: &str, value: Value| {
        let mut body = agent_body("fresh_name");
        *body.pointer_mut(pointer).expect("pointer") = value;
        body
    };
    let remove = |field: &str| {
        let mut body = agent_body("fresh_name");
        body.as_object_mut().expect("object").remove(field);
        body
    };
    let cases = [
        (set("/username", json!("has space")), "username"),
        (remove("username"), "username"),
        (remove("name"), "name"),
        (set("/class", json!("paladin")), "class"),
        (set("/modelId", json!("no-slash")), "modelId"),
        (
            set("/strategy/type", json!("secret-sauce")),
            "strategy.type",
        ),
        (
            set(
                "/strategy/type",
                json!(format!("custom:{}", "ab".repeat(32))),
            ),
            "strategy.type",
        ),
        (
            set(
                "/strategy/tokenPair",
                json!({"base": "DOGE", "quote": "USDC"}),
            ),
            "strategy.tokenPair",
        ),
        (
            set("/strategy/tokenPair", json!("SOL/USDC")),
            "strategy.tokenPair",
        ),
        (
            set("/strategy/timeInterval", json!("3m")),
            "strategy.timeInterval",
        ),
        (
            set("/strategy/maxAllocation", json!(101)),
            "strategy.maxAllocation",
        ),
        (
            set("/strategy/maxAllocation", json!(0.5)),
            "strategy.maxAllocation",
        ),
        (set("/personality", json!("p".repeat(4001))), "personality"),
        (set("/avatarUrl", json!("javascript:alert(1)")), "avatarUrl"),
        (set("/isPaperTrading", json!("yes")), "isPaperTrading"),
        (remove("strategy"), "strategy"),
    ];
    for (body, field) in cases {
        let response = app
            .post("/api/v1/public/agents/create", Auth::XApiKey(&key), body)
            .await;
        assert_eq!(response.status, 400, "{field}: {}", response.body);
        assert_eq!(v1_code(&response), "VALIDATION_ERROR");
        assert_eq!(
            response.body["error"]["details"]["field"], field,
            "{}",
            response.body
        );
    }
    let listed = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
    assert_eq!(
        listed.body["pagination"]["totalCount"], 1,
        "only the first agent exists"
    );
}

#[tokio::test]
async fn accounts_never_see_or_touch_each_others_agents() {
    let app = TestApp::spawn().await;
    let alice = app.session("alice@example.com").await;
    let bob = app.session("bob@example.com").await;
    let alice_key = app.v1_key(&alice).await;
    let bob_key = app.v1_key(&bob).await;
    let agent = app
        .create_agent(&alice_key, "alices_agent", "mage", "1h")
        .await;
    let agent_id = agent["agentId"].as_str().expect("id");

    let bobs_list = app
        .get("/api/v1/public/agents", Auth::XApiKey(&bob_key))
        .await;
    assert_eq!(bobs_list.body["data"], json!([]));
    for (method, suffix) in [("POST", "start"), ("POST", "stop"), ("GET", "performance")] {
        for id in [agent_id, "agt_doesnotexist"] {
            let response = app
                .request(
                    method,
                    &format!("/api/v1/public/agents/{id}/{suffix}"),
                    Auth::XApiKey(&bob_key),
                    None,
                )
                .await;
            assert_eq!(response.status, 404, "{suffix} {id}: {}", response.body);
            assert_eq!(v1_code(&response), "AGENT_NOT_FOUND");
        }
    }
    // The same answer for a foreign agent and a missing one: existence never leaks.
    let foreign = app
        .get(
            &format!("/api/v1/public/agents/{agent_id}/performance"),
            Auth::XApiKey(&bob_key),
        )
        .await;
    assert_eq!(foreign.body["error"]["details"]["agentId"], agent_id);

    // A username is unique across accounts.
    let clash = app
        .post("/api/v1/public/agents/create", Auth::XApiKey(&bob_key), {
            let mut body = agent_body("alices_agent");
            body["class"] = json!("mage");
            body
        })
        .await;
    assert_eq!(clash.status, 409, "{}", clash.body);
    assert_eq!(v1_code(&clash), "CONFLICT");
}

/// docs/api.md: a taken username is 409 (`CONFLICT`), not a validation error: the body is
/// well formed, the name is simply someone's already (compared without case).
#[tokio::test]
async fn a_taken_username_is_a_conflict_and_creates_nothing() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    app.create_agent(&key, "taken_name", "fighter", "1h").await;
    for username in ["taken_name", "TAKEN_name"] {
        let response = app
            .post(
                "/api/v1/public/agents/create",
                Auth::XApiKey(&key),
                agent_body(username),
            )
            .await;
        assert_eq!(response.status, 409, "{username}: {}", response.body);
        assert_eq!(v1_code(&response), "CONFLICT");
        assert!(
            response.body["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("is taken")),
            "{}",
            response.body
        );
    }
    let listed = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
    assert_eq!(
        listed.body["pagination"]["totalCount"], 1,
        "only the first agent exists"
    );
}

#[tokio::test]
async fn start_needs_the_fee_reserve_then_start_and_stop_are_idempotent() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    let agent = app.create_agent(&key, "runner", "fighter", "1h").await;
    let agent_id = agent["agentId"].as_str().expect("id");
    let wallet = agent["walletAddress"].as_str().expect("wallet");
    let start = format!("/api/v1/public/agents/{agent_id}/start");
    let stop = format!("/api/v1/public/agents/{agent_id}/stop");

    let unfunded = app.post(&start, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(unfunded.status, 402, "{}", unfunded.body);
    assert_eq!(v1_code(&unfunded), "INSUFFICIENT_FUNDS");
    assert!(
        unfunded.body["error"]["message"]
            .as_str()
            .expect("message")
            .contains(wallet)
    );

    // Less than the reserve is still not enough.
    app.airdrop(wallet, 1_000_000, 0).await;
    let short = app.post(&start, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(short.status, 402);

    app.airdrop(wallet, 20_000_000, 0).await;
    let started = app.post(&start, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(started.status, 200, "{}", started.body);
    assert_eq!(started.body["data"]["status"], "active");
    assert_eq!(started.body["data"]["agentId"], agent_id);
    let started_at = started.body["data"]["startedAt"].clone();
    assert!(started_at.is_string());

    let again = app.post(&start, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(again.status, 200);
    assert_eq!(
        again.body["data"]["startedAt"], started_at,
        "starting twice changes nothing"
    );

    let stopped = app.post(&stop, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    assert_eq!(stopped.body["data"]["status"], "idle");
    assert!(stopped.body["data"]["stoppedAt"].is_string());
    let stopped_again = app.post(&stop, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(stopped_again.body["data"], stopped.body["data"]);
}

#[tokio::test]
async fn the_funding_job_moves_funded_agents_to_idle() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    let funded = app.create_agent(&key, "funded", "defender", "1h").await;
    let unfunded = app.create_agent(&key, "unfunded", "defender", "1h").await;
    app.airdrop(
        funded["walletAddress"].as_str().expect("wallet"),
        10_000_000,
        0,
    )
    .await;
    crucible::agents::funding::check_unfunded(
        &app.state.store,
        &*app.state.clock,
        &app.state.chain,
        &app.state.config,
    )
    .await
    .expect("funding job");
    let listed = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
    let status_of = |id: &Value| {
        listed.body["data"]
            .as_array()
            .expect("data")
            .iter()
            .find(|a| a["agentId"] == *id)
            .expect("agent")["status"]
            .clone()
    };
    assert_eq!(status_of(&funded["agentId"]), "idle");
    assert_eq!(status_of(&unfunded["agentId"]), "unfunded");
}

#[tokio::test]
async fn performance_periods_are_validated() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    let agent = app.create_agent(&key, "idle_one", "rogue", "1h").await;
    let agent_id = agent["agentId"].as_str().expect("id");
    for period in ["24h", "7d", "30d", "all"] {
        let response = app
            .get(
                &format!("/api/v1/public/agents/{agent_id}/performance?period={period}"),
                Auth::XApiKey(&key),
            )
            .await;
        assert_eq!(response.status, 200, "{}", response.body);
        let data = &response.body["data"];
        assert_eq!(data["agentId"], agent_id);
        assert_eq!(data["period"], period);
        let metrics = &data["metrics"];
        assert_eq!(metrics["totalPnl"], 0.0);
        assert_eq!(metrics["totalPnlPercent"], 0.0);
        assert_eq!(metrics["winRate"], 0.0);
        assert_eq!(metrics["totalTrades"], 0);
        assert_eq!(metrics["avgTradeSize"], 0.0);
    }
    let bad = app
        .get(
            &format!("/api/v1/public/agents/{agent_id}/performance?period=1y"),
            Auth::XApiKey(&key),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["error"]["details"]["field"], "period");
}
