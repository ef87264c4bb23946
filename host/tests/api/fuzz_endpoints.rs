//! Random bytes and random JSON thrown at every endpoint, with and without credentials, must
//! never produce a 5xx: bad input is always the client's 4xx, never a crash or a half write.

use crate::helpers::fuzz::payload;
use crate::helpers::{Auth, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

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

/// Words the endpoints accept somewhere.
const WORDS: &[&str] = &[
    "read",
    "correct horse 9",
    "11111111111111111111111111111111",
];

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
        payload(FIELDS, WORDS),
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
        let body = payload.into_body();
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
