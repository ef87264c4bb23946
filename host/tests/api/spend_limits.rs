//! Paying from the embedded wallet with an account key, within its spend limits
//! (docs/api.md, "Paying from the embedded wallet"): `payFrom: "embedded"` on a tournament
//! registration and a dungeon entry pays the exact fee once, counted against the key's
//! `maxUsdcPerEntry` and `maxUsdcPerDay` under the key's lock; a key without limits, a session
//! and a read-only key never move funds.

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::{Auth, TestApp};
use crate::payouts::usdc;

/// An e-mail account (so it has an embedded wallet) with a key of `spend` limits (`null`: none),
/// its embedded wallet funded with 1 SOL and `usdc_raw`; (session, key, embedded wallet).
async fn spender(app: &TestApp, spend: Value, usdc_raw: u64) -> (String, String, String) {
    let session = app.session("spender@example.com").await;
    let mut body = json!({"name": "spender", "scopes": ["read", "write"]});
    if !spend.is_null() {
        body["spend"] = spend;
    }
    let key = app.create_key(&session, body).await;
    let account = app.get("/api/account", Auth::Session(&session)).await;
    let wallet = account.body["wallets"]
        .as_array()
        .expect("wallets")
        .iter()
        .find(|wallet| wallet["kind"] == "custodial")
        .and_then(|wallet| wallet["address"].as_str())
        .expect("an embedded wallet")
        .to_owned();
    app.airdrop(&wallet, 1_000_000_000, usdc_raw).await;
    (
        session,
        key["key"].as_str().expect("key").to_owned(),
        wallet,
    )
}

async fn register(
    app: &TestApp,
    auth: Auth<'_>,
    tournament_id: &str,
    wallet: &str,
) -> crate::helpers::TestResponse {
    app.post(
        &format!("/api/tournaments/{tournament_id}/register"),
        auth,
        json!({"registeredWallet": wallet, "payFrom": "embedded"}),
    )
    .await
}

/// Enter today's dungeon with a fresh quote for `wallet`, paid from the embedded wallet.
async fn enter_dungeon(
    app: &TestApp,
    auth: Auth<'_>,
    wallet: &str,
) -> crate::helpers::TestResponse {
    let today = app.dungeon_today();
    let quote = app.dungeon_quote(&today, wallet).await;
    app.dungeon_enter(
        &today,
        auth,
        json!({"quoteId": quote["quoteId"], "payFrom": "embedded", "class": "rogue"}),
    )
    .await
}

/// The key's `spend` as `GET /api/api-keys` lists it.
async fn listed_spend(app: &TestApp, session: &str) -> Value {
    let keys = app.get("/api/api-keys", Auth::Session(session)).await;
    assert_eq!(keys.status, 200, "{}", keys.body);
    keys.body["keys"][0]["spend"].clone()
}

async fn registered(app: &TestApp, tournament_id: &str) -> Vec<String> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT wallet FROM tournament_registrations WHERE tournament_id = $1 ORDER BY wallet",
    )
    .bind(tournament_id)
    .fetch_all(app.state.store.read())
    .await
    .expect("registrations");
    rows.into_iter().map(|(wallet,)| wallet).collect()
}

async fn escrow_usdc(app: &TestApp) -> u64 {
    usdc(app, &app.state.chain.escrow().address.to_string()).await
}

