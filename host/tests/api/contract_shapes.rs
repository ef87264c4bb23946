//! Contract edges: a signature the node has not seen yet is retryable for a bounded time (both
//! paid entries, one shared step), the documented member names of final standings, prizes, the
//! 202 bodies and `run:ended`, and a dungeon quote that is signed, not stored.

use std::collections::BTreeSet;

use crate::helpers::{Auth, TestApp, watch_to_end};
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::db::Backend;
use crucible::domain::WalletAddress;
use serde_json::{Value, json};

const FEE: u64 = 2_000_000;

/// A well-formed signature no transaction has.
fn unseen_signature(seed: u8) -> String {
    bs58::encode([seed; 64]).into_string()
}

fn members(body: &Value) -> BTreeSet<String> {
    body.as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

async fn paid_tournament(app: &TestApp, id: &str) {
    app.create_tournament(app.new_tournament(id, FEE as i64, 10, Duration::hours(1), 1))
        .await;
}

async fn register(app: &TestApp, id: &str, body: &Value) -> crate::helpers::TestResponse {
    app.post(
        &format!("/api/tournaments/{id}/register"),
        Auth::None,
        body.clone(),
    )
    .await
}

#[tokio::test]
async fn an_unseen_signature_is_retryable_for_90_seconds_then_refused() {
    let app = TestApp::spawn().await;
    paid_tournament(&app, "trn_unseen").await;
    let payer = Keypair::generate().pubkey().to_string();
    let wallet = WalletAddress::from_public_key(&[9; 32]).to_string();
    let body = json!({"registeredWallet": wallet, "txSignature": unseen_signature(1), "payerWallet": payer});

    let first = register(&app, "trn_unseen", &body).await;
    assert_eq!(first.status, 202, "{}", first.body);
    assert_eq!(first.body["retryable"], true);
    app.advance(Duration::seconds(89));
    let still = register(&app, "trn_unseen", &body).await;
    assert_eq!(
        still.status, 202,
        "the window counts from the first attempt: {}",
        still.body
    );

    app.advance(Duration::seconds(2));
    let late = register(&app, "trn_unseen", &body).await;
    assert_eq!(late.status, 422, "{}", late.body);
    assert!(late.error().contains("(signature)"), "{}", late.error());
    let detail = app.get("/api/tournaments/trn_unseen", Auth::None).await;
    assert_eq!(detail.body["currentParticipants"], 0, "nothing registered");

    // The first sighting is durable: a restarted server still counts from it.
    let app = app.restart().await;
    let after_restart = register(&app, "trn_unseen", &body).await;
    assert_eq!(after_restart.status, 422, "{}", after_restart.body);
}

#[tokio::test]
async fn a_signature_that_lands_within_the_window_registers() {
    let app = TestApp::spawn().await;
    paid_tournament(&app, "trn_late").await;
    let payer = Keypair::generate();
    app.airdrop(&payer.pubkey().to_string(), 1_000_000_000, 10_000_000)
        .await;
    let wallet = payer.pubkey().to_string();
    let memo = crucible::tournaments::registration_memo("trn_late", std::slice::from_ref(&wallet));
    // Signed now, sent a while later: the client already knows the signature.
    let signed = crucible::chain::transfer::sign_token_transfer(
        app.state.chain.rpc(),
        &payer,
        &app.state.chain.escrow().address,
        app.state.chain.stablecoin_mint(),
        FEE,
        &memo,
    )
    .await
    .expect("sign");
    let body = json!({"registeredWallet": wallet, "txSignature": signed.signature(), "payerWallet": wallet});

    let early = register(&app, "trn_late", &body).await;
    assert_eq!(early.status, 202, "{}", early.body);
    app.advance(Duration::seconds(30));
    app.state
        .chain
        .rpc()
        .send_transaction(&signed.serialize().expect("wire"))
        .await
        .expect("lands");
    let registered = register(&app, "trn_late", &body).await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    assert_eq!(registered.body["count"], 1);
}

#[tokio::test]
async fn the_dungeon_follows_the_same_window_and_answers_the_same_202_body() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    paid_tournament(&app, "trn_same").await;
    let player = app.dungeon_player("same@example.com", 21, 5_000_000).await;
    let today = app.dungeon_today();
    let quote = app.dungeon_quote(&today, &player.wallet()).await;
    let enter = json!({"quoteId": quote["quoteId"], "payerWallet": player.wallet(),
                       "txSignature": unseen_signature(2)});

    let dungeon = app
        .dungeon_enter(&today, Auth::Bearer(&player.key), enter.clone())
        .await;
    assert_eq!(dungeon.status, 202, "{}", dungeon.body);
    let tournament = register(
        &app,
        "trn_same",
        &json!({"registeredWallet": player.wallet(), "txSignature": unseen_signature(3),
                "payerWallet": player.wallet()}),
    )
    .await;
    assert_eq!(tournament.status, 202, "{}", tournament.body);
    assert_eq!(members(&dungeon.body), members(&tournament.body));
    assert_eq!(dungeon.body, tournament.body, "one shared body");
    assert_eq!(dungeon.body["retryable"], true);

    app.advance(Duration::seconds(89));
    let still = app
        .dungeon_enter(&today, Auth::Bearer(&player.key), enter.clone())
        .await;
    assert_eq!(still.status, 202, "{}", still.body);
    app.advance(Duration::seconds(2));
    let late = app
        .dungeon_enter(&today, Auth::Bearer(&player.key), enter)
        .await;
    assert_eq!(late.status, 422, "{}", late.body);
    assert!(late.error().contains("(signature)"), "{}", late.error());
}

