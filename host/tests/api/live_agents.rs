//! Live agents end to end on simnet: created with `isPaperTrading: false`, funded with SOL and
//! USDC, started with a time scale and driven by the ticker; every trade is a swap on chain
//! signed by the agent's wallet (found by `getTransaction`), the fee reserve is never spent and
//! maxAllocation holds against the wallet's value; a crash between sending and recording
//! settles once from the chain; a swap the chain refuses, or one that never landed and can no
//! longer land, is a refused order and not a fault.

use chrono::Duration;
use crucible::agents::live::{self, Settled, SwapOrder};
use crucible::chain::pool::{self, Direction};
use serde_json::{Value, json};

use crate::helpers::{self, Auth, TestApp};

const SOL: u64 = 1_000_000_000;
const USDC: u64 = 1_000_000;
const RESERVE: u64 = 10_000_000;

/// SOL's price in the pool, USDC.
async fn pool_price(app: &TestApp) -> f64 {
    let reserves = app
        .state
        .chain
        .simnet()
        .expect("simnet")
        .pool_reserves()
        .await
        .expect("read")
        .expect("the pool exists");
    pool::price(reserves.lamports, reserves.usdc_raw, reserves.usdc_decimals).expect("price")
}

/// A live agent of `class` (not started): its id and wallet.
async fn live_agent(
    app: &TestApp,
    key: &str,
    username: &str,
    class: &str,
    max_allocation: f64,
) -> (String, String) {
    live_agent_every(app, key, username, class, max_allocation, "5m").await
}

/// A live agent ticking every `interval`.
async fn live_agent_every(
    app: &TestApp,
    key: &str,
    username: &str,
    class: &str,
    max_allocation: f64,
    interval: &str,
) -> (String, String) {
    let response = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(key),
            json!({
                "name": format!("Live {username}"), "username": username, "class": class,
                "modelId": "openai/gpt-4o", "isPaperTrading": false,
                "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                             "timeInterval": interval, "maxAllocation": max_allocation}
            }),
        )
        .await;
    assert_eq!(response.status, 201, "{}", response.body);
    let data = &response.body["data"];
    assert_eq!(data["isPaperTrading"], false, "{data}");
    (
        data["agentId"].as_str().expect("id").to_owned(),
        data["walletAddress"].as_str().expect("wallet").to_owned(),
    )
}

async fn start(app: &TestApp, key: &str, agent_id: &str) {
    let started = app
        .post(
            &format!("/api/v1/public/agents/{agent_id}/start"),
            Auth::XApiKey(key),
            json!(null),
        )
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
}

