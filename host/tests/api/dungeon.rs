//! The daily dungeon over HTTP: quote → simnet payment
//! with the memo → enter (202, then 201) → a scripted agent plays to the end while a watcher on
//! the real socket receives every event in order → the key dies with the run.

use std::time::Duration as StdDuration;

use crate::helpers::{Auth, DungeonPlayer, TestApp, watch_to_end};
use chrono::Duration;
use serde_json::{Value, json};

async fn open_watch(app: &TestApp, run_id: &str, key: &str) -> reqwest::Response {
    let response = app
        .client
        .get(format!("{}/api/dungeons/runs/{run_id}/watch", app.address))
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .expect("connect");
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/event-stream")
    );
    response
}

#[tokio::test]
async fn paid_entry_then_a_scripted_agent_plays_to_the_end_while_watched() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    app.dungeon_noon();
    let player = app.dungeon_player("hero@example.com", 11, 5_000_000).await;
    let today = app.dungeon_today();

    let quote = app.dungeon_quote(&today, &player.wallet()).await;
    assert_eq!(quote["amountUi"].as_f64(), Some(1.0));
    assert_eq!(quote["amountRaw"], "1000000");
    assert_eq!(quote["mint"], app.state.chain.stablecoin_mint());
    assert_eq!(
        quote["dungeonWalletAddress"],
        app.state.chain.dungeon().address.to_string()
    );
    let quote_id = quote["quoteId"].as_str().expect("quote id");
    assert_eq!(
        quote["memo"],
        format!("dgn:{today}:{}:{quote_id}", player.wallet())
    );
    assert!(quote["expiresAt"].as_str().is_some());

    let signature = app
        .dungeon_pay(
            &player.payer,
            1_000_000,
            quote["memo"].as_str().expect("memo"),
        )
        .await;
    let body = json!({"quoteId": quote_id, "payerWallet": player.wallet(), "txSignature": signature, "class": "rogue"});
    let pending = app
        .dungeon_enter(&today, Auth::Bearer(&player.key), body.clone())
        .await;
    assert_eq!(pending.status, 202, "{}", pending.body);
    assert_eq!(pending.body["retryable"], true);

    app.advance(Duration::seconds(3));
    let entered = app
        .dungeon_enter(&today, Auth::Bearer(&player.key), body)
        .await;
    assert_eq!(entered.status, 201, "{}", entered.body);
    let run_id = entered.body["runId"].as_str().expect("run id").to_owned();
    let key = entered.body["registrationKey"]
        .as_str()
        .expect("key")
        .to_owned();
    assert!(key.starts_with("dgr_") && key.len() > 40, "{key}");
    let base = format!("http://127.0.0.1/api/dungeons/runs/{run_id}");
    assert_eq!(entered.body["turnUrl"], format!("{base}/turn"));
    assert_eq!(entered.body["watchUrl"], format!("{base}/watch"));
    assert_eq!(entered.body["runUrl"], base);
    let skill = entered.body["agentSkillFile"].as_str().expect("skill");
    assert!(skill.contains(&format!("{base}/turn")) && skill.contains("**rogue**"));
    assert!(
        !skill.contains(&key),
        "the skill file never carries the key"
    );

    let watcher = open_watch(&app, &run_id, &key).await;
    let (legal_turns, end) = app.dungeon_play_to_end(&run_id, &key).await;
    assert_ne!(end.status.as_str(), "active");
    let events = watch_to_end(watcher).await;

    // Every stored event arrived once, in order, ending with run:ended; then the stream closed.
    let ids: Vec<i64> = events.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=events.len() as i64).collect::<Vec<_>>());
    let (_, last_kind, last) = events.last().expect("events");
    assert_eq!(last_kind, "run:ended");
    assert_eq!(last["status"], end.status.as_str());
    assert_eq!(last["score"], end.score);
    let legal_watched = events
        .iter()
        .filter(|(_, kind, data)| kind == "run:turn" && data["legal"] == true)
        .count();
    assert_eq!(legal_watched, legal_turns);
    assert!(
        events[..events.len() - 1]
            .iter()
            .all(|(_, kind, _)| kind == "run:turn")
    );

    // The key died with the run, on every run-key route.
    let after = app
        .dungeon_turn(&run_id, &key, json!({"action": "inventory"}))
        .await;
    assert_eq!(after.status, 401, "{}", after.body);
    assert!(after.error().contains("ended"));
    let said = app
        .post(
            &format!("/api/dungeons/runs/{run_id}/broadcast"),
            Auth::Bearer(&key),
            json!({"message": "gg"}),
        )
        .await;
    assert_eq!(said.status, 401);
    let watch = app
        .get(
            &format!("/api/dungeons/runs/{run_id}/watch"),
            Auth::Bearer(&key),
        )
        .await;
    assert_eq!(watch.status, 401);

    // The public run page is the replay; the board, the list and the account show the run.
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    assert_eq!(page.status, 200);
    assert_eq!(page.body["status"], end.status.as_str());
    assert_eq!(page.body["class"], "rogue");
    assert_eq!(page.body["score"], end.score);
    assert_eq!(
        page.body["events"].as_array().expect("events").len(),
        events.len()
    );
    assert_eq!(page.body["state"]["player"]["hp"], end.player.hp);
    let board = app
        .get(&format!("/api/dungeons/{today}/leaderboard"), Auth::None)
        .await;
    assert_eq!(board.status, 200);
    assert_eq!(board.body["entries"][0]["wallet"], player.wallet());
    assert_eq!(board.body["entries"][0]["bestScore"], end.score);
    assert_eq!(
        board.body["entries"][0]["cleared"],
        end.status.as_str() == "cleared"
    );
    let list = app.get("/api/dungeons", Auth::None).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body["dungeons"][0]["dungeonId"], today);
    assert_eq!(list.body["dungeons"][0]["status"], "open");
    assert_eq!(list.body["dungeons"][0]["entries"], 1);
    assert_eq!(
        list.body["dungeons"][0]["bestScores"][0]["score"],
        end.score
    );
    assert_eq!(list.body["dungeons"].as_array().expect("days").len(), 7);
    let mine = app
        .get("/api/account/dungeon-runs", Auth::Bearer(&player.key))
        .await;
    assert_eq!(mine.status, 200);
    assert_eq!(mine.body["runs"][0]["runId"], run_id);
    let credential = app
        .get(
            &format!("/api/dungeons/runs/{run_id}/credential"),
            Auth::Session(&player.session),
        )
        .await;
    assert_eq!(credential.status, 200);
    assert_eq!(credential.body["registrationKey"], key);
    assert_eq!(credential.body["status"], end.status.as_str());
}

