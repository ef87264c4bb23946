//! The Solana RPC node down, silent or losing answers (docs/operations.md, "When the RPC node
//! fails"): the server runs against an external cluster (another test server's simnet) through a
//! proxy the test switches between passing, refusing (503), never answering, and passing
//! `sendTransaction` on while losing its answer — the case where a retry could pay twice.
//!
//! A silent node costs a request its RPC call's whole budget (15 s), so these run by name with
//! the other fault tests (`cargo test -p crucible --test api faults_rpc -- --ignored`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use crucible::chain::Keypair;
use serde_json::{Value, json};

use crate::helpers::{Auth, TestApp};

/// What the proxy does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Pass,
    /// 503 at once, as a node that is down behind its balancer.
    Down,
    /// Accept and never answer.
    Silent,
    /// Pass `sendTransaction` on and answer 503: it lands, the sender never hears.
    LoseSendAnswers,
}

#[derive(Clone)]
struct RpcProxy {
    mode: Arc<Mutex<Mode>>,
    target: String,
    http: reqwest::Client,
    url: String,
}

impl RpcProxy {
    async fn start(target: String) -> RpcProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let proxy = RpcProxy {
            mode: Arc::new(Mutex::new(Mode::Pass)),
            target,
            http: reqwest::Client::new(),
            url: format!("http://{}", listener.local_addr().expect("addr")),
        };
        let router = axum::Router::new()
            .fallback(forward)
            .with_state(proxy.clone());
        tokio::spawn(async move { axum::serve(listener, router).await.expect("proxy") });
        proxy
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().expect("mode") = mode;
    }
}

