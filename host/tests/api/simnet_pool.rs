//! The simnet market over HTTP JSON-RPC: the SOL/USDC pool seeded at first start, real signed
//! swaps sent with `sendTransaction` and read back with `getTransaction` (parsed instruction,
//! lamport and token balances), slippage refused without a trace, the pool surviving a
//! restart, wallets valued at the pool's price, `crucible wallet swap` end to end (and its
//! clear refusal on a cluster without the pool), and the configurable snapshot schedule.

use std::process::Command;

use base64::Engine;
use chrono::Duration;
use crucible::chain::pool::{self, Direction, PoolAddresses};
use crucible::chain::tx::{self, Message, Pubkey, Transaction};
use crucible::chain::{Keypair, simnet};
use serde_json::{Value, json};

use crate::helpers::TestApp;

const SOL: u64 = 1_000_000_000;
const USDC: u64 = 1_000_000;

async fn funded(app: &TestApp, lamports: u64, usdc_raw: u64) -> Keypair {
    let keypair = Keypair::generate();
    app.airdrop(&keypair.pubkey().to_string(), lamports, usdc_raw)
        .await;
    keypair
}

async fn reserves(app: &TestApp) -> simnet::PoolReserves {
    app.state
        .chain
        .simnet()
        .expect("simnet")
        .pool_reserves()
        .await
        .expect("read")
        .expect("the pool exists")
}

fn usdc_account(app: &TestApp, owner: &Pubkey) -> Pubkey {
    let mint: Pubkey = app.state.chain.stablecoin_mint().parse().expect("mint");
    tx::associated_token_address(owner, &mint, &tx::token_program())
}

/// Sign and send one swap; returns the raw JSON-RPC reply.
async fn send_swap(
    app: &TestApp,
    user: &Keypair,
    direction: Direction,
    amount_in: u64,
    minimum_out: u64,
) -> Value {
    let latest = app.rpc_result("getLatestBlockhash", json!([])).await;
    let blockhash: [u8; 32] = bs58::decode(latest["value"]["blockhash"].as_str().expect("hash"))
        .into_vec()
        .expect("base58")
        .try_into()
        .expect("32 bytes");
    let ix = pool::swap(
        &user.pubkey(),
        &usdc_account(app, &user.pubkey()),
        direction,
        amount_in,
        minimum_out,
    );
    let message = Message::new_legacy(&[ix], &user.pubkey(), blockhash);
    let wire = Transaction::sign(message, &[user.signing_key()])
        .expect("sign")
        .serialize()
        .expect("wire");
    let encoded = base64::engine::general_purpose::STANDARD.encode(wire);
    app.rpc("sendTransaction", json!([encoded, {"encoding": "base64"}]))
        .await
}

/// Balance of `key` at the account index in `meta.{pre,post}TokenBalances`, if listed.
fn token_balance(tx: &Value, which: &str, index: usize) -> Option<String> {
    tx["meta"][which]
        .as_array()?
        .iter()
        .find(|b| b["accountIndex"] == index)
        .and_then(|b| b["uiTokenAmount"]["amount"].as_str().map(str::to_owned))
}

fn index_of(tx: &Value, key: &Pubkey) -> usize {
    tx["transaction"]["message"]["accountKeys"]
        .as_array()
        .expect("keys")
        .iter()
        .position(|k| k["pubkey"] == key.to_string())
        .expect("listed")
}

