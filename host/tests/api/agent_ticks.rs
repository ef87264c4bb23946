//! The agent ticker end to end: create → fund on simnet → start → scheduler ticks on
//! the test clock → trades → performance consistent with the trades → stop; missed ticks after
//! downtime, restarts, the circuit breaker, the time scale and uploaded strategies.

use crate::helpers::{Auth, Body, TestApp, trades, v1_code};
use chrono::Duration;
use serde_json::{Value, json};

/// An operator with a full v1 key and a started agent of `class` on `interval`.
async fn started_agent(
    app: &TestApp,
    email: &str,
    class: &str,
    interval: &str,
) -> (String, String) {
    let session = app.session(email).await;
    let key = app.v1_key(&session).await;
    let agent = app
        .create_agent(&key, &format!("{class}_{interval}"), class, interval)
        .await;
    let agent_id = app.fund_and_start(&key, &agent).await;
    (key, agent_id)
}

async fn agent(app: &TestApp, key: &str, agent_id: &str) -> Value {
    let response = app
        .get(
            &format!("/api/v1/public/agents/{agent_id}"),
            Auth::XApiKey(key),
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.body["data"].clone()
}

async fn trades_of(app: &TestApp, agent_id: &str) -> Vec<(String, i64, i64)> {
    sqlx::query_as("SELECT side, base_raw, notional_raw FROM agent_trades WHERE agent_id = $1 ORDER BY executed_at, id")
        .bind(agent_id)
        .fetch_all(app.state.store.read())
        .await
        .expect("trades")
}

/// An agent on 5m running the hostile test guest (uploaded by `key`'s account) as its
/// `personality` names, funded and started; its id.
async fn started_hostile_agent(
    app: &TestApp,
    key: &str,
    username: &str,
    personality: &str,
) -> String {
    let hostile = crucible::sandbox::test_guest("hostile")
        .expect("hostile")
        .to_vec();
    let uploaded = app.upload_strategy(key, None, hostile).await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let created = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(key),
            json!({"name": username, "username": username, "class": "rogue", "modelId": "me/hostile",
                   "personality": personality,
                   "strategy": {"type": uploaded.body["data"]["strategyType"],
                                "tokenPair": {"base": "SOL", "quote": "USDC"}, "timeInterval": "5m"}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    app.fund_and_start(key, &created.body["data"]).await
}

#[tokio::test]
async fn a_full_run_trades_on_paper_and_reports_consistent_performance() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let receiver = "https://hooks.example.com/in";
    let key = app
        .v1_key_with(
            &session,
            &["agents:read", "agents:write", "agents:start", "agents:stop"],
            Some(receiver),
        )
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let mut agents = Vec::new();
    for class in ["gambler", "fighter", "rogue"] {
        let agent = app
            .create_agent(&key, &format!("run_{class}"), class, "1h")
            .await;
        agents.push(app.fund_and_start(&key, &agent).await);
    }

    let mut ticks = 0;
    for _ in 0..150 {
        let pass = app.run_scheduler().await;
        assert_eq!(pass.agent_ticks.faulted, 0, "{pass:?}");
        ticks += pass.agent_ticks.ticked;
        // A pass in the same interval ticks nobody again.
        assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 0);
        app.advance(Duration::hours(1));
    }
    assert_eq!(ticks, 3 * 150, "every agent ticks once per interval");

    let mut total_trades = 0;
    for id in &agents {
        let trades = trades_of(&app, id).await;
        total_trades += trades.len();
        let view = agent(&app, &key, id).await;
        assert_eq!(view["ticks"], 150);
        assert_eq!(view["paper"]["totalTrades"], trades.len());
        let performance = app
            .get(
                &format!("/api/v1/public/agents/{id}/performance?period=all"),
                Auth::XApiKey(&key),
            )
            .await;
        assert_eq!(performance.status, 200, "{}", performance.body);
        let metrics = &performance.body["data"]["metrics"];
        assert_eq!(metrics["totalTrades"], trades.len());
        // The trade history, newest first, page by page, with the strategy's reasons.
        let mut listed = Vec::new();
        let mut before: Option<String> = None;
        loop {
            let path = match &before {
                Some(cursor) => {
                    format!("/api/v1/public/agents/{id}/trades?limit=7&before={cursor}")
                }
                None => format!("/api/v1/public/agents/{id}/trades?limit=7"),
            };
            let page = app.get(&path, Auth::XApiKey(&key)).await;
            assert_eq!(page.status, 200, "{}", page.body);
            let rows = page.body["data"].as_array().expect("trades").clone();
            let Some(last) = rows.last() else { break };
            before = Some(last["tradeId"].as_str().expect("id").to_owned());
            listed.extend(rows);
        }
        assert_eq!(listed.len(), trades.len(), "every trade once across pages");
        for (row, (side, _, _)) in listed.iter().zip(trades.iter().rev()) {
            assert_eq!(row["side"], side.as_str());
            trades::assert_json_adds_up("the trades API", row, "baseAmount");
            assert!(
                row["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "{row}"
            );
            assert!(
                row["txSignature"].is_null(),
                "paper trades have no transaction"
            );
        }
        let equity = app
            .get(
                &format!("/api/v1/public/agents/{id}/equity?points=5"),
                Auth::XApiKey(&key),
            )
            .await;
        assert_eq!(equity.status, 200, "{}", equity.body);
        let points = equity.body["data"].as_array().expect("points");
        assert!((2..=6).contains(&points.len()), "{points:?}");
        assert!(
            points
                .windows(2)
                .all(|w| w[0]["at"].as_str() < w[1]["at"].as_str()),
            "oldest first"
        );
        let equity = view["paper"]["equity"].as_f64().expect("equity");
        let pnl = metrics["totalPnl"].as_f64().expect("pnl");
        assert!(
            (pnl - (equity - 10_000.0)).abs() < 1e-6,
            "{pnl} vs {equity}"
        );
        assert!((metrics["totalPnlPercent"].as_f64().expect("pct") - pnl / 100.0).abs() < 1e-9);
        if !trades.is_empty() {
            let mean = trades.iter().map(|t| t.2 as f64).sum::<f64>() / trades.len() as f64 / 1e6;
            assert!((metrics["avgTradeSize"].as_f64().expect("avg") - mean).abs() < 1e-6);
        }
        let win_rate = metrics["winRate"].as_f64().expect("win rate");
        assert!((0.0..=1.0).contains(&win_rate));
        // A sell never sells more base than was bought before it.
        let mut held = 0_i64;
        for (side, base, _) in &trades {
            held += if side == "buy" { *base } else { -*base };
            assert!(held >= 0, "sold more than held");
        }
    }
    assert!(
        total_trades > 0,
        "three cost-aware classes over 150 hourly ticks trade at least once"
    );

    // Every trade and the starts reached the outbox of the key with a webhook.
    let deliveries = app
        .get("/api/v1/webhooks/deliveries?limit=100", Auth::XApiKey(&key))
        .await;
    assert_eq!(deliveries.status, 200, "{}", deliveries.body);
    let events: Vec<&str> = deliveries.body["data"]
        .as_array()
        .expect("deliveries")
        .iter()
        .map(|d| d["event"].as_str().expect("event"))
        .collect();
    assert_eq!(events.iter().filter(|e| **e == "agent.started").count(), 3);
    assert_eq!(
        events.iter().filter(|e| **e == "agent.trade").count(),
        total_trades.min(100 - 3)
    );
    let announced = trades::webhook_trades(&app).await;
    assert_eq!(announced.len(), total_trades);
    for trade in &announced {
        trades::assert_json_adds_up("the agent.trade webhook", trade, "amount");
    }

    // Stop: no more ticks, and an `agent.stopped`.
    for id in &agents {
        let stopped = app
            .post(
                &format!("/api/v1/public/agents/{id}/stop"),
                Auth::XApiKey(&key),
                json!(null),
            )
            .await;
        assert_eq!(stopped.body["data"]["status"], "idle");
    }
    app.advance(Duration::hours(1));
    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 0);
    let (stops,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE event = 'agent.stopped'")
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
    assert_eq!(stops, 3);
}

#[tokio::test]
async fn missed_ticks_run_once_and_a_restart_loses_nothing() {
    let app = TestApp::spawn().await;
    let (key, agent_id) = started_agent(&app, "op@example.com", "gambler", "1h").await;
    for _ in 0..5 {
        assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 1);
        app.advance(Duration::hours(1));
    }
    let before = agent(&app, &key, &agent_id).await;

    // The server is down for ten hours, then restarts on the same database.
    let app = app.restart().await;
    app.advance(Duration::hours(10));
    let after_restart = agent(&app, &key, &agent_id).await;
    assert_eq!(after_restart["ticks"], before["ticks"]);
    assert_eq!(after_restart["paper"], before["paper"]);
    assert_eq!(after_restart["status"], "active");
    assert_eq!(
        app.run_scheduler().await.agent_ticks.ticked,
        1,
        "ten missed ticks run once"
    );
    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 0);
    app.advance(Duration::hours(1));
    assert_eq!(
        app.run_scheduler().await.agent_ticks.ticked,
        1,
        "then the cadence resumes"
    );
    assert_eq!(agent(&app, &key, &agent_id).await["ticks"], 7);
}

