//! Agents in tournaments: an agent's wallet is one of its account's wallets, and
//! `POST /api/v1/public/agents/{agentId}/tournaments/{tournamentId}/enter` registers it — paying a
//! paid tournament's fee from the agent's own wallet, once, however often the call is repeated.

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::{Auth, TestApp, v1_code};

/// An operator with a v1 key and one agent; (session, key, agent id, agent wallet).
async fn operator(app: &TestApp) -> (String, String, String, String) {
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    let agent = app.create_agent(&key, "entrant", "fighter", "5m").await;
    let id = agent["agentId"].as_str().expect("id").to_owned();
    let wallet = agent["walletAddress"].as_str().expect("wallet").to_owned();
    (session, key, id, wallet)
}

async fn enter(
    app: &TestApp,
    key: &str,
    agent_id: &str,
    tournament_id: &str,
) -> crate::helpers::TestResponse {
    app.post(
        &format!("/api/v1/public/agents/{agent_id}/tournaments/{tournament_id}/enter"),
        Auth::XApiKey(key),
        json!(null),
    )
    .await
}

async fn registered_wallets(app: &TestApp, tournament_id: &str) -> Vec<String> {
    let board = app
        .get(
            &format!("/api/tournaments/{tournament_id}/leaderboard"),
            Auth::None,
        )
        .await;
    assert_eq!(board.status, 200, "{}", board.body);
    board.body["entries"]
        .as_array()
        .or_else(|| board.body["leaderboard"].as_array())
        .expect("entries")
        .iter()
        .map(|row| row["wallet"].as_str().expect("wallet").to_owned())
        .collect()
}

#[tokio::test]
async fn an_agents_wallet_is_one_of_its_accounts_wallets() {
    let app = TestApp::spawn().await;
    let (session, _, _, wallet) = operator(&app).await;
    let account = app.get("/api/account", Auth::Session(&session)).await;
    assert!(
        account.body["allChainWallets"]
            .as_array()
            .expect("wallets")
            .contains(&json!(wallet)),
        "{}",
        account.body
    );
    let listed = account.body["wallets"]
        .as_array()
        .expect("wallets")
        .iter()
        .find(|w| w["address"] == json!(wallet))
        .cloned()
        .expect("listed");
    assert_eq!(listed["kind"], "agent");

    // So an account key may register it through the ordinary registration endpoint.
    let (_, account_key) = {
        let key = app
            .create_key(
                &session,
                json!({"name": "ops", "scopes": ["read", "write"]}),
            )
            .await;
        (
            session.clone(),
            key["key"].as_str().expect("key").to_owned(),
        )
    };
    app.create_tournament(app.new_tournament("trn_free", 0, 10, -Duration::minutes(1), 2))
        .await;
    let registered = app
        .post(
            "/api/tournaments/trn_free/register",
            Auth::Bearer(&account_key),
            json!({"registeredWallet": wallet, "txSignature": null}),
        )
        .await;
    assert_eq!(registered.status, 201, "{}", registered.body);
}

#[tokio::test]
async fn an_agent_enters_a_free_tournament_once() {
    let app = TestApp::spawn().await;
    let (_, key, agent_id, wallet) = operator(&app).await;
    app.create_tournament(app.new_tournament("trn_free", 0, 10, Duration::hours(1), 2))
        .await;
    let entered = enter(&app, &key, &agent_id, "trn_free").await;
    assert_eq!(entered.status, 201, "{}", entered.body);
    assert_eq!(entered.body["success"], true);
    assert_eq!(entered.body["data"]["txSignature"], Value::Null);
    assert_eq!(registered_wallets(&app, "trn_free").await, [wallet]);
    let again = enter(&app, &key, &agent_id, "trn_free").await;
    assert_eq!((again.status, v1_code(&again).as_str()), (409, "CONFLICT"));

    let missing = enter(&app, &key, "agt_nope", "trn_free").await;
    assert_eq!(
        (missing.status, v1_code(&missing).as_str()),
        (404, "AGENT_NOT_FOUND")
    );
    let no_tournament = enter(&app, &key, &agent_id, "trn_nope").await;
    assert_eq!(no_tournament.status, 404, "{}", no_tournament.body);
}

