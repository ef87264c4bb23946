//! Abuse that must fail while honest clients are served: each test performs the abuse and checks
//! both halves.

use crucible::auth::password;
use serde_json::json;

use crate::helpers::{Auth, TestApp};

#[tokio::test]
async fn a_login_flood_hashes_a_few_at_a_time_and_an_honest_login_still_gets_in() {
    let app = TestApp::spawn().await;
    app.session("ann@example.com").await;
    let flood = (0..40).map(|n| {
        app.post(
            "/api/auth/login",
            Auth::None,
            json!({"email": format!("nobody{n}@example.com"), "password": "wrong password 1"}),
        )
    });
    let honest = app.post(
        "/api/auth/login",
        Auth::None,
        json!({"email": "ann@example.com", "password": "correct horse 9"}),
    );
    let (flooded, honest) = tokio::join!(futures_util::future::join_all(flood), honest);
    assert_eq!(honest.status, 200, "{}", honest.body);
    for response in flooded {
        assert!(
            matches!(response.status, 401 | 503),
            "a flood request is refused or told to wait: {} {}",
            response.status,
            response.body
        );
    }
    assert!(
        password::peak_concurrency() <= *password::MAX_CONCURRENT,
        "at most {} hashes at once (19 MiB each), saw {}",
        *password::MAX_CONCURRENT,
        password::peak_concurrency()
    );
}

#[tokio::test]
async fn racing_broadcasts_never_overfill_a_runs_minute_and_other_runs_are_unaffected() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let greedy = app
        .dungeon_player("greedy@example.com", 51, 5_000_000)
        .await;
    let honest = app
        .dungeon_player("honest@example.com", 52, 5_000_000)
        .await;
    let greedy_run = app.dungeon_run(&greedy, "fighter").await;
    let honest_run = app.dungeon_run(&honest, "rogue").await;
    let broadcast = |run: &serde_json::Value, message: String| {
        let path = format!(
            "/api/dungeons/runs/{}/broadcast",
            run["runId"].as_str().expect("run")
        );
        let key = run["registrationKey"].as_str().expect("key").to_owned();
        let app = &app;
        async move {
            app.post(&path, Auth::Bearer(&key), json!({ "message": message }))
                .await
                .status
        }
    };
    // Twenty at once on one run: the per-minute limit of five holds exactly.
    let statuses = futures_util::future::join_all(
        (0..20).map(|i| broadcast(&greedy_run, format!("spam {i}"))),
    )
    .await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        5,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| matches!(s, 201 | 429)),
        "{statuses:?}"
    );
    // Another run's watchers still hear their player.
    assert_eq!(broadcast(&honest_run, "hello".into()).await, 201);
}

#[tokio::test]
async fn an_illegal_action_of_any_length_is_stored_cut_short() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app
        .dungeon_player("verbose@example.com", 53, 5_000_000)
        .await;
    let run = app.dungeon_run(&player, "fighter").await;
    let run_id = run["runId"].as_str().expect("run");
    let key = run["registrationKey"].as_str().expect("key");
    let huge = "ä".repeat(20_000);
    let refused = app
        .dungeon_turn(
            run_id,
            key,
            json!({"action": huge, "target": huge, "turnNumber": 1}),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.error().len() < 2_000, "the message stays short");
    // The record watchers replay carries the cut strings, not 40,000 characters.
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    let events = page.body["events"].as_array().expect("events");
    let turn = events
        .iter()
        .find(|e| e["event"] == "run:turn")
        .expect("the illegal turn is recorded");
    let text = turn.to_string();
    assert!(text.len() < 8_000, "stored record is {} bytes", text.len());
    // The run goes on: a legal turn is played.
    let next = app
        .dungeon_turn(run_id, key, json!({"action": "inventory", "turnNumber": 1}))
        .await;
    assert_eq!(next.status, 200, "{}", next.body);
}

#[tokio::test]
async fn the_public_run_page_is_read_page_by_page() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("pager@example.com", 54, 5_000_000).await;
    let run = app.dungeon_run(&player, "fighter").await;
    let run_id = run["runId"].as_str().expect("run");
    let key = run["registrationKey"].as_str().expect("key");
    for turn in 1..=5 {
        let played = app
            .dungeon_turn(
                run_id,
                key,
                json!({"action": "inventory", "turnNumber": turn}),
            )
            .await;
        assert_eq!(played.status, 200, "{}", played.body);
    }
    let whole = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    assert_eq!(whole.body["nextAfterSeq"], serde_json::Value::Null);
    let all: Vec<i64> = whole.body["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["seq"].as_i64().expect("seq"))
        .collect();
    assert!(all.len() >= 5, "{all:?}");

    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let page = app
            .get(
                &format!("/api/dungeons/runs/{run_id}?afterSeq={after}&limit=2"),
                Auth::None,
            )
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        let events = page.body["events"].as_array().expect("events");
        assert!(events.len() <= 2);
        paged.extend(events.iter().map(|e| e["seq"].as_i64().expect("seq")));
        match page.body["nextAfterSeq"].as_i64() {
            Some(next) => after = next,
            None => break,
        }
    }
    assert_eq!(paged, all, "the pages add up to the record");
    for bad in ["limit=0", "limit=1001", "limit=x", "afterSeq=-1"] {
        let refused = app
            .get(&format!("/api/dungeons/runs/{run_id}?{bad}"), Auth::None)
            .await;
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
    }
}

