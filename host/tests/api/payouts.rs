//! Prizes: the pool split over the final standings, paid from the escrow on simnet, never twice.

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::domain::WalletAddress;
use crucible::scheduler::Scheduler;
use serde_json::json;

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

/// Register `keypair`'s own wallet, paying its fee.
async fn enter(app: &TestApp, keypair: &Keypair, auth: Auth<'_>) {
    let wallet = keypair.pubkey().to_string();
    let memo = crucible::tournaments::registration_memo("trn_prize", std::slice::from_ref(&wallet));
    let escrow = app.state.chain.escrow().address.clone();
    let mint = app.state.chain.stablecoin_mint().to_owned();
    let signature = app
        .state
        .chain
        .transfer_token(keypair, &escrow, &mint, FEE, &memo)
        .await
        .expect("pay");
    let response = app
        .post(
            "/api/tournaments/trn_prize/register",
            auth,
            json!({"registeredWallet": wallet, "txSignature": signature, "payerWallet": wallet}),
        )
        .await;
    assert_eq!(response.status, 201, "{}", response.body);
}

async fn prize_tournament(app: &TestApp) {
    let mut new = app.new_tournament("trn_prize", FEE as i64, 10, Duration::minutes(1), 1);
    new.payout_split = vec![60, 40];
    new.rake_bps = 1000;
    app.create_tournament(new).await;
}

#[tokio::test]
async fn an_ended_paid_tournament_pays_its_winners_once_from_the_escrow() {
    let app = TestApp::spawn().await;
    prize_tournament(&app).await;
    let scheduler = Scheduler::new(Vec::new());

    // The winner enters through its account's embedded wallet with an API key.
    let (session, key) = app
        .account_with_key("winner@example.com", &["read", "write"])
        .await;
    let embedded = app.get("/api/account", Auth::Session(&session)).await.body["allChainWallets"]
        [0]
    .as_str()
    .expect("wallet")
    .to_owned();
    let signing =
        crucible::custodial::signing_key(&app.state, &WalletAddress::parse(&embedded).expect("w"))
            .await
            .expect("key")
            .expect("custodial");
    let winner = Keypair::from_secret(signing.to_bytes());
    let second = Keypair::generate();
    let third = Keypair::generate();
    // More SOL, more gain when SOL's price rises: 4, 2 and 1 SOL beside 10 USDC each.
    for (keypair, lamports) in [
        (&winner, 4_000_000_000),
        (&second, 2_000_000_000),
        (&third, 1_000_000_000),
    ] {
        app.airdrop(&keypair.pubkey().to_string(), lamports, 10_000_000)
            .await;
    }
    enter(&app, &winner, Auth::Bearer(&key)).await;
    enter(&app, &second, Auth::None).await;
    enter(&app, &third, Auth::None).await;

    app.advance(Duration::minutes(1));
    scheduler
        .run_due(&app.state)
        .await
        .expect("start: baselines");
    // SOL doubles (a deposit would be a flow, not a gain).
    app.pump_sol(41_421_000_000).await;
    let before = [
        usdc(&app, &embedded).await,
        usdc(&app, &second.pubkey().to_string()).await,
    ];

    app.advance(Duration::hours(1));
    let pass = scheduler.run_due(&app.state).await.expect("end and pay");
    let errors: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT id, last_error FROM jobs WHERE done_at IS NULL")
            .fetch_all(app.state.store.read())
            .await
            .expect("jobs");
    assert_eq!(pass.jobs_failed, 0, "{pass:?} {errors:?}");

    // Pool: 3 × 2 USDC − 10 % = 5.4 USDC; 60/40.
    assert_eq!(usdc(&app, &embedded).await - before[0], 3_240_000);
    assert_eq!(
        usdc(&app, &second.pubkey().to_string()).await - before[1],
        2_160_000
    );

    let mine = app
        .get("/api/account/payouts", Auth::Bearer(&key))
        .await
        .body;
    let payout = &mine["payouts"][0];
    assert_eq!(payout["status"], "sent");
    assert_eq!(payout["rank"], 1);
    assert_eq!(payout["amountRaw"], "3240000");
    assert!(payout["txSignature"].is_string());
    let entries = app
        .get("/api/account/tournaments", Auth::Bearer(&key))
        .await
        .body;
    assert_eq!(entries["tournaments"][0]["prizeAwardedRaw"], "3240000");

    // Running the end and the payout jobs again pays nothing more.
    crucible::tournaments::lifecycle::end(&app.state, "trn_prize")
        .await
        .expect("end again");
    let payout_id = payout["payoutId"].as_str().expect("id");
    crucible::tournaments::payouts::send(&app.state, payout_id)
        .await
        .expect("send again");
    assert_eq!(
        usdc(&app, &embedded).await - before[0],
        3_240_000,
        "paid once"
    );
    let (rows,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM payouts WHERE source_id = 'trn_prize'")
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
    assert_eq!(rows, 2, "the third place wins nothing with a 60/40 split");
}

#[tokio::test]
async fn an_unseen_recorded_transfer_is_not_replaced_until_its_blockhash_has_expired() {
    let app = TestApp::spawn().await;
    let winner = Keypair::generate().pubkey().to_string();
    // Fund the escrow as entry fees would.
    app.airdrop(
        &app.state.chain.escrow().address.to_string(),
        1_000_000_000,
        5_000_000,
    )
    .await;
    let now = crucible::clock::to_millis(app.state.now());
    // A crash after signing and recording, before the network saw the transfer.
    sqlx::query(
        "INSERT INTO payouts (id, wallet, source_kind, source_id, rank, amount_raw, mint, status, tx_signature,
                              attempts, last_attempt_at, created_at)
         VALUES ('pay_x', $1, 'tournament', 'trn_x', 1, 1000000, $2, 'pending', $3, 1, $4, $4)",
    )
    .bind(&winner)
    .bind(app.state.chain.stablecoin_mint())
    .bind(bs58::encode([7u8; 64]).into_string())
    .bind(now)
    .execute(app.state.store.write())
    .await
    .expect("payout");

    let early = crucible::tournaments::payouts::send(&app.state, "pay_x").await;
    assert!(
        early.is_err(),
        "must not sign a second transfer while the first may still land"
    );
    assert_eq!(usdc(&app, &winner).await, 0);

    app.advance(Duration::minutes(3));
    crucible::tournaments::payouts::send(&app.state, "pay_x")
        .await
        .expect("re-signed after expiry");
    assert_eq!(usdc(&app, &winner).await, 1_000_000);
    crucible::tournaments::payouts::send(&app.state, "pay_x")
        .await
        .expect("no-op");
    assert_eq!(usdc(&app, &winner).await, 1_000_000);
}
