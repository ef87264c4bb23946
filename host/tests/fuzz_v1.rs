//! Random bytes and random JSON thrown at every `/api/v1` endpoint, with and without a key: never
//! a 5xx, and every refusal in the v1 envelope.

mod common;

use common::{Auth, Body, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{Value, json};

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

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
        Just(json!("fighter")),
        Just(json!("builtin")),
        Just(json!("SOL")),
        Just(json!("USDC")),
        Just(json!("5m")),
        Just(json!("agents:read")),
        Just(json!("openai/gpt-4o")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::vec((prop::sample::select(FIELDS), inner), 0..8).prop_map(|pairs| {
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

#[derive(Debug, Clone)]
enum Payload {
    Json(Value),
    Bytes(Vec<u8>),
}

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
        prop_oneof![
            3 => json_value().prop_map(Payload::Json),
            1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Payload::Bytes),
        ],
        prop_oneof![Just(agent_id.clone()), "[a-zA-Z0-9_.-]{1,24}"],
    );
    let outcome = runner.run(&strategy, |(endpoint, auth, payload, segment)| {
        let body = match payload {
            Payload::Json(value) => Body::Json(value),
            Payload::Bytes(bytes) => Body::Raw("application/json", bytes),
        };
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