/// Every table's row count: what "changes nothing" is checked against.
async fn row_counts(app: &TestApp) -> Vec<(String, i64)> {
    let tables: Vec<(String,)> = match app.state.store.backend() {
        Backend::Sqlite => sqlx::query_as(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        ),
        Backend::Postgres => sqlx::query_as(
            "SELECT table_name::TEXT FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
        ),
    }
    .fetch_all(app.state.store.read())
    .await
    .expect("tables");
    let mut counts = Vec::new();
    for (table,) in tables {
        let (count,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM \"{table}\""))
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
        counts.push((table, count));
    }
    counts
}

#[tokio::test]
async fn a_quote_is_signed_not_stored_and_checked_on_entry() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("quote@example.com", 22, 5_000_000).await;
    let other = app.dungeon_player("other@example.com", 23, 5_000_000).await;
    let today = app.dungeon_today();
    // Warm up what a first read may create (the map salt), then: a quote writes nothing.
    app.dungeon_quote(&today, &player.wallet()).await;
    app.get(&format!("/api/dungeons/{today}"), Auth::None).await;
    let before = row_counts(&app).await;
    let quote = app.dungeon_quote(&today, &player.wallet()).await;
    let again = app.dungeon_quote(&today, &player.wallet()).await;
    let posted = app
        .post(
            &format!("/api/dungeons/{today}/quote"),
            Auth::None,
            json!({"wallet": player.wallet()}),
        )
        .await;
    assert_eq!(posted.status, 200, "{}", posted.body);
    assert_eq!(row_counts(&app).await, before, "a quote wrote a row");
    assert_ne!(quote["quoteId"], again["quoteId"], "each quote is its own");
    assert_eq!(
        members(&posted.body),
        members(&quote),
        "POST answers as GET does"
    );
    assert_eq!(posted.body["payerWallet"], player.wallet());

    let quote_id = quote["quoteId"].as_str().expect("id").to_owned();
    let signature = app
        .dungeon_pay(
            &player.payer,
            1_000_000,
            quote["memo"].as_str().expect("memo"),
        )
        .await;
    let enter = |quote_id: &str, wallet: &str| json!({"quoteId": quote_id, "payerWallet": wallet, "txSignature": signature});

    // Tampered: one character of the signed payload changed.
    let mut tampered = quote_id.clone().into_bytes();
    tampered[5] = if tampered[5] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");
    let forged = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter(&tampered, &player.wallet()),
        )
        .await;
    assert_eq!(forged.status, 404, "{}", forged.body);
    assert!(forged.error().contains("altered"), "{}", forged.error());

    // Another wallet's quote.
    let theirs = app.dungeon_quote(&today, &other.wallet()).await;
    let foreign = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter(theirs["quoteId"].as_str().expect("id"), &player.wallet()),
        )
        .await;
    assert_eq!(foreign.status, 422, "{}", foreign.body);
    assert!(
        foreign.error().contains("issued to wallet"),
        "{}",
        foreign.error()
    );
    assert_eq!(
        app.get("/api/account/dungeon-runs", Auth::Bearer(&player.key))
            .await
            .body["runs"],
        json!([]),
        "refusals change nothing"
    );

    // Expired: past its 15 minutes.
    app.advance(Duration::minutes(16));
    let expired = app
        .dungeon_enter(
            &today,
            Auth::Bearer(&player.key),
            enter(&quote_id, &player.wallet()),
        )
        .await;
    assert_eq!(expired.status, 410, "{}", expired.body);
    assert!(expired.error().contains("expired"), "{}", expired.error());
}

#[tokio::test]
async fn a_fresh_quote_enters_once_and_binds_its_memo() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("memo@example.com", 24, 5_000_000).await;
    let today = app.dungeon_today();
    let quote = app.dungeon_quote(&today, &player.wallet()).await;
    let other = app.dungeon_quote(&today, &player.wallet()).await;
    // Paid with the memo of another quote: refused, naming the memo.
    let signature = app
        .dungeon_pay(
            &player.payer,
            1_000_000,
            other["memo"].as_str().expect("memo"),
        )
        .await;
    let wrong = app
        .dungeon_enter(&today, Auth::Bearer(&player.key),
            json!({"quoteId": quote["quoteId"], "payerWallet": player.wallet(), "txSignature": signature}))
        .await;
    assert_eq!(wrong.status, 422, "{}", wrong.body);
    assert!(wrong.error().contains("memo"), "{}", wrong.error());
    let right = app
        .dungeon_enter(&today, Auth::Bearer(&player.key),
            json!({"quoteId": other["quoteId"], "payerWallet": player.wallet(), "txSignature": signature}))
        .await;
    assert_eq!(right.status, 201, "{}", right.body);
}

