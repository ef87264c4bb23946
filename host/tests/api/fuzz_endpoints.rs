//! Random bytes and random JSON thrown at every endpoint, with and without credentials, must
//! never produce a 5xx: bad input is always the client's 4xx, never a crash or a half write.

use crate::helpers::fuzz::payload;
use crate::helpers::{Auth, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

/// Which fuzz test throws input at an operation, by its tag in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// Everything else: the platform's error form (`{"error": "…"}`).
    Platform,
    /// Tagged `dungeon`: fuzzed with a real run and its key.
    Dungeon,
    /// Tagged `v1`: the v1 envelope.
    V1,
}

/// One operation of the published document.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) method: String,
    /// The template, e.g. `/api/dungeons/{dungeonId}`.
    pub(crate) path: String,
    /// The names of its query parameters.
    pub(crate) query: Vec<String>,
}

impl Operation {
    /// The path with every `{parameter}` replaced by `value(name)`, then, with `query`, every
    /// query parameter set to `value(name)` as well.
    pub(crate) fn url(&self, query: bool, value: impl Fn(&str) -> String) -> String {
        let mut url = String::with_capacity(self.path.len());
        let mut rest = self.path.as_str();
        while let Some(open) = rest.find('{') {
            url.push_str(&rest[..open]);
            let close = rest[open..].find('}').map_or(rest.len(), |i| open + i);
            url.push_str(&value(&rest[open + 1..close]));
            rest = rest.get(close + 1..).unwrap_or("");
        }
        url.push_str(rest);
        if query && !self.query.is_empty() {
            let pairs: Vec<String> = self
                .query
                .iter()
                .map(|name| format!("{name}={}", value(name)))
                .collect();
            url.push('?');
            url.push_str(&pairs.join("&"));
        }
        url
    }
}

/// Every operation of `family` in the OpenAPI document the server publishes, so a new route is
/// fuzzed without anyone listing it. Streams are left out: with valid credentials they never
/// end, and their rejections come from the same extractors as the reads beside them.
pub(crate) async fn documented_operations(app: &TestApp, family: Family) -> Vec<Operation> {
    let document = app.get("/api/openapi.json", Auth::None).await;
    assert_eq!(document.status, 200);
    let mut operations = Vec::new();
    for (path, item) in document.body["paths"].as_object().expect("paths") {
        for method in ["get", "post", "put", "patch", "delete"] {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let tagged = |tag: &str| {
                operation["tags"]
                    .as_array()
                    .is_some_and(|tags| tags.iter().any(|t| t == tag))
            };
            let of = if tagged("v1") {
                Family::V1
            } else if tagged("dungeon") {
                Family::Dungeon
            } else {
                Family::Platform
            };
            let streams = operation["responses"]["200"]["content"]
                .get("text/event-stream")
                .is_some()
                || path.ends_with("/live");
            if of != family || streams {
                continue;
            }
            let query = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|parameter| parameter["in"] == "query")
                .filter_map(|parameter| parameter["name"].as_str().map(str::to_owned))
                .collect();
            operations.push(Operation {
                method: method.to_uppercase(),
                path: path.clone(),
                query,
            });
        }
    }
    operations
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
        let endpoints = documented_operations(&app, Family::Platform).await;
        assert!(
            endpoints.len() >= 20,
            "the document lists the routes: {endpoints:?}"
        );
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
        any::<bool>(),
    );
    let outcome = runner.run(&strategy, |(endpoint, auth, payload, segment, query)| {
        let operation = &endpoints[endpoint];
        let method = operation.method.as_str();
        let segment = if segment.is_empty() { "x" } else { &segment };
        let path = operation.url(query, |_| segment.to_owned());
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
    let (app, player, run_id, run_key, endpoints) = runtime.block_on(async {
        let app = TestApp::spawn().await;
        app.dungeon_noon();
        let player = app
            .dungeon_player("dungeon-fuzz@example.com", 61, 10_000_000)
            .await;
        let run = app.dungeon_run(&player, "rogue").await;
        let run_id = run["runId"].as_str().expect("run").to_owned();
        let run_key = run["registrationKey"].as_str().expect("key").to_owned();
        let endpoints = documented_operations(&app, Family::Dungeon).await;
        assert!(
            endpoints.len() >= 11,
            "the document lists the dungeon routes: {endpoints:?}"
        );
        (app, player, run_id, run_key, endpoints)
    });
    let today = app.dungeon_today();
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        0..endpoints.len(),
        0..4usize,
        payload(DUNGEON_FIELDS, DUNGEON_WORDS),
        any::<bool>(),
        "[a-zA-Z0-9_%.-]{0,44}",
        any::<bool>(),
    );
    let outcome = runner.run(
        &strategy,
        |(endpoint, auth, payload, real, segment, query)| {
            let operation = &endpoints[endpoint];
            let method = operation.method.as_str();
            let random = if segment.is_empty() { "x" } else { &segment };
            // A real day and run often, so random input reaches the game and its storage.
            let path = operation.url(query, |name| {
                match name {
                    "dungeonId" if real => today.as_str(),
                    "runId" if real => run_id.as_str(),
                    _ => random,
                }
                .to_owned()
            });
            let auth = match auth {
                0 => Auth::None,
                1 => Auth::Session(&player.session),
                2 => Auth::Bearer(&player.key),
                _ => Auth::Bearer(&run_key),
            };
            let body = payload.into_body();
            let response = runtime.block_on(app.request(method, &path, auth, Some(body)));
            platform_answer(method, &path, &response)
        },
    );
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

/// A NUL character (`%00`) in an id or a text parameter: PostgreSQL's text cannot hold it and
/// refuses the statement, which is the request's fault (400 in the platform form), never a 500.
/// SQLite stores such text, so there an unknown id stays 404 and a search finds nothing (200).
/// Found by the dungeon fuzzer above.
#[tokio::test]
async fn a_nul_character_in_a_request_is_refused_not_a_server_error() {
    let app = TestApp::spawn().await;
    let postgres = std::env::var("TEST_DATABASE_URL").is_ok();
    for (path, on_sqlite) in [
        ("/api/dungeons/runs/%00", 404),
        ("/api/dungeons/%00/leaderboard", 404),
        ("/api/tournaments/%00", 404),
        ("/api/tournaments/trn_%00/leaderboard", 404),
        ("/api/tournaments/trn_%00/trades", 404),
        ("/api/tournaments/%00/performance", 404),
        ("/api/tournaments?search=%00", 200),
        ("/api/tournaments?type=%00", 200),
    ] {
        let response = app.get(path, Auth::None).await;
        // On PostgreSQL an id the route checks itself first (a dungeon's date) is refused as on
        // SQLite; whatever reaches the database is a 400.
        let answered = response.status;
        assert!(
            answered == on_sqlite || (postgres && answered == 400),
            "GET {path} answered {answered}: {}",
            response.body
        );
        if answered >= 400 {
            assert!(
                response.body["error"].is_string(),
                "GET {path}: {}",
                response.body
            );
        }
    }
    // The case the fuzzer found: the run page reads the database with the id as sent.
    let run = app.get("/api/dungeons/runs/%00", Auth::None).await;
    assert_eq!(run.status, if postgres { 400 } else { 404 }, "{}", run.body);
}
