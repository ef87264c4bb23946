//! Tournament registration with real payments on the embedded simnet.

use crate::helpers::{Auth, Body, TestApp};
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::domain::WalletAddress;
use serde_json::{Value, json};

const FEE: i64 = 2_000_000;

async fn tournament(app: &TestApp, id: &str, fee: i64, max: i64) {
    app.create_tournament(app.new_tournament(id, fee, max, Duration::hours(1), 4))
        .await;
}

fn wallet(seed: u8) -> String {
    WalletAddress::from_public_key(&[seed; 32]).to_string()
}

async fn register(
    app: &TestApp,
    id: &str,
    auth: Auth<'_>,
    body: Value,
) -> crate::helpers::TestResponse {
    app.post(&format!("/api/tournaments/{id}/register"), auth, body)
        .await
}

async fn participants(app: &TestApp, id: &str) -> i64 {
    app.get(&format!("/api/tournaments/{id}"), Auth::None)
        .await
        .body["currentParticipants"]
        .as_i64()
        .expect("count")
}

/// A keypair holding SOL for fees and `usdc_raw` of the simnet stablecoin.
async fn funded_payer(app: &TestApp, usdc_raw: u64) -> Keypair {
    let payer = Keypair::generate();
    app.airdrop(&payer.pubkey().to_string(), 1_000_000_000, usdc_raw)
        .await;
    payer
}

/// Pay `amount` to the escrow with `memo`; returns the signature.
async fn pay(app: &TestApp, payer: &Keypair, amount: u64, memo: &str) -> String {
    let escrow = app.state.chain.escrow().address.clone();
    let mint = app.state.chain.stablecoin_mint().to_owned();
    app.state
        .chain
        .transfer_token(payer, &escrow, &mint, amount, memo)
        .await
        .expect("transfer")
}

fn memo(id: &str, wallets: &[&str]) -> String {
    crucible::tournaments::registration_memo(
        id,
        &wallets.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
    )
}

#[tokio::test]
async fn free_registration_takes_a_null_signature_and_counts_wallets() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_free", 0, 100).await;
    let one = register(
        &app,
        "trn_free",
        Auth::None,
        json!({"registeredWallet": wallet(1), "txSignature": null}),
    )
    .await;
    assert_eq!(one.status, 201, "{}", one.body);
    assert_eq!(one.body["count"], 1);
    let many = register(
        &app,
        "trn_free",
        Auth::None,
        json!({"registeredWallets": [wallet(2), wallet(3), wallet(4)], "txSignature": null}),
    )
    .await;
    assert_eq!(many.status, 201);
    assert_eq!(many.body["count"], 3);
    assert_eq!(participants(&app, "trn_free").await, 4);

    let again = register(
        &app,
        "trn_free",
        Auth::None,
        json!({"registeredWallets": [wallet(9), wallet(1)], "txSignature": null}),
    )
    .await;
    assert_eq!(again.status, 409);
    assert!(again.error().contains("already registered"));
    assert_eq!(
        participants(&app, "trn_free").await,
        4,
        "all or nothing: wallet 9 was not registered either"
    );
}

