//! Tournaments: the public reads, the lifecycle driven by the scheduler, series, demo data and
//! the host's CLI.

use crate::helpers::{Auth, TestApp};
use chrono::{DateTime, Duration, Utc};
use crucible::scheduler::Scheduler;
use crucible::tournaments::queries::{self, NewTournament};
use serde_json::Value;

fn tournament(id: &str, start: DateTime<Utc>, hours: i64) -> NewTournament {
    NewTournament {
        id: id.into(),
        name: format!("Cup {id}"),
        description: "A test tournament".into(),
        kind: "highest_pnl".into(),
        visibility: "public".into(),
        entry_fee_raw: 2_500_000,
        max_participants: 10,
        escrow_wallet: "11111111111111111111111111111111".into(),
        payout_split: vec![60, 40],
        rake_bps: 1000,
        is_paper_trading: false,
        transfer_policy: crucible::tournaments::rules::TransferPolicy::Adjust,
        evaluation_metric: crucible::tournaments::rules::EvaluationMetric::PnlPercent,
        start_date: start,
        end_date: start + Duration::hours(hours),
        series: None,
        registration_deadline: None,
        invite_code_hash: None,
        min_participants: 0,
    }
}

async fn create(app: &TestApp, new: NewTournament) {
    new.validate().expect("valid");
    let mut conn = app.state.store.write().acquire().await.expect("conn");
    assert!(
        queries::insert(&mut conn, &new, app.state.now())
            .await
            .expect("insert")
    );
}