async fn fresh_quote(app: &TestApp, player: &DungeonPlayer) -> (Value, String) {
    let quote = app
        .dungeon_quote(&app.dungeon_today(), &player.wallet())
        .await;
    let signature = app
        .dungeon_pay(
            &player.payer,
            1_000_000,
            quote["memo"].as_str().expect("memo"),
        )
        .await;
    (quote, signature)
}

fn enter_body(quote: &Value, payer: &str, signature: &str) -> Value {
    json!({"quoteId": quote["quoteId"], "payerWallet": payer, "txSignature": signature})
}

#[tokio::test]
async fn entry_refusals_name_what_is_wrong_and_change_nothing() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let today = app.dungeon_today();
    let player = app.dungeon_player("p1@example.com", 21, 10_000_000).await;
    let other = app.dungeon_player("p2@example.com", 22, 10_000_000).await;

    // A payer outside allChainWallets: 403, even with a perfect payment.
    let (quote, signature) = fresh_quote(&app, &other).await;
    let foreign = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter_body(&quote, &other.wallet(), &signature),
        )
        .await;
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    assert!(foreign.error().contains(&other.wallet()));

    // No credential, a read-only key, a run key: refused before anything else.
    let anonymous = app
        .dungeon_enter(
            &today,
            Auth::None,
            enter_body(&quote, &other.wallet(), &signature),
        )
        .await;
    assert_eq!(anonymous.status, 401);
    let read_only = app
        .create_key(&player.session, json!({"name": "ro", "scopes": ["read"]}))
        .await;
    let scoped = app
        .dungeon_enter(
            &today,
            Auth::Bearer(read_only["key"].as_str().expect("key")),
            enter_body(&quote, &player.wallet(), &signature),
        )
        .await;
    assert_eq!(scoped.status, 403);

    // Bad bodies and classes: 400.
    let (quote, signature) = fresh_quote(&app, &player).await;
    for body in [
        json!({"quoteId": quote["quoteId"], "payerWallet": player.wallet()}),
        json!({"quoteId": quote["quoteId"], "payerWallet": "nope", "txSignature": signature}),
        json!({"quoteId": quote["quoteId"], "payerWallet": player.wallet(), "txSignature": signature, "class": "bard"}),
        json!({"quoteId": quote["quoteId"], "payerWallet": player.wallet(), "txSignature": signature, "extra": 1}),
    ] {
        let response = app
            .dungeon_enter(&today, Auth::Bearer(&player.key), body.clone())
            .await;
        assert_eq!(response.status, 400, "{body}: {}", response.body);
    }
    // Unknown quote 404; another wallet's quote 422; yesterday's dungeon 410; tomorrow's 404.
    let unknown = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            json!({"quoteId": "dq_nope", "payerWallet": player.wallet(), "txSignature": signature}),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let (others_quote, _) = fresh_quote(&app, &other).await;
    let mismatched = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter_body(&others_quote, &player.wallet(), &signature),
        )
        .await;
    assert_eq!(mismatched.status, 422, "{}", mismatched.body);
    let yesterday = (app.state.now() - Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let closed = app
        .dungeon_enter(
            &yesterday,
            Auth::Bearer(&player.key),
            enter_body(&quote, &player.wallet(), &signature),
        )
        .await;
    assert_eq!(closed.status, 410, "{}", closed.body);
    let tomorrow = (app.state.now() + Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let quote_tomorrow = app
        .get(
            &format!("/api/dungeons/{tomorrow}/quote?wallet={}", player.wallet()),
            Auth::None,
        )
        .await;
    assert_eq!(quote_tomorrow.status, 404);
    let quote_no_wallet = app
        .get(&format!("/api/dungeons/{today}/quote"), Auth::None)
        .await;
    assert_eq!(quote_no_wallet.status, 400);

    // A payment with the wrong memo: 422 naming the memo.
    let wrong_memo = app.dungeon_pay(&player.payer, 1_000_000, "dgn:wrong").await;
    let (quote2, _) = fresh_quote(&app, &player).await;
    let memo = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter_body(&quote2, &player.wallet(), &wrong_memo),
        )
        .await;
    assert_eq!(memo.status, 422, "{}", memo.body);
    assert!(memo.error().contains("memo"), "{}", memo.error());
    assert_eq!(
        app.get("/api/account/dungeon-runs", Auth::Bearer(&player.key))
            .await
            .body["runs"],
        json!([]),
        "nothing was entered"
    );

    // The good payment enters once; its signature never pays twice, nor does the quote.
    let entered = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter_body(&quote, &player.wallet(), &signature),
        )
        .await;
    assert_eq!(entered.status, 201, "{}", entered.body);
    let reused = app
        .dungeon_enter(
            &today,
            Auth::Session(&player.session),
            enter_body(&quote2, &player.wallet(), &signature),
        )
        .await;
    assert_eq!(reused.status, 409, "{}", reused.body);
    assert!(reused.error().contains("already paid"));

    // An expired quote: 410, even with its payment made.
    let (late_quote, late_signature) = fresh_quote(&app, &player).await;
    app.advance(Duration::minutes(16));
    let expired = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter_body(&late_quote, &player.wallet(), &late_signature),
        )
        .await;
    assert_eq!(expired.status, 410, "{}", expired.body);
    assert!(expired.error().contains("expired"));
    assert_eq!(
        app.get("/api/account/dungeon-runs", Auth::Bearer(&player.key))
            .await
            .body["runs"]
            .as_array()
            .expect("runs")
            .len(),
        1
    );
}