#[tokio::test]
async fn the_pool_is_seeded_at_first_start_at_the_market_price() {
    let app = TestApp::spawn().await;
    let r = reserves(&app).await;
    assert_eq!(r.usdc_raw, app.config.simnet_pool_depth_usdc * USDC);
    let market_price = app
        .state
        .market
        .price_at("SOL", crucible::clock::to_millis(app.state.now()))
        .expect("price");
    let pool_price = pool::price(r.lamports, r.usdc_raw, r.usdc_decimals).expect("price");
    assert!(
        (pool_price - market_price).abs() / market_price < 1e-6,
        "{pool_price} vs {market_price}"
    );
    // The pool's state account is readable as on any node: owner, and the documented layout.
    let a = PoolAddresses::sol_usdc();
    let info = app
        .rpc_result(
            "getAccountInfo",
            json!([a.pool.to_string(), {"encoding": "base64"}]),
        )
        .await;
    assert_eq!(info["value"]["owner"], pool::POOL_PROGRAM);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(info["value"]["data"][0].as_str().expect("data"))
        .expect("base64");
    let state = pool::PoolState::from_bytes(&bytes).expect("layout");
    assert_eq!(state.usdc_vault, a.usdc_vault);
    assert_eq!(state.lp_supply, r.lp_supply);
    assert_eq!(u64::from(state.fee_bps), pool::FEE_BPS);
    let missing = app
        .rpc_result(
            "getAccountInfo",
            json!([Keypair::generate().pubkey().to_string()]),
        )
        .await;
    assert!(missing["value"].is_null());
}

#[tokio::test]
async fn a_signed_swap_lands_is_rendered_parsed_and_moves_every_balance() {
    let app = TestApp::spawn().await;
    let user = funded(&app, 2 * SOL, 500 * USDC).await;
    let user_usdc = usdc_account(&app, &user.pubkey());
    let a = PoolAddresses::sol_usdc();
    let before = reserves(&app).await;
    let expected = pool::quote(SOL / 2, before.lamports, before.usdc_raw).expect("quote");

    let reply = send_swap(&app, &user, Direction::SellSol, SOL / 2, expected).await;
    let signature = reply["result"].as_str().expect("signature").to_owned();
    let tx = app
        .rpc_result(
            "getTransaction",
            json!([signature, {"encoding": "jsonParsed", "commitment": "confirmed"}]),
        )
        .await;
    assert!(tx["meta"]["err"].is_null(), "{tx}");
    let ix = &tx["transaction"]["message"]["instructions"][0];
    assert_eq!(ix["program"], "crucible-pool");
    assert_eq!(ix["programId"], pool::POOL_PROGRAM);
    assert_eq!(ix["parsed"]["type"], "swap");
    let info = &ix["parsed"]["info"];
    assert_eq!(info["direction"], "solToUsdc");
    assert_eq!(info["amountIn"], (SOL / 2).to_string());
    assert_eq!(info["amountOut"], expected.to_string());
    assert_eq!(info["user"], user.pubkey().to_string());
    assert_eq!(info["solVault"], a.sol_vault.to_string());
    assert_eq!(info["userUsdcAccount"], user_usdc.to_string());

    // Lamports: the user paid the SOL and the fee, the vault received the SOL.
    let (u, v) = (index_of(&tx, &user.pubkey()), index_of(&tx, &a.sol_vault));
    let lamports = |which: &str, i: usize| tx["meta"][which][i].as_u64().expect("balance");
    assert_eq!(lamports("preBalances", u), 2 * SOL);
    assert_eq!(lamports("postBalances", u), 2 * SOL - SOL / 2 - 5_000);
    assert_eq!(lamports("preBalances", v), before.lamports);
    assert_eq!(lamports("postBalances", v), before.lamports + SOL / 2);
    // Tokens: the vault paid the user exactly the amount out.
    let (ua, va) = (index_of(&tx, &user_usdc), index_of(&tx, &a.usdc_vault));
    assert_eq!(
        token_balance(&tx, "preTokenBalances", ua),
        Some((500 * USDC).to_string())
    );
    assert_eq!(
        token_balance(&tx, "postTokenBalances", ua),
        Some((500 * USDC + expected).to_string())
    );
    assert_eq!(
        token_balance(&tx, "preTokenBalances", va),
        Some(before.usdc_raw.to_string())
    );
    assert_eq!(
        token_balance(&tx, "postTokenBalances", va),
        Some((before.usdc_raw - expected).to_string())
    );
    let after = reserves(&app).await;
    assert_eq!(
        (after.lamports, after.usdc_raw),
        (before.lamports + SOL / 2, before.usdc_raw - expected)
    );
    assert!(
        u128::from(after.lamports) * u128::from(after.usdc_raw)
            >= u128::from(before.lamports) * u128::from(before.usdc_raw)
    );

    // The other direction, over the same RPC.
    let back = pool::quote(100 * USDC, after.usdc_raw, after.lamports).expect("quote");
    let reply = send_swap(&app, &user, Direction::SellUsdc, 100 * USDC, back).await;
    assert!(reply["error"].is_null(), "{reply}");
    let balance = app
        .rpc_result("getBalance", json!([user.pubkey().to_string()]))
        .await;
    assert_eq!(
        balance["value"].as_u64(),
        Some(2 * SOL - SOL / 2 - 10_000 + back)
    );
    let last = reserves(&app).await;
    assert_eq!(
        (last.lamports, last.usdc_raw),
        (after.lamports - back, after.usdc_raw + 100 * USDC)
    );
}