fn ids(body: &Value) -> Vec<String> {
    body["tournaments"]
        .as_array()
        .expect("list")
        .iter()
        .map(|t| t["id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn detail_shows_the_fields_a_registrant_needs() {
    let app = TestApp::spawn().await;
    let now = app.state.now();
    create(&app, tournament("trn_a", now + Duration::hours(1), 24)).await;
    let response = app.get("/api/tournaments/trn_a", Auth::None).await;
    assert_eq!(response.status, 200);
    let t = &response.body;
    assert_eq!(t["status"], "upcoming");
    assert_eq!(t["entryFee"], 2.5);
    assert_eq!(t["entryFeeRaw"], "2500000");
    assert_eq!(t["escrowWalletAddress"], "11111111111111111111111111111111");
    assert_eq!(t["currentParticipants"], 0);
    assert_eq!(t["maxParticipants"], 10);
    assert_eq!(t["visibility"], "public");
    assert_eq!(t["type"], "highest_pnl");
    assert_eq!(t["payoutSplit"], serde_json::json!([60, 40]));
    assert!(t["startDate"].is_string() && t["endDate"].is_string() && t["createdAt"].is_string());
    assert_eq!(t["registrationMemo"]["format"], "reg:trn_a:<h>");

    let missing = app.get("/api/tournaments/trn_nope", Auth::None).await;
    assert_eq!(missing.status, 404);
    assert!(missing.error().contains("trn_nope"));
}

#[tokio::test]
async fn the_list_filters_sorts_and_pages() {
    let app = TestApp::spawn().await;
    let now = app.state.now();
    create(&app, tournament("trn_old", now - Duration::hours(2), 1)).await; // ended by the clock
    app.advance(Duration::seconds(1));
    create(
        &app,
        tournament("trn_live", app.state.now() - Duration::minutes(1), 5),
    )
    .await;
    app.advance(Duration::seconds(1));
    let mut private = tournament("trn_private", app.state.now() + Duration::hours(1), 5);
    private.visibility = "private".into();
    private.invite_code_hash = Some(crucible::tournaments::privacy::new_invite_code().1);
    create(&app, private).await;
    app.advance(Duration::seconds(1));
    let mut weekly = tournament("trn_week", app.state.now() + Duration::hours(3), 5);
    weekly.kind = "weekly_pnl".into();
    weekly.name = "Weekly Showdown".into();
    create(&app, weekly).await;

    let all = app.get("/api/tournaments", Auth::None).await;
    assert_eq!(all.status, 200);
    assert_eq!(
        ids(&all.body),
        ["trn_week", "trn_live", "trn_old"],
        "public only, newest first"
    );
    assert_eq!(all.body["pagination"]["totalCount"], 3);

    let app = &app;
    let by = |query: &str| {
        let path = format!("/api/tournaments?{query}");
        async move { app.get(&path, Auth::None).await }
    };
    assert_eq!(ids(&by("status=live").await.body), ["trn_live"]);
    assert_eq!(
        ids(&by("status=active").await.body),
        ["trn_live"],
        "v1 vocabulary accepted"
    );
    assert_eq!(ids(&by("status=ended").await.body), ["trn_old"]);
    assert_eq!(ids(&by("status=upcoming").await.body), ["trn_week"]);
    // Private tournaments are listed nowhere (docs/tournaments.md, "Who may enter").
    assert!(ids(&by("visibility=private").await.body).is_empty());
    assert_eq!(ids(&by("type=weekly_pnl").await.body), ["trn_week"]);
    assert_eq!(ids(&by("search=showDOWN").await.body), ["trn_week"]);
    assert_eq!(
        ids(&by("search=50%25").await.body),
        Vec::<String>::new(),
        "wildcards are literal"
    );
    assert_eq!(
        ids(&by("orderBy=startDate&order=asc").await.body),
        ["trn_old", "trn_live", "trn_week"]
    );

    let page = by("pageSize=2&page=1").await.body;
    assert_eq!(ids(&page), ["trn_old"]);
    assert_eq!(page["pagination"]["totalPages"], 2);

    for bad in [
        "status=paused",
        "pageSize=0",
        "pageSize=51",
        "page=-1",
        "orderBy=id",
        "order=up",
        "visibility=secret",
        "pageSize=x",
    ] {
        let response = by(bad).await;
        assert_eq!(response.status, 400, "{bad}");
        assert!(!response.error().is_empty());
    }
}

#[tokio::test]
async fn the_registration_memo_ignores_order_and_prices_the_wallets() {
    let app = TestApp::spawn().await;
    create(&app, tournament("trn_m", app.state.now(), 5)).await;
    let a = "11111111111111111111111111111111";
    let b = "SysvarRent111111111111111111111111111111111";
    let one = app
        .get(
            &format!("/api/tournaments/trn_m/registration-memo?wallets={b},{a}"),
            Auth::None,
        )
        .await;
    let two = app
        .get(
            &format!("/api/tournaments/trn_m/registration-memo?wallets={a},{b},{a}"),
            Auth::None,
        )
        .await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.body["memo"], two.body["memo"]);
    assert_eq!(one.body["amountRaw"], "5000000");
    assert_eq!(one.body["amountUi"], 5.0);
    let expected = crucible::tournaments::registration_memo("trn_m", &[a.into(), b.into()]);
    assert_eq!(one.body["memo"], expected);
    assert_eq!(
        app.get(
            "/api/tournaments/trn_m/registration-memo?wallets=nope",
            Auth::None
        )
        .await
        .status,
        400
    );
    assert_eq!(
        app.get(
            "/api/tournaments/trn_m/registration-memo?wallets=",
            Auth::None
        )
        .await
        .status,
        400
    );
}

async fn stored_status(app: &TestApp, id: &str) -> String {
    let (status,): (String,) = sqlx::query_as("SELECT status FROM tournaments WHERE id = $1")
        .bind(id)
        .fetch_one(app.state.store.read())
        .await
        .expect("row");
    status
}

#[tokio::test]
async fn the_scheduler_moves_a_tournament_live_then_ended_one_way() {
    let app = TestApp::spawn().await;
    let scheduler = Scheduler::new(Vec::new());
    create(
        &app,
        tournament("trn_l", app.state.now() + Duration::hours(1), 2),
    )
    .await;
    scheduler.run_due(&app.state).await.expect("pass");
    assert_eq!(stored_status(&app, "trn_l").await, "upcoming");
    app.advance(Duration::hours(1));
    assert_eq!(
        app.get("/api/tournaments/trn_l", Auth::None).await.body["status"],
        "live",
        "exact even before the job"
    );
    scheduler.run_due(&app.state).await.expect("pass");
    assert_eq!(stored_status(&app, "trn_l").await, "live");
    app.advance(Duration::hours(2));
    scheduler.run_due(&app.state).await.expect("pass");
    assert_eq!(stored_status(&app, "trn_l").await, "ended");
    // Running a transition again never moves it back.
    crucible::tournaments::lifecycle::start(
        &app.state.store,
        &*app.state.clock,
        &app.state.events,
        &app.state.chain,
        "trn_l",
    )
    .await
    .expect("start");
    assert_eq!(stored_status(&app, "trn_l").await, "ended");
}

#[tokio::test]
async fn a_restart_that_spans_both_edges_ends_the_tournament() {
    let app = TestApp::spawn().await;
    create(
        &app,
        tournament("trn_r", app.state.now() + Duration::minutes(30), 1),
    )
    .await;
    let app = app.restart().await;
    app.advance(Duration::hours(5));
    let pass = Scheduler::new(Vec::new())
        .run_due(&app.state)
        .await
        .expect("pass");
    assert_eq!(pass.jobs_done, 2, "start then end, once each");
    assert_eq!(stored_status(&app, "trn_r").await, "ended");
}

#[tokio::test]
async fn series_create_the_open_and_the_next_window_once() {
    let app = TestApp::spawn_with(|config| {
        config.tournament_series = crucible::tournaments::series::default_series();
    })
    .await;
    let daily: Vec<String> = ids(&app
        .get("/api/tournaments?search=Daily&pageSize=50", Auth::None)
        .await
        .body);
    assert_eq!(daily.len(), 2, "{daily:?}");
    let created = crucible::tournaments::series::ensure(
        &app.state.store,
        &*app.state.clock,
        &app.state.events,
        &app.state.chain,
        &app.state.config,
    )
    .await
    .expect("ensure");
    assert_eq!(created, 0, "idempotent");
    let live = app
        .get("/api/tournaments?status=live&search=Daily", Auth::None)
        .await
        .body;
    assert_eq!(live["tournaments"][0]["entryFee"], 1.0);
    assert_eq!(live["tournaments"][0]["rakePercent"], 10.0);
}

#[tokio::test]
async fn a_fresh_embedded_install_has_a_free_live_and_a_paid_upcoming_demo() {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        // PostgreSQL never gets demo data (crate::demo; tested in demo.rs).
        return;
    }
    let app = TestApp::spawn_with(|config| config.demo_data = true).await;
    let live = app
        .get("/api/tournaments?status=live", Auth::None)
        .await
        .body;
    let upcoming = app
        .get("/api/tournaments?status=upcoming", Auth::None)
        .await
        .body;
    assert_eq!(live["tournaments"][0]["entryFee"], 0.0);
    assert!(
        upcoming["tournaments"][0]["entryFee"]
            .as_f64()
            .expect("fee")
            > 0.0
    );
    let app = app.restart().await;
    let again = app.get("/api/tournaments", Auth::None).await.body;
    assert_eq!(again["pagination"]["totalCount"], 2, "seeded once");
}

