//! The demo of a fresh embedded start: a demo operator whose six agents, one per class, are
//! funded on the simnet, started and entered in the Demo Free-for-All, trading within a minute
//! (their own time scale), seeded once however often the node restarts; never on PostgreSQL.

use std::time::Duration as Wait;

use chrono::Duration;
use serde_json::Value;

use crate::helpers::{Auth, TestApp, trades};

const CLASSES: [&str; 6] = ["fighter", "ranger", "mage", "defender", "gambler", "rogue"];

fn on_postgres() -> bool {
    std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty())
}

/// The demo agents' rows once all six are active (they are seeded in the background once the
/// node serves, through its own RPC).
async fn demo_agents(app: &TestApp) -> Vec<(String, String, String, i64, Option<i64>)> {
    for _ in 0..200 {
        let rows: Vec<(String, String, String, i64, Option<i64>)> = sqlx::query_as(
            "SELECT a.username, a.class, a.status, a.is_paper_trading, a.time_scale
             FROM agents a JOIN accounts c ON c.id = a.account_id
             WHERE c.email = 'demo-operator@crucible.invalid' ORDER BY a.username",
        )
        .fetch_all(app.state.store.read())
        .await
        .expect("agents");
        if rows.len() == CLASSES.len() && rows.iter().all(|row| row.2 == "active") {
            return rows;
        }
        tokio::time::sleep(Wait::from_millis(100)).await;
    }
    panic!("the demo agents were not seeded within 20 s");
}

async fn free_for_all(app: &TestApp) -> Value {
    let live = app
        .get("/api/tournaments?status=live&search=Demo", Auth::None)
        .await;
    assert_eq!(live.status, 200, "{}", live.body);
    live.body["tournaments"][0].clone()
}

#[tokio::test]
async fn a_fresh_embedded_start_shows_the_demo_agents_trading_within_a_minute() {
    let app = TestApp::spawn_with(|config| config.demo_data = true).await;
    if on_postgres() {
        // A PostgreSQL database is a production one: no demo data, whatever the setting says.
        let all = app.get("/api/tournaments", Auth::None).await;
        assert_eq!(all.body["pagination"]["totalCount"], 0, "{}", all.body);
        let (accounts,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM accounts")
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
        assert_eq!(accounts, 0);
        return;
    }
    let agents = demo_agents(&app).await;
    for ((username, class, _, paper, scale), expected) in agents.iter().zip({
        let mut sorted = CLASSES;
        sorted.sort_unstable();
        sorted
    }) {
        assert_eq!(class, expected);
        assert_eq!(username, &format!("demo_{class}"));
        assert_eq!(*paper, 0, "demo agents trade live on the simnet");
        assert_eq!(*scale, Some(3_600));
    }
    let tournament = free_for_all(&app).await;
    assert_eq!(tournament["name"], "Demo Free-for-All");
    assert_eq!(tournament["currentParticipants"], 6, "{tournament}");
    let id = tournament["id"].as_str().expect("id").to_owned();

    // A minute of the node's time, a scheduler beat a second.
    let mut feed = Vec::new();
    for _ in 0..60 {
        app.run_scheduler().await;
        app.advance(Duration::seconds(1));
        let answer = app
            .get(
                &format!("/api/tournaments/{id}/trades?limit=100"),
                Auth::None,
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        feed = answer.body["trades"].as_array().expect("trades").clone();
        if feed.len() >= 2 {
            break;
        }
    }
    assert!(
        feed.len() >= 2,
        "the demo agents traded within a minute: {feed:?}"
    );
    for trade in &feed {
        assert!(
            trade["agentName"]
                .as_str()
                .is_some_and(|n| n.starts_with("Demo ")),
            "{trade}"
        );
        assert!(
            trade["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{trade}"
        );
        assert!(
            !trade["txSignature"]
                .as_str()
                .unwrap_or_default()
                .starts_with("paper_")
        );
        trades::assert_json_adds_up("the tournament's trade feed", trade, "baseAmount");
    }
    // Newest first.
    assert!(
        feed.windows(2)
            .all(|w| w[0]["executedAt"].as_str() >= w[1]["executedAt"].as_str())
    );
    // The home page shows the same board and trades.
    let home = app.client.get(&app.address).send().await.expect("home");
    let home = home.text().await.expect("html");
    assert!(home.contains("Live board: "), "{home}");
    assert!(home.contains("Demo Free-for-All"));
    assert!(home.contains(feed[0]["agentName"].as_str().expect("name")));

    // Restarts seed nothing twice: one operator, six agents, six entries, one airdrop each.
    let app = app.restart().await;
    let again = demo_agents(&app).await;
    assert_eq!(again.len(), 6);
    let (operators,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM accounts WHERE email = 'demo-operator@crucible.invalid'",
    )
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    assert_eq!(operators, 1);
    assert_eq!(free_for_all(&app).await["currentParticipants"], 6);
    let all = app.get("/api/tournaments", Auth::None).await;
    assert_eq!(all.body["pagination"]["totalCount"], 2, "seeded once");
}

#[tokio::test]
async fn the_trade_feed_validates_its_limit_and_shows_no_paper_trades() {
    let app = TestApp::spawn().await;
    let id = "trn_feed";
    // Live from now on, for a day.
    app.create_tournament(app.new_tournament(id, 0, 10, Duration::zero(), 24))
        .await;
    for limit in ["0", "101", "x"] {
        let refused = app
            .get(
                &format!("/api/tournaments/{id}/trades?limit={limit}"),
                Auth::None,
            )
            .await;
        assert_eq!(refused.status, 400, "{limit}: {}", refused.body);
    }
    let missing = app.get("/api/tournaments/nope/trades", Auth::None).await;
    assert_eq!(missing.status, 404);
    // A paper agent entered in the tournament trades privately: its trades stay off the feed.
    let session = app.session("paper@example.com").await;
    let key = app.v1_key(&session).await;
    let agent = app
        .create_agent(&key, "paper_gambler", "gambler", "1h")
        .await;
    let agent_id = app.fund_and_start(&key, &agent).await;
    let entered = app
        .post(
            &format!("/api/v1/public/agents/{agent_id}/tournaments/{id}/enter"),
            Auth::XApiKey(&key),
            Value::Null,
        )
        .await;
    assert_eq!(entered.status, 201, "{}", entered.body);
    let traded = trades::tick_until_traded(&app, Some(&agent_id), 1, Duration::hours(1), 300).await;
    assert!(traded > 0, "the paper gambler traded");
    let feed = app
        .get(&format!("/api/tournaments/{id}/trades"), Auth::None)
        .await;
    assert_eq!(feed.status, 200, "{}", feed.body);
    assert_eq!(feed.body["trades"], serde_json::json!([]));
}