async fn forward(State(proxy): State<RpcProxy>, body: Bytes) -> Response {
    let mode = *proxy.mode.lock().expect("mode");
    match mode {
        Mode::Down => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Mode::Silent => std::future::pending::<()>().await,
        Mode::Pass | Mode::LoseSendAnswers => {}
    }
    let answer = proxy
        .http
        .post(&proxy.target)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .expect("the cluster answers");
    let status = answer.status();
    let text = answer.text().await.expect("body");
    let sending = serde_json::from_slice::<Value>(&body)
        .is_ok_and(|call| call["method"] == "sendTransaction");
    if mode == Mode::LoseSendAnswers && sending {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    (status, [("content-type", "application/json")], text).into_response()
}

/// A cluster, a proxy in front of its RPC, and a server on the cluster through the proxy.
async fn on_a_proxied_cluster() -> (TestApp, RpcProxy, TestApp) {
    let cluster = TestApp::spawn().await;
    let proxy = RpcProxy::start(format!("{}/simnet/rpc", cluster.address)).await;
    let mint = cluster.state.chain.stablecoin_mint().to_owned();
    let url = proxy.url.clone();
    let app = TestApp::spawn_with(|config| {
        config.solana_rpc_url = Some(url);
        config.stablecoin_mint = Some(mint);
    })
    .await;
    assert!(app.state.chain.simnet().is_none(), "an external cluster");
    (cluster, proxy, app)
}

async fn registered(app: &TestApp, tournament: &str, wallet: &str) -> i64 {
    let (count,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM tournament_registrations WHERE tournament_id = $1 AND wallet = $2",
    )
    .bind(tournament)
    .bind(wallet)
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "waits out a silent RPC node's 15 s budget: run by name with the fault tests"]
async fn faults_rpc_a_paid_entry_is_answered_503_while_the_rpc_node_fails_then_registers_once() {
    const FEE: u64 = 2_000_000;
    let (cluster, proxy, app) = on_a_proxied_cluster().await;
    app.create_tournament(app.new_tournament(
        "trn_rpc",
        FEE as i64,
        10,
        chrono::Duration::zero(),
        1,
    ))
    .await;
    let payer = Keypair::generate();
    let wallet = payer.pubkey().to_string();
    cluster.airdrop(&wallet, 1_000_000_000, FEE).await;
    let memo = crucible::tournaments::registration_memo("trn_rpc", std::slice::from_ref(&wallet));
    let signature = cluster
        .state
        .chain
        .transfer_token(
            &payer,
            &app.state.chain.escrow().address,
            cluster.state.chain.stablecoin_mint(),
            FEE,
            &memo,
        )
        .await
        .expect("the fee is paid");
    let register = || {
        app.post(
            "/api/tournaments/trn_rpc/register",
            Auth::None,
            json!({"registeredWallet": wallet, "txSignature": signature, "payerWallet": wallet}),
        )
    };

    for mode in [Mode::Down, Mode::Silent] {
        proxy.set(mode);
        let asked = Instant::now();
        let refused = register().await;
        let took = asked.elapsed();
        assert_eq!(refused.status, 503, "{mode:?}: {}", refused.body);
        assert_eq!(
            refused
                .headers
                .get("retry-after")
                .map(|v| v.to_str().expect("ascii")),
            Some("5"),
            "{mode:?}"
        );
        assert!(
            refused.error().contains("RPC"),
            "{mode:?}: the answer says what is missing: {}",
            refused.body
        );
        assert!(
            took < Duration::from_secs(20),
            "{mode:?}: answered after {took:?}"
        );
        assert_eq!(registered(&app, "trn_rpc", &wallet).await, 0, "{mode:?}");
    }

    proxy.set(Mode::Pass);
    let accepted = register().await;
    assert_eq!(accepted.status, 201, "{}", accepted.body);
    assert_eq!(registered(&app, "trn_rpc", &wallet).await, 1);
    assert_eq!(register().await.status, 409, "the fee registers once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "waits out a silent RPC node's 15 s budget: run by name with the fault tests"]
async fn faults_rpc_a_prize_whose_send_answer_was_lost_is_paid_once() {
    const PRIZE: u64 = 1_500_000;
    let (cluster, proxy, app) = on_a_proxied_cluster().await;
    let escrow = app.state.chain.escrow().address.to_string();
    cluster.airdrop(&escrow, 1_000_000_000, PRIZE).await;
    app.create_tournament(app.new_tournament(
        "trn_prize_rpc",
        0,
        10,
        chrono::Duration::minutes(1),
        1,
    ))
    .await;
    let winner = Keypair::generate().pubkey().to_string();
    sqlx::query(
        "INSERT INTO payouts (id, wallet, source_kind, source_id, rank, amount_raw, mint, status, created_at)
         VALUES ('pay_rpc', $1, 'tournament', 'trn_prize_rpc', 1, $2, $3, 'pending', $4)",
    )
    .bind(&winner)
    .bind(PRIZE as i64)
    .bind(app.state.chain.stablecoin_mint())
    .bind(crucible::clock::to_millis(app.state.now()))
    .execute(app.state.store.write())
    .await
    .expect("payout");
    let send = || crucible::tournaments::payouts::send(app.state.payer(), "pay_rpc");

    // The transfer lands, but the server never hears so: the payout stays pending.
    proxy.set(Mode::LoseSendAnswers);
    send().await.expect_err("no answer to the send");
    // Then the node is down, then silent: still pending, nothing signed anew.
    for mode in [Mode::Down, Mode::Silent] {
        proxy.set(mode);
        let asked = Instant::now();
        send().await.expect_err("the node is away");
        assert!(asked.elapsed() < Duration::from_secs(20), "{mode:?}");
    }
    let (status,): (String,) = sqlx::query_as("SELECT status FROM payouts WHERE id = 'pay_rpc'")
        .fetch_one(app.state.store.read())
        .await
        .expect("payout");
    assert_eq!(status, "pending");

    // Back: the recorded transfer is found landed and finalized; nothing is sent again.
    proxy.set(Mode::Pass);
    let mut tries = 0;
    loop {
        tries += 1;
        let _ = send().await;
        let (status,): (String,) =
            sqlx::query_as("SELECT status FROM payouts WHERE id = 'pay_rpc'")
                .fetch_one(app.state.store.read())
                .await
                .expect("payout");
        if status == "sent" {
            break;
        }
        assert!(tries < 20, "the payout was not sent: {status}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let transfers = cluster
        .rpc_result("getSignaturesForAddress", json!([winner]))
        .await;
    assert_eq!(
        transfers.as_array().map_or(0, Vec::len),
        1,
        "one transfer to the winner: {transfers}"
    );
    let held = crate::payouts::usdc(&cluster, &winner).await;
    assert_eq!(held, PRIZE, "paid once");
}