#[tokio::test]
async fn malformed_registrations_are_400_and_change_nothing() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_v", 0, 100).await;
    let eleven: Vec<String> = (1..=11).map(wallet).collect();
    let cases = [
        json!({"registeredWallets": eleven, "txSignature": null}),
        json!({"registeredWallets": [], "txSignature": null}),
        json!({"registeredWallets": [wallet(1), wallet(1)], "txSignature": null}),
        json!({"registeredWallet": wallet(1), "registeredWallets": [wallet(2)], "txSignature": null}),
        json!({"txSignature": null}),
        json!({"registeredWallet": wallet(1)}),
        json!({"registeredWallet": "not-a-wallet", "txSignature": null}),
        json!({"registeredWallet": wallet(1), "txSignature": "5xSig"}),
        json!({"registeredWallet": 7, "txSignature": null}),
    ];
    for body in cases {
        let response = register(&app, "trn_v", Auth::None, body.clone()).await;
        assert_eq!(response.status, 400, "{body}: {}", response.body);
        assert!(!response.error().is_empty());
    }
    let garbage = app
        .request(
            "POST",
            "/api/tournaments/trn_v/register",
            Auth::None,
            Some(Body::Raw("application/json", b"{".to_vec())),
        )
        .await;
    assert_eq!(garbage.status, 400);
    assert_eq!(participants(&app, "trn_v").await, 0);
    let missing = register(
        &app,
        "trn_nope",
        Auth::None,
        json!({"registeredWallet": wallet(1), "txSignature": null}),
    )
    .await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn a_paid_entry_is_202_until_final_then_201_and_its_signature_pays_once() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    tournament(&app, "trn_paid", FEE, 100).await;
    let payer = funded_payer(&app, 10_000_000).await;
    let wallets = [wallet(1), wallet(2)];
    let signature = pay(
        &app,
        &payer,
        2 * FEE as u64,
        &memo("trn_paid", &[&wallets[1], &wallets[0]]),
    )
    .await;
    let body = json!({"registeredWallets": wallets, "txSignature": signature, "payerWallet": payer.pubkey().to_string()});

    let pending = register(&app, "trn_paid", Auth::None, body.clone()).await;
    assert_eq!(pending.status, 202, "{}", pending.body);
    assert_eq!(pending.body["retryable"], true);
    assert_eq!(participants(&app, "trn_paid").await, 0);

    app.advance(Duration::seconds(3));
    let registered = register(&app, "trn_paid", Auth::None, body).await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    assert_eq!(registered.body["count"], 2);
    assert_eq!(participants(&app, "trn_paid").await, 2);
    let detail = app.get("/api/tournaments/trn_paid", Auth::None).await.body;
    assert_eq!(detail["prizePool"], 4.0);

    // The same payment cannot register other wallets.
    let reused = register(&app, "trn_paid", Auth::None,
        json!({"registeredWallet": wallet(3), "txSignature": signature, "payerWallet": payer.pubkey().to_string()})).await;
    assert_eq!(reused.status, 409);
    assert!(reused.error().contains("already paid"));
}

#[tokio::test]
async fn wrong_memo_or_amount_is_422_naming_the_field() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_check", FEE, 100).await;
    let payer = funded_payer(&app, 10_000_000).await;
    let payer_address = payer.pubkey().to_string();

    let tampered = pay(&app, &payer, FEE as u64, "reg:trn_check:0000000000000000").await;
    let response = register(&app, "trn_check", Auth::None,
        json!({"registeredWallet": wallet(1), "txSignature": tampered, "payerWallet": payer_address})).await;
    assert_eq!(response.status, 422, "{}", response.body);
    assert!(response.error().contains("memo"), "{}", response.error());

    let short = pay(
        &app,
        &payer,
        (FEE - 1) as u64,
        &memo("trn_check", &[&wallet(1)]),
    )
    .await;
    let response = register(
        &app,
        "trn_check",
        Auth::None,
        json!({"registeredWallet": wallet(1), "txSignature": short, "payerWallet": payer_address}),
    )
    .await;
    assert_eq!(response.status, 422);
    assert!(response.error().contains("amount"), "{}", response.error());

    // Paying for one wallet does not pay for two.
    let single = pay(&app, &payer, FEE as u64, &memo("trn_check", &[&wallet(1)])).await;
    let response = register(&app, "trn_check", Auth::None,
        json!({"registeredWallets": [wallet(1), wallet(2)], "txSignature": single, "payerWallet": payer_address})).await;
    assert_eq!(response.status, 422);
    assert_eq!(participants(&app, "trn_check").await, 0);

    let no_payer = register(
        &app,
        "trn_check",
        Auth::None,
        json!({"registeredWallet": wallet(1), "txSignature": single}),
    )
    .await;
    assert_eq!(no_payer.status, 400);
    // Not a signature at all (it could never land): refused at once. A well-formed signature
    // the node has not seen yet is retryable for a while (see `contract_shapes`).
    let malformed = register(&app, "trn_check", Auth::None,
        json!({"registeredWallet": wallet(1), "txSignature": "not-a-signature", "payerWallet": payer_address})).await;
    assert_eq!(malformed.status, 422, "{}", malformed.body);
    assert!(
        malformed.error().contains("(signature)"),
        "{}",
        malformed.error()
    );
}

