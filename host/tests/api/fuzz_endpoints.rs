//! Random bytes and random JSON thrown at every endpoint, with and without credentials, must
//! never produce a 5xx: bad input is always the client's 4xx, never a crash or a half write.

use crate::helpers::fuzz::payload;
use crate::helpers::{Auth, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

/// Every operation of the OpenAPI document the server publishes, so a new route is fuzzed
/// without anyone listing it. The live leaderboard stream is left out: with a valid id it never
/// ends, and its rejections come from the same extractors as the other tournament reads.
async fn documented_operations(app: &TestApp) -> Vec<(String, String)> {
    let document = app.get("/api/openapi.json", Auth::None).await;
    assert_eq!(document.status, 200);
    let mut operations = Vec::new();
    for (path, item) in document.body["paths"].as_object().expect("paths") {
        if path.ends_with("/live") {
            continue;
        }
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                operations.push((method.to_uppercase(), path.clone()));
            }
        }
    }
    assert!(
        operations.len() >= 20,
        "the document lists the routes: {operations:?}"
    );
    operations
}

/// `path` with every `{parameter}` replaced by `segment`.
fn fill(path: &str, segment: &str) -> String {
    let mut filled = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        filled.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |i| open + i + 1);
        filled.push_str(segment);
        rest = &rest[close..];
    }
    filled.push_str(rest);
    filled
}

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
    let (app, session, key, endpoints) = runtime.block_on(async {
        let app = TestApp::spawn().await;
        let (session, key) = app
            .account_with_key("fuzz@example.com", &["read", "write"])
            .await;
        seed_tournament(&app).await;
        let endpoints = documented_operations(&app).await;
        (app, session, key, endpoints)
    });
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        0..endpoints.len(),
        0..3usize,
        payload(FIELDS, WORDS),
        prop_oneof![Just("trn_fuzz".to_owned()), "[a-zA-Z0-9_%.-]{0,24}"],
    );
    let outcome = runner.run(&strategy, |(endpoint, auth, payload, segment)| {
        let (method, path) = &endpoints[endpoint];
        let path = fill(path, if segment.is_empty() { "x" } else { &segment });
        let auth = match auth {
            0 => Auth::None,
            1 => Auth::Session(&session),
            _ => Auth::Bearer(&key),
        };
        let body = payload.into_body();
        let response = runtime.block_on(app.request(method, &path, auth, Some(body)));
        platform_answer(method, &path, &response)
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

/// The dungeon routes (`{day}` a dungeon id, `{run}` a run id). The watch stream is left out:
/// with a valid run key it never ends, and its rejections share the run-key extractor of `turn`.
const DUNGEON_ENDPOINTS: &[(&str, &str)] = &[
    ("GET", "/api/dungeons"),
    ("GET", "/api/dungeons/{day}"),
    ("GET", "/api/dungeons/{day}/quote"),
    ("GET", "/api/dungeons/{day}/quote?wallet={segment}"),
    ("GET", "/api/dungeons/{day}/leaderboard"),
    ("POST", "/api/dungeons/{day}/enter"),
    ("GET", "/api/dungeons/runs/{run}"),
    ("GET", "/api/dungeons/runs/{run}/credential"),
    ("POST", "/api/dungeons/runs/{run}/turn"),
    ("POST", "/api/dungeons/runs/{run}/broadcast"),
    ("GET", "/api/account/dungeon-runs"),
];

const DUNGEON_FIELDS: &[&str] = &[
    "quoteId",
    "payerWallet",
    "txSignature",
    "class",
    "action",
    "target",
    "turnNumber",
    "message",
    "wallet",
];

const DUNGEON_WORDS: &[&str] = &[
    "fighter",
    "mage",
    "rogue",
    "inventory",
    "attack",
    "move",
    "look",
    "north",
    "11111111111111111111111111111111",
];

#[test]
fn random_input_to_the_dungeon_never_yields_a_server_error() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // A real run (paid entry), so random turns and broadcasts reach the game and its storage.
    let (app, player, run_id, run_key) = runtime.block_on(async {
        let app = TestApp::spawn().await;
        app.dungeon_noon();
        let player = app
            .dungeon_player("dungeon-fuzz@example.com", 61, 10_000_000)
            .await;
        let run = app.dungeon_run(&player, "rogue").await;
        let run_id = run["runId"].as_str().expect("run").to_owned();
        let run_key = run["registrationKey"].as_str().expect("key").to_owned();
        (app, player, run_id, run_key)
    });
    let today = app.dungeon_today();
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        0..DUNGEON_ENDPOINTS.len(),
        0..4usize,
        payload(DUNGEON_FIELDS, DUNGEON_WORDS),
        any::<bool>(),
        "[a-zA-Z0-9_%.-]{0,44}",
    );
    let outcome = runner.run(&strategy, |(endpoint, auth, payload, real, segment)| {
        let (method, path) = DUNGEON_ENDPOINTS[endpoint];
        let random = if segment.is_empty() { "x" } else { &segment };
        let path = path
            .replace("{day}", if real { &today } else { random })
            .replace("{run}", if real { &run_id } else { random })
            .replace("{segment}", random);
        let auth = match auth {
            0 => Auth::None,
            1 => Auth::Session(&player.session),
            2 => Auth::Bearer(&player.key),
            _ => Auth::Bearer(&run_key),
        };
        let body = payload.into_body();
        let response = runtime.block_on(app.request(method, &path, auth, Some(body)));
        platform_answer(method, &path, &response)
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

/// A fuzzed request's answer: never a server error, and every refusal in the platform form.
fn platform_answer(
    method: &str,
    path: &str,
    response: &crate::helpers::TestResponse,
) -> Result<(), proptest::test_runner::TestCaseError> {
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
}
