//! Prizes: the pool split over the final standings, paid from the escrow on simnet, never twice.

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::domain::WalletAddress;
use crucible::scheduler::Scheduler;
use serde_json::json;

const FEE: u64 = 2_000_000;

pub(crate) async fn usdc(app: &TestApp, wallet: &str) -> u64 {
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
    app.pay_and_register(
        "trn_prize",
        keypair,
        std::slice::from_ref(&wallet),
        FEE,
        auth,
    )
    .await;
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
    let signing = crucible::custodial::signing_key(
        &app.state.store,
        &app.state.sealer,
        &WalletAddress::parse(&embedded).expect("w"),
    )
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
    // The final standings link each prize to the transfer that paid it, on the board and the page.
    let board = app
        .get("/api/tournaments/trn_prize/leaderboard", Auth::None)
        .await
        .body;
    let first = &board["entries"][0];
    assert_eq!(first["finalRank"], 1);
    assert_eq!(first["prizeTxSignature"], payout["txSignature"], "{board}");
    assert!(
        board["entries"][2]["prizeTxSignature"].is_null(),
        "no prize, no transfer"
    );
    let page = app
        .client
        .get(format!("{}/tournaments/trn_prize", app.address))
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("html");
    let signature = payout["txSignature"].as_str().expect("signature");
    assert!(
        page.contains(&signature[..4]),
        "the prize transfer is on the page"
    );

    // Running the end and the payout jobs again pays nothing more.
    crucible::tournaments::lifecycle::end(
        &app.state.store,
        &*app.state.clock,
        &app.state.events,
        &app.state.chain,
        &app.state.leaderboards,
        "trn_prize",
    )
    .await
    .expect("end again");
    let payout_id = payout["payoutId"].as_str().expect("id");
    crucible::tournaments::payouts::send(app.state.payer(), payout_id)
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
    app.create_tournament(app.new_tournament("trn_x", 0, 10, Duration::minutes(1), 1))
        .await;
    let winner = Keypair::generate().pubkey().to_string();
    // Fund the escrow as entry fees would.
    app.airdrop(
        &app.state.chain.escrow().address.to_string(),
        1_000_000_000,
        5_000_000,
    )
    .await;
    let now = crucible::clock::to_millis(app.state.now());
    // A crash after signing and recording, before the network saw the transfer, by a version
    // that kept neither the signed bytes nor their last valid block height: wait out the time.
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

    let early = crucible::tournaments::payouts::send(app.state.payer(), "pay_x").await;
    assert!(
        early.is_err(),
        "must not sign a second transfer while the first may still land"
    );
    assert_eq!(usdc(&app, &winner).await, 0);

    app.advance(Duration::minutes(3));
    crucible::tournaments::payouts::send(app.state.payer(), "pay_x")
        .await
        .expect("re-signed after expiry");
    assert_eq!(usdc(&app, &winner).await, 1_000_000);
    crucible::tournaments::payouts::send(app.state.payer(), "pay_x")
        .await
        .expect("no-op");
    assert_eq!(usdc(&app, &winner).await, 1_000_000);
}

/// A pending prize of `amount` for a fresh wallet, from a tournament whose escrow is the
/// server's and holds the money. Returns the winner's wallet.
pub(crate) async fn pending_payout(app: &TestApp, payout_id: &str, amount: u64) -> String {
    let tournament = format!("trn_{payout_id}");
    app.create_tournament(app.new_tournament(&tournament, 0, 10, Duration::minutes(1), 1))
        .await;
    app.airdrop(
        &app.state.chain.escrow().address.to_string(),
        1_000_000_000,
        amount,
    )
    .await;
    let winner = Keypair::generate().pubkey().to_string();
    sqlx::query(
        "INSERT INTO payouts (id, wallet, source_kind, source_id, rank, amount_raw, mint, status, created_at)
         VALUES ($1, $2, 'tournament', $3, 1, $4, $5, 'pending', $6)",
    )
    .bind(payout_id)
    .bind(&winner)
    .bind(&tournament)
    .bind(amount as i64)
    .bind(app.state.chain.stablecoin_mint())
    .bind(crucible::clock::to_millis(app.state.now()))
    .execute(app.state.store.write())
    .await
    .expect("payout");
    winner
}

