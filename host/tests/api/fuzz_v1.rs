//! Random bytes and random JSON thrown at every `/api/v1` endpoint, with and without a key: never
//! a 5xx, and every refusal in the v1 envelope.

use crate::helpers::fuzz::payload;
use crate::helpers::{Auth, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::json;

const ENDPOINTS: &[(&str, &str)] = &[
    ("GET", "/api/v1/api-keys"),
    ("POST", "/api/v1/api-keys"),
    ("DELETE", "/api/v1/api-keys/{id}"),
    ("GET", "/api/v1/public/agents"),
    ("POST", "/api/v1/public/agents/create"),
    ("GET", "/api/v1/public/agents/{id}"),
    ("POST", "/api/v1/public/agents/{id}/start"),
    ("POST", "/api/v1/public/agents/{id}/stop"),
    ("GET", "/api/v1/public/agents/{id}/performance?period={id}"),
    ("GET", "/api/v1/public/strategies"),
    ("POST", "/api/v1/public/strategies"),
    (
        "GET",
        "/api/v1/public/tournaments?pageIndex={id}&status={id}",
    ),
    ("GET", "/api/v1/webhooks/deliveries?limit={id}"),
];

const FIELDS: &[&str] = &[
    "name",
    "username",
    "class",
    "modelId",
    "strategy",
    "type",
    "tokenPair",
    "base",
    "quote",
    "timeInterval",
    "maxAllocation",
    "personality",
    "isPaperTrading",
    "avatarUrl",
    "permissions",
    "webhookUrl",
    "expiresInDays",
];

/// Words the v1 endpoints accept somewhere.
const WORDS: &[&str] = &[
    "fighter",
    "builtin",
    "SOL",
    "USDC",
    "5m",
    "agents:read",
    "openai/gpt-4o",
];

#[test]
fn random_input_never_yields_a_server_error_and_always_the_v1_envelope() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (app, session, key, agent_id) = runtime.block_on(async {
        let app = TestApp::spawn().await;
        let session = app.session("fuzz@example.com").await;
        let key = app.v1_key(&session).await;
        let agent = app.create_agent(&key, "fuzz_agent", "fighter", "5m").await;
        let agent_id = agent["agentId"].as_str().expect("id").to_owned();
        (app, session, key, agent_id)
    });
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        0..ENDPOINTS.len(),
        0..3usize,
        payload(FIELDS, WORDS),
        prop_oneof![Just(agent_id.clone()), "[a-zA-Z0-9_.-]{1,24}"],
    );
    let outcome = runner.run(&strategy, |(endpoint, auth, payload, segment)| {
        let body = payload.into_body();
        let (method, path) = ENDPOINTS[endpoint];
        let path = path.replace("{id}", &segment);
        let auth = match auth {
            0 => Auth::None,
            1 => Auth::Session(&session),
            _ => Auth::XApiKey(&key),
        };
        let response = runtime.block_on(app.request(method, &path, auth, Some(body)));
        prop_assert!(
            response.status < 500,
            "{method} {path}: {} {}",
            response.status,
            response.body
        );
        if response.status >= 400 {
            prop_assert_eq!(
                &response.body["success"],
                &json!(false),
                "{} {}",
                method,
                path
            );
            prop_assert!(
                response.body["error"]["code"].is_string(),
                "{}",
                response.body
            );
        }
        Ok(())
    });
    if let Err(error) = outcome {
        panic!("{error}");
    }
}