#[tokio::test]
async fn full_and_ended_tournaments_refuse() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_small", 0, 2).await;
    assert_eq!(
        register(
            &app,
            "trn_small",
            Auth::None,
            json!({"registeredWallets": [wallet(1), wallet(2)], "txSignature": null})
        )
        .await
        .status,
        201
    );
    let full = register(
        &app,
        "trn_small",
        Auth::None,
        json!({"registeredWallet": wallet(3), "txSignature": null}),
    )
    .await;
    assert_eq!(full.status, 409);
    assert!(full.error().contains("full"));

    tournament(&app, "trn_over", 0, 10).await;
    app.advance(Duration::hours(6));
    let ended = register(
        &app,
        "trn_over",
        Auth::None,
        json!({"registeredWallet": wallet(4), "txSignature": null}),
    )
    .await;
    assert_eq!(ended.status, 410);
    // Live (after the start) is still open.
    tournament(&app, "trn_live", 0, 10).await;
    app.advance(Duration::hours(2));
    assert_eq!(
        register(
            &app,
            "trn_live",
            Auth::None,
            json!({"registeredWallet": wallet(5), "txSignature": null})
        )
        .await
        .status,
        201
    );
}

#[tokio::test]
async fn a_key_registers_only_its_accounts_wallets_and_the_entry_is_attributed() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_k", 0, 10).await;
    let (session, key) = app
        .account_with_key("reg@example.com", &["read", "write"])
        .await;
    let own = app.get("/api/account", Auth::Session(&session)).await.body["allChainWallets"][0]
        .as_str()
        .expect("wallet")
        .to_owned();

    let foreign = register(
        &app,
        "trn_k",
        Auth::Bearer(&key),
        json!({"registeredWallets": [own.clone(), wallet(7)], "txSignature": null}),
    )
    .await;
    assert_eq!(foreign.status, 403);
    assert!(foreign.error().contains(&wallet(7)));

    let read_only = app
        .create_key(&session, json!({"name": "ro", "scopes": ["read"]}))
        .await;
    let scoped = register(
        &app,
        "trn_k",
        Auth::Bearer(read_only["key"].as_str().expect("key")),
        json!({"registeredWallet": own, "txSignature": null}),
    )
    .await;
    assert_eq!(scoped.status, 403);

    let mine = register(
        &app,
        "trn_k",
        Auth::Bearer(&key),
        json!({"registeredWallet": own, "txSignature": null}),
    )
    .await;
    assert_eq!(mine.status, 201);
    let listed = app
        .get("/api/account/tournaments", Auth::Bearer(&key))
        .await
        .body;
    assert_eq!(listed["tournaments"][0]["tournamentId"], "trn_k");
    assert_eq!(listed["tournaments"][0]["wallet"], own);

    let revoked = register(
        &app,
        "trn_k",
        Auth::Bearer("svc_live_unknown"),
        json!({"registeredWallet": wallet(8), "txSignature": null}),
    )
    .await;
    assert_eq!(revoked.status, 401, "a bad key is refused, not ignored");
}

#[tokio::test]
async fn concurrent_identical_registrations_register_once() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_race", 0, 100).await;
    let body = json!({"registeredWallets": [wallet(1), wallet(2)], "txSignature": null});
    let attempts = (0..6).map(|_| register(&app, "trn_race", Auth::None, body.clone()));
    let statuses: Vec<u16> = futures_util::future::join_all(attempts)
        .await
        .into_iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 409),
        "{statuses:?}"
    );
    assert_eq!(participants(&app, "trn_race").await, 2);
    let (rows,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM tournament_registrations WHERE tournament_id = 'trn_race'",
    )
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    assert_eq!(rows, 2);
}