#[tokio::test]
async fn a_swap_below_its_minimum_or_beyond_the_balance_is_refused_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let user = funded(&app, SOL, 10 * USDC).await;
    let before = reserves(&app).await;
    let expected = pool::quote(SOL / 10, before.lamports, before.usdc_raw).expect("quote");

    let reply = send_swap(&app, &user, Direction::SellSol, SOL / 10, expected + 1).await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    // As a node answers a failed preflight: the instruction error in `data.err`, the
    // program's own words in `data.logs`.
    let error = &reply["error"];
    assert_eq!(
        error["data"]["err"],
        json!({"InstructionError": [0, {"Custom": 2}]}),
        "{reply}"
    );
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("custom program error: 0x2")
    );
    assert!(
        error["data"]["logs"]
            .to_string()
            .contains("below the minimum"),
        "{reply}"
    );

    let reply = send_swap(&app, &user, Direction::SellUsdc, 11 * USDC, 0).await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    assert_eq!(
        reply["error"]["data"]["err"],
        json!({"InstructionError": [0, {"Custom": 1}]}),
        "{reply}"
    );

    assert_eq!(reserves(&app).await, before);
    let balance = app
        .rpc_result("getBalance", json!([user.pubkey().to_string()]))
        .await;
    assert_eq!(
        balance["value"].as_u64(),
        Some(SOL),
        "no fee without landing"
    );
}

#[tokio::test]
async fn the_pool_survives_a_restart_and_its_price_values_wallets() {
    let app = TestApp::spawn().await;
    // One raw unit of USDC creates the account the sale is paid into.
    let trader = funded(&app, 100 * SOL, 1).await;
    let reply = send_swap(&app, &trader, Direction::SellSol, 50 * SOL, 1).await;
    assert!(reply["error"].is_null(), "{reply}");
    let moved = reserves(&app).await;

    let app = app.restart().await;
    assert_eq!(
        reserves(&app).await,
        moved,
        "the restart neither reseeds nor loses it"
    );

    let holder = funded(&app, 2 * SOL, 3 * USDC).await;
    let price = pool::price(moved.lamports, moved.usdc_raw, moved.usdc_decimals).expect("price");
    let value = crucible::tournaments::tracking::wallet_value(
        &app.state.chain,
        &holder.pubkey().to_string(),
    )
    .await
    .expect("value");
    // 2 SOL, 3 USDC, and the rent of the USDC account (SOL the holder can take back).
    let rent = 2_039_280.0 / SOL as f64;
    assert!(
        (value - ((2.0 + rent) * price + 3.0)).abs() < 1e-6,
        "{value} at {price}"
    );
    let market = app
        .state
        .market
        .price_at("SOL", crucible::clock::to_millis(app.state.now()))
        .expect("market");
    assert!(
        (price - market).abs() / market > 0.01,
        "the sale moved the pool away from the market ({price} vs {market})"
    );
}

