//! What a wallet is worth on a real cluster: SOL at Pyth's price (through Hermes), never the
//! simulated market. The "real cluster" here is another server's simnet reached over its RPC,
//! exactly as a server pointed at devnet would reach it, and Hermes is a local server answering
//! in Hermes' documented format.

use std::sync::{Arc, Mutex};

use axum::routing::get;
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestWallet};

/// A local Hermes whose SOL/USD answer the test sets: (price × 10⁻⁸, publish time).
async fn hermes(answer: Arc<Mutex<Option<(i64, i64)>>>) -> String {
    let app = axum::Router::new().route(
        "/v2/updates/price/latest",
        get(move || {
            let answer = answer.clone();
            async move {
                match *answer.lock().expect("lock") {
                    Some((price, publish_time)) => (
                        axum::http::StatusCode::OK,
                        axum::Json(json!({
                            "binary": {"encoding": "hex", "data": []},
                            "parsed": [{
                                "id": crucible::chain::hermes::SOL_USD_FEED,
                                "price": {"price": price.to_string(), "conf": "1000", "expo": -8, "publish_time": publish_time},
                                "ema_price": {"price": price.to_string(), "conf": "1000", "expo": -8, "publish_time": publish_time},
                                "metadata": {"slot": 1, "proof_available_time": publish_time, "prev_publish_time": publish_time}
                            }]
                        })),
                    ),
                    None => (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        axum::Json(Value::Null),
                    ),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("hermes") });
    format!("http://{address}")
}

#[tokio::test]
async fn on_a_real_cluster_wallets_are_valued_at_pyths_price() {
    let cluster = TestApp::spawn().await;
    let answer = Arc::new(Mutex::new(None));
    let hermes_url = hermes(answer.clone()).await;
    let mint = cluster.state.chain.stablecoin_mint().to_owned();
    let rpc = format!("{}/simnet/rpc", cluster.address);
    let app = TestApp::spawn_with(|config| {
        config.solana_rpc_url = Some(rpc);
        config.stablecoin_mint = Some(mint);
        config.price_api_url = hermes_url;
    })
    .await;
    assert!(app.state.chain.simnet().is_none(), "an external cluster");
    let wallet = TestWallet::new(7).address();
    cluster.airdrop(&wallet, 2_000_000_000, 5_000_000).await;

    let now = app.state.now().timestamp();
    *answer.lock().expect("lock") = Some((18_250_000_000, now - 3));
    let value = crucible::tournaments::tracking::wallet_value(&app.state.chain, &wallet)
        .await
        .expect("valued");
    // The SOL, the USDC, and the rent held in the wallet's token account (2,039,280 lamports,
    // which closing the account returns to the wallet).
    let rent_sol = 0.002_039_28;
    assert!(
        (value - ((2.0 + rent_sol) * 182.5 + 5.0)).abs() < 1e-9,
        "{value}"
    );

    // Hermes down, with no fresh price cached: the valuation fails, it does not fall back to the
    // simulated market.
    app.advance(chrono::Duration::seconds(120));
    *answer.lock().expect("lock") = None;
    let error = crucible::tournaments::tracking::wallet_value(&app.state.chain, &wallet)
        .await
        .expect_err("no price");
    assert!(
        format!("{error:#}").contains("price of SOL is unavailable"),
        "{error:#}"
    );

    // A price Hermes serves but that is older than a minute is refused as stale.
    let now = app.state.now().timestamp();
    *answer.lock().expect("lock") = Some((18_250_000_000, now - 600));
    let error = crucible::tournaments::tracking::wallet_value(&app.state.chain, &wallet)
        .await
        .expect_err("stale");
    assert!(format!("{error:#}").contains("600 s old"), "{error:#}");
}