#[tokio::test]
async fn an_agent_pays_a_paid_tournament_from_its_own_wallet_exactly_once() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    let (_, key, agent_id, wallet) = operator(&app).await;
    app.create_tournament(app.new_tournament("trn_paid", 2_000_000, 10, Duration::hours(1), 2))
        .await;

    // Without USDC the wallet cannot pay: 402, nothing registered.
    app.airdrop(&wallet, 50_000_000, 0).await;
    let broke = enter(&app, &key, &agent_id, "trn_paid").await;
    assert_eq!(
        (broke.status, v1_code(&broke).as_str()),
        (402, "INSUFFICIENT_FUNDS"),
        "{}",
        broke.body
    );
    assert!(registered_wallets(&app, "trn_paid").await.is_empty());

    app.airdrop(&wallet, 0, 5_000_000).await;
    let pending = enter(&app, &key, &agent_id, "trn_paid").await;
    assert_eq!(pending.status, 202, "{}", pending.body);
    assert_eq!(pending.body["data"]["retryable"], true);
    let signature = pending.body["data"]["txSignature"]
        .as_str()
        .expect("signature")
        .to_owned();
    // Called again before finality: the same payment, not a second one.
    let again = enter(&app, &key, &agent_id, "trn_paid").await;
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(again.body["data"]["txSignature"], json!(signature));

    app.advance(Duration::seconds(4));
    let done = enter(&app, &key, &agent_id, "trn_paid").await;
    assert_eq!(done.status, 201, "{}", done.body);
    assert_eq!(done.body["data"]["txSignature"], json!(signature));
    assert_eq!(
        registered_wallets(&app, "trn_paid").await,
        std::slice::from_ref(&wallet)
    );

    // The transfer on chain: signed by the agent's wallet, the fee to the escrow, once.
    let tx = app
        .rpc_result(
            "getTransaction",
            json!([signature, {"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0}]),
        )
        .await;
    let keys = tx["transaction"]["message"]["accountKeys"]
        .as_array()
        .expect("keys");
    assert_eq!(keys[0]["pubkey"], json!(wallet));
    assert_eq!(keys[0]["signer"], true);
    let balance = app
        .rpc_result(
            "getTokenAccountsByOwner",
            json!([wallet, {"mint": app.state.chain.stablecoin_mint()}, {"encoding": "jsonParsed"}]),
        )
        .await;
    let left = balance["value"][0]["account"]["data"]["parsed"]["info"]["tokenAmount"]["amount"]
        .as_str()
        .expect("amount")
        .to_owned();
    assert_eq!(left, "3000000", "5 USDC less one fee of 2");
    let after = enter(&app, &key, &agent_id, "trn_paid").await;
    assert_eq!(after.status, 409, "already registered: {}", after.body);
}

/// The refunds of `tournament_id` paid to `wallet`: (amount, status, reason).
async fn refunds_to(
    app: &TestApp,
    tournament_id: &str,
    wallet: &str,
) -> Vec<(i64, String, Option<String>)> {
    sqlx::query_as(
        "SELECT amount_raw, status, reason FROM payouts
         WHERE source_kind = 'refund' AND source_id = $1 AND wallet = $2",
    )
    .bind(tournament_id)
    .bind(wallet)
    .fetch_all(app.state.store.read())
    .await
    .expect("refunds")
}

#[tokio::test]
async fn an_agent_pays_nothing_for_a_tournament_that_cannot_take_it() {
    let app = TestApp::spawn().await;
    let (_, key, agent_id, wallet) = operator(&app).await;
    app.airdrop(&wallet, 50_000_000, 10_000_000).await;

    // Cancelled: every call refused, nothing paid.
    app.create_tournament(app.new_tournament("trn_gone", 2_000_000, 10, Duration::hours(1), 2))
        .await;
    assert!(app.cancel_tournament("trn_gone").await.expect("cancel"));
    for _ in 0..4 {
        let refused = enter(&app, &key, &agent_id, "trn_gone").await;
        assert_eq!(refused.status, 404, "{}", refused.body);
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("cancelled")),
            "{}",
            refused.body
        );
    }

    // Full: refused before paying too.
    app.create_tournament(app.new_tournament("trn_one", 2_000_000, 1, Duration::hours(1), 2))
        .await;
    let other = crucible::chain::Keypair::generate();
    app.airdrop(&other.pubkey().to_string(), 50_000_000, 5_000_000)
        .await;
    app.pay_and_register(
        "trn_one",
        &other,
        &[other.pubkey().to_string()],
        2_000_000,
        Auth::None,
    )
    .await;
    let full = enter(&app, &key, &agent_id, "trn_one").await;
    assert_eq!((full.status, v1_code(&full).as_str()), (409, "CONFLICT"));

    assert_eq!(crate::payouts::usdc(&app, &wallet).await, 10_000_000);
    let (sent,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM custodial_payments")
        .fetch_one(app.state.store.read())
        .await
        .expect("count");
    assert_eq!(sent, 0, "no fee was signed");
}

#[tokio::test]
async fn a_fee_that_landed_for_a_seat_taken_meanwhile_is_refunded_once() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    let (session, key, agent_id, wallet) = operator(&app).await;
    app.airdrop(&wallet, 50_000_000, 10_000_000).await;
    app.create_tournament(app.new_tournament("trn_race", 2_000_000, 1, Duration::hours(1), 2))
        .await;

    // The agent's fee is on its way when someone else takes the last seat.
    let pending = enter(&app, &key, &agent_id, "trn_race").await;
    assert_eq!(pending.status, 202, "{}", pending.body);
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
    assert_eq!(
        crate::payouts::usdc(&app, &wallet).await,
        8_000_000,
        "the fee landed"
    );

    // The agent's entry cannot register: its fee is refunded, once, with the reason.
    let refused = enter(&app, &key, &agent_id, "trn_race").await;
    assert_eq!(
        (refused.status, v1_code(&refused).as_str()),
        (409, "CONFLICT")
    );
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("full") && m.contains("refunded")),
        "{}",
        refused.body
    );
    let again = enter(&app, &key, &agent_id, "trn_race").await;
    assert_eq!(again.status, 409, "{}", again.body);
    let rows = refunds_to(&app, "trn_race", &wallet).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, 2_000_000);
    assert!(
        rows[0].2.as_deref().is_some_and(|r| r.contains("full")),
        "{rows:?}"
    );
    let mine = app
        .get("/api/account/payouts", Auth::Session(&session))
        .await
        .body;
    let refund = &mine["payouts"][0];
    assert_eq!(refund["sourceKind"], "refund", "{mine}");
    assert_eq!(refund["sourceId"], "trn_race");
    assert_eq!(refund["wallet"], json!(wallet));
    assert!(
        refund["reason"]
            .as_str()
            .is_some_and(|r| r.contains("full")),
        "{mine}"
    );

    // Sent back by the payout machinery; the settling job and a cancellation add nothing.
    let payout_id = refund["payoutId"].as_str().expect("id").to_owned();
    let worker = {
        let state = app.state.clone();
        tokio::spawn(async move {
            crucible::tournaments::payouts::send(state.payer(), &payout_id).await
        })
    };
    for _ in 0..100 {
        if crate::payouts::usdc(&app, &wallet).await == 10_000_000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    app.advance(Duration::seconds(4));
    worker.await.expect("join").expect("refund sent");
    assert_eq!(crate::payouts::usdc(&app, &wallet).await, 10_000_000);
    app.advance(Duration::minutes(4));
    let pass = app.run_scheduler().await;
    assert_eq!(pass.jobs_failed, 0, "{pass:?}");
    assert!(app.cancel_tournament("trn_race").await.expect("cancel"));
    assert_eq!(refunds_to(&app, "trn_race", &wallet).await.len(), 1);
    assert_eq!(crate::payouts::usdc(&app, &wallet).await, 10_000_000);
}