/// Run the real binary (blocking, off the runtime that serves the app).
async fn crucible(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_crucible"))
            .args(&args)
            .env_remove("SOLANA_RPC_URL")
            .output()
            .expect("run crucible")
    })
    .await
    .expect("join")
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_cli_swaps_through_the_pool_and_refuses_a_cluster_without_it() {
    let app = TestApp::spawn().await;
    let rpc_url = format!("{}/simnet/rpc", app.address);
    let dir = tempfile::tempdir().expect("dir");
    let keyfile = dir.path().join("trader.json");
    let keyfile = keyfile.to_str().expect("path");
    let user = Keypair::generate();
    std::fs::write(keyfile, user.to_json()).expect("write");
    // SOL only: the swap creates the USDC account it is paid into.
    app.airdrop(&user.pubkey().to_string(), 2 * SOL, 0).await;
    let before = reserves(&app).await;
    let expected = pool::quote(SOL / 2, before.lamports, before.usdc_raw).expect("quote");

    let out = crucible(args(&[
        "wallet",
        "swap",
        "--keypair",
        keyfile,
        "--sell",
        "SOL",
        "--amount",
        "0.5",
        "--rpc",
        &rpc_url,
    ]))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("utf8");
    let mut lines = stdout.lines();
    let signature = lines.next().expect("signature line");
    let summary = lines.next().expect("amounts line");
    assert!(summary.starts_with("sold 0.5 SOL for "), "{summary}");
    let tx = app
        .rpc_result(
            "getTransaction",
            json!([signature, {"encoding": "jsonParsed", "commitment": "confirmed"}]),
        )
        .await;
    let swap = tx["transaction"]["message"]["instructions"]
        .as_array()
        .expect("instructions")
        .iter()
        .find(|ix| ix["parsed"]["type"] == "swap")
        .expect("a swap")
        .clone();
    assert_eq!(swap["parsed"]["info"]["amountOut"], expected.to_string());
    // Default slippage: 1 % under the quote.
    assert_eq!(
        swap["parsed"]["info"]["minimumAmountOut"],
        (expected * 99 / 100).to_string()
    );
    let mint = app.state.chain.stablecoin_mint().to_owned();
    let portfolio = app
        .state
        .chain
        .portfolio(&user.pubkey().into())
        .await
        .expect("portfolio");
    assert_eq!(portfolio.token(&mint), expected);

    // A minimum the pool cannot pay: refused, nothing moves.
    let held = reserves(&app).await;
    let out = crucible(args(&[
        "wallet",
        "swap",
        "--keypair",
        keyfile,
        "--sell",
        "USDC",
        "--amount",
        "10",
        "--min-out",
        "1",
        "--rpc",
        &rpc_url,
    ]))
    .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("below the minimum"), "{stderr}");
    assert_eq!(reserves(&app).await, held);

    // A node without the pool program's account (as on a real cluster).
    let node = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let node_url = format!("http://{}", node.local_addr().expect("addr"));
    // Every account it is asked about is missing: `null` for one, a `null` each for a list.
    let real_cluster = axum::Router::new().route(
        "/",
        axum::routing::post(|axum::Json(request): axum::Json<Value>| async move {
            let value = match request["method"].as_str() {
                Some("getMultipleAccounts") => {
                    let asked = request["params"][0].as_array().map_or(0, Vec::len);
                    Value::Array(vec![Value::Null; asked])
                }
                _ => Value::Null,
            };
            axum::Json(json!({"jsonrpc": "2.0", "id": request["id"],
                              "result": {"context": {"slot": 1}, "value": value}}))
        }),
    );
    tokio::spawn(async move { axum::serve(node, real_cluster).await });
    let out = crucible(args(&[
        "wallet",
        "swap",
        "--keypair",
        keyfile,
        "--sell",
        "SOL",
        "--amount",
        "0.1",
        "--rpc",
        &node_url,
    ]))
    .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no Crucible pool on this cluster"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_snapshot_interval_is_configurable() {
    let app = TestApp::spawn_with(|config| config.snapshot_interval_secs = 5).await;
    let scheduler = crucible::scheduler::Scheduler::standard(
        &app.state.chain,
        &app.state.config,
        &app.state.node_id,
    )
    .expect("schedules");
    scheduler.run_due(&app.state).await.expect("pass");
    for _ in 0..2 {
        app.advance(Duration::seconds(5));
        let pass = scheduler.run_due(&app.state).await.expect("pass");
        assert!(
            pass.schedules_run
                .iter()
                .any(|name| name == "tournaments.snapshots"),
            "{:?}",
            pass.schedules_run
        );
    }
    // The default stays five minutes; intervals cron cannot space evenly are refused.
    assert_eq!(
        crucible::config::snapshot_cron(300).as_deref(),
        Ok("0 */5 * * * *")
    );
    assert!(crucible::config::snapshot_cron(7).is_err());
    assert!(crucible::config::snapshot_cron(420).is_err());
}