async fn agent(app: &TestApp, key: &str, agent_id: &str) -> Value {
    let response = app
        .get(
            &format!("/api/v1/public/agents/{agent_id}"),
            Auth::XApiKey(key),
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.body["data"].clone()
}

/// The wallet's lamports and raw USDC, read over RPC.
async fn balances(app: &TestApp, wallet: &str) -> (u64, u64) {
    let lamports = app.rpc_result("getBalance", json!([wallet])).await["value"]
        .as_u64()
        .expect("lamports");
    let accounts = app.rpc_result("getTokenAccountsByOwner",
        json!([wallet, {"mint": app.state.chain.stablecoin_mint()}, {"encoding": "jsonParsed"}]),
    )
    .await;
    let usdc = accounts["value"]
        .as_array()
        .expect("accounts")
        .iter()
        .filter_map(|a| {
            a["account"]["data"]["parsed"]["info"]["tokenAmount"]["amount"]
                .as_str()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    (lamports, usdc)
}

async fn trades(app: &TestApp, agent_id: &str) -> Vec<(String, String, i64, i64)> {
    sqlx::query_as(
        "SELECT tx_hash, side, base_raw, notional_raw FROM agent_trades WHERE agent_id = $1
         ORDER BY executed_at, id",
    )
    .bind(agent_id)
    .fetch_all(app.state.store.read())
    .await
    .expect("trades")
}

/// The reason recorded with the trade of transaction `tx_hash`.
async fn trade_reason(app: &TestApp, tx_hash: &str) -> Option<String> {
    let (reason,): (Option<String>,) =
        sqlx::query_as("SELECT reason FROM agent_trades WHERE tx_hash = $1")
            .bind(tx_hash)
            .fetch_one(app.state.store.read())
            .await
            .expect("reason");
    reason
}

/// Pool swaps signed by `wallet` that landed on simnet.
async fn swaps_on_chain(app: &TestApp, wallet: &str) -> i64 {
    let (count,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM simnet_transactions WHERE rendered LIKE $1 AND rendered LIKE $2",
    )
    .bind(format!("%\"pubkey\":\"{wallet}\",\"signer\":true%"))
    .bind(format!("%\"program\":\"{}\"%", pool::PROGRAM_NAME))
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    count
}

async fn swap_status(app: &TestApp, signature: &str) -> (String, Option<String>) {
    sqlx::query_as("SELECT status, error FROM agent_live_swaps WHERE signature = $1")
        .bind(signature)
        .fetch_one(app.state.store.read())
        .await
        .expect("swap row")
}

/// An operator's v1 key, with webhooks to `receiver`.
async fn operator(app: &TestApp) -> String {
    let session = app.session("live@example.com").await;
    app.v1_key_with(
        &session,
        &["agents:read", "agents:write", "agents:start", "agents:stop"],
        Some("https://hooks.example.com/in"),
    )
    .await["key"]
        .as_str()
        .expect("key")
        .to_owned()
}

#[tokio::test]
async fn live_agents_trade_real_swaps_from_their_own_wallets() {
    // Hourly agents at 3,600× (a tick a second): the classes are cost-aware and trade a few
    // times a day, so this gives them weeks of market in a few hundred ticks.
    let app = TestApp::spawn_with(|config| config.time_scale = 3_600).await;
    let key = operator(&app).await;
    let price = pool_price(&app).await;
    let mut agents = Vec::new();
    for (class, max_allocation) in [("gambler", 40.0), ("fighter", 100.0)] {
        let (id, wallet) = live_agent_every(
            &app,
            &key,
            &format!("live_{class}"),
            class,
            max_allocation,
            "1h",
        )
        .await;
        // About 10 % of the value in SOL, the rest in USDC.
        let usdc = 900 * USDC;
        let lamports = ((100.0 / price) * SOL as f64) as u64 + RESERVE;
        app.airdrop(&wallet, lamports, usdc).await;
        start(&app, &key, &id).await;
        let funded = balances(&app, &wallet).await;
        agents.push((id, wallet, max_allocation, funded));
    }

    for _ in 0..800 {
        let pass = app.run_scheduler().await;
        assert_eq!(pass.agent_ticks.faulted, 0, "{pass:?}");
        for (_, wallet, max_allocation, _) in &agents {
            let (lamports, usdc) = balances(&app, wallet).await;
            assert!(lamports >= RESERVE, "the fee reserve was spent: {lamports}");
            let price = pool_price(&app).await;
            let sol_value = lamports as f64 / SOL as f64 * price;
            let equity = sol_value + usdc as f64 / USDC as f64;
            assert!(
                sol_value <= max_allocation / 100.0 * equity * 1.01 + 0.5,
                "maxAllocation {max_allocation}% broken: {sol_value} of {equity}"
            );
        }
        let mut done = true;
        for (id, ..) in &agents {
            done &= trades(&app, id).await.len() >= 2;
        }
        if done {
            break;
        }
        app.advance(Duration::seconds(1));
    }
    let due = app.due_agents().await;
    assert_eq!(due.len(), agents.len(), "live agents stay due: {due:?}");
    assert!(due.iter().all(|(paper, ..)| *paper == 0), "{due:?}");

    for (id, wallet, _, before) in &agents {
        let trades = trades(&app, id).await;
        assert!(
            trades.len() >= 2,
            "{id} traded {} times: {}",
            trades.len(),
            agent(&app, &key, id).await
        );
        for (signature, side, base_raw, notional_raw) in &trades {
            assert!(!signature.starts_with("paper_"), "{signature}");
            let tx = app
                .rpc_result(
                    "getTransaction",
                    json!([signature, {"encoding": "jsonParsed", "commitment": "confirmed"}]),
                )
                .await;
            assert!(tx["meta"]["err"].is_null(), "{tx}");
            let signer = &tx["transaction"]["message"]["accountKeys"][0];
            assert_eq!(signer["pubkey"], wallet.as_str(), "{tx}");
            assert_eq!(signer["signer"], true);
            // The recorded amounts are the chain's.
            let out = crucible::chain::swap::swap_amount_out(&tx).expect("amountOut");
            let input = crucible::chain::swap::swap_amount(&tx, "amountIn").expect("amountIn");
            let (lamports, usdc) = if side == "buy" {
                (out, input)
            } else {
                (input, out)
            };
            assert_eq!(*base_raw, (lamports / 1_000) as i64);
            assert_eq!(*notional_raw, usdc as i64);
        }
        assert_eq!(swaps_on_chain(&app, wallet).await, trades.len() as i64);
        assert_ne!(balances(&app, wallet).await, *before, "the wallet changed");
        let listed = app
            .get(
                &format!("/api/v1/public/agents/{id}/trades?limit=500"),
                Auth::XApiKey(&key),
            )
            .await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        let listed = listed.body["data"].as_array().expect("trades").clone();
        assert_eq!(listed.len(), trades.len());
        for row in &listed {
            helpers::trades::assert_json_adds_up("the trades API (live)", row, "baseAmount");
        }

        let view = agent(&app, &key, id).await;
        assert_eq!(view["status"], "active", "{view}");
        assert!(view["paper"].is_null(), "{view}");
        let (lamports, usdc) = balances(&app, wallet).await;
        assert_eq!(view["live"]["sol"], lamports as f64 / 1e9, "{view}");
        assert_eq!(view["live"]["usdc"], usdc as f64 / 1e6, "{view}");
        let equity = view["live"]["equity"].as_f64().expect("equity");
        assert!(equity > 900.0 && equity < 1100.0, "{view}");
        let performance = app
            .get(
                &format!("/api/v1/public/agents/{id}/performance?period=all"),
                Auth::XApiKey(&key),
            )
            .await;
        assert_eq!(performance.status, 200, "{}", performance.body);
        let metrics = &performance.body["data"]["metrics"];
        assert_eq!(metrics["equity"], equity, "{metrics}");
        assert_eq!(metrics["totalTrades"], trades.len(), "{metrics}");
        let pnl = metrics["totalPnl"].as_f64().expect("pnl");
        assert_eq!(Some(pnl), view["live"]["pnl"].as_f64(), "{view} {metrics}");
    }

    // The webhooks carry the on-chain signature.
    let payloads: Vec<(String,)> =
        sqlx::query_as("SELECT payload FROM webhook_deliveries WHERE event = 'agent.trade'")
            .fetch_all(app.state.store.read())
            .await
            .expect("payloads");
    assert!(!payloads.is_empty());
    for (payload,) in payloads {
        let payload: Value = serde_json::from_str(&payload).expect("json");
        let data = if payload["data"].is_object() {
            &payload["data"]
        } else {
            &payload
        };
        assert_eq!(data["isPaperTrading"], false, "{payload}");
        helpers::trades::assert_json_adds_up("the agent.trade webhook (live)", data, "amount");
        let (count,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM agent_trades WHERE tx_hash = $1")
                .bind(data["txHash"].as_str().expect("txHash"))
                .fetch_one(app.state.store.read())
                .await
                .expect("count");
        assert_eq!(count, 1, "{payload}");
    }
}

#[tokio::test]
async fn a_swap_sent_before_a_crash_is_recorded_once_after_restart() {
    let app = TestApp::spawn().await;
    let key = operator(&app).await;
    let (agent_id, wallet) = live_agent(&app, &key, "crashy", "fighter", 100.0).await;
    app.airdrop(&wallet, 2 * SOL, 100 * USDC).await;
    let order = SwapOrder {
        direction: Direction::SellSol,
        amount_in: SOL / 10,
        minimum_out: None,
        reason: Some("before the crash".to_owned()),
        market_ts: 0,
    };
    // Recorded, then sent, then the node dies before recording the outcome.
    let pending = live::prepare(&app.state.ticking(), &agent_id, &order, None)
        .await
        .expect("prepare");
    app.state
        .chain
        .send_signed(&pending.wire)
        .await
        .expect("send");
    let app = app.restart().await;
    assert_eq!(swap_status(&app, &pending.signature).await.0, "pending");
    assert_eq!(swaps_on_chain(&app, &wallet).await, 1);

    start(&app, &key, &agent_id).await;
    app.run_scheduler().await;
    let (status, _) = swap_status(&app, &pending.signature).await;
    assert_eq!(status, "filled");
    let recorded = trades(&app, &agent_id).await;
    let mine: Vec<_> = recorded
        .iter()
        .filter(|(hash, ..)| *hash == pending.signature)
        .collect();
    assert_eq!(mine.len(), 1, "{recorded:?}");
    assert_eq!(mine[0].1, "sell");
    assert_eq!(mine[0].2, (SOL / 10 / 1_000) as i64);
    assert_eq!(
        trade_reason(&app, &pending.signature).await.as_deref(),
        Some("before the crash")
    );
    // Settling again changes nothing and sends nothing.
    assert_eq!(
        live::send_and_settle(&app.state.ticking(), &agent_id, &pending)
            .await
            .expect("settle"),
        Settled::Filled {
            trade_id: sqlx::query_as::<_, (String,)>(
                "SELECT trade_id FROM agent_live_swaps WHERE signature = $1"
            )
            .bind(&pending.signature)
            .fetch_one(app.state.store.read())
            .await
            .expect("trade id")
            .0
        }
    );
    app.advance(Duration::hours(1));
    app.run_scheduler().await;
    let recorded = trades(&app, &agent_id).await;
    assert_eq!(
        recorded
            .iter()
            .filter(|(hash, ..)| *hash == pending.signature)
            .count(),
        1
    );
    // Every swap of this wallet on chain is exactly one recorded trade.
    assert_eq!(swaps_on_chain(&app, &wallet).await, recorded.len() as i64);
}

#[tokio::test]
async fn a_recorded_swap_that_never_landed_is_refused_once_its_blockhash_expires() {
    let app = TestApp::spawn().await;
    let key = operator(&app).await;
    let (agent_id, wallet) = live_agent(&app, &key, "neversent", "fighter", 100.0).await;
    app.airdrop(&wallet, 2 * SOL, 100 * USDC).await;
    let order = SwapOrder {
        direction: Direction::SellUsdc,
        amount_in: 10 * USDC,
        minimum_out: None,
        reason: None,
        market_ts: 0,
    };
    let pending = live::prepare(&app.state.ticking(), &agent_id, &order, None)
        .await
        .expect("prepare");
    let app = app.restart().await;
    start(&app, &key, &agent_id).await;
    // Still able to land: the tick leaves it pending and places no order.
    app.run_scheduler().await;
    assert_eq!(swap_status(&app, &pending.signature).await.0, "pending");
    assert!(trades(&app, &agent_id).await.is_empty());

    // Past the blockhash's lifetime and at the agent's next 5m tick.
    app.advance(Duration::minutes(6));
    app.run_scheduler().await;
    let (status, error) = swap_status(&app, &pending.signature).await;
    assert_eq!(status, "refused");
    assert!(error.expect("reason").contains("blockhash"));
    // It can indeed no longer land.
    assert!(app.state.chain.send_signed(&pending.wire).await.is_err());
    let view = agent(&app, &key, &agent_id).await;
    assert_eq!(view["status"], "active", "{view}");
    assert_eq!(view["faults"], 0, "{view}");
    assert!(view["live"]["refusedOrders"].as_i64().expect("refused") >= 1);
}

/// `holder` (another node's tick) holds `agent_id`'s claim for two minutes.
async fn hold(app: &TestApp, agent_id: &str, holder: &str) {
    sqlx::query("UPDATE agents SET tick_lease_owner = $1, tick_lease_until = $2 WHERE id = $3")
        .bind(holder)
        .bind(crucible::clock::to_millis(
            app.state.now() + Duration::minutes(2),
        ))
        .bind(agent_id)
        .execute(app.state.store.write())
        .await
        .expect("another node holds the agent");
}

/// Found by auditing what a node cut off from the database may still write: a live tick that
/// lost its claim (another node took the agent over) records no swap, so it cannot send one.
#[tokio::test]
async fn a_tick_whose_lease_was_taken_over_records_no_swap() {
    let app = TestApp::spawn().await;
    let key = operator(&app).await;
    let (agent_id, wallet) = live_agent(&app, &key, "fenced", "fighter", 100.0).await;
    app.airdrop(&wallet, 2 * SOL, 100 * USDC).await;
    start(&app, &key, &agent_id).await;
    let (stale, holder) = ("node_a:scheduler:claim1", "node_b:scheduler:claim2");
    hold(&app, &agent_id, holder).await;
    let order = SwapOrder {
        direction: Direction::SellSol,
        amount_in: SOL / 10,
        minimum_out: None,
        reason: None,
        market_ts: 0,
    };
    let refused = live::prepare(&app.state.ticking(), &agent_id, &order, Some(stale)).await;
    assert!(
        matches!(refused, Err(live::LiveError::LeaseLost(_))),
        "{refused:?}"
    );
    let (recorded,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM agent_live_swaps WHERE agent_id = $1")
            .bind(&agent_id)
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
    assert_eq!(recorded, 0, "nothing recorded under a lost lease");
    let pending = live::prepare(&app.state.ticking(), &agent_id, &order, Some(holder))
        .await
        .expect("the holder records its swap");
    assert_eq!(swap_status(&app, &pending.signature).await.0, "pending");
}

#[tokio::test]
async fn a_swap_refused_on_chain_is_a_refused_order_not_a_fault() {
    let app = TestApp::spawn().await;
    let key = operator(&app).await;
    let (agent_id, wallet) = live_agent(&app, &key, "slippy", "fighter", 100.0).await;
    app.airdrop(&wallet, 2 * SOL, 100 * USDC).await;
    start(&app, &key, &agent_id).await;
    let before = balances(&app, &wallet).await;
    let order = SwapOrder {
        direction: Direction::SellSol,
        amount_in: SOL / 10,
        // Far more than the pool can pay: the pool program refuses (slippage).
        minimum_out: Some(u64::MAX / 2),
        reason: Some("crafted".to_owned()),
        market_ts: 0,
    };
    let pending = live::prepare(&app.state.ticking(), &agent_id, &order, None)
        .await
        .expect("prepare");
    let settled = live::send_and_settle(&app.state.ticking(), &agent_id, &pending)
        .await
        .expect("settle");
    let Settled::Refused(reason) = settled else {
        panic!("{settled:?}");
    };
    assert!(!reason.is_empty());
    let (status, error) = swap_status(&app, &pending.signature).await;
    assert_eq!(status, "refused");
    assert_eq!(error.as_deref(), Some(reason.as_str()));
    assert_eq!(balances(&app, &wallet).await, before, "nothing moved");
    assert!(trades(&app, &agent_id).await.is_empty());

    let pass = app.run_scheduler().await;
    assert_eq!(pass.agent_ticks.ticked, 1);
    assert_eq!(pass.agent_ticks.faulted, 0);
    let view = agent(&app, &key, &agent_id).await;
    assert_eq!(view["status"], "active", "{view}");
    assert_eq!(view["faults"], 0, "{view}");
    assert!(
        view["live"]["refusedOrders"].as_i64().expect("refused") >= 1,
        "{view}"
    );
    assert!(view["live"]["lastRefusal"].is_string(), "{view}");
}

#[tokio::test]
async fn agents_are_paper_unless_asked_otherwise() {
    let app = TestApp::spawn().await;
    let key = operator(&app).await;
    let paper = app.create_agent(&key, "paper_one", "fighter", "1h").await;
    assert_eq!(paper["isPaperTrading"], true);
    assert!(paper["live"].is_null());
    assert!(paper["paper"].is_object());
}

#[tokio::test]
async fn live_agents_entered_in_a_tournament_are_ranked_by_their_wallets_on_chain() {
    let app = TestApp::spawn_with(|config| config.time_scale = 300).await;
    let key = operator(&app).await;
    app.create_tournament(app.new_tournament("trn_live", 0, 10, -Duration::minutes(1), 48))
        .await;
    let price = pool_price(&app).await;
    let mut agents = Vec::new();
    for class in ["gambler", "rogue"] {
        let (id, wallet) = live_agent(&app, &key, &format!("ranked_{class}"), class, 60.0).await;
        let lamports = ((200.0 / price) * SOL as f64) as u64 + RESERVE;
        app.airdrop(&wallet, lamports, 800 * USDC).await;
        let entered = app
            .post(
                &format!("/api/v1/public/agents/{id}/tournaments/trn_live/enter"),
                Auth::XApiKey(&key),
                json!(null),
            )
            .await;
        assert_eq!(entered.status, 201, "{}", entered.body);
        start(&app, &key, &id).await;
        agents.push((id, wallet));
    }
    for _ in 0..800 {
        app.run_scheduler().await;
        let mut traded = true;
        for (id, _) in &agents {
            traded &= !trades(&app, id).await.is_empty();
        }
        if traded {
            break;
        }
        app.advance(Duration::seconds(1));
    }
    for (id, _) in &agents {
        assert!(!trades(&app, id).await.is_empty(), "{id} never traded");
    }

    // A snapshot values each wallet on chain, at the pool's price: the board ranks those values.
    app.snapshot_live().await.expect("snapshot");
    let board = app
        .get("/api/tournaments/trn_live/leaderboard", Auth::None)
        .await;
    assert_eq!(board.status, 200, "{}", board.body);
    let entries = board.body["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{}", board.body);
    for (_, wallet) in &agents {
        let row = entries
            .iter()
            .find(|row| row["wallet"] == json!(wallet))
            .expect("the agent's wallet is on the board");
        let on_chain = crucible::tournaments::tracking::wallet_value(&app.state.chain, wallet)
            .await
            .expect("valued");
        let shown = row["currentValue"].as_f64().expect("currentValue");
        assert!((shown - on_chain).abs() < 1e-6, "{shown} vs {on_chain}");
        let (lamports, usdc) = balances(&app, wallet).await;
        // The rent of the wallet's token accounts is its SOL too (docs/tournaments.md).
        let accounts = app
            .rpc_result(
                "getTokenAccountsByOwner",
                json!([wallet, {"programId": crucible::chain::tx::TOKEN_PROGRAM}, {"encoding": "jsonParsed"}]),
            )
            .await;
        let rent: u64 = accounts["value"]
            .as_array()
            .expect("accounts")
            .iter()
            .filter_map(|a| a["account"]["lamports"].as_u64())
            .sum();
        let by_hand = (lamports + rent) as f64 / SOL as f64 * pool_price(&app).await
            + usdc as f64 / USDC as f64;
        assert!((shown - by_hand).abs() < 1e-6, "{shown} vs {by_hand}");
    }
    let pnl = |row: &Value| row["pnlPercent"].as_f64().expect("pnlPercent");
    assert!(
        pnl(&entries[0]) >= pnl(&entries[1]),
        "ranked by PnL: {}",
        board.body
    );
    assert_eq!(entries[0]["rank"], 1);
}

/// Swaps prepared at one moment are recorded by one statement, and fills settled at one moment
/// by shared statements: each keeps the outcome it would have alone. A swap under a lost claim
/// is not recorded beside those that are, and a swap settled twice at once is one trade, both
/// callers hearing of it.
#[tokio::test]
async fn swaps_recorded_and_settled_at_one_moment_keep_one_outcome_each() {
    let app = TestApp::spawn().await;
    let key = operator(&app).await;
    let (held, held_wallet) = live_agent(&app, &key, "heldagent", "fighter", 100.0).await;
    let (free, free_wallet) = live_agent(&app, &key, "freeagent", "fighter", 100.0).await;
    app.airdrop(&held_wallet, 2 * SOL, 100 * USDC).await;
    app.airdrop(&free_wallet, 2 * SOL, 100 * USDC).await;
    start(&app, &key, &held).await;
    let (stale, holder) = ("node_a:scheduler:claim1", "node_b:scheduler:claim2");
    hold(&app, &held, holder).await;
    let order = |amount_in: u64| SwapOrder {
        direction: Direction::SellSol,
        amount_in,
        minimum_out: None,
        reason: Some("together".to_owned()),
        market_ts: 0,
    };
    let ticking = app.state.ticking();
    let (orders, lost) = (
        [order(SOL / 10), order(SOL / 20), order(SOL / 30)],
        order(SOL / 40),
    );
    let (under_claim, not_held, lone, lost) = tokio::join!(
        live::prepare(&ticking, &held, &orders[0], Some(holder)),
        live::prepare(&ticking, &held, &orders[1], Some(stale)),
        live::prepare(&ticking, &free, &orders[2], None),
        live::prepare(&ticking, &free, &lost, Some(stale)),
    );
    assert!(
        matches!(not_held, Err(live::LiveError::LeaseLost(_))),
        "{not_held:?}"
    );
    // The free agent is not active: a claim on it holds nothing either.
    assert!(
        matches!(lost, Err(live::LiveError::LeaseLost(_))),
        "{lost:?}"
    );
    let (under_claim, lone) = (under_claim.expect("held"), lone.expect("lone"));
    for agent_id in [&held, &free] {
        let (recorded,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM agent_live_swaps WHERE agent_id = $1")
                .bind(agent_id)
                .fetch_one(app.state.store.read())
                .await
                .expect("count");
        assert_eq!(recorded, 1, "one swap recorded for {agent_id}");
    }
    assert_eq!(swap_status(&app, &under_claim.signature).await.0, "pending");
    assert_eq!(swap_status(&app, &lone.signature).await.0, "pending");

    let (first, again, other) = tokio::join!(
        live::send_and_settle(&ticking, &held, &under_claim),
        live::send_and_settle(&ticking, &held, &under_claim),
        live::send_and_settle(&ticking, &free, &lone),
    );
    let (first, again, other) = (
        first.expect("settle"),
        again.expect("settle again"),
        other.expect("settle other"),
    );
    assert!(matches!(first, Settled::Filled { .. }), "{first:?}");
    assert_eq!(first, again, "both settles hear of the one trade");
    assert!(matches!(other, Settled::Filled { .. }), "{other:?}");
    for (agent_id, wallet, signature) in [
        (&held, &held_wallet, &under_claim.signature),
        (&free, &free_wallet, &lone.signature),
    ] {
        let recorded = trades(&app, agent_id).await;
        assert_eq!(recorded.len(), 1, "{recorded:?}");
        assert_eq!(&recorded[0].0, signature);
        assert_eq!(recorded[0].1, "sell");
        assert_eq!(swap_status(&app, signature).await.0, "filled");
        assert_eq!(swaps_on_chain(&app, wallet).await, 1);
    }
    assert_eq!(
        trade_reason(&app, &lone.signature).await.as_deref(),
        Some("together")
    );
    // One webhook a trade, written with it: the swap settled twice at once announced once.
    let payloads: Vec<(String,)> =
        sqlx::query_as("SELECT payload FROM webhook_deliveries WHERE event = 'agent.trade'")
            .fetch_all(app.state.store.read())
            .await
            .expect("payloads");
    let mut announced: Vec<String> = payloads
        .iter()
        .map(|(payload,)| {
            let payload: Value = serde_json::from_str(payload).expect("json");
            payload["data"]["txHash"]
                .as_str()
                .expect("txHash")
                .to_owned()
        })
        .collect();
    announced.sort();
    let mut settled = vec![under_claim.signature.clone(), lone.signature.clone()];
    settled.sort();
    assert_eq!(announced, settled);
}