/// The agents a claim can find follow every write of a schedule: a created agent is not due,
/// a start makes it due now, a tick moves it on, a stop takes it out, a start puts it back and a
/// restart of the server keeps them all. On PostgreSQL this holds the due queue to the agents
/// after each write ([`TestApp::due_agents`]).
#[tokio::test]
async fn the_due_agents_follow_every_write_of_a_schedule() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    let fighter = app.create_agent(&key, "fighter_5m", "fighter", "5m").await;
    let gambler = app.create_agent(&key, "gambler_1h", "gambler", "1h").await;
    assert_eq!(app.due_agents().await, [], "created agents are not due");

    let start_at = app.state.clock.now().timestamp_millis();
    let fighter = app.fund_and_start(&key, &fighter).await;
    let gambler = app.fund_and_start(&key, &gambler).await;
    let mut due = vec![
        (1, start_at, fighter.clone()),
        (1, start_at, gambler.clone()),
    ];
    due.sort_by(|a, b| a.2.cmp(&b.2));
    assert_eq!(
        app.due_agents().await,
        due,
        "started agents are due at once"
    );

    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 2);
    let moved = app.due_agents().await;
    assert_eq!(moved.len(), 2, "{moved:?}");
    assert!(moved.iter().all(|(_, at, _)| *at > start_at), "{moved:?}");
    app.advance(Duration::minutes(5));
    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 1);
    let after = app.due_agents().await;
    let at = |agents: &[(i64, i64, String)], id: &str| {
        agents
            .iter()
            .find(|(.., agent)| agent == id)
            .map(|(_, at, _)| *at)
    };
    assert!(at(&after, &fighter) > at(&moved, &fighter), "{after:?}");
    assert_eq!(at(&after, &gambler), at(&moved, &gambler), "{after:?}");

    let stop = format!("/api/v1/public/agents/{fighter}/stop");
    let stopped = app.post(&stop, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    assert_eq!(
        at(&app.due_agents().await, &fighter),
        None,
        "a stop takes it out"
    );
    app.advance(Duration::minutes(1));
    let restart_at = app.state.clock.now().timestamp_millis();
    let start = format!("/api/v1/public/agents/{fighter}/start");
    let started = app.post(&start, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let restarted = app.due_agents().await;
    assert_eq!(
        at(&restarted, &fighter),
        Some(restart_at),
        "a start puts it back"
    );

    let app = app.restart().await;
    assert_eq!(
        app.due_agents().await,
        restarted,
        "a restart keeps the schedule"
    );
    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 1);
    assert!(at(&app.due_agents().await, &fighter) > Some(restart_at));
}