#[tokio::test]
async fn run_routes_take_only_their_own_run_key() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("k1@example.com", 31, 5_000_000).await;
    let other = app.dungeon_player("k2@example.com", 32, 5_000_000).await;
    let mine = app.dungeon_run(&player, "mage").await;
    let theirs = app.dungeon_run(&other, "fighter").await;
    let run_id = mine["runId"].as_str().expect("run");
    let key = mine["registrationKey"].as_str().expect("key");
    let their_key = theirs["registrationKey"].as_str().expect("key");

    let routes = [
        (
            "POST",
            format!("/api/dungeons/runs/{run_id}/turn"),
            Some(json!({"action": "inventory"})),
        ),
        (
            "POST",
            format!("/api/dungeons/runs/{run_id}/broadcast"),
            Some(json!({"message": "hi"})),
        ),
        ("GET", format!("/api/dungeons/runs/{run_id}/watch"), None),
    ];
    for (method, path, body) in &routes {
        let send = |auth| {
            app.request(
                method,
                path,
                auth,
                body.clone().map(crate::helpers::Body::Json),
            )
        };
        for (label, auth) in [
            ("nothing", Auth::None),
            ("account key", Auth::Bearer(&player.key)),
            ("account key header", Auth::XApiKey(&player.key)),
            ("session", Auth::Session(&player.session)),
            ("unknown run key", Auth::Bearer("dgr_unknown")),
        ] {
            let response = send(auth).await;
            assert_eq!(
                response.status, 401,
                "{method} {path} with {label}: {}",
                response.body
            );
            assert!(response.error().contains("run key"), "{}", response.error());
        }
        let foreign = send(Auth::Bearer(their_key)).await;
        assert_eq!(foreign.status, 403, "{method} {path}: {}", foreign.body);
        assert!(foreign.error().contains("another run"));
    }
    // The run key is no account credential.
    for path in [
        "/api/account".to_owned(),
        "/api/account/dungeon-runs".to_owned(),
        format!("/api/dungeons/runs/{run_id}/credential"),
    ] {
        let response = app.get(&path, Auth::Bearer(key)).await;
        assert_eq!(response.status, 401, "{path}: {}", response.body);
    }
    // The credential is the owner's alone; anyone else is told the run does not exist.
    let own = app
        .get(
            &format!("/api/dungeons/runs/{run_id}/credential"),
            Auth::Bearer(&player.key),
        )
        .await;
    assert_eq!(own.status, 200);
    assert_eq!(own.body["registrationKey"], key);
    assert_eq!(own.body["status"], "active");
    let stranger = app
        .get(
            &format!("/api/dungeons/runs/{run_id}/credential"),
            Auth::Bearer(&other.key),
        )
        .await;
    assert_eq!(stranger.status, 404);
}

