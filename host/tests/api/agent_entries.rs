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
