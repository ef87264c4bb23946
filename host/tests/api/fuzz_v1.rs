//! Random bytes and random JSON thrown at every `/api/v1` endpoint, with and without a key: never
//! a 5xx, and every refusal in the v1 envelope. The endpoints are the document's operations
//! tagged `v1`, so a new one is fuzzed without anyone listing it.

use crate::fuzz_endpoints::{Family, documented_operations};
use crate::helpers::fuzz::payload;
use crate::helpers::{Auth, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::json;

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
    let (app, session, key, agent_id, endpoints) = runtime.block_on(async {
        let app = TestApp::spawn().await;
        let session = app.session("fuzz@example.com").await;
        let key = app.v1_key(&session).await;
        let agent = app.create_agent(&key, "fuzz_agent", "fighter", "5m").await;
        let agent_id = agent["agentId"].as_str().expect("id").to_owned();
        let endpoints = documented_operations(&app, Family::V1).await;
        assert!(
            endpoints.len() >= 15,
            "the document lists the v1 routes: {endpoints:?}"
        );
        (app, session, key, agent_id, endpoints)
    });
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        0..endpoints.len(),
        0..3usize,
        payload(FIELDS, WORDS),
        prop_oneof![Just(agent_id.clone()), "[a-zA-Z0-9_.-]{1,24}"],
        any::<bool>(),
    );
    let outcome = runner.run(&strategy, |(endpoint, auth, payload, segment, query)| {
        let body = payload.into_body();
        let operation = &endpoints[endpoint];
        let method = operation.method.as_str();
        let path = operation.url(query, |_| segment.clone());
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
