//! Host operations: the admin role, suspensions, banned components, manual disqualification,
//! the payout queue and the audit log.

use crate::helpers::{Auth, TestApp, v1_code};
use chrono::Duration;
use crucible::chain::Keypair;
use serde_json::{Value, json};

/// Sign up `email` and make it an admin as `crucible admin grant` does; its session.
async fn admin(app: &TestApp, email: &str) -> String {
    let session = app.session(email).await;
    crucible::admin::service::set_admin(&app.state.store, email, true, app.state.now())
        .await
        .expect("grant");
    session
}

/// `POST /api/admin/accounts/{account}/suspend` as `admin`, for `reason`.
async fn suspend(
    app: &TestApp,
    admin: &str,
    account: &str,
    reason: &str,
) -> crate::helpers::TestResponse {
    app.post(
        &format!("/api/admin/accounts/{account}/suspend"),
        Auth::Session(admin),
        json!({ "reason": reason }),
    )
    .await
}

/// Take the admin role from `email` with the host's tool.
async fn revoke_admin(app: &TestApp, email: &str) -> Result<(), String> {
    crucible::admin::service::set_admin(&app.state.store, email, false, app.state.now())
        .await
        .map(|_| ())
        .map_err(|refused| refused.to_string())
}

async fn account_id(app: &TestApp, session: &str) -> String {
    app.get("/api/account", Auth::Session(session)).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn audit(app: &TestApp, session: &str, query: &str) -> Vec<Value> {
    let response = app
        .get(&format!("/api/admin/audit?{query}"), Auth::Session(session))
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.body["entries"]
        .as_array()
        .expect("entries")
        .clone()
}

#[tokio::test]
async fn every_admin_route_refuses_anyone_but_an_admin() {
    let app = TestApp::spawn().await;
    let (session, key) = app
        .account_with_key("someone@example.com", &["read", "write"])
        .await;
    let sha = "ab".repeat(32);
    let routes = [
        ("GET", "/api/admin/accounts".to_owned()),
        ("GET", "/api/admin/accounts/acc_x".to_owned()),
        ("POST", "/api/admin/accounts/acc_x/suspend".to_owned()),
        ("POST", "/api/admin/accounts/acc_x/unsuspend".to_owned()),
        ("GET", "/api/admin/agents".to_owned()),
        ("GET", "/api/admin/components/banned".to_owned()),
        ("POST", format!("/api/admin/components/{sha}/ban")),
        ("DELETE", format!("/api/admin/components/{sha}/ban")),
        (
            "POST",
            "/api/admin/tournaments/trn_x/disqualifications".to_owned(),
        ),
        (
            "DELETE",
            "/api/admin/tournaments/trn_x/disqualifications/w".to_owned(),
        ),
        ("GET", "/api/admin/payouts".to_owned()),
        ("POST", "/api/admin/payouts/pay_x/retry".to_owned()),
        ("GET", "/api/admin/audit".to_owned()),
    ];
    // The OpenAPI document lists exactly these admin routes: a new one must be added here.
    let document = app.get("/api/openapi.json", Auth::None).await.body;
    let documented: usize = document["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .filter(|(path, _)| path.starts_with("/api/admin/"))
        .map(|(_, methods)| methods.as_object().map_or(0, |m| m.len()))
        .sum();
    assert_eq!(documented, routes.len());
    let body = json!({"reason": "x", "wallet": "w"});
    for (method, path) in &routes {
        let send = |auth| {
            app.request(
                method,
                path,
                auth,
                Some(crate::helpers::Body::Json(body.clone())),
            )
        };
        assert_eq!(
            send(Auth::None).await.status,
            401,
            "{method} {path} without a session"
        );
        let member = send(Auth::Session(&session)).await;
        assert_eq!(
            member.status, 403,
            "{method} {path} as a member: {}",
            member.body
        );
        assert_eq!(
            send(Auth::Bearer(&key)).await.status,
            403,
            "{method} {path} with a key"
        );
    }
    // A revoked admin is refused again (another admin remains: the last one is never revoked).
    let boss = admin(&app, "boss@example.com").await;
    admin(&app, "deputy@example.com").await;
    assert_eq!(
        app.get("/api/admin/accounts", Auth::Session(&boss))
            .await
            .status,
        200
    );
    crucible::admin::service::set_admin(
        &app.state.store,
        "boss@example.com",
        false,
        app.state.now(),
    )
    .await
    .expect("revoke");
    assert_eq!(
        app.get("/api/admin/accounts", Auth::Session(&boss))
            .await
            .status,
        403
    );
}

#[tokio::test]
async fn a_suspended_account_is_locked_out_and_its_agents_stop_until_it_is_lifted() {
    let app = TestApp::spawn().await;
    let boss = admin(&app, "boss@example.com").await;
    let (session, key) = app
        .account_with_key("suspect@example.com", &["read", "write"])
        .await;
    let v1 = app.v1_key(&session).await;
    let agent = app.create_agent(&v1, "suspect_bot", "fighter", "5m").await;
    let agent_id = app.fund_and_start(&v1, &agent).await;
    let suspect = account_id(&app, &session).await;

    let found = app
        .get("/api/admin/accounts?search=SUSPECT@", Auth::Session(&boss))
        .await
        .body;
    assert_eq!(
        found["accounts"][0]["accountId"],
        suspect.as_str(),
        "{found}"
    );
    let detail = app
        .get(
            &format!("/api/admin/accounts/{suspect}"),
            Auth::Session(&boss),
        )
        .await
        .body;
    assert_eq!(
        detail["agents"][0]["agentId"],
        agent_id.as_str(),
        "{detail}"
    );
    assert_eq!(detail["keys"].as_array().expect("keys").len(), 2);
    assert!(detail["keys"][0]["keyPrefix"].is_string());
    assert!(!detail.to_string().contains(&key), "never the key itself");
    assert_eq!(detail["wallets"][0]["kind"], "custodial");

    let bad = suspend(&app, &boss, &suspect, " ").await;
    assert_eq!(bad.status, 400);
    let suspended = suspend(&app, &boss, &suspect, "wash trading").await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    assert!(suspended.body["suspendedAt"].is_string());
    let again = suspend(&app, &boss, &suspect, "x").await;
    assert_eq!(again.status, 409);

    let by_key = app.get("/api/account", Auth::Bearer(&key)).await;
    assert_eq!(by_key.status, 403, "{}", by_key.body);
    assert!(by_key.error().contains("suspended"));
    let by_v1 = app
        .get(
            &format!("/api/v1/public/agents/{agent_id}"),
            Auth::XApiKey(&v1),
        )
        .await;
    assert_eq!(by_v1.status, 403, "{}", by_v1.body);
    assert_eq!(
        app.get("/api/account", Auth::Session(&session))
            .await
            .status,
        401,
        "session ended"
    );
    let login = app
        .post(
            "/api/auth/login",
            Auth::None,
            json!({"email": "suspect@example.com", "password": "correct horse 9"}),
        )
        .await;
    assert_eq!(login.status, 403, "{}", login.body);
    assert!(login.error().contains("wash trading"));
    let agents = app
        .get(
            &format!("/api/admin/agents?accountId={suspect}"),
            Auth::Session(&boss),
        )
        .await
        .body;
    assert_eq!(agents["agents"][0]["status"], "error", "{agents}");
    assert!(
        agents["agents"][0]["statusReason"]
            .as_str()
            .expect("reason")
            .contains("suspended")
    );
    app.advance(Duration::minutes(10));
    assert_eq!(
        app.run_scheduler().await.agent_ticks.ticked,
        0,
        "no tick while suspended"
    );
    assert_eq!(
        app.due_agents().await,
        [],
        "a suspended account's agents are not due"
    );

    let lifted = app
        .post(
            &format!("/api/admin/accounts/{suspect}/unsuspend"),
            Auth::Session(&boss),
            json!(null),
        )
        .await;
    assert_eq!(lifted.status, 200, "{}", lifted.body);
    assert_eq!(
        app.get("/api/account", Auth::Bearer(&key)).await.status,
        200
    );
    let login = app
        .post(
            "/api/auth/login",
            Auth::None,
            json!({"email": "suspect@example.com", "password": "correct horse 9"}),
        )
        .await;
    assert_eq!(login.status, 200, "{}", login.body);
    let restarted = app
        .post(
            &format!("/api/v1/public/agents/{agent_id}/start"),
            Auth::XApiKey(&v1),
            json!(null),
        )
        .await;
    assert_eq!(
        restarted.status, 200,
        "its operator starts it again: {}",
        restarted.body
    );

    let log = audit(&app, &boss, &format!("accountId={suspect}")).await;
    let actions: Vec<&str> = log.iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(
        actions.contains(&"account.suspend") && actions.contains(&"account.unsuspend"),
        "{actions:?}"
    );
    let suspension = log
        .iter()
        .find(|e| e["action"] == "account.suspend")
        .expect("entry");
    assert_eq!(
        suspension["actor"],
        format!("account:{}", account_id(&app, &boss).await)
    );
    assert_eq!(suspension["before"]["suspended"], false);
    assert_eq!(suspension["after"]["reason"], "wash trading");
}

#[tokio::test]
async fn a_banned_component_stops_its_agents_and_cannot_be_uploaded_again() {
    let app = TestApp::spawn().await;
    let boss = admin(&app, "boss@example.com").await;
    let session = app.session("author@example.com").await;
    let key = app.v1_key(&session).await;
    let bytes = crucible::sandbox::test_guest("hostile")
        .expect("guest")
        .to_vec();
    let uploaded = app.upload_strategy(&key, Some("mine"), bytes.clone()).await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let strategy_type = uploaded.body["data"]["strategyType"]
        .as_str()
        .expect("type")
        .to_owned();
    let sha = crucible::crypto::sha256_hex(&bytes);
    let created = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            json!({"name": "Banned", "username": "banned_bot", "class": "rogue", "modelId": "me/x",
                   "strategy": {"type": strategy_type, "tokenPair": {"base": "SOL", "quote": "USDC"},
                                "timeInterval": "5m"}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let agent_id = app.fund_and_start(&key, &created.body["data"]).await;

    let bad = app
        .post(
            "/api/admin/components/not-a-hash/ban",
            Auth::Session(&boss),
            json!({"reason": "x"}),
        )
        .await;
    assert_eq!(bad.status, 400);
    let banned = app
        .post(
            &format!("/api/admin/components/{sha}/ban"),
            Auth::Session(&boss),
            json!({"reason": "drains the pool"}),
        )
        .await;
    assert_eq!(banned.status, 201, "{}", banned.body);
    assert_eq!(banned.body["agentsStopped"], 1);
    let agent = app
        .get(
            &format!("/api/v1/public/agents/{agent_id}"),
            Auth::XApiKey(&key),
        )
        .await
        .body;
    assert_eq!(agent["data"]["status"], "error", "{agent}");
    let start = app
        .post(
            &format!("/api/v1/public/agents/{agent_id}/start"),
            Auth::XApiKey(&key),
            json!(null),
        )
        .await;
    assert_eq!(start.status, 403, "{}", start.body);
    assert_eq!(v1_code(&start), "FORBIDDEN");
    let again = app
        .upload_strategy(&key, Some("again"), bytes.clone())
        .await;
    assert_eq!(again.status, 403, "{}", again.body);
    assert!(
        again.body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("drains the pool")
    );
    let listed = app
        .get("/api/admin/components/banned", Auth::Session(&boss))
        .await
        .body;
    assert_eq!(listed["components"][0]["sha256"], sha.as_str());

    let lifted = app
        .delete(
            &format!("/api/admin/components/{sha}/ban"),
            Auth::Session(&boss),
        )
        .await;
    assert_eq!(lifted.status, 204);
    assert_eq!(
        app.upload_strategy(&key, Some("again"), bytes).await.status,
        201
    );
    let log = audit(&app, &boss, &format!("subjectId={sha}")).await;
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0]["action"], "component.unban");
    assert_eq!(log[1]["action"], "component.ban");
    assert_eq!(log[1]["detail"], "1 agent(s) stopped");
}

#[tokio::test]
async fn a_manual_disqualification_moves_the_board_and_the_payout() {
    let app = TestApp::spawn().await;
    let boss = admin(&app, "boss@example.com").await;
    const FEE: u64 = 2_000_000;
    app.create_tournament(app.new_tournament(
        "trn_manual",
        FEE as i64,
        10,
        Duration::minutes(1),
        1,
    ))
    .await;
    let cheat = Keypair::generate();
    let honest = Keypair::generate();
    for (keypair, lamports) in [(&cheat, 3_000_000_000u64), (&honest, 1_000_000_000)] {
        let wallet = keypair.pubkey().to_string();
        app.airdrop(&wallet, lamports, 10_000_000).await;
        app.pay_and_register(
            "trn_manual",
            keypair,
            std::slice::from_ref(&wallet),
            FEE,
            Auth::None,
        )
        .await;
    }
    app.advance(Duration::minutes(1));
    app.run_scheduler().await;
    app.pump_sol(41_421_000_000).await;
    app.snapshot_live().await.expect("snapshot");
    let cheat_wallet = cheat.pubkey().to_string();
    let board = app
        .get("/api/tournaments/trn_manual/leaderboard", Auth::None)
        .await
        .body;
    assert_eq!(
        board["entries"][0]["wallet"],
        cheat_wallet.as_str(),
        "more SOL, more gain"
    );

    let path = "/api/tournaments/trn_manual/disqualifications";
    let disqualified = app
        .post(
            &format!("/api/admin{}", path.trim_start_matches("/api")),
            Auth::Session(&boss),
            json!({"wallet": cheat_wallet, "reason": "sybil ring"}),
        )
        .await;
    assert_eq!(disqualified.status, 204, "{}", disqualified.body);
    let board = app
        .get("/api/tournaments/trn_manual/leaderboard", Auth::None)
        .await
        .body;
    let last = &board["entries"][1];
    assert_eq!(last["wallet"], cheat_wallet.as_str(), "{board}");
    assert_eq!(last["disqualified"], true);
    assert!(
        last["disqualifiedReason"]
            .as_str()
            .expect("reason")
            .contains("sybil ring")
    );

    // Undone and done again before the end, then the end pays the honest wallet alone.
    let undo = format!("/api/admin/tournaments/trn_manual/disqualifications/{cheat_wallet}");
    assert_eq!(app.delete(&undo, Auth::Session(&boss)).await.status, 204);
    let board = app
        .get("/api/tournaments/trn_manual/leaderboard", Auth::None)
        .await
        .body;
    assert_eq!(board["entries"][0]["wallet"], cheat_wallet.as_str());
    assert_eq!(board["entries"][0]["disqualified"], false);
    let redo = app
        .post(
            "/api/admin/tournaments/trn_manual/disqualifications",
            Auth::Session(&boss),
            json!({"wallet": cheat_wallet, "reason": "sybil ring"}),
        )
        .await;
    assert_eq!(redo.status, 204);
    app.advance(Duration::hours(1));
    let pass = app.run_scheduler().await;
    assert_eq!(pass.jobs_failed, 0, "{pass:?}");
    let paid: Vec<(String, String)> = sqlx::query_as(
        "SELECT wallet, status FROM payouts WHERE source_kind = 'tournament' AND source_id = 'trn_manual'",
    )
    .fetch_all(app.state.store.read())
    .await
    .expect("payouts");
    assert_eq!(paid, vec![(honest.pubkey().to_string(), "sent".to_owned())]);
    // After the end the standings are final.
    assert_eq!(app.delete(&undo, Auth::Session(&boss)).await.status, 409);

    let log = audit(&app, &boss, "action=tournament.disqualify").await;
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["subjectId"], cheat_wallet.as_str());
    assert_eq!(
        audit(&app, &boss, "action=tournament.reinstate")
            .await
            .len(),
        1
    );
}

#[tokio::test]
async fn the_payout_queue_shows_what_is_stuck_and_a_retry_sends_it_once() {
    let app = TestApp::spawn().await;
    let boss = admin(&app, "boss@example.com").await;
    app.create_tournament(app.new_tournament("trn_q", 0, 10, Duration::minutes(1), 1))
        .await;
    app.airdrop(
        &app.state.chain.escrow().address.to_string(),
        1_000_000_000,
        500_000,
    )
    .await;
    let winner = Keypair::generate().pubkey().to_string();
    sqlx::query(
        "INSERT INTO payouts (id, wallet, source_kind, source_id, rank, amount_raw, mint, status, created_at, last_error, attempts)
         VALUES ('pay_q', $1, 'tournament', 'trn_q', 1, 500000, $2, 'failed', $3, 'the node was down', 4)",
    )
    .bind(&winner)
    .bind(app.state.chain.stablecoin_mint())
    .bind(crucible::clock::to_millis(app.state.now()))
    .execute(app.state.store.write())
    .await
    .expect("payout");
    let queue = app
        .get("/api/admin/payouts?status=failed", Auth::Session(&boss))
        .await
        .body;
    assert_eq!(queue["payouts"][0]["payoutId"], "pay_q", "{queue}");
    assert_eq!(queue["payouts"][0]["lastError"], "the node was down");
    assert_eq!(queue["payouts"][0]["amountRaw"], "500000");
    assert_eq!(
        app.get("/api/admin/payouts?status=odd", Auth::Session(&boss))
            .await
            .status,
        400
    );

    let retried = app
        .post(
            "/api/admin/payouts/pay_q/retry",
            Auth::Session(&boss),
            json!(null),
        )
        .await;
    assert_eq!(retried.status, 202, "{}", retried.body);
    let pass = app.run_scheduler().await;
    assert_eq!(pass.jobs_failed, 0, "{pass:?}");
    let sent = app
        .get("/api/admin/payouts?status=sent", Auth::Session(&boss))
        .await
        .body;
    assert_eq!(sent["payouts"][0]["payoutId"], "pay_q");
    let again = app
        .post(
            "/api/admin/payouts/pay_q/retry",
            Auth::Session(&boss),
            json!(null),
        )
        .await;
    assert_eq!(again.status, 409);
    assert_eq!(audit(&app, &boss, "action=payout.retry").await.len(), 1);
}

#[tokio::test]
async fn key_events_cancellations_and_refunds_are_in_the_audit_log() {
    let app = TestApp::spawn().await;
    let boss = admin(&app, "boss@example.com").await;
    let session = app.session("keys@example.com").await;
    let created = app
        .post(
            "/api/api-keys",
            Auth::Session(&session),
            json!({"name": "ci", "scopes": ["read"]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let key_id = created.body["keyId"].as_str().expect("keyId").to_owned();
    let revoked = app
        .delete(&format!("/api/api-keys/{key_id}"), Auth::Session(&session))
        .await;
    assert!(revoked.status < 300, "{}", revoked.body);

    // The account reads its own key events …
    let mine = app
        .get("/api/account/audit", Auth::Session(&session))
        .await
        .body;
    let actions: Vec<&str> = mine["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert_eq!(actions, ["key.revoke", "key.create"], "{mine}");
    assert_eq!(mine["entries"][1]["after"]["name"], "ci");
    assert!(
        !mine
            .to_string()
            .contains(created.body["key"].as_str().expect("key")),
        "never the secret"
    );
    // … and only its own.
    let other = app.session("other@example.com").await;
    assert_eq!(
        app.get("/api/account/audit", Auth::Session(&other))
            .await
            .body["entries"],
        json!([])
    );

    // A host's cancellation and the refunds it records.
    app.create_tournament(app.new_tournament("trn_audit", 1_000_000, 10, Duration::hours(1), 2))
        .await;
    let payer = Keypair::generate();
    let wallet = payer.pubkey().to_string();
    app.airdrop(&wallet, 1_000_000_000, 5_000_000).await;
    let memo = crucible::tournaments::registration_memo("trn_audit", std::slice::from_ref(&wallet));
    let signature = app
        .state
        .chain
        .transfer_token(
            &payer,
            &app.state.chain.escrow().address,
            app.state.chain.stablecoin_mint(),
            1_000_000,
            &memo,
        )
        .await
        .expect("pay");
    let registered = app
        .post(
            "/api/tournaments/trn_audit/register",
            Auth::None,
            json!({"registeredWallet": wallet, "txSignature": signature, "payerWallet": wallet}),
        )
        .await;
    assert_eq!(registered.status, 201);
    assert!(app.cancel_tournament("trn_audit").await.expect("cancel"));
    let cancel = audit(&app, &boss, "action=tournament.cancel").await;
    assert_eq!(cancel[0]["actor"], "host");
    assert_eq!(cancel[0]["subjectId"], "trn_audit");
    assert_eq!(cancel[0]["detail"], "1 refund(s) recorded");
    let refund = audit(&app, &boss, "action=refund.record").await;
    assert_eq!(refund[0]["after"]["wallet"], wallet.as_str());
    assert_eq!(refund[0]["after"]["amountRaw"], "1000000");
    assert_eq!(audit(&app, &boss, "action=key.create").await.len(), 1);
}

#[tokio::test]
async fn the_host_cli_grants_and_revokes_the_admin_role() {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        // The binary runs on the embedded database; the API tests cover PostgreSQL.
        return;
    }
    let app = TestApp::spawn().await;
    let session = app.session("host@example.com").await;
    let run = |verb: &str, email: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_crucible"))
            .args(["admin", verb, email, "--data-dir"])
            .arg(app.data_dir.path())
            .env_remove("DATABASE_URL")
            .env("CRUCIBLE_MASTER_KEY", "00".repeat(32))
            .output()
            .expect("run")
    };
    let granted = run("grant", "host@example.com");
    assert!(
        granted.status.success(),
        "{}",
        String::from_utf8_lossy(&granted.stderr)
    );
    assert_eq!(
        app.get("/api/admin/accounts", Auth::Session(&session))
            .await
            .status,
        200
    );
    let unknown = run("grant", "nobody@example.com");
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no account"));
    // The last admin keeps the role; with another one, it can be revoked.
    let last = run("revoke", "host@example.com");
    assert!(!last.status.success());
    assert!(String::from_utf8_lossy(&last.stderr).contains("last admin"));
    let boss = admin(&app, "boss@example.com").await;
    assert!(run("revoke", "host@example.com").status.success());
    assert_eq!(
        app.get("/api/admin/accounts", Auth::Session(&session))
            .await
            .status,
        403
    );
    let log = audit(&app, &boss, "action=admin.grant").await;
    assert!(log.iter().any(|e| e["actor"] == "host"), "{log:?}");
}

#[tokio::test]
async fn an_admin_cannot_suspend_themselves_and_the_last_admin_stays() {
    let app = TestApp::spawn().await;
    let boss = admin(&app, "only-boss@example.com").await;
    let boss_id = account_id(&app, &boss).await;
    let own = suspend(&app, &boss, &boss_id, "testing").await;
    assert_eq!(own.status, 409, "{}", own.body);
    assert!(own.error().contains("own account"), "{}", own.body);
    let last = revoke_admin(&app, "only-boss@example.com")
        .await
        .expect_err("the last admin keeps the role");
    assert!(last.to_string().contains("last admin"), "{last}");

    // With a second admin suspended, the first is still the last one in good standing.
    let second = admin(&app, "second-boss@example.com").await;
    let second_id = account_id(&app, &second).await;
    let suspended = suspend(&app, &boss, &second_id, "testing").await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    assert!(revoke_admin(&app, "only-boss@example.com").await.is_err());
    let lifted = app
        .post(
            &format!("/api/admin/accounts/{second_id}/unsuspend"),
            Auth::Session(&boss),
            json!(null),
        )
        .await;
    assert_eq!(lifted.status, 200, "{}", lifted.body);
    let entries = audit(&app, &boss, "action=account.suspend").await;
    assert!(
        entries
            .iter()
            .all(|entry| entry["subjectId"] != json!(boss_id)),
        "{entries:?}"
    );
    revoke_admin(&app, "only-boss@example.com")
        .await
        .expect("another admin remains");
}