pub(crate) async fn payout_row(app: &TestApp, payout_id: &str) -> (String, Option<String>, i64) {
    sqlx::query_as("SELECT status, tx_signature, attempts FROM payouts WHERE id = $1")
        .bind(payout_id)
        .fetch_one(app.state.store.read())
        .await
        .expect("payout row")
}

/// How many transfers the chain ever saw to `wallet` (every landed transaction touching it).
pub(crate) async fn transfers_to(app: &TestApp, wallet: &str) -> usize {
    let signatures = app
        .rpc_result("getSignaturesForAddress", json!([wallet]))
        .await;
    signatures.as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn two_workers_racing_over_one_payout_pay_it_once() {
    let app = TestApp::spawn().await;
    let winner = pending_payout(&app, "pay_race", 1_500_000).await;
    let send = || crucible::tournaments::payouts::send(app.state.payer(), "pay_race");
    let (first, second) = tokio::join!(send(), send());
    assert!(
        first.is_ok() || second.is_ok(),
        "one of them pays: {first:?} {second:?}"
    );
    // The loser either found it held ("being sent by another worker") or already sent.
    for outcome in [&first, &second] {
        if let Err(error) = outcome {
            assert!(format!("{error:#}").contains("another worker"), "{error:#}");
        }
    }
    // Whatever the scheduler retries afterwards is a no-op.
    crucible::tournaments::payouts::send(app.state.payer(), "pay_race")
        .await
        .expect("no-op");
    assert_eq!(usdc(&app, &winner).await, 1_500_000);
    let (status, signature, attempts) = payout_row(&app, "pay_race").await;
    assert_eq!(status, "sent");
    assert!(signature.is_some());
    assert_eq!(attempts, 1, "signed once");
}

#[tokio::test]
async fn a_worker_that_stalled_past_its_lease_is_fenced_out() {
    let app = TestApp::spawn().await;
    let winner = pending_payout(&app, "pay_stall", 700_000).await;
    // Worker A signs and records, then stalls (its lease runs out) before sending.
    let recorded = crucible::tournaments::payouts::sign_and_record(app.state.payer(), "pay_stall")
        .await
        .expect("sign and record");
    // While A holds the lease, nobody else may touch the payout.
    let held = crucible::tournaments::payouts::send(app.state.payer(), "pay_stall").await;
    assert!(format!("{:#}", held.expect_err("held")).contains("another worker"));
    // A's lease runs out; worker B takes over with a newer fence and resends A's very bytes.
    app.advance(Duration::seconds(31));
    crucible::tournaments::payouts::send(app.state.payer(), "pay_stall")
        .await
        .expect("B pays");
    let (status, signature, attempts) = payout_row(&app, "pay_stall").await;
    assert_eq!(status, "sent");
    assert_eq!(
        signature.as_deref(),
        Some(recorded.as_str()),
        "A's transfer, not a new one"
    );
    assert_eq!(attempts, 1);
    assert_eq!(usdc(&app, &winner).await, 700_000);
    assert_eq!(transfers_to(&app, &winner).await, 1);
    // A wakes up and tries to record a new transfer: refused, the payout is B's and done.
    assert!(
        crucible::tournaments::payouts::sign_and_record(app.state.payer(), "pay_stall")
            .await
            .is_err()
    );
    assert_eq!(usdc(&app, &winner).await, 700_000);
}

#[tokio::test]
async fn a_crash_between_signing_and_sending_then_a_restart_pays_once() {
    let app = TestApp::spawn().await;
    let winner = pending_payout(&app, "pay_crash", 900_000).await;
    let recorded = crucible::tournaments::payouts::sign_and_record(app.state.payer(), "pay_crash")
        .await
        .expect("sign and record");
    // The process dies here: the transfer is recorded, never sent.
    let app = app.restart().await;
    app.advance(Duration::seconds(31));
    let scheduler = Scheduler::new(Vec::new());
    crucible::tournaments::payouts::send(app.state.payer(), "pay_crash")
        .await
        .expect("the restarted node pays");
    scheduler.run_due(&app.state).await.expect("pass");
    let (status, signature, _) = payout_row(&app, "pay_crash").await;
    assert_eq!(status, "sent");
    assert_eq!(signature.as_deref(), Some(recorded.as_str()));
    assert_eq!(usdc(&app, &winner).await, 900_000);
    assert_eq!(transfers_to(&app, &winner).await, 1);
}

#[tokio::test]
async fn a_recorded_transfer_is_replaced_only_once_it_can_no_longer_land() {
    let app = TestApp::spawn().await;
    let winner = pending_payout(&app, "pay_exp", 400_000).await;
    let recorded = crucible::tournaments::payouts::sign_and_record(app.state.payer(), "pay_exp")
        .await
        .expect("sign and record");
    let (wire,): (String,) = sqlx::query_as("SELECT signed_wire FROM payouts WHERE id = 'pay_exp'")
        .fetch_one(app.state.store.read())
        .await
        .expect("wire");
    // Long enough for the recorded blockhash to expire (150 blocks of 400 ms).
    app.advance(Duration::seconds(90));
    let height = app.rpc_result("getBlockHeight", json!([])).await;
    let (last_valid,): (i64,) =
        sqlx::query_as("SELECT last_valid_block_height FROM payouts WHERE id = 'pay_exp'")
            .fetch_one(app.state.store.read())
            .await
            .expect("last valid");
    assert!(height.as_i64().expect("height") > last_valid);
    crucible::tournaments::payouts::send(app.state.payer(), "pay_exp")
        .await
        .expect("re-signed and paid");
    let (status, signature, attempts) = payout_row(&app, "pay_exp").await;
    assert_eq!(status, "sent");
    assert_ne!(
        signature.as_deref(),
        Some(recorded.as_str()),
        "a new transfer"
    );
    assert_eq!(attempts, 2);
    // The old transfer, sent late by a stalled worker, can no longer land.
    let late = app
        .rpc("sendTransaction", json!([wire, {"encoding": "base64"}]))
        .await;
    assert!(
        late["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Blockhash not found")),
        "{late}"
    );
    assert_eq!(usdc(&app, &winner).await, 400_000);
    assert_eq!(transfers_to(&app, &winner).await, 1);
}