#[tokio::test]
async fn a_key_with_spend_pays_a_registration_and_a_dungeon_entry_from_the_embedded_wallet() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let (session, key, wallet) = spender(
        &app,
        json!({"maxUsdcPerDay": 10, "maxUsdcPerEntry": 2.5}),
        10_000_000,
    )
    .await;
    assert_eq!(
        listed_spend(&app, &session).await,
        json!({"maxUsdcPerDay": 10.0, "maxUsdcPerEntry": 2.5, "spentTodayUsdc": 0.0})
    );
    app.create_tournament(app.new_tournament("trn_paid", 2_000_000, 10, Duration::hours(1), 2))
        .await;
    let escrow_before = escrow_usdc(&app).await;

    let registered_now = register(&app, Auth::Bearer(&key), "trn_paid", &wallet).await;
    assert_eq!(registered_now.status, 201, "{}", registered_now.body);
    assert_eq!(registered_now.body, json!({"count": 1}));
    assert_eq!(
        registered(&app, "trn_paid").await,
        std::slice::from_ref(&wallet)
    );
    assert_eq!(usdc(&app, &wallet).await, 8_000_000, "exactly the fee left");
    assert_eq!(escrow_usdc(&app).await, escrow_before + 2_000_000);
    // The registration is the account's, paid by the signature the server sent.
    let entries = app
        .get("/api/account/tournaments", Auth::Bearer(&key))
        .await;
    let signature = entries.body["tournaments"][0]["txSignature"]
        .as_str()
        .expect("paid")
        .to_owned();

    let dungeon_before = usdc(&app, &app.state.chain.dungeon().address.to_string()).await;
    let entered = enter_dungeon(&app, Auth::Bearer(&key), &wallet).await;
    assert_eq!(entered.status, 201, "{}", entered.body);
    assert!(
        entered.body["registrationKey"]
            .as_str()
            .is_some_and(|k| k.starts_with("dgr_"))
    );
    assert_eq!(usdc(&app, &wallet).await, 7_000_000);
    assert_eq!(
        usdc(&app, &app.state.chain.dungeon().address.to_string()).await,
        dungeon_before + 1_000_000
    );
    let runs: Vec<(String, String)> =
        sqlx::query_as("SELECT wallet, tx_signature FROM dungeon_runs WHERE id = $1")
            .bind(entered.body["runId"].as_str().expect("run"))
            .fetch_all(app.state.store.read())
            .await
            .expect("run");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].0, wallet);

    assert_eq!(
        listed_spend(&app, &session).await,
        json!({"maxUsdcPerDay": 10.0, "maxUsdcPerEntry": 2.5, "spentTodayUsdc": 3.0})
    );
    // Each spend is in the audit log: the key, the amount, what it paid for, the signature.
    let audited: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT subject_id, after_state, detail FROM audit_log WHERE action = 'key.spend' ORDER BY seq",
    )
    .fetch_all(app.state.store.read())
    .await
    .expect("audit");
    assert_eq!(audited.len(), 2, "{audited:?}");
    let key_id = app.get("/api/api-keys", Auth::Session(&session)).await.body["keys"][0]["keyId"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(audited.iter().all(|(subject, _, _)| *subject == key_id));
    assert!(
        audited[0].1.contains("\"2000000\"") && audited[0].1.contains(&signature),
        "{audited:?}"
    );
    assert!(
        audited[0]
            .2
            .as_deref()
            .is_some_and(|d| d.contains("trn_paid"))
    );
    assert!(
        audited[1].1.contains("\"1000000\"")
            && audited[1]
                .2
                .as_deref()
                .is_some_and(|d| d.contains("dungeon"))
    );

    // A day later the day's spend starts again from nothing.
    app.advance(Duration::days(1));
    assert_eq!(listed_spend(&app, &session).await["spentTodayUsdc"], 0.0);
}

#[tokio::test]
async fn the_per_entry_cap_refuses_and_nothing_moves() {
    let app = TestApp::spawn().await;
    let (_, key, wallet) = spender(
        &app,
        json!({"maxUsdcPerDay": 10, "maxUsdcPerEntry": 1.5}),
        10_000_000,
    )
    .await;
    app.create_tournament(app.new_tournament("trn_dear", 2_000_000, 10, Duration::hours(1), 2))
        .await;
    let refused = register(&app, Auth::Bearer(&key), "trn_dear", &wallet).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let message = refused.error();
    assert!(
        message.contains("costs 2 USDC") && message.contains("1.5 USDC per entry"),
        "{message}"
    );
    assert!(registered(&app, "trn_dear").await.is_empty());
    assert_eq!(usdc(&app, &wallet).await, 10_000_000, "nothing paid");
    let (signed,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM custodial_payments")
        .fetch_one(app.state.store.read())
        .await
        .expect("count");
    assert_eq!(signed, 0, "nothing recorded either");
}

#[tokio::test]
async fn the_daily_cap_holds_under_twenty_concurrent_entries() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    // 5.5 USDC a day at 1 USDC an entry: exactly five entries fit.
    let (session, key, wallet) = spender(
        &app,
        json!({"maxUsdcPerDay": 5.5, "maxUsdcPerEntry": 1}),
        30_000_000,
    )
    .await;
    let today = app.dungeon_today();
    let mut quotes = Vec::new();
    for _ in 0..20 {
        quotes.push(app.dungeon_quote(&today, &wallet).await["quoteId"].clone());
    }
    let url = format!("{}/api/dungeons/{today}/enter", app.address);
    let calls: Vec<_> = quotes
        .into_iter()
        .map(|quote| {
            let (client, url, key) = (app.client.clone(), url.clone(), key.clone());
            tokio::spawn(async move {
                let response = client
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&json!({"quoteId": quote, "payFrom": "embedded"}))
                    .send()
                    .await
                    .expect("send");
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.expect("json"))
            })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await.expect("join"));
    }
    let entered = answers.iter().filter(|(status, _)| *status == 201).count();
    let refused: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 403)
        .map(|(_, body)| body)
        .collect();
    assert_eq!((entered, refused.len()), (5, 15), "{answers:?}");
    assert!(
        refused
            .iter()
            .all(|body| body["error"].as_str().is_some_and(|m| m
                .contains("spent 5 of its 5.5 USDC per day")
                && m.contains("costs 1 USDC"))),
        "{refused:?}"
    );
    assert_eq!(usdc(&app, &wallet).await, 25_000_000, "exactly five fees");
    let (runs,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM dungeon_runs")
        .fetch_one(app.state.store.read())
        .await
        .expect("runs");
    assert_eq!(runs, 5);
    assert_eq!(listed_spend(&app, &session).await["spentTodayUsdc"], 5.0);
}

