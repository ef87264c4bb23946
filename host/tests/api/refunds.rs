//! Refunds: a cancelled paid tournament pays every entry back to the wallet that paid it, on
//! chain, exactly once; a paid tournament short of its minimum at the start cancels itself.

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::domain::WalletAddress;
use crucible::scheduler::Scheduler;

const FEE: u64 = 2_000_000;

async fn usdc(app: &TestApp, wallet: &str) -> u64 {
    let address = WalletAddress::parse(wallet).expect("address");
    app.state
        .chain
        .portfolio(&address)
        .await
        .expect("portfolio")
        .token(app.state.chain.stablecoin_mint())
}

/// A paid tournament starting in a minute, `min` participants needed at the start.
async fn paid_tournament(app: &TestApp, id: &str, min: i64) {
    let mut new = app.new_tournament(id, FEE as i64, 10, Duration::minutes(1), 2);
    new.min_participants = min;
    app.create_tournament(new).await;
}

/// `payer` pays for `wallets` and registers them.
async fn enter(app: &TestApp, id: &str, payer: &Keypair, wallets: &[String], auth: Auth<'_>) {
    app.pay_and_register(id, payer, wallets, FEE, auth).await;
}

async fn funded(app: &TestApp) -> Keypair {
    let keypair = Keypair::generate();
    app.airdrop(&keypair.pubkey().to_string(), 1_000_000_000, 10_000_000)
        .await;
    keypair
}

async fn refunds(app: &TestApp, id: &str) -> Vec<(String, i64, String, Option<String>)> {
    sqlx::query_as(
        "SELECT wallet, amount_raw, status, tx_signature FROM payouts
         WHERE source_kind = 'refund' AND source_id = $1 ORDER BY wallet",
    )
    .bind(id)
    .fetch_all(app.state.store.read())
    .await
    .expect("refunds")
}

#[tokio::test]
async fn a_cancelled_paid_tournament_refunds_each_payer_exactly_once() {
    let app = TestApp::spawn().await;
    paid_tournament(&app, "trn_refund", 0).await;
    let scheduler = Scheduler::new(Vec::new());

    // One payer enters two wallets with one payment, through its account's key (so the refund is
    // attributed to the account); another pays for itself twice, in two payments.
    let (session, key) = app
        .account_with_key("host-refund@example.com", &["read", "write"])
        .await;
    let embedded = app.get("/api/account", Auth::Session(&session)).await.body["allChainWallets"]
        [0]
    .as_str()
    .expect("wallet")
    .to_owned();
    let signing = crucible::custodial::signing_key(
        &app.state.store,
        &app.state.sealer,
        &WalletAddress::parse(&embedded).unwrap(),
    )
    .await
    .expect("key")
    .expect("custodial");
    let attributed = Keypair::from_secret(signing.to_bytes());
    app.airdrop(&embedded, 1_000_000_000, 10_000_000).await;
    let linked = crate::helpers::TestWallet::new(77);
    app.link_wallet(&session, &linked).await;
    enter(
        &app,
        "trn_refund",
        &attributed,
        &[embedded.clone(), linked.address()],
        Auth::Bearer(&key),
    )
    .await;

    let other = funded(&app).await;
    let other_wallet = other.pubkey().to_string();
    enter(
        &app,
        "trn_refund",
        &other,
        std::slice::from_ref(&other_wallet),
        Auth::None,
    )
    .await;
    let second = Keypair::generate().pubkey().to_string();
    enter(
        &app,
        "trn_refund",
        &other,
        std::slice::from_ref(&second),
        Auth::None,
    )
    .await;
    let before = (usdc(&app, &embedded).await, usdc(&app, &other_wallet).await);

    assert!(app.cancel_tournament("trn_refund").await.expect("cancel"));
    let detail = app
        .get("/api/tournaments/trn_refund", Auth::None)
        .await
        .body;
    assert_eq!(detail["status"], "cancelled");
    assert_eq!(detail["cancellationReason"], "cancelled by its host");
    let pass = scheduler.run_due(&app.state).await.expect("pass");
    assert_eq!(pass.jobs_failed, 0, "{pass:?}");

    assert_eq!(
        usdc(&app, &embedded).await - before.0,
        2 * FEE,
        "both wallets' fees, to the payer"
    );
    assert_eq!(
        usdc(&app, &other_wallet).await - before.1,
        2 * FEE,
        "both payments"
    );
    let rows = refunds(&app, "trn_refund").await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter()
            .all(|(_, _, status, signature)| status == "sent" && signature.is_some())
    );

    let mine = app
        .get("/api/account/payouts", Auth::Bearer(&key))
        .await
        .body;
    let refund = &mine["payouts"][0];
    assert_eq!(refund["sourceKind"], "refund", "{mine}");
    assert_eq!(refund["sourceId"], "trn_refund");
    assert_eq!(refund["amountRaw"], (2 * FEE).to_string());
    assert_eq!(refund["status"], "sent");

    // Cancelling again, or running the jobs again, refunds nothing more.
    assert!(!app.cancel_tournament("trn_refund").await.expect("again"));
    scheduler.run_due(&app.state).await.expect("pass");
    assert_eq!(refunds(&app, "trn_refund").await.len(), 2);
    assert_eq!(usdc(&app, &other_wallet).await - before.1, 2 * FEE);
}