#[tokio::test]
async fn a_looping_run_is_limited_in_turns_and_watches_and_other_runs_play_on() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    app.dungeon_noon();
    let looper = app
        .dungeon_player("looper@example.com", 55, 5_000_000)
        .await;
    let honest = app
        .dungeon_player("steady@example.com", 56, 5_000_000)
        .await;
    let looping = app.dungeon_run(&looper, "fighter").await;
    let steady = app.dungeon_run(&honest, "rogue").await;
    let (run_id, key) = (
        looping["runId"].as_str().expect("run"),
        looping["registrationKey"].as_str().expect("key"),
    );
    // A client stuck in a loop of illegal actions: 60 a minute are answered, then 429.
    for n in 0..60 {
        let answer = app
            .dungeon_turn(run_id, key, json!({"action": "dance", "turnNumber": 1}))
            .await;
        assert_eq!(answer.status, 400, "turn {n}: {}", answer.body);
    }
    let limited = app
        .dungeon_turn(run_id, key, json!({"action": "inventory", "turnNumber": 1}))
        .await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert!(limited.body["retryAfter"].as_u64().is_some());
    // The other run is played meanwhile.
    let played = app
        .dungeon_turn(
            steady["runId"].as_str().expect("run"),
            steady["registrationKey"].as_str().expect("key"),
            json!({"action": "inventory", "turnNumber": 1}),
        )
        .await;
    assert_eq!(played.status, 200, "{}", played.body);

    // Reconnecting a watch in a loop: 20 a minute per run.
    let watch = |run: &serde_json::Value| {
        let request = app
            .client
            .get(format!(
                "{}/api/dungeons/runs/{}/watch",
                app.address,
                run["runId"].as_str().expect("run")
            ))
            .bearer_auth(run["registrationKey"].as_str().expect("key"));
        async move { request.send().await.expect("watch").status().as_u16() }
    };
    for n in 0..20 {
        assert_eq!(watch(&looping).await, 200, "watch {n}");
    }
    assert_eq!(watch(&looping).await, 429);
    assert_eq!(watch(&steady).await, 200, "another run's watcher is served");
    app.advance(chrono::Duration::seconds(61));
    assert_eq!(
        watch(&looping).await,
        200,
        "a minute later the budget is back"
    );
}

#[tokio::test]
async fn unfunded_agents_are_capped_per_account_and_old_ones_are_archived() {
    let app = TestApp::spawn_with(|config| config.max_unfunded_agents = 3).await;
    let session = app.session("hoarder@example.com").await;
    let key = app.v1_key(&session).await;
    let create = |username: String| {
        let key = key.clone();
        let app = &app;
        async move {
            app.post(
                "/api/v1/public/agents/create",
                Auth::XApiKey(&key),
                json!({"name": "Hoard", "username": username, "class": "fighter", "modelId": "me/x",
                       "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                                    "timeInterval": "5m"}}),
            )
            .await
        }
    };
    for n in 0..3 {
        assert_eq!(create(format!("hoard_{n}")).await.status, 201);
    }
    let refused = create("hoard_3".into()).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("unfunded")
    );
    // Another operator is unaffected.
    let other = app.session("honest-operator@example.com").await;
    let other_key = app.v1_key(&other).await;
    let honest = app
        .create_agent(&other_key, "honest_bot", "fighter", "5m")
        .await;

    // A week later the hoard is archived: hidden, no longer checked, and no longer counted.
    app.advance(chrono::Duration::days(8));
    let pruned = app.prune_retention().await.expect("retention");
    assert_eq!(
        pruned.archived_agents, 4,
        "three hoarded and the honest unfunded one"
    );
    let listed = app
        .get("/api/v1/public/agents", Auth::XApiKey(&key))
        .await
        .body;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(0), "{listed}");
    assert_eq!(create("hoard_4".into()).await.status, 201);
    // An archived agent that gets funded comes back when its operator starts it.
    let agent_id = app.fund_and_start(&other_key, &honest).await;
    let back = app
        .get(
            &format!("/api/v1/public/agents/{agent_id}"),
            Auth::XApiKey(&other_key),
        )
        .await
        .body;
    assert_eq!(back["data"]["status"], "active", "{back}");
    let listed = app
        .get("/api/v1/public/agents", Auth::XApiKey(&other_key))
        .await
        .body;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1));
}