#[tokio::test]
async fn a_key_without_spend_a_session_and_a_read_only_key_cannot_pay() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let (session, key, wallet) = spender(&app, Value::Null, 10_000_000).await;
    assert_eq!(listed_spend(&app, &session).await, Value::Null);
    let read_only = app
        .create_key(
            &session,
            json!({"name": "reader", "scopes": ["read"], "spend": {"maxUsdcPerDay": 10, "maxUsdcPerEntry": 5}}),
        )
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    app.create_tournament(app.new_tournament("trn_paid", 2_000_000, 10, Duration::hours(1), 2))
        .await;
    app.create_tournament(app.new_tournament("trn_free", 0, 10, Duration::hours(1), 2))
        .await;

    for tournament in ["trn_paid", "trn_free"] {
        let no_spend = register(&app, Auth::Bearer(&key), tournament, &wallet).await;
        assert_eq!(no_spend.status, 403, "{}", no_spend.body);
        assert!(no_spend.error().contains("spend"), "{}", no_spend.body);
    }
    let by_session = register(&app, Auth::Session(&session), "trn_paid", &wallet).await;
    assert_eq!(by_session.status, 403, "{}", by_session.body);
    assert!(
        by_session.error().contains("session"),
        "{}",
        by_session.body
    );
    let anonymous = register(&app, Auth::None, "trn_paid", &wallet).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    let reader = register(&app, Auth::Bearer(&read_only), "trn_paid", &wallet).await;
    assert_eq!(reader.status, 403, "{}", reader.body);
    assert!(reader.error().contains("`write` scope"), "{}", reader.body);

    let dungeon = enter_dungeon(&app, Auth::Bearer(&key), &wallet).await;
    assert_eq!(dungeon.status, 403, "{}", dungeon.body);
    let dungeon_session = enter_dungeon(&app, Auth::Session(&session), &wallet).await;
    assert_eq!(dungeon_session.status, 403, "{}", dungeon_session.body);
    let dungeon_reader = enter_dungeon(&app, Auth::Bearer(&read_only), &wallet).await;
    assert_eq!(dungeon_reader.status, 403, "{}", dungeon_reader.body);

    assert!(registered(&app, "trn_paid").await.is_empty());
    assert!(registered(&app, "trn_free").await.is_empty());
    assert_eq!(usdc(&app, &wallet).await, 10_000_000, "nothing moved");
}