#[tokio::test]
async fn the_market_maker_pulls_the_pool_back_toward_the_market_without_draining_itself() {
    let app = TestApp::spawn().await;
    let market = app
        .state
        .market
        .price_at("SOL", crucible::clock::to_millis(app.state.now()))
        .expect("market");
    let maker = app
        .state
        .chain
        .market_maker()
        .expect("maker")
        .address
        .to_string();
    let mint = app.state.chain.stablecoin_mint().to_owned();
    let holdings = || async {
        let p = app
            .state
            .chain
            .portfolio(&crucible::domain::WalletAddress::parse(&maker).expect("address"))
            .await
            .expect("portfolio");
        (p.lamports, p.token(&mint))
    };
    let price_now = || async {
        let r = reserves(&app).await;
        pool::price(r.lamports, r.usdc_raw, r.usdc_decimals).expect("price")
    };
    // In line with the market: nothing to do.
    assert_eq!(
        app.state.chain.make_market(market).await.expect("run"),
        None
    );

    // A large sale pushes SOL 10+ % below the market.
    let trader = funded(&app, 200 * SOL, 1).await;
    let reply = send_swap(&app, &trader, Direction::SellSol, 100 * SOL, 1).await;
    assert!(reply["error"].is_null(), "{reply}");
    let mut gap = (market - price_now().await).abs();
    assert!(gap / market > 0.1, "{gap}");

    for _ in 0..3 {
        let (_, usdc_before) = holdings().await;
        let receipt = app
            .state
            .chain
            .make_market(market)
            .await
            .expect("run")
            .expect("a trade");
        assert!(receipt.amount_in <= usdc_before / 10, "bounded per run");
        let (_, usdc_after) = holdings().await;
        assert_eq!(usdc_after, usdc_before - receipt.amount_in, "it bought SOL");
        let new_gap = (market - price_now().await).abs();
        assert!(new_gap < gap, "closer each run: {new_gap} < {gap}");
        gap = new_gap;
    }

    // The scheduler runs it every 30 s.
    let scheduler = crucible::scheduler::Scheduler::standard(
        &app.state.chain,
        &app.state.config,
        &app.state.node_id,
    )
    .expect("schedules");
    scheduler.run_due(&app.state).await.expect("pass");
    app.advance(Duration::seconds(30));
    let pass = scheduler.run_due(&app.state).await.expect("pass");
    assert!(
        pass.schedules_run
            .iter()
            .any(|n| n == "simnet.market_maker"),
        "{:?}",
        pass.schedules_run
    );
    assert!((market - price_now().await).abs() < gap);
}