#[tokio::test]
async fn concurrent_registrations_share_transactions_and_each_gets_its_own_answer() {
    let app = TestApp::spawn().await;
    tournament(&app, "trn_group", 0, 60).await;
    // 80 requests at once for 60 seats: every tenth repeats the wallet of the one before it,
    // and three send two wallets of which the second is taken by a single registration.
    let bodies: Vec<Value> = (0..80_u8)
        .map(|n| match n {
            _ if n % 10 == 9 => json!({"registeredWallet": wallet(n), "txSignature": null}),
            70..=72 => {
                json!({"registeredWallets": [wallet(100 + n), wallet(3)], "txSignature": null})
            }
            _ => json!({"registeredWallet": wallet(n + 1), "txSignature": null}),
        })
        .collect();
    let answers = futures_util::future::join_all(
        bodies
            .iter()
            .map(|body| register(&app, "trn_group", Auth::None, body.clone())),
    )
    .await;
    let mut seated = 0;
    for (body, answer) in bodies.iter().zip(&answers) {
        match answer.status {
            201 => seated += answer.body["count"].as_i64().expect("count"),
            409 => {}
            other => panic!("{body}: {other} {}", answer.body),
        }
    }
    let (rows,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM tournament_registrations WHERE tournament_id = 'trn_group'",
    )
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    // Every 201 is stored, nothing else is, and the seat count agrees with the rows.
    assert_eq!(rows, seated);
    assert_eq!(participants(&app, "trn_group").await, rows);
    assert!(rows <= 60);
    for n in 70..=72_u8 {
        let (first,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM tournament_registrations WHERE tournament_id = 'trn_group' AND wallet = $1",
        )
        .bind(wallet(100 + n))
        .fetch_one(app.state.store.read())
        .await
        .expect("count");
        // Refused (its second wallet was taken first, or the seats ran out): no half behind.
        // Seated (it came before the single registration of that wallet): both wallets.
        let expected = i64::from(answers[usize::from(n)].status == 201);
        assert_eq!(
            first,
            expected,
            "a two-wallet request is whole or absent (answered {})",
            answers[usize::from(n)].status
        );
    }
    let (batches, writes) = crate::helpers::group_commit_counts(&app.client, &app.address).await;
    assert!(writes >= 60, "{writes} writes");
    assert!(
        batches < writes,
        "{writes} writes in {batches} transactions"
    );
    // Each batch is timed before its writes are answered, so every one answered is counted.
    let series = "crucible_group_commit_batch_duration_seconds";
    let timed = |name: &'static str| crate::helpers::metric(&app.client, &app.address, None, name);
    let count = timed("crucible_group_commit_batch_duration_seconds_count")
        .await
        .expect(series);
    let all = timed("crucible_group_commit_batch_duration_seconds_bucket{le=\"+Inf\"}")
        .await
        .expect(series);
    assert!(count >= 1 && count <= batches, "{count} timed of {batches}");
    assert_eq!(all, count);
    // Each write's wait is timed before its caller goes on, so every seated registration's is
    // counted (and the setup's writes too).
    let waited = timed("crucible_group_commit_wait_seconds_count")
        .await
        .expect("waits");
    let created = answers.iter().filter(|answer| answer.status == 201).count() as u64;
    assert!(
        waited >= created && waited <= writes,
        "{waited} waits timed, {created} registrations, {writes} writes"
    );
}

#[tokio::test]
async fn registration_is_limited_per_ip_and_per_tournament() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    tournament(&app, "trn_rl", 0, 100).await;
    for n in 0..5 {
        let response = register(
            &app,
            "trn_rl",
            Auth::None,
            json!({"registeredWallet": wallet(n + 1), "txSignature": null}),
        )
        .await;
        assert_eq!(response.status, 201);
    }
    let limited = register(
        &app,
        "trn_rl",
        Auth::None,
        json!({"registeredWallet": wallet(20), "txSignature": null}),
    )
    .await;
    assert_eq!(limited.status, 429);
    assert!(limited.body["retryAfter"].as_u64().expect("retryAfter") >= 1);
    assert!(limited.headers.contains_key("retry-after"));
}