#[tokio::test]
async fn a_retried_call_after_a_202_does_not_pay_twice() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    app.dungeon_noon();
    let (session, key, wallet) = spender(
        &app,
        json!({"maxUsdcPerDay": 10, "maxUsdcPerEntry": 5}),
        10_000_000,
    )
    .await;
    app.create_tournament(app.new_tournament("trn_slow", 2_000_000, 10, Duration::hours(1), 2))
        .await;

    let pending = register(&app, Auth::Bearer(&key), "trn_slow", &wallet).await;
    assert_eq!(pending.status, 202, "{}", pending.body);
    assert_eq!(pending.body["retryable"], true);
    let again = register(&app, Auth::Bearer(&key), "trn_slow", &wallet).await;
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(
        again.body["message"], pending.body["message"],
        "the same payment"
    );
    app.advance(Duration::seconds(4));
    let done = register(&app, Auth::Bearer(&key), "trn_slow", &wallet).await;
    assert_eq!(done.status, 201, "{}", done.body);
    assert_eq!(
        registered(&app, "trn_slow").await,
        std::slice::from_ref(&wallet)
    );
    assert_eq!(usdc(&app, &wallet).await, 8_000_000, "one fee");
    let after = register(&app, Auth::Bearer(&key), "trn_slow", &wallet).await;
    assert_eq!(after.status, 409, "already registered: {}", after.body);
    assert_eq!(usdc(&app, &wallet).await, 8_000_000);

    // The dungeon: the same quote resent pays once, and enters once it is final.
    let today = app.dungeon_today();
    let quote = app.dungeon_quote(&today, &wallet).await;
    let body = json!({"quoteId": quote["quoteId"], "payerWallet": wallet, "payFrom": "embedded"});
    let first = app
        .dungeon_enter(&today, Auth::Bearer(&key), body.clone())
        .await;
    assert_eq!(first.status, 202, "{}", first.body);
    let second = app
        .dungeon_enter(&today, Auth::Bearer(&key), body.clone())
        .await;
    assert_eq!(second.status, 202, "{}", second.body);
    app.advance(Duration::seconds(4));
    let entered = app
        .dungeon_enter(&today, Auth::Bearer(&key), body.clone())
        .await;
    assert_eq!(entered.status, 201, "{}", entered.body);
    assert_eq!(usdc(&app, &wallet).await, 7_000_000, "one entry fee");
    let used = app.dungeon_enter(&today, Auth::Bearer(&key), body).await;
    assert_eq!(used.status, 409, "{}", used.body);
    assert_eq!(listed_spend(&app, &session).await["spentTodayUsdc"], 3.0);

    // A payment nobody comes back for is settled by its job: the run is opened.
    let quote = app.dungeon_quote(&today, &wallet).await;
    let dropped = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&key),
            json!({"quoteId": quote["quoteId"], "payFrom": "embedded", "class": "mage"}),
        )
        .await;
    assert_eq!(dropped.status, 202, "{}", dropped.body);
    app.advance(Duration::minutes(4));
    let pass = app.run_scheduler().await;
    assert_eq!(pass.jobs_failed, 0, "{pass:?}");
    let (class,): (String,) = sqlx::query_as("SELECT class FROM dungeon_runs WHERE quote_id = $1")
        .bind(quote["quoteId"].as_str().expect("quote"))
        .fetch_one(app.state.store.read())
        .await
        .expect("the settled run");
    assert_eq!(class, "mage");
    assert_eq!(usdc(&app, &wallet).await, 6_000_000);
}

#[tokio::test]
async fn a_refunded_entry_releases_its_spend() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    let (session, key, wallet) = spender(
        &app,
        json!({"maxUsdcPerDay": 10, "maxUsdcPerEntry": 5}),
        10_000_000,
    )
    .await;
    app.create_tournament(app.new_tournament("trn_race", 2_000_000, 1, Duration::hours(1), 2))
        .await;
    let pending = register(&app, Auth::Bearer(&key), "trn_race", &wallet).await;
    assert_eq!(pending.status, 202, "{}", pending.body);
    assert_eq!(listed_spend(&app, &session).await["spentTodayUsdc"], 2.0);

    // Someone else takes the last seat while the fee is on its way.
    let other = crucible::chain::Keypair::generate();
    let other_wallet = other.pubkey().to_string();
    app.airdrop(&other_wallet, 50_000_000, 5_000_000).await;
    let memo =
        crucible::tournaments::registration_memo("trn_race", std::slice::from_ref(&other_wallet));
    let paid = app
        .state
        .chain
        .transfer_token(
            &other,
            &app.state.chain.escrow().address,
            app.state.chain.stablecoin_mint(),
            2_000_000,
            &memo,
        )
        .await
        .expect("pay");
    app.advance(Duration::seconds(4));
    let seated = app
        .post(
            "/api/tournaments/trn_race/register",
            Auth::None,
            json!({"registeredWallet": other_wallet, "txSignature": paid, "payerWallet": other_wallet}),
        )
        .await;
    assert_eq!(seated.status, 201, "{}", seated.body);

    let refused = register(&app, Auth::Bearer(&key), "trn_race", &wallet).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(refused.error().contains("refunded"), "{}", refused.body);
    let refunds: Vec<(i64, String)> = sqlx::query_as(
        "SELECT amount_raw, wallet FROM payouts WHERE source_kind = 'refund' AND source_id = 'trn_race'",
    )
    .fetch_all(app.state.store.read())
    .await
    .expect("refunds");
    assert_eq!(refunds, [(2_000_000, wallet.clone())]);
    assert_eq!(listed_spend(&app, &session).await["spentTodayUsdc"], 0.0);
    let again = register(&app, Auth::Bearer(&key), "trn_race", &wallet).await;
    assert_eq!(again.status, 409, "{}", again.body);
    let (released,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM audit_log WHERE action = 'key.spend_release'")
            .fetch_one(app.state.store.read())
            .await
            .expect("audit");
    assert_eq!(released, 1);
}

