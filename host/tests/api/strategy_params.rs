//! Strategy parameters over the API: what a strategy declares
//! (`GET /api/v1/public/strategies/params`), agents created with `strategy.params` (checked
//! against the declaration, 400 naming the parameter otherwise, nothing created), the values
//! shown on the agent and handed to its ticks; and declarations the host refuses at upload.

use crate::helpers::{Auth, Body, TestApp, v1_code};
use chrono::Duration;
use serde_json::{Value, json};

fn body(username: &str, strategy_type: &str, params: Value) -> Value {
    json!({"name": "Tuned", "username": username, "class": "fighter", "modelId": "me/rule",
           "strategy": {"type": strategy_type, "tokenPair": {"base": "SOL", "quote": "USDC"},
                        "timeInterval": "1h", "params": params}})
}

async fn upload(app: &TestApp, key: &str, guest: &str) -> crate::helpers::TestResponse {
    app.request(
        "POST",
        &format!("/api/v1/public/strategies?name={guest}"),
        Auth::XApiKey(key),
        Some(Body::Raw(
            "application/wasm",
            crucible::sandbox::test_guest(guest)
                .expect("guest")
                .to_vec(),
        )),
    )
    .await
}

#[tokio::test]
async fn a_strategy_declares_its_parameters_and_agents_choose_values_within_them() {
    let app = TestApp::spawn().await;
    let session = app.session("tuner@example.com").await;
    let key = app.v1_key(&session).await;

    let declared = app
        .get(
            "/api/v1/public/strategies/params?class=fighter",
            Auth::XApiKey(&key),
        )
        .await;
    assert_eq!(declared.status, 200, "{}", declared.body);
    let params = declared.body["data"]["params"].as_array().expect("params");
    assert!(!params.is_empty(), "the fighter declares its parameters");
    for param in params {
        let kind = param["kind"].as_str().expect("kind");
        assert!(["int", "float", "choice"].contains(&kind), "{param}");
        assert!(!param["default"].is_null(), "{param}");
    }
    let int = params
        .iter()
        .find(|p| p["kind"] == "int")
        .expect("the fighter has an integer parameter");
    let name = int["name"].as_str().expect("name");
    let max = int["max"].as_f64().expect("max") as i64;

    // A value within range is taken and shown; the others keep their defaults.
    let created = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            body("tuned", "builtin", json!({ name: max })),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body["data"]["strategy"]["params"],
        json!({ name: max })
    );

    // Every way to get a value wrong is refused naming the parameter, and creates nothing.
    let field = |name: &str| format!("strategy.params.{name}");
    for (params, named) in [
        (json!({ name: max + 1 }), field(name)),
        (json!({ name: 1.5 }), field(name)),
        (json!({ name: "12" }), field(name)),
        (json!({"no_such_param": 1}), field("no_such_param")),
        (json!([1, 2]), "strategy.params".to_owned()),
        (json!({ "x".repeat(500): 1 }), "strategy.params".to_owned()),
        (json!("fast=12"), "strategy.params".to_owned()),
    ] {
        let refused = app
            .post(
                "/api/v1/public/agents/create",
                Auth::XApiKey(&key),
                body("refused", "builtin", params.clone()),
            )
            .await;
        assert_eq!(refused.status, 400, "{params}: {}", refused.body);
        assert_eq!(v1_code(&refused), "VALIDATION_ERROR");
        assert_eq!(
            refused.body["error"]["details"]["field"],
            named.as_str(),
            "{params}: {}",
            refused.body
        );
    }
    let listed = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
    assert_eq!(
        listed.body["pagination"]["totalCount"], 1,
        "{}",
        listed.body
    );

    // A component built before parameters existed declares none: any value is refused.
    let old = upload(&app, &key, "v0.1.0").await;
    assert_eq!(old.status, 201, "{}", old.body);
    let old_type = old.body["data"]["strategyType"].as_str().expect("type");
    let declared = app
        .get(
            &format!("/api/v1/public/strategies/params?class=fighter&type={old_type}"),
            Auth::XApiKey(&key),
        )
        .await;
    assert_eq!(
        declared.body["data"]["params"],
        json!([]),
        "{}",
        declared.body
    );
    let refused = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            body("old_tuned", old_type, json!({"fast": 9})),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["error"]["details"]["field"],
        "strategy.params.fast"
    );
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("declares none"),
        "{}",
        refused.body
    );

    // An unknown class is refused; another account's upload is not found, as a missing one.
    let bad_class = app
        .get(
            "/api/v1/public/strategies/params?class=wizard",
            Auth::XApiKey(&key),
        )
        .await;
    assert_eq!(bad_class.status, 400, "{}", bad_class.body);
    let stranger = app.session("stranger@example.com").await;
    let stranger_key = app.v1_key(&stranger).await;
    let foreign = app
        .get(
            &format!("/api/v1/public/strategies/params?class=fighter&type={old_type}"),
            Auth::XApiKey(&stranger_key),
        )
        .await;
    assert_eq!(foreign.status, 404, "{}", foreign.body);
    assert_eq!(v1_code(&foreign), "NOT_FOUND");
}

#[tokio::test]
async fn the_chosen_values_reach_the_agents_ticks() {
    let app = TestApp::spawn().await;
    let session = app.session("churner@example.com").await;
    let key = app.v1_key(&session).await;
    // `robust` buys half its equity on its first tick, then makes `churn` round trips (two
    // trades each) on every tick that closes an hour.
    let uploaded = upload(&app, &key, "robust").await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let strategy_type = uploaded.body["data"]["strategyType"]
        .as_str()
        .expect("type")
        .to_owned();
    let mut agents = Vec::new();
    for (username, params) in [
        ("churn_seven", json!({"churn": 7})),
        ("churn_default", json!({})),
    ] {
        let created = app
            .post(
                "/api/v1/public/agents/create",
                Auth::XApiKey(&key),
                body(username, &strategy_type, params),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        agents.push(app.fund_and_start(&key, &created.body["data"]).await);
    }
    for _ in 0..2 {
        let pass = app.run_scheduler().await;
        assert_eq!((pass.agent_ticks.ticked, pass.agent_ticks.faulted), (2, 0));
        app.advance(Duration::hours(1));
    }
    let trades = |agent_id: String| {
        let app = &app;
        let key = key.clone();
        async move {
            let view = app
                .get(
                    &format!("/api/v1/public/agents/{agent_id}"),
                    Auth::XApiKey(&key),
                )
                .await;
            view.body["data"]["paper"]["totalTrades"]
                .as_i64()
                .expect("trades")
        }
    };
    // One buy, then seven round trips; the default is three.
    assert_eq!(trades(agents[0].clone()).await, 1 + 2 * 7);
    assert_eq!(trades(agents[1].clone()).await, 1 + 2 * 3);
}

#[tokio::test]
async fn a_declaration_the_host_cannot_accept_is_refused_at_upload() {
    let app = TestApp::spawn().await;
    let session = app.session("author@example.com").await;
    let key = app.v1_key(&session).await;
    let refused = upload(&app, &key, "bad-params").await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(v1_code(&refused), "VALIDATION_ERROR");
    let message = refused.body["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("parameter") && message.contains("period"),
        "{message}"
    );
    let listed = app
        .get("/api/v1/public/strategies", Auth::XApiKey(&key))
        .await;
    assert_eq!(listed.body["data"], json!([]), "nothing stored");
}
