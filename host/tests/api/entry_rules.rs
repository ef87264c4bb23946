//! Who may enter a tournament, and when: the registration deadline, the per-client registration
//! limit (one client's junk never locks out another), and private tournaments with invite codes.

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use crucible::domain::WalletAddress;
use serde_json::{Value, json};

fn wallet(seed: u8) -> String {
    WalletAddress::from_public_key(&[seed; 32]).to_string()
}

/// A registration from the client at `ip` (the server trusts `X-Forwarded-For` in these tests).
async fn register_from(app: &TestApp, ip: &str, id: &str, body: Value) -> (u16, Value) {
    let response = app
        .client
        .post(format!("{}/api/tournaments/{id}/register", app.address))
        .header("x-forwarded-for", ip)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn free_entry(seed: u8) -> Value {
    json!({"registeredWallet": wallet(seed), "txSignature": null})
}

#[tokio::test]
async fn the_registration_deadline_holds() {
    let app = TestApp::spawn().await;
    let mut new = app.new_tournament("trn_dl", 0, 10, Duration::hours(2), 4);
    new.registration_deadline = Some(app.state.now() + Duration::hours(1));
    app.create_tournament(new).await;
    let detail = app.get("/api/tournaments/trn_dl", Auth::None).await.body;
    assert!(
        detail["registrationDeadline"].as_str().is_some(),
        "{detail}"
    );

    let before = app
        .post(
            "/api/tournaments/trn_dl/register",
            Auth::None,
            free_entry(1),
        )
        .await;
    assert_eq!(before.status, 201, "{:?}", before.body);

    app.advance(Duration::hours(1));
    let after = app
        .post(
            "/api/tournaments/trn_dl/register",
            Auth::None,
            free_entry(2),
        )
        .await;
    assert_eq!(after.status, 410, "{:?}", after.body);
    assert!(after.error().contains("closed"), "{}", after.error());
    let detail = app.get("/api/tournaments/trn_dl", Auth::None).await.body;
    assert_eq!(detail["currentParticipants"], 1, "nothing changed");

    // A deadline after the end is refused when the tournament is created.
    let mut late = app.new_tournament("trn_dl2", 0, 10, Duration::hours(2), 4);
    late.registration_deadline = Some(app.state.now() + Duration::days(1));
    assert!(late.validate().unwrap_err().contains("deadline"));
}

#[tokio::test]
async fn junk_from_one_client_never_locks_out_another() {
    let app = TestApp::spawn_with(|config| {
        config.rate_limits = true;
        config.trusted_proxies = 1;
    })
    .await;
    app.create_tournament(app.new_tournament("trn_rl", 0, 100, Duration::hours(1), 4))
        .await;

    // The attacker floods the tournament with malformed requests: each is a 400 that counts
    // against the attacker's own per-IP budget only.
    for _ in 0..10 {
        let (status, _) = register_from(&app, "203.0.113.7", "trn_rl", json!({"junk": true})).await;
        assert_eq!(status, 400);
    }
    let (status, _) = register_from(&app, "203.0.113.7", "trn_rl", free_entry(1)).await;
    assert_eq!(status, 429, "the attacker's per-IP budget is spent");

    // An honest client still registers five wallets a minute in this tournament …
    for seed in 10..15 {
        let (status, body) = register_from(&app, "198.51.100.4", "trn_rl", free_entry(seed)).await;
        assert_eq!(status, 201, "{body}");
    }
    // … and its sixth well-formed request is limited, with the time to wait.
    let (status, body) = register_from(&app, "198.51.100.4", "trn_rl", free_entry(20)).await;
    assert_eq!(status, 429, "{body}");
    assert!(body["retryAfter"].as_u64().expect("retryAfter") >= 1);
    // A third client is unaffected by both.
    let (status, body) = register_from(&app, "192.0.2.55", "trn_rl", free_entry(30)).await;
    assert_eq!(status, 201, "{body}");

    // Requests for an unknown tournament do not count either: they are not well-formed entries.
    for _ in 0..3 {
        let (status, _) = register_from(&app, "192.0.2.99", "trn_nope", free_entry(40)).await;
        assert_eq!(status, 404);
    }
    for seed in 41..46 {
        let (status, body) = register_from(&app, "192.0.2.99", "trn_rl", free_entry(seed)).await;
        assert_eq!(status, 201, "{body}");
    }
}

#[tokio::test]
async fn private_tournaments_stay_private_without_their_invite_code() {
    let app = TestApp::spawn().await;
    let (code, hash) = crucible::tournaments::privacy::new_invite_code();
    let mut new = app.new_tournament("trn_priv", 0, 10, Duration::hours(1), 4);
    new.visibility = "private".into();
    new.invite_code_hash = Some(hash);
    app.create_tournament(new).await;
    app.create_tournament(app.new_tournament("trn_pub", 0, 10, Duration::hours(1), 4))
        .await;

    for list in [
        "/api/tournaments",
        "/api/tournaments?visibility=private",
        "/api/tournaments?search=trn_priv",
    ] {
        let body = app.get(list, Auth::None).await.body;
        assert!(!body.to_string().contains("trn_priv"), "{list}: {body}");
    }

    let reads = [
        "/api/tournaments/trn_priv".to_owned(),
        "/api/tournaments/trn_priv/leaderboard".to_owned(),
        "/api/tournaments/trn_priv/performance".to_owned(),
        format!(
            "/api/tournaments/trn_priv/registration-memo?wallets={}",
            wallet(1)
        ),
        "/api/tournaments/trn_priv/live".to_owned(),
    ];
    let unknown = app.get("/api/tournaments/trn_unknown", Auth::None).await;
    for read in &reads {
        let hidden = app.get(read, Auth::None).await;
        assert_eq!(hidden.status, 404, "{read}");
        assert_eq!(
            hidden.error().replace("trn_priv", "X"),
            unknown.error().replace("trn_unknown", "X"),
            "{read}: answered exactly as an unknown id"
        );
        let separator = if read.contains('?') { '&' } else { '?' };
        let wrong = app
            .get(
                &format!("{read}{separator}inviteCode=inv_wrong"),
                Auth::None,
            )
            .await;
        assert_eq!(wrong.status, 404, "{read} with a wrong code");
    }
    for read in reads.iter().filter(|read| !read.ends_with("/live")) {
        let separator = if read.contains('?') { '&' } else { '?' };
        let open = app
            .get(&format!("{read}{separator}inviteCode={code}"), Auth::None)
            .await;
        assert_eq!(open.status, 200, "{read} with its code: {:?}", open.body);
    }
    let detail = app
        .get(
            &format!("/api/tournaments/trn_priv?inviteCode={code}"),
            Auth::None,
        )
        .await
        .body;
    assert_eq!(detail["visibility"], "private");
    assert!(
        !detail.to_string().contains(&code),
        "the code is never shown"
    );

    let refused = app
        .post(
            "/api/tournaments/trn_priv/register",
            Auth::None,
            free_entry(1),
        )
        .await;
    assert_eq!(refused.status, 404);
    let mut with_code = free_entry(1);
    with_code["inviteCode"] = json!(code);
    let entered = app
        .post("/api/tournaments/trn_priv/register", Auth::None, with_code)
        .await;
    assert_eq!(entered.status, 201, "{:?}", entered.body);

    // The web app's page follows the same rule.
    let page = app.get("/tournaments/trn_priv", Auth::None).await;
    assert_eq!(page.status, 404);
    let page = app
        .get(&format!("/tournaments/trn_priv?invite={code}"), Auth::None)
        .await;
    assert_eq!(page.status, 200);
}

#[tokio::test]
async fn the_host_cli_sets_a_deadline_and_prints_a_private_tournaments_invite_code() {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        // The binary runs on the embedded database; the API tests cover PostgreSQL.
        return;
    }
    let app = TestApp::spawn().await;
    let start = app.state.now() + Duration::days(1);
    let deadline = start - Duration::hours(1);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_crucible"))
        .args([
            "tournament",
            "create",
            "--name",
            "Club Night",
            "--entry-fee",
            "0",
        ])
        .args(["--max-participants", "8", "--visibility", "private"])
        .args(["--starts-at", &start.to_rfc3339()])
        .args(["--ends-at", &(start + Duration::days(1)).to_rfc3339()])
        .args(["--registration-deadline", &deadline.to_rfc3339()])
        .arg("--data-dir")
        .arg(app.data_dir.path())
        .env_remove("DATABASE_URL")
        .env("CRUCIBLE_MASTER_KEY", "00".repeat(32))
        .output()
        .expect("run");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines = stdout.lines();
    let id = lines.next().expect("id").trim().to_owned();
    let code = lines
        .next()
        .and_then(|line| line.strip_prefix("invite code: "))
        .expect("the invite code line")
        .trim()
        .to_owned();
    assert_eq!(
        app.get(&format!("/api/tournaments/{id}"), Auth::None)
            .await
            .status,
        404
    );
    let detail = app
        .get(
            &format!("/api/tournaments/{id}?inviteCode={code}"),
            Auth::None,
        )
        .await
        .body;
    assert_eq!(detail["name"], "Club Night");
    assert!(
        detail["registrationDeadline"]
            .as_str()
            .is_some_and(|at| at.starts_with(&deadline.format("%Y-%m-%dT%H:%M").to_string())),
        "{detail}"
    );
}