#[tokio::test]
async fn spend_limits_are_validated_and_a_refused_body_creates_nothing() {
    let app = TestApp::spawn().await;
    let session = app.session("limits@example.com").await;
    let refused = [
        (
            json!({"maxUsdcPerDay": 0, "maxUsdcPerEntry": 0}),
            "maxUsdcPerDay",
        ),
        (
            json!({"maxUsdcPerDay": -1, "maxUsdcPerEntry": 1}),
            "maxUsdcPerDay",
        ),
        (
            json!({"maxUsdcPerDay": 10, "maxUsdcPerEntry": 0.0000001}),
            "maxUsdcPerEntry",
        ),
        (
            json!({"maxUsdcPerDay": 1000000.5, "maxUsdcPerEntry": 1}),
            "maxUsdcPerDay",
        ),
        (
            json!({"maxUsdcPerDay": 1, "maxUsdcPerEntry": 2}),
            "must not exceed",
        ),
        (
            json!({"maxUsdcPerDay": "5", "maxUsdcPerEntry": 1}),
            "maxUsdcPerDay",
        ),
        (json!({"maxUsdcPerDay": 5}), "maxUsdcPerEntry"),
        (
            json!({"maxUsdcPerDay": 5, "maxUsdcPerEntry": 1, "perWeek": 9}),
            "perWeek",
        ),
        (json!([5, 1]), "spend"),
    ];
    for (spend, named) in refused {
        let answer = app
            .post(
                "/api/api-keys",
                Auth::Session(&session),
                json!({"name": "bad", "spend": spend}),
            )
            .await;
        assert_eq!(answer.status, 400, "{spend}: {}", answer.body);
        assert!(answer.error().contains(named), "{spend}: {}", answer.body);
    }
    let keys = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(keys.body["keys"], json!([]), "nothing was created");
    let (audited,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM audit_log WHERE action = 'key.create'")
            .fetch_one(app.state.store.read())
            .await
            .expect("audit");
    assert_eq!(audited, 0);

    let created = app
        .create_key(
            &session,
            json!({"name": "good", "spend": {"maxUsdcPerDay": 0.3, "maxUsdcPerEntry": 0.000001}}),
        )
        .await;
    assert_eq!(
        created["spend"],
        json!({"maxUsdcPerDay": 0.3, "maxUsdcPerEntry": 0.000001, "spentTodayUsdc": 0.0})
    );
    let plain = app.create_key(&session, json!({"name": "plain"})).await;
    assert_eq!(plain["spend"], Value::Null);
    let listed = app.get("/api/api-keys", Auth::Session(&session)).await;
    let spends: Vec<&Value> = listed.body["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|key| &key["spend"])
        .collect();
    assert!(spends.contains(&&Value::Null) && spends.iter().any(|s| s["maxUsdcPerDay"] == 0.3));
}

#[tokio::test]
async fn the_keys_page_sets_and_shows_spend_limits() {
    let app = TestApp::spawn().await;
    let (session, _, _) = spender(
        &app,
        json!({"maxUsdcPerDay": 10, "maxUsdcPerEntry": 2.5}),
        0,
    )
    .await;
    app.create_key(&session, json!({"name": "plain"})).await;
    let html = app
        .client
        .get(format!("{}/keys", app.address))
        .header("cookie", format!("session-token={session}"))
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("html");
    assert!(
        html.contains(r#"name="spend.maxUsdcPerDay""#),
        "the form sets the limits"
    );
    assert!(html.contains(r#"name="spend.maxUsdcPerEntry""#));
    assert!(html.contains("Embedded wallet spend"));
    assert!(
        html.contains("0 of 10 USDC today"),
        "the key's limits and today's spend"
    );
    assert!(html.contains("at most 2.5 USDC per entry"));
    assert!(html.contains("cannot pay"), "a key without limits says so");
}
