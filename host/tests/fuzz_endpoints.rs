//! Random bytes and random JSON thrown at every endpoint, with and without credentials, must
//! never produce a 5xx: bad input is always the client's 4xx, never a crash or a half write.

mod common;

use common::{Auth, Body, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{Value, json};

const ENDPOINTS: &[(&str, &str)] = &[
    ("POST", "/api/auth/signup"),
    ("POST", "/api/auth/login"),
    ("POST", "/api/auth/logout"),
    ("POST", "/api/auth/nonce"),
    ("POST", "/api/auth/wallet"),
    ("GET", "/api/account"),
    ("PATCH", "/api/account"),
    ("POST", "/api/account/wallets"),
    ("GET", "/api/account/tournaments"),
    ("GET", "/api/account/payouts"),
    ("GET", "/api/api-keys"),
    ("POST", "/api/api-keys"),
    ("DELETE", "/api/api-keys/{id}"),
    ("GET", "/api/health"),
    ("GET", "/api/tournaments"),
    ("GET", "/api/tournaments/{id}"),
    ("POST", "/api/tournaments/{id}/register"),
    ("GET", "/api/tournaments/{id}/leaderboard"),
    ("GET", "/api/tournaments/{id}/performance"),
    ("GET", "/api/tournaments/{id}/registration-memo"),
];

/// Field names the endpoints know, so random objects often get past the first parse.
const FIELDS: &[&str] = &[
    "email",
    "password",
    "acceptTerms",
    "acceptPrivacy",
    "wallet",
    "nonce",
    "signature",
    "displayName",
    "avatarUrl",
    "bio",
    "name",
    "scopes",
    "expiresInDays",
    "expiry",
    "webhookUrl",
    "registeredWallet",
    "registeredWallets",
    "txSignature",
    "payerWallet",
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
        Just(json!("read")),
        Just(json!("correct horse 9")),
        Just(json!("11111111111111111111111111111111")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::vec((prop::sample::select(FIELDS), inner), 0..6).prop_map(|pairs| {
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

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        3 => json_value().prop_map(Payload::Json),
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Payload::Bytes),
    ]
}

/// A live paid tournament, so random registrations reach the payment and seat logic.
async fn seed_tournament(app: &TestApp) {
    app.create_tournament(app.new_tournament(
        "trn_fuzz",
        1_000_000,
        1000,
        -chrono::Duration::minutes(1),
        24,
    ))
    .await;
}

#[test]
fn random_input_never_yields_a_server_error() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (app, session, key) = runtime.block_on(async {
        let app = TestApp::spawn().await;
        let (session, key) = app
            .account_with_key("fuzz@example.com", &["read", "write"])
            .await;
        seed_tournament(&app).await;
        (app, session, key)
    });
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        0..ENDPOINTS.len(),
        0..3usize,
        payload(),
        prop_oneof![Just("trn_fuzz".to_owned()), "[a-zA-Z0-9_%.-]{0,24}"],
    );
    let outcome = runner.run(&strategy, |(endpoint, auth, payload, segment)| {
        let (method, path) = ENDPOINTS[endpoint];
        let path = path.replace("{id}", if segment.is_empty() { "x" } else { &segment });
        let auth = match auth {
            0 => Auth::None,
            1 => Auth::Session(&session),
            _ => Auth::Bearer(&key),
        };
        let body = match payload {
            Payload::Json(value) => Body::Json(value),
            Payload::Bytes(bytes) => Body::Raw("application/json", bytes),
        };
        let response = runtime.block_on(app.request(method, &path, auth, Some(body)));
        prop_assert!(
            response.status < 500,
            "{method} {path} answered {}: {}",
            response.status,
            response.body
        );
        if response.status >= 400 {
            prop_assert!(
                response.body["error"].is_string(),
                "{method} {path}: error body {}",
                response.body
            );
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