#[tokio::test]
async fn turns_are_idempotent_illegal_ones_cost_one_ap_and_broadcasts_are_capped() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("t1@example.com", 41, 5_000_000).await;
    let run = app.dungeon_run(&player, "fighter").await;
    let run_id = run["runId"].as_str().expect("run");
    let key = run["registrationKey"].as_str().expect("key");

    let look = app
        .dungeon_turn(run_id, key, json!({"action": "examine", "turnNumber": 1}))
        .await;
    assert_eq!(look.status, 200, "{}", look.body);
    assert_eq!(look.body["turnNumber"], 1);
    assert_eq!(look.body["player"]["ap"], 99);
    assert_eq!(look.body["lastTurn"]["action"], "examine");
    assert_eq!(look.body["replayed"], false);

    // The same turn again: the stored answer, no second charge.
    let retry = app
        .dungeon_turn(run_id, key, json!({"action": "examine", "turnNumber": 1}))
        .await;
    assert_eq!(retry.status, 200);
    assert_eq!(retry.body["replayed"], true);
    assert_eq!(retry.body["player"]["ap"], 99);
    assert_eq!(retry.body["lastTurn"], look.body["lastTurn"]);
    let ahead = app
        .dungeon_turn(run_id, key, json!({"action": "inventory", "turnNumber": 5}))
        .await;
    assert_eq!(ahead.status, 409, "{}", ahead.body);

    // An illegal action: 400 listing the legal ones, 1 AP charged, the turn not consumed.
    let illegal = app
        .dungeon_turn(run_id, key, json!({"action": "dance", "turnNumber": 2}))
        .await;
    assert_eq!(illegal.status, 400, "{}", illegal.body);
    let legal: Vec<String> = illegal.body["availableActions"]
        .as_array()
        .expect("legal list")
        .iter()
        .map(|a| a.as_str().expect("name").to_owned())
        .collect();
    assert!(legal.contains(&"inventory".to_owned()));
    for name in &legal {
        assert!(
            illegal.error().contains(name.as_str()),
            "{}",
            illegal.error()
        );
    }
    assert_eq!(illegal.body["state"]["turnNumber"], 1);
    assert_eq!(illegal.body["state"]["player"]["ap"], 98);
    let next = app
        .dungeon_turn(run_id, key, json!({"action": "inventory", "turnNumber": 2}))
        .await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(next.body["turnNumber"], 2);
    assert_eq!(next.body["player"]["ap"], 98);
    let malformed = app
        .dungeon_turn(run_id, key, json!({"target": "north"}))
        .await;
    assert_eq!(malformed.status, 400);

    // Broadcasts: at most 280 characters, 5 a minute per run.
    let broadcast_path = format!("/api/dungeons/runs/{run_id}/broadcast");
    let broadcast = |message: String| {
        app.post(
            &broadcast_path,
            Auth::Bearer(key),
            json!({ "message": message }),
        )
    };
    assert_eq!(broadcast("x".repeat(281)).await.status, 400);
    assert_eq!(broadcast("   ".into()).await.status, 400);
    for i in 0..5 {
        let said = broadcast(format!("hello {i} {}", "é".repeat(270))).await;
        assert_eq!(said.status, 201, "{}", said.body);
    }
    let capped = broadcast("one too many".into()).await;
    assert_eq!(capped.status, 429);
    assert!(capped.body["retryAfter"].as_u64().is_some_and(|s| s >= 1));
    app.advance(Duration::seconds(61));
    assert_eq!(broadcast("again".into()).await.status, 201);

    // A watcher joining late gets the whole record replayed, and Last-Event-ID resumes.
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    let kinds: Vec<&str> = page.body["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["event"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds[..3], ["run:turn", "run:turn", "run:turn"]);
    assert_eq!(kinds.iter().filter(|k| **k == "run:broadcast").count(), 6);
    let resumed = app
        .client
        .get(format!("{}/api/dungeons/runs/{run_id}/watch", app.address))
        .header("authorization", format!("Bearer {key}"))
        .header("last-event-id", "8")
        .send()
        .await
        .expect("connect");
    let mut resumed = resumed;
    let mut text = String::new();
    while !text.contains("id: 9") {
        let chunk = tokio::time::timeout(StdDuration::from_secs(10), resumed.chunk())
            .await
            .expect("in time")
            .expect("chunk")
            .expect("open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(!text.contains("id: 8\n"), "{text}");
    assert!(text.contains("event: run:broadcast"), "{text}");

    // Retried after an illegal action and broadcasts moved the event numbers past the turn
    // numbers (turn 2 is event 3, turn 3 event 10): each answers its own stored record.
    let third = app
        .dungeon_turn(run_id, key, json!({"action": "inventory", "turnNumber": 3}))
        .await;
    assert_eq!(third.status, 200, "{}", third.body);
    for (number, played) in [(2, &next), (3, &third)] {
        let again = app
            .dungeon_turn(
                run_id,
                key,
                json!({"action": "inventory", "turnNumber": number}),
            )
            .await;
        assert_eq!(again.status, 200, "{}", again.body);
        assert_eq!(again.body["replayed"], true);
        assert_eq!(again.body["turnNumber"], number);
        assert_eq!(again.body["lastTurn"], played.body["lastTurn"]);
    }
}