/// An agent on 5m keeps one equity mark an hour, its first tick's, across a stop and a start
/// in the middle of an hour: the ticks that find their hour marked write none, and a tick after
/// a start marks its hour if no tick of the run has yet.
#[tokio::test]
async fn equity_is_marked_once_an_hour_by_its_first_tick() {
    let app = TestApp::spawn().await;
    let (key, agent_id) = started_agent(&app, "op@example.com", "fighter", "5m").await;
    let hour = |at: i64| at.div_euclid(3_600_000);
    let mut first_of_hour = std::collections::BTreeMap::new();
    for n in 0..30 {
        if n == 14 {
            let path = format!("/api/v1/public/agents/{agent_id}/stop");
            let stopped = app.post(&path, Auth::XApiKey(&key), json!(null)).await;
            assert_eq!(stopped.status, 200, "{}", stopped.body);
            // Marks are kept from before the stop: delete this hour's, so only a tick of the
            // new run can make it again.
            let now = app.state.clock.now().timestamp_millis();
            sqlx::query("DELETE FROM agent_equity WHERE agent_id = $1 AND hour_bucket = $2")
                .bind(&agent_id)
                .bind(hour(now))
                .execute(app.state.store.write())
                .await
                .expect("forget the hour");
            first_of_hour.remove(&hour(now));
            let path = format!("/api/v1/public/agents/{agent_id}/start");
            let started = app.post(&path, Auth::XApiKey(&key), json!(null)).await;
            assert_eq!(started.body["data"]["status"], "active", "{}", started.body);
            app.advance(Duration::milliseconds(1));
        }
        let at = app.state.clock.now().timestamp_millis();
        assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 1);
        first_of_hour.entry(hour(at)).or_insert(at);
        app.advance(Duration::minutes(5));
    }
    let marks: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT hour_bucket, at FROM agent_equity WHERE agent_id = $1 ORDER BY hour_bucket",
    )
    .bind(&agent_id)
    .fetch_all(app.state.store.read())
    .await
    .expect("marks");
    let expected: Vec<(i64, i64)> = first_of_hour.into_iter().collect();
    assert!(expected.len() >= 3, "{expected:?}");
    assert_eq!(marks, expected);
}