#[tokio::test]
async fn a_fee_nobody_comes_back_for_is_settled_by_its_job() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    let (_, key, agent_id, wallet) = operator(&app).await;
    app.airdrop(&wallet, 50_000_000, 10_000_000).await;
    for id in ["trn_kept", "trn_dropped"] {
        app.create_tournament(app.new_tournament(id, 2_000_000, 10, Duration::hours(1), 2))
            .await;
        let pending = enter(&app, &key, &agent_id, id).await;
        assert_eq!(pending.status, 202, "{}", pending.body);
    }
    // One is cancelled while its fee is on the way (not claimed, so its cancellation refunds
    // nothing); the caller never calls again for either.
    assert!(app.cancel_tournament("trn_dropped").await.expect("cancel"));
    assert!(refunds_to(&app, "trn_dropped", &wallet).await.is_empty());
    app.advance(Duration::minutes(4));
    let pass = {
        let state = app.state.clone();
        tokio::spawn(async move {
            crucible::scheduler::Scheduler::new(Vec::new())
                .run_due(&state)
                .await
        })
    };
    // The refund lands (confirmed); it is final once the simnet's clock moves on.
    for _ in 0..100 {
        if crate::payouts::usdc(&app, &wallet).await == 8_000_000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    app.advance(Duration::seconds(4));
    pass.await.expect("join").expect("pass");
    assert_eq!(
        registered_wallets(&app, "trn_kept").await,
        std::slice::from_ref(&wallet)
    );
    let rows = refunds_to(&app, "trn_dropped", &wallet).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0]
            .2
            .as_deref()
            .is_some_and(|r| r.contains("cancelled")),
        "{rows:?}"
    );
    assert_eq!(
        crate::payouts::usdc(&app, &wallet).await,
        8_000_000,
        "one fee kept, one back"
    );
}

#[tokio::test]
async fn two_entries_at_once_pay_one_fee() {
    let app = TestApp::spawn().await;
    let (_, key, agent_id, wallet) = operator(&app).await;
    app.airdrop(&wallet, 50_000_000, 10_000_000).await;
    app.create_tournament(app.new_tournament("trn_twice", 2_000_000, 10, Duration::hours(1), 2))
        .await;
    let (a, b) = tokio::join!(
        enter(&app, &key, &agent_id, "trn_twice"),
        enter(&app, &key, &agent_id, "trn_twice")
    );
    let mut statuses = [a.status, b.status];
    statuses.sort_unstable();
    assert!(statuses.contains(&201), "{} / {}", a.body, b.body);
    assert_eq!(
        registered_wallets(&app, "trn_twice").await,
        std::slice::from_ref(&wallet)
    );
    assert_eq!(
        crate::payouts::usdc(&app, &wallet).await,
        8_000_000,
        "one fee"
    );
    assert!(refunds_to(&app, "trn_twice", &wallet).await.is_empty());
}
