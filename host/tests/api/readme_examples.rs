//! The README says only what is true. Every ```json block that follows a
//! `<!-- response-example: NAME -->` marker in README.md is checked against the real response of
//! a real server: each member of the example (recursively) must be present in the real answer,
//! with the same JSON type. A marker this test does not know fails it, so a new example cannot
//! go unchecked. The `agent.trade` webhook example is checked against a delivery captured on a
//! real socket.

use std::sync::{Arc, Mutex};

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use serde_json::{Value, json};

const README: &str = include_str!("../../../README.md");
const MARKER: &str = "<!-- response-example: ";

/// (name, example) for every marked ```json block of the README.
fn marked_examples() -> Vec<(String, Value)> {
    let mut examples = Vec::new();
    let mut rest = README;
    while let Some(at) = rest.find(MARKER) {
        rest = &rest[at + MARKER.len()..];
        let end = rest.find("-->").expect("marker closes");
        let name = rest[..end].trim().to_owned();
        let open = rest
            .find("```json\n")
            .expect("a ```json block follows the marker");
        let block = &rest[open + "```json\n".len()..];
        let close = block.find("```").expect("the block closes");
        let example = serde_json::from_str(&block[..close])
            .unwrap_or_else(|error| panic!("README example {name} is not JSON: {error}"));
        examples.push((name, example));
        rest = &block[close..];
    }
    examples
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every member of `example` that `real` lacks (or holds with another JSON type), as paths.
fn missing(example: &Value, real: &Value, path: &str, out: &mut Vec<String>) {
    match (example, real) {
        (Value::Object(members), Value::Object(actual)) => {
            for (name, value) in members {
                let here = format!("{path}.{name}");
                match actual.get(name) {
                    None => out.push(format!("{here} (absent)")),
                    Some(found) => missing(value, found, &here, out),
                }
            }
        }
        (Value::Array(items), Value::Array(actual)) => {
            if let (Some(first), Some(found)) = (items.first(), actual.first()) {
                missing(first, found, &format!("{path}[0]"), out);
            }
        }
        // A documented null may be a value in another run, and the reverse.
        (Value::Null, _) | (_, Value::Null) => {}
        (example, real) if kind(example) != kind(real) => out.push(format!(
            "{path} (a {} in the README, a {} for real)",
            kind(example),
            kind(real)
        )),
        _ => {}
    }
}

/// The real responses the README's examples stand for, by marker name.
async fn real_responses(app: &TestApp) -> Vec<(&'static str, Value)> {
    let mut real = Vec::new();

    // Tournament registration, paid, with a signature the node has not seen yet: 202.
    app.create_tournament(app.new_tournament("trn_readme", 2_000_000, 10, Duration::hours(1), 1))
        .await;
    let wallet = crucible::domain::WalletAddress::from_public_key(&[5; 32]).to_string();
    let pending = app
        .post(
            "/api/tournaments/trn_readme/register",
            Auth::None,
            json!({"registeredWallet": wallet, "txSignature": bs58::encode([5u8; 64]).into_string(),
                   "payerWallet": wallet}),
        )
        .await;
    assert_eq!(pending.status, 202, "{}", pending.body);
    real.push(("tournament-register-202", pending.body));

    // A settled tournament: its final leaderboard, the winner's entries and payouts.
    let (key, _) = crate::contract_shapes::settled_tournament(app).await;
    let board = app
        .get("/api/tournaments/trn_final/leaderboard", Auth::None)
        .await;
    real.push(("tournament-final-leaderboard", board.body));
    let entries = app
        .get("/api/account/tournaments", Auth::Bearer(&key))
        .await;
    real.push(("account-tournaments", entries.body));
    let payouts = app.get("/api/account/payouts", Auth::Bearer(&key)).await;
    real.push(("account-payouts", payouts.body));

    // The dungeon: a quote, a run played to its end, its page.
    app.dungeon_noon();
    let player = app
        .dungeon_player("readme@example.com", 31, 5_000_000)
        .await;
    let today = app.dungeon_today();
    let quote = app.dungeon_quote(&today, &player.wallet()).await;
    real.push(("dungeon-quote", quote.clone()));
    let dungeon_pending = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            json!({"quoteId": quote["quoteId"], "payerWallet": player.wallet(),
                   "txSignature": bs58::encode([6u8; 64]).into_string()}),
        )
        .await;
    assert_eq!(dungeon_pending.status, 202, "{}", dungeon_pending.body);
    real.push(("dungeon-enter-202", dungeon_pending.body));
    let entered = app.dungeon_run(&player, "fighter").await;
    let run_id = entered["runId"].as_str().expect("run").to_owned();
    let key = entered["registrationKey"].as_str().expect("key").to_owned();
    app.dungeon_play_to_end(&run_id, &key).await;
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await
        .body;
    let ended = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|event| event["event"] == "run:ended")
        .expect("run:ended")
        .clone();
    real.push(("dungeon-run-ended", ended["data"].clone()));
    real
}