#[tokio::test]
async fn the_time_scale_speeds_up_intervals() {
    let app = TestApp::spawn_with(|config| config.time_scale = 300).await;
    let (key, agent_id) = started_agent(&app, "op@example.com", "fighter", "5m").await;
    assert_eq!(app.run_scheduler().await.agent_ticks.ticked, 1);
    for _ in 0..4 {
        app.advance(Duration::seconds(1));
        assert_eq!(
            app.run_scheduler().await.agent_ticks.ticked,
            1,
            "a 5m agent ticks every second at 300x"
        );
    }
    assert_eq!(agent(&app, &key, &agent_id).await["ticks"], 5);
}

#[tokio::test]
async fn uploaded_strategies_are_validated_and_usable_by_their_owners_only() {
    let app = TestApp::spawn().await;
    let session = app.session("author@example.com").await;
    let key = app.v1_key(&session).await;
    let upload = |bytes: Vec<u8>| {
        let key = key.clone();
        let app = &app;
        async move {
            app.request(
                "POST",
                "/api/v1/public/strategies?name=mine",
                Auth::XApiKey(&key),
                Some(Body::Raw("application/wasm", bytes)),
            )
            .await
        }
    };
    let garbage = upload(b"definitely not wasm".to_vec()).await;
    assert_eq!(garbage.status, 400, "{}", garbage.body);
    assert_eq!(v1_code(&garbage), "VALIDATION_ERROR");
    let wrong_world = upload(
        crucible::sandbox::test_guest("wrong-world")
            .expect("guest")
            .to_vec(),
    )
    .await;
    assert_eq!(wrong_world.status, 400, "{}", wrong_world.body);
    assert!(
        wrong_world.body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("crucible:strategy")
    );
    let huge = upload(vec![0u8; (40 << 20) + 1]).await;
    assert_eq!(huge.status, 413, "{}", huge.body);
    assert_eq!(v1_code(&huge), "PAYLOAD_TOO_LARGE");

    let bytes = crucible::sandbox::builtin_component("rogue")
        .expect("rogue")
        .to_vec();
    let uploaded = upload(bytes.clone()).await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let strategy_id = uploaded.body["data"]["strategyId"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(strategy_id, crucible::crypto::sha256_hex(&bytes));
    assert_eq!(
        uploaded.body["data"]["strategyType"],
        format!("custom:{strategy_id}")
    );
    let again = upload(bytes).await;
    assert_eq!(again.body["data"]["strategyId"], strategy_id.as_str());
    let listed = app
        .get("/api/v1/public/strategies", Auth::XApiKey(&key))
        .await;
    assert_eq!(listed.body["data"].as_array().expect("list").len(), 1);

    let body = |username: &str| {
        json!({"name": "Custom", "username": username, "class": "rogue", "modelId": "me/custom",
               "strategy": {"type": format!("custom:{strategy_id}"),
                            "tokenPair": {"base": "SOL", "quote": "USDC"}, "timeInterval": "1h"}})
    };
    let created = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            body("custom_agent"),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body["data"]["strategy"]["type"],
        format!("custom:{strategy_id}")
    );

    let stranger = app.session("stranger@example.com").await;
    let stranger_key = app.v1_key(&stranger).await;
    let refused = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&stranger_key),
            body("stolen"),
        )
        .await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["details"]["field"], "strategy.type");

    // The uploaded component really runs the agent's ticks.
    app.fund_and_start(&key, &created.body["data"]).await;
    let pass = app.run_scheduler().await;
    assert_eq!((pass.agent_ticks.ticked, pass.agent_ticks.faulted), (1, 0));
}