#[tokio::test]
async fn a_refund_interrupted_between_signing_and_sending_is_paid_once_after_a_restart() {
    let app = TestApp::spawn().await;
    paid_tournament(&app, "trn_refund_crash", 0).await;
    let payer = funded(&app).await;
    let wallet = payer.pubkey().to_string();
    enter(
        &app,
        "trn_refund_crash",
        &payer,
        std::slice::from_ref(&wallet),
        Auth::None,
    )
    .await;
    let before = usdc(&app, &wallet).await;
    assert!(
        app.cancel_tournament("trn_refund_crash")
            .await
            .expect("cancel")
    );
    let (refund_id,): (String,) = sqlx::query_as(
        "SELECT id FROM payouts WHERE source_kind = 'refund' AND source_id = 'trn_refund_crash'",
    )
    .fetch_one(app.state.store.read())
    .await
    .expect("refund");
    let recorded = crucible::tournaments::payouts::sign_and_record(app.state.payer(), &refund_id)
        .await
        .expect("signed and recorded");
    // The process dies before sending.
    let app = app.restart().await;
    app.advance(Duration::seconds(31));
    let pass = Scheduler::new(Vec::new())
        .run_due(&app.state)
        .await
        .expect("pass");
    assert_eq!(pass.jobs_failed, 0, "{pass:?}");
    let rows = refunds(&app, "trn_refund_crash").await;
    assert_eq!(rows[0].2, "sent");
    assert_eq!(
        rows[0].3.as_deref(),
        Some(recorded.as_str()),
        "the recorded transfer, resent"
    );
    assert_eq!(usdc(&app, &wallet).await - before, FEE);
}

#[tokio::test]
async fn a_paid_tournament_short_of_its_minimum_at_the_start_is_cancelled_and_refunded() {
    let app = TestApp::spawn().await;
    paid_tournament(&app, "trn_short", 2).await;
    paid_tournament(&app, "trn_short_off", 0).await;
    let payer = funded(&app).await;
    let wallet = payer.pubkey().to_string();
    enter(
        &app,
        "trn_short",
        &payer,
        std::slice::from_ref(&wallet),
        Auth::None,
    )
    .await;
    enter(
        &app,
        "trn_short_off",
        &payer,
        std::slice::from_ref(&wallet),
        Auth::None,
    )
    .await;
    let before = usdc(&app, &wallet).await;

    app.advance(Duration::minutes(1));
    let pass = Scheduler::new(Vec::new())
        .run_due(&app.state)
        .await
        .expect("pass");
    assert_eq!(pass.jobs_failed, 0, "{pass:?}");
    let short = app.get("/api/tournaments/trn_short", Auth::None).await.body;
    assert_eq!(short["status"], "cancelled");
    assert_eq!(short["minParticipants"], 2);
    assert!(
        short["cancellationReason"]
            .as_str()
            .is_some_and(|why| why.contains("1 of the 2")),
        "{short}"
    );
    assert_eq!(usdc(&app, &wallet).await - before, FEE, "refunded once");
    // With the rule off, one participant is enough.
    let off = app
        .get("/api/tournaments/trn_short_off", Auth::None)
        .await
        .body;
    assert_eq!(off["status"], "live");
}