#[tokio::test]
async fn every_marked_readme_example_matches_a_real_response() {
    let examples = marked_examples();
    let app = TestApp::spawn().await;
    let real = real_responses(&app).await;
    assert!(examples.len() >= 5, "the README's examples are marked");
    let mut problems = Vec::new();
    for (name, example) in &examples {
        let Some((_, response)) = real.iter().find(|(known, _)| known == name) else {
            problems.push(format!(
                "{name}: no real response is fetched for this example"
            ));
            continue;
        };
        let mut absent = Vec::new();
        missing(example, response, "", &mut absent);
        if !absent.is_empty() {
            problems.push(format!("{name}: {} — real: {response}", absent.join(", ")));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The body of the README's `agent.trade` example (in its ```http block).
fn readme_trade_example() -> Value {
    let line = README
        .lines()
        .find(|line| line.starts_with(r#"{"event":"agent.trade""#))
        .expect("the README shows an agent.trade body");
    serde_json::from_str(line).expect("the example body is JSON")
}

#[tokio::test]
async fn the_readme_agent_trade_example_is_what_a_receiver_gets() {
    let app = TestApp::spawn().await;
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hooks", listener.local_addr().expect("addr"));
    let sink = bodies.clone();
    let receiver = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let sink = sink.clone();
        async move {
            sink.lock()
                .expect("lock")
                .push(serde_json::from_slice(&body).expect("json body"));
            "ok"
        }
    });
    tokio::spawn(async move { axum::serve(listener, receiver).await.expect("receiver") });

    let session = app.session("trader@example.com").await;
    let all = ["agents:read", "agents:write", "agents:start", "agents:stop"];
    let key = app.v1_key_with(&session, &all, Some(&url)).await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    // Hourly: the cost-aware gambler trades a few times a day.
    let agent = app.create_agent(&key, "trader", "gambler", "1h").await;
    app.fund_and_start(&key, &agent).await;
    let trade = {
        let mut found = None;
        for _ in 0..400 {
            app.run_scheduler().await;
            crucible::webhooks::deliver_due(&app.state.delivering())
                .await
                .expect("deliver");
            found = bodies
                .lock()
                .expect("lock")
                .iter()
                .find(|body| body["event"] == "agent.trade")
                .cloned();
            if found.is_some() {
                break;
            }
            app.advance(Duration::hours(1));
        }
        found.expect("the gambler trades within 400 hourly ticks")
    };

    let example = readme_trade_example();
    let mut absent = Vec::new();
    missing(&example, &trade, "", &mut absent);
    assert!(absent.is_empty(), "{absent:?} — real: {trade}");
    // The members the README names, one by one, and the paper trade's hash form.
    for member in example["data"].as_object().expect("data").keys() {
        assert!(
            trade["data"].get(member).is_some(),
            "{member} — real: {trade}"
        );
    }
    assert!(
        trade["data"]["txHash"]
            .as_str()
            .is_some_and(|hash| hash.starts_with("paper_trd_")),
        "{trade}"
    );
    assert!(
        example["data"]["txHash"]
            .as_str()
            .is_some_and(|hash| hash.starts_with("paper_trd_")),
        "the README shows the paper hash form"
    );
}