#[tokio::test]
async fn a_strategy_that_keeps_faulting_trips_the_breaker_and_start_clears_it() {
    let app = TestApp::spawn().await;
    let session = app.session("author@example.com").await;
    let key = app.v1_key(&session).await;
    let agent_id = started_hostile_agent(&app, &key, "looper", "infinite-loop").await;
    let start = format!("/api/v1/public/agents/{agent_id}/start");

    let mut broken = 0;
    for _ in 0..crucible::agents::ticker::FAULT_LIMIT {
        let pass = app.run_scheduler().await;
        assert_eq!(pass.agent_ticks.faulted, 1);
        broken += pass.agent_ticks.broken;
        app.advance(Duration::minutes(5));
    }
    assert_eq!(broken, 1);
    let view = agent(&app, &key, &agent_id).await;
    assert_eq!(view["status"], "error");
    let reason = view["statusReason"].as_str().expect("reason");
    assert!(reason.contains("timeout"), "{reason}");
    assert_eq!(view["faults"], 5);
    assert_eq!(
        app.run_scheduler().await.agent_ticks.ticked,
        0,
        "a broken agent is not ticked"
    );
    assert_eq!(app.due_agents().await, [], "a broken agent is not due");

    let restarted = app.post(&start, Auth::XApiKey(&key), json!(null)).await;
    assert_eq!(restarted.body["data"]["status"], "active");
    assert_eq!(app.due_agents().await.len(), 1, "start puts it back");
    assert!(agent(&app, &key, &agent_id).await["statusReason"].is_null());
}

#[tokio::test]
async fn orders_the_paper_ledger_refuses_are_counted_not_faulted() {
    let app = TestApp::spawn().await;
    let session = app.session("seller@example.com").await;
    let key = app.v1_key(&session).await;
    let agent_id = started_hostile_agent(&app, &key, "seller", "sell-nothing").await;

    let fresh = agent(&app, &key, &agent_id).await;
    assert_eq!(fresh["paper"]["refusedOrders"], 0, "{fresh}");
    assert!(fresh["paper"]["lastRefusal"].is_null(), "{fresh}");
    for ticks in 1..=2 {
        let pass = app.run_scheduler().await;
        assert_eq!(
            (pass.agent_ticks.ticked, pass.agent_ticks.faulted),
            (1, 0),
            "a refused order is not a fault"
        );
        let view = agent(&app, &key, &agent_id).await;
        assert_eq!(view["paper"]["refusedOrders"], ticks, "{view}");
        assert_eq!(view["paper"]["lastRefusal"], "nothing to sell", "{view}");
        assert_eq!(
            (view["status"].as_str(), view["faults"].as_i64()),
            (Some("active"), Some(0))
        );
        assert_eq!(view["paper"]["totalTrades"], 0, "{view}");
        app.advance(Duration::minutes(5));
    }
}

