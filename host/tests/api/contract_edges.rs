//! Edges of the contract that had no test: stale session cookies on public calls, the effective
//! status on account reads, the live stream's periodic push and reconnection, `latestSnapshotAt`,
//! the 00:00 UTC performance webhook and a payment to the wrong recipient.

use std::time::{Duration as StdDuration, Instant};

use crate::helpers::{Auth, TestApp, TestWallet};
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::domain::WalletAddress;
use crucible::scheduler::Scheduler;
use serde_json::{Value, json};

fn wallet(seed: u8) -> String {
    WalletAddress::from_public_key(&[seed; 32]).to_string()
}

/// A session whose account has proven the wallet of `seed`; returns (session, wallet).
async fn linked_session(app: &TestApp, email: &str, seed: u8) -> (String, String) {
    let session = app.session(email).await;
    let wallet = TestWallet::new(seed);
    app.link_wallet(&session, &wallet).await;
    (session, wallet.address())
}

async fn register_wallet(
    app: &TestApp,
    id: &str,
    auth: Auth<'_>,
    wallet: &str,
) -> crate::helpers::TestResponse {
    app.post(
        &format!("/api/tournaments/{id}/register"),
        auth,
        json!({"registeredWallet": wallet, "txSignature": null}),
    )
    .await
}

async fn register(
    app: &TestApp,
    id: &str,
    auth: Auth<'_>,
    seed: u8,
) -> crate::helpers::TestResponse {
    app.post(
        &format!("/api/tournaments/{id}/register"),
        auth,
        json!({"registeredWallet": wallet(seed), "txSignature": null}),
    )
    .await
}

#[tokio::test]
async fn a_stale_or_unknown_session_cookie_never_breaks_a_public_call() {
    let app = TestApp::spawn().await;
    let expired = app.session("old@example.com").await;
    app.advance(Duration::days(crucible::auth::session::LIFETIME_DAYS) + Duration::minutes(1));
    let ended = app.session("gone@example.com").await;
    let logout = app
        .post("/api/auth/logout", Auth::Session(&ended), json!(null))
        .await;
    assert_eq!(logout.status, 204);
    app.create_tournament(app.new_tournament("trn_cookie", 0, 100, Duration::hours(1), 4))
        .await;

    for (seed, token) in [
        (1, "not-a-session-token"),
        (2, ended.as_str()),
        (3, expired.as_str()),
    ] {
        let response = register(&app, "trn_cookie", Auth::Session(token), seed).await;
        assert_eq!(response.status, 201, "cookie {token}: {}", response.body);
        // Every other public read ignores the cookie as well.
        for path in [
            "/api/health",
            "/api/tournaments",
            "/api/tournaments/trn_cookie",
            "/api/tournaments/trn_cookie/leaderboard",
            "/api/tournaments/trn_cookie/performance",
            "/api/dungeons",
        ] {
            let read = app.get(path, Auth::Session(token)).await;
            assert_eq!(
                read.status, 200,
                "{path} with cookie {token}: {}",
                read.body
            );
        }
    }
    // The registrations were public: attributed to no account.
    let (attributed,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM tournament_registrations WHERE tournament_id = 'trn_cookie' AND account_id IS NOT NULL",
    )
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    assert_eq!(attributed, 0);

    // Endpoints that need a session still say so.
    for token in ["not-a-session-token", ended.as_str(), expired.as_str()] {
        assert_eq!(
            app.get("/api/account", Auth::Session(token)).await.status,
            401
        );
        assert_eq!(
            app.get("/api/api-keys", Auth::Session(token)).await.status,
            401
        );
    }
    // A live session on the same public call is still attributed to its account.
    let (live, mine) = linked_session(&app, "live@example.com", 4).await;
    assert_eq!(
        register_wallet(&app, "trn_cookie", Auth::Session(&live), &mine)
            .await
            .status,
        201
    );
    let mine = app
        .get("/api/account/tournaments", Auth::Session(&live))
        .await;
    assert_eq!(mine.body["tournaments"][0]["tournamentId"], "trn_cookie");
}