#[tokio::test]
async fn tournament_reads_are_limited_to_120_a_minute_per_ip() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    for _ in 0..120 {
        assert_eq!(app.get("/api/tournaments", Auth::None).await.status, 200);
    }
    let limited = app.get("/api/tournaments/anything", Auth::None).await;
    assert_eq!(limited.status, 429);
    assert!(limited.body["retryAfter"].as_u64().expect("retryAfter") >= 1);
}

#[tokio::test]
async fn the_host_cli_creates_lists_and_cancels_on_the_servers_database() {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        // The CLI test drives the binary on the embedded database; the PostgreSQL suite covers
        // the same queries through the API tests above.
        return;
    }
    let app = TestApp::spawn().await;
    let data_dir = app.data_dir.path().to_path_buf();
    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_crucible"))
            .arg("tournament")
            .args(args)
            .arg("--data-dir")
            .arg(&data_dir)
            .env_remove("DATABASE_URL")
            .env("CRUCIBLE_MASTER_KEY", "00".repeat(32))
            .output()
            .expect("run")
    };
    let start = (Utc::now() + Duration::days(1)).to_rfc3339();
    let end = (Utc::now() + Duration::days(2)).to_rfc3339();
    let created = cli(&[
        "create",
        "--name",
        "CLI Cup",
        "--entry-fee",
        "2.5",
        "--max-participants",
        "64",
        "--starts-at",
        &start,
        "--ends-at",
        &end,
        "--visibility",
        "public",
    ]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    assert!(id.starts_with("trn_"), "stdout: {id}");

    let served = app.get(&format!("/api/tournaments/{id}"), Auth::None).await;
    assert_eq!(served.status, 200, "the running server sees it");
    assert_eq!(served.body["entryFeeRaw"], "2500000");
    assert_eq!(served.body["maxParticipants"], 64);

    // The minimum fits the tournament when not given: off for a free one (even with one seat),
    // two for a paid one, or all its seats when it has fewer.
    let mut minimums = vec![(id.clone(), 2)];
    for (fee, expected) in [("0", 0), ("1", 1)] {
        let made = cli(&[
            "create",
            "--name",
            "Solo",
            "--entry-fee",
            fee,
            "--max-participants",
            "1",
            "--starts-at",
            &start,
            "--ends-at",
            &end,
        ]);
        assert!(
            made.status.success(),
            "fee {fee}: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        minimums.push((
            String::from_utf8_lossy(&made.stdout).trim().to_owned(),
            expected,
        ));
    }
    for (made, expected) in minimums {
        let (minimum,): (i64,) =
            sqlx::query_as("SELECT min_participants FROM tournaments WHERE id = $1")
                .bind(&made)
                .fetch_one(app.state.store.read())
                .await
                .expect("tournament");
        assert_eq!(minimum, expected, "{made}");
    }

    let listed = cli(&["list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("CLI Cup"));

    let refused = cli(&[
        "create",
        "--name",
        "Bad",
        "--entry-fee",
        "1",
        "--max-participants",
        "5",
        "--starts-at",
        &end,
        "--ends-at",
        &start,
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("end must come after the start"));

    assert!(cli(&["cancel", &id]).status.success());
    // Another process changed it. On PostgreSQL the tool tells the running nodes, which drop
    // their cached answer at once; on SQLite nobody can, and the answer lasts at most 5 s.
    if !app.config.database_url.starts_with("postgres") {
        app.advance(Duration::seconds(5));
    }
    let mut status = Value::Null;
    for _ in 0..20 {
        status = app
            .get(&format!("/api/tournaments/{id}"), Auth::None)
            .await
            .body["status"]
            .clone();
        if status == "cancelled" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status, "cancelled");
    assert!(
        !cli(&["cancel", &id]).status.success(),
        "cancelling twice is refused"
    );
}