#[tokio::test]
async fn a_payout_is_sent_only_once_its_transfer_is_finalized() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 5_000).await;
    let winner = pending_payout(&app, "pay_final", 300_000).await;
    let worker = {
        let state = app.state.clone();
        tokio::spawn(async move {
            crucible::tournaments::payouts::send(state.payer(), "pay_final").await
        })
    };
    // The transfer lands (confirmed) but is not final on the simnet's clock yet.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert_eq!(usdc(&app, &winner).await, 300_000, "landed");
    let (status, _, _) = payout_row(&app, "pay_final").await;
    assert_eq!(status, "pending", "confirmed is not sent");
    app.advance(Duration::seconds(5));
    worker.await.expect("join").expect("sent once finalized");
    let (status, _, _) = payout_row(&app, "pay_final").await;
    assert_eq!(status, "sent");
}

#[tokio::test]
async fn prizes_are_paid_only_from_the_escrow_recorded_with_the_tournament() {
    let app = TestApp::spawn().await;
    let winner = pending_payout(&app, "pay_esc", 200_000).await;
    let elsewhere = Keypair::generate().pubkey().to_string();
    sqlx::query("UPDATE tournaments SET escrow_wallet = $1 WHERE id = 'trn_pay_esc'")
        .bind(&elsewhere)
        .execute(app.state.store.write())
        .await
        .expect("another escrow");
    let refused = crucible::tournaments::payouts::send(app.state.payer(), "pay_esc")
        .await
        .expect_err("not this server's escrow");
    assert!(format!("{refused:#}").contains(&elsewhere), "{refused:#}");
    let (status, signature, _) = payout_row(&app, "pay_esc").await;
    assert_eq!((status.as_str(), signature), ("pending", None));
    assert_eq!(usdc(&app, &winner).await, 0);
}