#[tokio::test]
async fn account_tournaments_show_the_status_by_the_clock() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_mine", 0, 100, Duration::hours(1), 2))
        .await;
    let (session, mine) = linked_session(&app, "player@example.com", 1).await;
    assert_eq!(
        register_wallet(&app, "trn_mine", Auth::Session(&session), &mine)
            .await
            .status,
        201
    );
    let status = |body: &Value| body["tournaments"][0]["status"].clone();

    let before = app
        .get("/api/account/tournaments", Auth::Session(&session))
        .await;
    assert_eq!(before.status, 200, "{}", before.body);
    assert_eq!(status(&before.body), "upcoming");
    // No scheduler runs in tests: the stored row still says `upcoming` after each edge.
    app.advance(Duration::hours(1));
    let during = app
        .get("/api/account/tournaments", Auth::Session(&session))
        .await;
    assert_eq!(status(&during.body), "live");
    app.advance(Duration::hours(2));
    let after = app
        .get("/api/account/tournaments", Auth::Session(&session))
        .await;
    assert_eq!(status(&after.body), "ended");
    let (stored,): (String,) =
        sqlx::query_as("SELECT status FROM tournaments WHERE id = 'trn_mine'")
            .fetch_one(app.state.store.read())
            .await
            .expect("row");
    assert_eq!(
        stored, "upcoming",
        "the read did not depend on the scheduler"
    );
    // The same status the tournament detail shows.
    let detail = app.get("/api/tournaments/trn_mine", Auth::None).await;
    assert_eq!(detail.body["status"], "ended");
}

/// One server-sent event.
struct SseEvent {
    name: String,
    id: Option<String>,
    data: Value,
}

/// The next named event of the stream (keep-alive comments skipped), within `limit`.
async fn next_event(
    response: &mut reqwest::Response,
    buffer: &mut String,
    limit: StdDuration,
) -> SseEvent {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let field = |prefix: &str| {
                block
                    .lines()
                    .find_map(|line| line.strip_prefix(prefix))
                    .map(|value| value.trim().to_owned())
            };
            if let Some(name) = field("event:") {
                let data: String = block
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                return SseEvent {
                    name,
                    id: field("id:"),
                    data: serde_json::from_str(&data).expect("json data"),
                };
            }
        }
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .expect("an event in time")
            .expect("stream")
            .expect("stream still open");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
}

async fn connect_live(app: &TestApp, id: &str, last_event_id: Option<&str>) -> reqwest::Response {
    let mut request = app
        .client
        .get(format!("{}/api/tournaments/{id}/live", app.address));
    if let Some(last) = last_event_id {
        request = request.header("last-event-id", last);
    }
    let response = request.send().await.expect("connect");
    assert_eq!(response.status(), 200);
    response
}

#[tokio::test]
async fn the_live_stream_pushes_the_board_every_thirty_seconds_without_changes() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_tick", 0, 100, -Duration::minutes(1), 4))
        .await;
    assert_eq!(register(&app, "trn_tick", Auth::None, 1).await.status, 201);
    let mut response = connect_live(&app, "trn_tick", None).await;
    let mut buffer = String::new();
    let connected = Instant::now();
    let first = next_event(&mut response, &mut buffer, StdDuration::from_secs(10)).await;
    assert_eq!(first.name, "leaderboard:update");
    // Nothing changes; the stream still pushes the board after 30 s (real time: the stream's
    // interval is wall-clock, only keep-alive comments come in between).
    let periodic = next_event(&mut response, &mut buffer, StdDuration::from_secs(45)).await;
    let waited = connected.elapsed();
    assert_eq!(periodic.name, "leaderboard:update");
    assert_eq!(periodic.data, first.data, "the same board, pushed again");
    assert!(
        waited >= StdDuration::from_secs(29) && waited < StdDuration::from_secs(40),
        "pushed after {waited:?}"
    );
}

#[tokio::test]
async fn a_client_that_reconnects_gets_the_current_board_again() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_back", 0, 100, -Duration::minutes(1), 4))
        .await;
    assert_eq!(register(&app, "trn_back", Auth::None, 1).await.status, 201);
    app.snapshot_live().await.expect("snapshot");
    let mut response = connect_live(&app, "trn_back", None).await;
    let mut buffer = String::new();
    let first = next_event(&mut response, &mut buffer, StdDuration::from_secs(10)).await;
    assert_eq!(first.data["totalEntries"], 1);
    let last_id = first
        .id
        .expect("events carry the snapshot time as their id");
    drop(response);

    // While away: another entry and a newer snapshot.
    app.advance(Duration::minutes(5));
    assert_eq!(register(&app, "trn_back", Auth::None, 2).await.status, 201);
    app.snapshot_live().await.expect("snapshot");

    for last_event_id in [Some(last_id.as_str()), None] {
        let mut again = connect_live(&app, "trn_back", last_event_id).await;
        let mut buffer = String::new();
        let current = next_event(&mut again, &mut buffer, StdDuration::from_secs(10)).await;
        assert_eq!(current.name, "leaderboard:update");
        assert_eq!(current.data["totalEntries"], 2, "{}", current.data);
        let id = current.id.expect("id");
        assert!(
            id.parse::<i64>().expect("millis") > last_id.parse::<i64>().expect("millis"),
            "a newer snapshot: {id} after {last_id}"
        );
    }
}