#[tokio::test]
async fn the_daily_report_names_the_best_and_worst_agent_of_each_account() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let all = ["agents:read", "agents:write", "agents:start", "agents:stop"];
    let key = app
        .v1_key_with(&session, &all, Some("https://hooks.example.com/daily"))
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let mut ids = Vec::new();
    for class in ["gambler", "defender"] {
        let agent = app
            .create_agent(&key, &format!("daily_{class}"), class, "1h")
            .await;
        ids.push(app.fund_and_start(&key, &agent).await);
    }
    for _ in 0..48 {
        app.run_scheduler().await;
        app.advance(Duration::hours(1));
    }
    // An account without started agents gets no report.
    let idle = app.session("idle@example.com").await;
    let idle_key = app
        .v1_key_with(&idle, &all, Some("https://hooks.example.com/idle"))
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    app.create_agent(&idle_key, "never_started", "mage", "1h")
        .await;

    assert_eq!(
        crucible::agents::daily_report::send(&app.state.store, &*app.state.clock)
            .await
            .expect("report"),
        1
    );
    let (payload,): (String,) =
        sqlx::query_as("SELECT payload FROM webhook_deliveries WHERE event = 'agent.performance'")
            .fetch_one(app.state.store.read())
            .await
            .expect("one report");
    let data = &serde_json::from_str::<Value>(&payload).expect("json")["data"];

    let mut pnl = Vec::new();
    for id in &ids {
        let performance = app
            .get(
                &format!("/api/v1/public/agents/{id}/performance?period=24h"),
                Auth::XApiKey(&key),
            )
            .await;
        pnl.push((
            id.clone(),
            performance.body["data"]["metrics"]["totalPnl"]
                .as_f64()
                .expect("pnl"),
        ));
    }
    let total: f64 = pnl.iter().map(|(_, p)| p).sum();
    assert!(
        (data["pnl24h"].as_f64().expect("pnl24h") - total).abs() < 1e-6,
        "{data}"
    );
    // Equal PnL makes either agent the best: compare the figures, then the ids when they differ.
    pnl.sort_by(|a, b| a.1.total_cmp(&b.1));
    assert!((data["bestAgent"]["pnl"].as_f64().expect("best") - pnl[1].1).abs() < 1e-6);
    assert!((data["worstAgent"]["pnl"].as_f64().expect("worst") - pnl[0].1).abs() < 1e-6);
    if pnl[0].1 != pnl[1].1 {
        assert_eq!(data["bestAgent"]["agentId"], pnl[1].0.as_str());
        assert_eq!(data["worstAgent"]["agentId"], pnl[0].0.as_str());
    }
    assert_eq!(data["agents"], 2);
    let rate = data["winRate"].as_f64().expect("win rate");
    assert!((0.0..=1.0).contains(&rate));
    assert!(data["totalTrades"].as_i64().expect("trades") >= 0);
}

/// Webhook requests a receiver got: the signature header and the raw body.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A receiver on a real socket that keeps every webhook body with its signature header.
async fn webhook_receiver() -> (String, Seen) {
    let seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hooks", listener.local_addr().expect("addr"));
    let sink = seen.clone();
    let router = axum::Router::new().fallback(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let sink = sink.clone();
            async move {
                let signature = headers
                    .get("x-svc-signature")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                sink.lock().expect("lock").push((signature, body.to_vec()));
                "ok"
            }
        },
    );
    tokio::spawn(async move { axum::serve(listener, router).await.expect("receiver") });
    (url, seen)
}

#[tokio::test]
async fn agent_events_reach_the_v1_keys_webhook_signed_with_its_secret() {
    use hmac::{Hmac, Mac};
    let app = TestApp::spawn().await;
    let (url, seen) = webhook_receiver().await;
    let session = app.session("op@example.com").await;
    let all = ["agents:read", "agents:write", "agents:start", "agents:stop"];
    let created = app.v1_key_with(&session, &all, Some(&url)).await;
    let key = created["key"].as_str().expect("key").to_owned();
    let secret = created["webhookSecret"]
        .as_str()
        .expect("secret")
        .to_owned();
    let agent = app.create_agent(&key, "hooked", "gambler", "5m").await;
    let agent_id = app.fund_and_start(&key, &agent).await;
    app.post(
        &format!("/api/v1/public/agents/{agent_id}/stop"),
        Auth::XApiKey(&key),
        json!(null),
    )
    .await;
    crucible::webhooks::deliver_due(&app.state.delivering())
        .await
        .expect("deliver");

    let seen = seen.lock().expect("lock").clone();
    let events: Vec<String> = seen
        .iter()
        .map(|(signature, body)| {
            let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("key");
            mac.update(body);
            assert_eq!(
                *signature,
                format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
            );
            let body: Value = serde_json::from_slice(body).expect("json");
            assert_eq!(body["data"]["agentId"], agent_id.as_str());
            body["event"].as_str().expect("event").to_owned()
        })
        .collect();
    let mut sorted = events.clone();
    sorted.sort();
    assert_eq!(sorted, ["agent.started", "agent.stopped"], "{events:?}");
    let deliveries = app
        .get("/api/v1/webhooks/deliveries", Auth::XApiKey(&key))
        .await;
    assert!(
        deliveries.body["data"]
            .as_array()
            .expect("deliveries")
            .iter()
            .all(|d| d["status"] == "delivered"),
        "{}",
        deliveries.body
    );
}
