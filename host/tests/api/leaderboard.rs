//! Portfolio tracking, leaderboards, performance series and the live stream.

use crate::helpers::{Auth, TestApp, read_events};
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::scheduler::Scheduler;
use serde_json::{Value, json};

async fn tournament(app: &TestApp, id: &str, starts_in: Duration, hours: i64) {
    app.create_tournament(app.new_tournament(id, 0, 100, starts_in, hours))
        .await;
}

async fn board(app: &TestApp, id: &str) -> Value {
    let response = app
        .get(&format!("/api/tournaments/{id}/leaderboard"), Auth::None)
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.body
}

/// What a wallet holding `usdc` in one token account is worth at the pool's price now: the
/// stablecoin and the account's rent, which is SOL the wallet can take back by closing it.
async fn worth_with_one_account(app: &TestApp, usdc: f64) -> f64 {
    let price = app.state.chain.price_source().sol_usd().await.unwrap();
    usdc + 2_039_280.0 / 1e9 * price
}

fn wallets(board: &Value) -> Vec<String> {
    board["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["wallet"].as_str().expect("w").to_owned())
        .collect()
}

/// Three wallets with 100, 100 and 0 USDC.
async fn three_wallets(app: &TestApp) -> [String; 3] {
    let [a, b, c] = [
        Keypair::generate(),
        Keypair::generate(),
        Keypair::generate(),
    ]
    .map(|k| k.pubkey().to_string());
    app.airdrop(&a, 0, 100_000_000).await;
    app.airdrop(&b, 0, 100_000_000).await;
    [a, b, c]
}

#[tokio::test]
async fn joining_live_sets_a_baseline_and_snapshots_rank_by_pnl_percent() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_b", -Duration::minutes(1), 24).await;
    let [a, b, c] = three_wallets(&app).await;
    // `a` also holds SOL (before its baseline: history, not a flow).
    app.airdrop(&a, 1_000_000_000, 0).await;
    for wallet in [&b, &a, &c] {
        app.register_free("trn_b", wallet).await;
        app.advance(Duration::seconds(1));
    }
    let baseline = board(&app, "trn_b").await;
    let start = baseline["entries"][0]["startValue"].as_f64().unwrap();
    assert!(
        (start - worth_with_one_account(&app, 100.0).await).abs() < 1e-9,
        "baseline taken at registration: {start}"
    );
    assert_eq!(baseline["stale"], false);

    app.pump_sol(41_421_000_000).await;
    app.snapshot_live().await.expect("snapshot");
    let after = board(&app, "trn_b").await;
    assert_eq!(
        wallets(&after),
        [a.clone(), b.clone(), c.clone()],
        "a gained; b before c by registration time"
    );
    let top = &after["entries"][0];
    assert_eq!(top["rank"], 1);
    let (start, current) = (
        top["startValue"].as_f64().unwrap(),
        top["currentValue"].as_f64().unwrap(),
    );
    assert!(current > start * 1.3, "SOL roughly doubled: {top}");
    assert!((top["pnl"].as_f64().unwrap() - (current - start)).abs() < 1e-9);
    assert!((top["pnlPercent"].as_f64().unwrap() - (current - start) / start * 100.0).abs() < 1e-9);
    assert_eq!(top["netFlows"], 0.0);
    assert!(after["latestSnapshotAt"].is_string());
    assert_eq!(after["totalEntries"], 3);

    let page = app
        .get(
            "/api/tournaments/trn_b/leaderboard?page=1&pageSize=2",
            Auth::None,
        )
        .await
        .body;
    assert_eq!(wallets(&page), [c]);
    assert_eq!(
        app.get("/api/tournaments/trn_b/leaderboard?pageSize=0", Auth::None)
            .await
            .status,
        400
    );
    assert_eq!(
        app.get("/api/tournaments/nope/leaderboard", Auth::None)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn a_live_board_is_stale_when_its_newest_snapshot_is_over_two_hours_old() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_s", -Duration::minutes(1), 24).await;
    let [a, _, _] = three_wallets(&app).await;
    app.register_free("trn_s", &a).await;
    app.advance(Duration::hours(2));
    assert_eq!(
        board(&app, "trn_s").await["stale"],
        false,
        "exactly two hours is not stale yet"
    );
    app.advance(Duration::minutes(1));
    assert_eq!(board(&app, "trn_s").await["stale"], true);
    app.snapshot_live().await.expect("snapshot");
    assert_eq!(board(&app, "trn_s").await["stale"], false);
}

#[tokio::test]
async fn start_takes_the_baseline_and_end_freezes_the_final_standings() {
    let app = TestApp::spawn().await;
    let scheduler = Scheduler::new(Vec::new());
    tournament(&app, "trn_f", Duration::hours(1), 2).await;
    let [a, b, _] = three_wallets(&app).await;
    let (session, key) = app
        .account_with_key("final@example.com", &["read", "write"])
        .await;
    let own = app.get("/api/account", Auth::Session(&session)).await.body["allChainWallets"][0]
        .as_str()
        .expect("w")
        .to_owned();
    app.airdrop(&own, 1_000_000_000, 10_000_000).await;
    app.register_free("trn_f", &a).await;
    app.register_free("trn_f", &b).await;
    let attributed = app
        .post(
            "/api/tournaments/trn_f/register",
            Auth::Bearer(&key),
            json!({"registeredWallet": own, "txSignature": null}),
        )
        .await;
    assert_eq!(attributed.status, 201);
    assert!(
        board(&app, "trn_f").await["entries"][0]["startValue"].is_null(),
        "no baseline before the start"
    );

    app.advance(Duration::hours(1));
    scheduler.run_due(&app.state).await.expect("start");
    let started = board(&app, "trn_f").await;
    let start_of = |wallet: &str| {
        started["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .find(|e| e["wallet"] == wallet)
            .expect("entry")["startValue"]
            .clone()
    };
    let started_at = worth_with_one_account(&app, 100.0).await;
    assert!((start_of(&a).as_f64().unwrap() - started_at).abs() < 1e-9);
    assert!(start_of(&own).as_f64().unwrap() > 10.0, "10 USDC and 1 SOL");

    app.pump_sol(41_421_000_000).await; // SOL doubles: only `own` holds any
    app.advance(Duration::hours(2));
    scheduler.run_due(&app.state).await.expect("end");
    let ended = board(&app, "trn_f").await;
    assert_eq!(ended["status"], "ended");
    assert_eq!(ended["stale"], false, "final standings are not stale");
    assert_eq!(ended["entries"][0]["wallet"], own);
    let mine = app
        .get("/api/account/tournaments", Auth::Bearer(&key))
        .await
        .body;
    assert_eq!(mine["tournaments"][0]["finalRank"], 1);
    assert_eq!(
        mine["tournaments"][0]["finalPnl"],
        ended["entries"][0]["pnlPercent"]
    );
    assert!(mine["tournaments"][0]["finalPnl"].as_f64().unwrap() > 30.0);
}

#[tokio::test]
async fn performance_series_follow_the_snapshots_and_are_bounded() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_p", -Duration::minutes(1), 24).await;
    let [a, b, _] = three_wallets(&app).await;
    app.register_free("trn_p", &a).await;
    // `a`'s deposits below are flows, not gains: the two tie, and `a` registered first.
    app.advance(Duration::seconds(1));
    app.register_free("trn_p", &b).await;
    for _ in 0..6 {
        app.advance(Duration::minutes(5));
        app.airdrop(&a, 0, 1_000_000).await;
        app.snapshot_live().await.expect("snapshot");
    }
    let all = app
        .get("/api/tournaments/trn_p/performance", Auth::None)
        .await;
    assert_eq!(all.status, 200, "{}", all.body);
    let series = all.body["series"].as_array().expect("series");
    assert_eq!(series.len(), 2);
    assert_eq!(series[0]["wallet"], a);
    let points = series[0]["points"].as_array().expect("points");
    assert_eq!(points.len(), 7, "baseline + six snapshots");
    let worth = worth_with_one_account(&app, 106.0).await;
    assert!((points[6]["valueUsd"].as_f64().unwrap() - worth).abs() < 1e-9);

    let one = app
        .get(
            &format!("/api/tournaments/trn_p/performance?wallet={b}&points=3"),
            Auth::None,
        )
        .await
        .body;
    assert_eq!(one["series"].as_array().expect("series").len(), 1);
    assert_eq!(
        one["series"][0]["points"].as_array().expect("points").len(),
        3
    );
    assert_eq!(
        app.get("/api/tournaments/trn_p/performance?points=1", Auth::None)
            .await
            .status,
        400
    );
    assert_eq!(
        app.get(
            "/api/tournaments/trn_p/performance?wallet=nobody",
            Auth::None
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn the_live_stream_sends_updates_then_tournament_ended_then_closes() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_sse", -Duration::minutes(1), 1).await;
    let [a, b, _] = three_wallets(&app).await;
    app.register_free("trn_sse", &a).await;

    let mut response = app
        .client
        .get(format!("{}/api/tournaments/trn_sse/live", app.address))
        .send()
        .await
        .expect("connect");
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("ct")
            .starts_with("text/event-stream")
    );
    let mut buffer = String::new();
    let first = read_events(&mut response, 1, &mut buffer).await;
    assert_eq!(first[0].0, "leaderboard:update");
    assert_eq!(first[0].1["totalEntries"], 1);

    app.register_free("trn_sse", &b).await;
    let update = read_events(&mut response, 1, &mut buffer).await;
    assert_eq!(update[0].0, "leaderboard:update");
    assert_eq!(
        update[0].1["totalEntries"], 2,
        "pushed after the change, not after 30 s"
    );

    app.advance(Duration::hours(1));
    Scheduler::new(Vec::new())
        .run_due(&app.state)
        .await
        .expect("end");
    // Everything until the server closes the stream: updates (the start's baseline, the final
    // snapshot), then tournament:ended last.
    let rest = read_events(&mut response, usize::MAX, &mut buffer).await;
    let names: Vec<&str> = rest.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.last(), Some(&"tournament:ended"), "{names:?}");
    assert!(
        names[..names.len() - 1]
            .iter()
            .all(|name| *name == "leaderboard:update"),
        "{names:?}"
    );
    let ended = &rest[rest.len() - 1].1;
    assert_eq!(ended["status"], "ended");
    assert_eq!(ended["standings"]["totalEntries"], 2);
    assert!(
        response.chunk().await.expect("eof").is_none(),
        "the stream is closed"
    );

    assert_eq!(
        app.get("/api/tournaments/nope/live", Auth::None)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn every_watcher_of_a_board_gets_each_update_from_one_feed_that_ends_with_them() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_many", -Duration::minutes(1), 1).await;
    let [a, b, _] = three_wallets(&app).await;
    app.register_free("trn_many", &a).await;
    let mut watchers = Vec::new();
    for _ in 0..12 {
        let (response, buffer, first) = watch_live(&app, "trn_many").await;
        assert_eq!(first["totalEntries"], 1);
        watchers.push((response, buffer));
    }
    assert_eq!(
        app.state.board_feeds.watched(),
        1,
        "one feed renders the board for every watcher"
    );

    app.register_free("trn_many", &b).await;
    for (response, buffer) in &mut watchers {
        let update = read_events(response, 1, buffer).await;
        assert_eq!(update[0].0, "leaderboard:update");
        assert_eq!(
            update[0].1["totalEntries"], 2,
            "every watcher got the new board"
        );
    }

    // Once the last watcher leaves, so does the feed; the next one starts afresh.
    drop(watchers);
    let mut waited = 0;
    while app.state.board_feeds.watched() > 0 && waited < 5_000 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        waited += 20;
    }
    assert_eq!(
        app.state.board_feeds.watched(),
        0,
        "the feed ended with its watchers"
    );
    let (_response, _buffer, first) = watch_live(&app, "trn_many").await;
    assert_eq!(first["totalEntries"], 2);
}

/// Open `tournament_id`'s live stream: the response, what was read past the first event, and the
/// first event's board.
async fn watch_live(app: &TestApp, tournament_id: &str) -> (reqwest::Response, String, Value) {
    let mut response = app
        .client
        .get(format!(
            "{}/api/tournaments/{tournament_id}/live",
            app.address
        ))
        .send()
        .await
        .expect("connect");
    let mut buffer = String::new();
    let mut first = read_events(&mut response, 1, &mut buffer).await;
    assert_eq!(first[0].0, "leaderboard:update");
    (response, buffer, first.remove(0).1)
}

#[tokio::test]
async fn live_connections_are_limited_to_twenty_a_minute_per_ip() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    tournament(&app, "trn_lim", -Duration::minutes(1), 1).await;
    let mut open = Vec::new();
    for _ in 0..20 {
        let response = app
            .client
            .get(format!("{}/api/tournaments/trn_lim/live", app.address))
            .send()
            .await
            .expect("connect");
        assert_eq!(response.status(), 200);
        open.push(response);
    }
    let refused = app.get("/api/tournaments/trn_lim/live", Auth::None).await;
    assert_eq!(refused.status, 429);
}