#[tokio::test]
async fn latest_snapshot_at_is_null_then_the_snapshot_time_then_stale() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_snap", 0, 100, -Duration::minutes(1), 24))
        .await;
    let empty = board(&app, "trn_snap").await;
    assert!(empty["latestSnapshotAt"].is_null(), "{empty}");

    app.advance(Duration::minutes(3));
    let taken = app.state.now();
    app.snapshot_live().await.expect("snapshot");
    let fresh = board(&app, "trn_snap").await;
    assert_eq!(fresh["latestSnapshotAt"], crucible::clock::rfc3339(taken));
    assert_eq!(fresh["stale"], false);

    app.advance(Duration::hours(2));
    assert_eq!(
        board(&app, "trn_snap").await["stale"],
        false,
        "two hours is not yet stale"
    );
    app.advance(Duration::seconds(1));
    let old = board(&app, "trn_snap").await;
    assert_eq!(old["stale"], true);
    assert_eq!(old["latestSnapshotAt"], crucible::clock::rfc3339(taken));
}

async fn board(app: &TestApp, id: &str) -> Value {
    let response = app
        .get(&format!("/api/tournaments/{id}/leaderboard"), Auth::None)
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.body
}

async fn performance_reports(app: &TestApp) -> i64 {
    let (count,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE event = 'agent.performance'")
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
    count
}

#[tokio::test]
async fn the_daily_performance_webhook_is_queued_once_at_midnight_utc() {
    let app = TestApp::spawn().await;
    // Start the day at 22:00 UTC, tomorrow.
    let now = app.state.now();
    let evening = (now.date_naive() + Duration::days(1))
        .and_hms_opt(22, 0, 0)
        .expect("time")
        .and_utc();
    app.advance(evening - now);
    let session = app.session("daily@example.com").await;
    let key = app
        .v1_key_with(
            &session,
            &["agents:read", "agents:write", "agents:start", "agents:stop"],
            Some("https://hooks.example.com/daily"),
        )
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let agent = app.create_agent(&key, "nightly", "rogue", "1h").await;
    app.fund_and_start(&key, &agent).await;

    let scheduler = Scheduler::standard(&app.state.chain, &app.state.config, &app.state.node_id)
        .expect("scheduler");
    // Through the evening, every 30 minutes up to a second before midnight: nothing.
    for _ in 0..4 {
        scheduler.run_due(&app.state).await.expect("pass");
        assert_eq!(performance_reports(&app).await, 0, "at {}", app.state.now());
        app.advance(Duration::minutes(30));
    }
    app.advance(-Duration::seconds(1));
    scheduler.run_due(&app.state).await.expect("pass");
    assert_eq!(performance_reports(&app).await, 0, "at 23:59:59");

    app.advance(Duration::seconds(2));
    let pass = scheduler.run_due(&app.state).await.expect("pass");
    assert!(
        pass.schedules_run
            .iter()
            .any(|name| name == "agents.daily_report"),
        "{:?}",
        pass.schedules_run
    );
    assert_eq!(performance_reports(&app).await, 1, "once after midnight");
    // Later passes the same day add nothing.
    for _ in 0..3 {
        app.advance(Duration::hours(1));
        scheduler.run_due(&app.state).await.expect("pass");
    }
    assert_eq!(performance_reports(&app).await, 1);
}

#[tokio::test]
async fn a_registration_paying_another_wallet_is_422() {
    let app = TestApp::spawn().await;
    let fee: u64 = 2_000_000;
    app.create_tournament(app.new_tournament(
        "trn_elsewhere",
        fee as i64,
        100,
        Duration::hours(1),
        4,
    ))
    .await;
    let payer = Keypair::generate();
    app.airdrop(&payer.pubkey().to_string(), 1_000_000_000, 10_000_000)
        .await;
    // Right amount, right memo, right mint: only the recipient is not the tournament's escrow.
    let someone_else = WalletAddress::from_public_key(&[77; 32]);
    let memo = crucible::tournaments::registration_memo("trn_elsewhere", &[wallet(1)]);
    let mint = app.state.chain.stablecoin_mint().to_owned();
    let signature = app
        .state
        .chain
        .transfer_token(&payer, &someone_else, &mint, fee, &memo)
        .await
        .expect("transfer");
    let response = app
        .post(
            "/api/tournaments/trn_elsewhere/register",
            Auth::None,
            json!({"registeredWallet": wallet(1), "txSignature": signature,
                   "payerWallet": payer.pubkey().to_string()}),
        )
        .await;
    assert_eq!(response.status, 422, "{}", response.body);
    assert!(response.body["error"].is_string(), "{}", response.body);
    assert_eq!(
        app.get("/api/tournaments/trn_elsewhere", Auth::None)
            .await
            .body["currentParticipants"],
        0
    );
}