#[tokio::test]
async fn run_ended_names_its_outcome_as_the_run_page_does() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("ended@example.com", 25, 5_000_000).await;
    let entered = app.dungeon_run(&player, "fighter").await;
    let run_id = entered["runId"].as_str().expect("run").to_owned();
    let key = entered["registrationKey"].as_str().expect("key").to_owned();
    let stream = app
        .client
        .get(format!("{}/api/dungeons/runs/{run_id}/watch", app.address))
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .expect("connect");
    assert_eq!(stream.status(), 200);
    let watcher = tokio::spawn(watch_to_end(stream));
    app.dungeon_play_to_end(&run_id, &key).await;
    let events = watcher.await.expect("watcher");
    let (_, _, ended) = events
        .iter()
        .find(|(_, event, _)| event == "run:ended")
        .expect("run:ended");
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await
        .body;
    assert!(
        ["cleared", "dead", "exhausted", "abandoned"]
            .contains(&page["status"].as_str().expect("status")),
        "{}",
        page["status"]
    );
    assert_eq!(ended["status"], page["status"], "same member, same value");
    assert_eq!(ended["score"], page["score"]);
    assert_eq!(ended["runId"], page["runId"]);
}

/// A paid tournament (`trn_final`, 2 USDC, all to first place, no rake) that two wallets entered
/// and that has ended and been settled: the winner is an account's embedded wallet (+5 USDC
/// during the tournament). Returns (the winner account's key, the winner's wallet).
pub(crate) async fn settled_tournament(app: &TestApp) -> (String, String) {
    let mut new = app.new_tournament("trn_final", FEE as i64, 10, Duration::minutes(1), 1);
    new.payout_split = vec![100];
    new.rake_bps = 0;
    app.create_tournament(new).await;
    let (session, key) = app
        .account_with_key("final@example.com", &["read", "write"])
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
    let loser = Keypair::generate();
    for (keypair, auth) in [(&winner, Auth::Bearer(&key)), (&loser, Auth::None)] {
        let wallet = keypair.pubkey().to_string();
        app.airdrop(&wallet, 1_000_000_000, 10_000_000).await;
        let memo =
            crucible::tournaments::registration_memo("trn_final", std::slice::from_ref(&wallet));
        let signature = app
            .state
            .chain
            .transfer_token(
                keypair,
                &app.state.chain.escrow().address,
                app.state.chain.stablecoin_mint(),
                FEE,
                &memo,
            )
            .await
            .expect("pay");
        let registered = app
            .post(
                "/api/tournaments/trn_final/register",
                auth,
                json!({"registeredWallet": wallet, "txSignature": signature, "payerWallet": wallet}),
            )
            .await;
        assert_eq!(registered.status, 201, "{}", registered.body);
    }
    // Before the baseline, so it is history and not a flow: the winner holds more SOL.
    app.airdrop(&winner.pubkey().to_string(), 2_000_000_000, 0)
        .await;
    let scheduler = crucible::scheduler::Scheduler::new(Vec::new());
    app.advance(Duration::minutes(1));
    scheduler.run_due(&app.state).await.expect("start");
    let live = app
        .get("/api/tournaments/trn_final/leaderboard", Auth::None)
        .await
        .body;
    assert!(
        live["entries"][0].get("finalRank").is_none(),
        "no final standing while live: {live}"
    );
    app.pump_sol(41_421_000_000).await;
    app.advance(Duration::hours(1));
    scheduler.run_due(&app.state).await.expect("end and pay");

    (key, winner.pubkey().to_string())
}

#[tokio::test]
async fn final_standings_and_prizes_carry_their_documented_names() {
    let app = TestApp::spawn().await;
    let (key, winner) = settled_tournament(&app).await;
    let board = app
        .get("/api/tournaments/trn_final/leaderboard", Auth::None)
        .await
        .body;
    let entries = board["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{board}");
    let first = &entries[0];
    assert_eq!(first["wallet"], winner);
    assert_eq!(first["finalRank"], 1);
    assert!(
        first["finalPnl"].as_f64().is_some_and(|p| p > 0.0),
        "{first}"
    );
    assert_eq!(first["prizeAwarded"], 4.0, "both fees, no rake");
    assert_eq!(first["prizeAwardedRaw"], "4000000");
    assert_eq!(entries[1]["finalRank"], 2);
    assert!(entries[1]["finalPnl"].is_number(), "{}", entries[1]);
    assert_eq!(entries[1]["prizeAwarded"], 0.0);

    let mine = app
        .get("/api/account/tournaments", Auth::Bearer(&key))
        .await
        .body;
    let row = &mine["tournaments"][0];
    assert_eq!(row["finalRank"], 1);
    assert_eq!(row["prizeAwarded"], 4.0);
    assert_eq!(row["prizeAwardedRaw"], "4000000");
    let payouts = app
        .get("/api/account/payouts", Auth::Bearer(&key))
        .await
        .body;
    assert_eq!(payouts["payouts"][0]["prizeAwarded"], 4.0);
    assert_eq!(payouts["payouts"][0]["amountRaw"], "4000000");
}
