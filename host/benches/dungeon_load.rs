//! Load benchmark of the dungeon turn path (issue #7): 500 concurrent runs played over HTTP.
//!
//! Setup (not measured) goes through the real API: one account with a linked simnet wallet
//! quotes, pays (1 USDC with the memo) and enters 500 runs. Then 500 clients each play their own
//! run with the engine's greedy agent, one turn after another, for `BENCH_SECONDS` (or until the
//! run ends): turns per second and latency percentiles, server on one core, rate limits off.
//!
//! `cargo bench --bench dungeon_load`; `TEST_DATABASE_URL=postgres://…` for PostgreSQL;
//! `BENCH_SECONDS` (default 10) and `BENCH_RUNS` (default 500) tune it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::time::{Duration, Instant};

use crucible::chain::Keypair;
use crucible::domain::WalletAddress;
use crucible::dungeon::game::VisibleState;
use crucible::dungeon::game::agent::{Agent, GreedyAgent};
use serde_json::{Value, json};
use support::{env_number, percentile_ms};

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let runs = env_number("BENCH_RUNS", 500) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, backend) = support::database_url(dir.path());
    let (base, state) = support::serve_on_one_core(dir.path(), url);

    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("rt");
    client_runtime.block_on(async move {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(runs)
            .build()
            .expect("client");
        let setup = Instant::now();
        let keys = enter_runs(&client, &base, &state, runs).await;
        println!("setup: {runs} paid runs entered over HTTP in {:.1} s", setup.elapsed().as_secs_f64());

        let started = Instant::now();
        let deadline = started + Duration::from_secs(seconds);
        let players: Vec<_> = keys
            .into_iter()
            .map(|(run_id, key)| {
                let (client, url) = (client.clone(), format!("{base}/api/dungeons/runs/{run_id}/turn"));
                tokio::spawn(async move { play(&client, &url, &key, deadline).await })
            })
            .collect();
        let mut latencies = Vec::new();
        let mut ended = 0;
        for player in players {
            let (mut played, over) = player.await.expect("player");
            latencies.append(&mut played);
            ended += usize::from(over);
        }
        let elapsed = started.elapsed().as_secs_f64();
        latencies.sort_unstable();
        println!(
            "POST turn, {runs} concurrent runs, {backend}, server on 1 core, {seconds} s: {} turns, {:.0} turns/s, \
             p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {ended} runs reached their end",
            latencies.len(),
            latencies.len() as f64 / elapsed,
            percentile_ms(&latencies, 0.50),
            percentile_ms(&latencies, 0.99),
            percentile_ms(&latencies, 1.0),
        );
    });
}

/// One account, one linked and funded wallet, `runs` quotes paid and entered: (runId, key).
async fn enter_runs(
    client: &reqwest::Client,
    base: &str,
    state: &crucible::state::AppState,
    runs: usize,
) -> Vec<(String, String)> {
    let signup = client
        .post(format!("{base}/api/auth/signup"))
        .json(&json!({"email": "bench@example.com", "password": "correct horse 9", "acceptTerms": true, "acceptPrivacy": true}))
        .send()
        .await
        .expect("signup");
    assert_eq!(signup.status(), 201);
    let cookie = signup
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| {
            c.split(';')
                .next()
                .filter(|c| c.starts_with("session-token="))
        })
        .expect("session cookie")
        .to_owned();
    let account: Value = client
        .get(format!("{base}/api/account"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("account")
        .json()
        .await
        .expect("json");
    let account_id = account["id"].as_str().expect("account id").to_owned();

    // The wallet proof is tested elsewhere; here the service layer links the wallet directly.
    let payer = Keypair::generate();
    let wallet = payer.pubkey().to_string();
    let mut conn = state.store.write().acquire().await.expect("conn");
    crucible::account::link_wallet(
        &mut conn,
        &account_id,
        &WalletAddress::parse(&wallet).expect("wallet"),
        "linked",
        state.now(),
    )
    .await
    .expect("link");
    drop(conn);
    let airdrop: Value = client
        .post(format!("{base}/simnet/rpc"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "requestAirdrop",
                      "params": [wallet, 100_000_000_000u64, {"stablecoinAmount": runs as u64 * 1_000_000}]}))
        .send()
        .await
        .expect("airdrop")
        .json()
        .await
        .expect("json");
    assert!(airdrop["error"].is_null(), "{airdrop}");

    let today = state.now().format("%Y-%m-%d").to_string();
    let dungeon = state.chain.dungeon().address.clone();
    let mint = state.chain.stablecoin_mint().to_owned();
    let mut keys = Vec::with_capacity(runs);
    for _ in 0..runs {
        let quote: Value = client
            .get(format!("{base}/api/dungeons/{today}/quote?wallet={wallet}"))
            .send()
            .await
            .expect("quote")
            .json()
            .await
            .expect("json");
        let memo = quote["memo"].as_str().expect("memo");
        let signature = state
            .chain
            .transfer_token(&payer, &dungeon, &mint, 1_000_000, memo)
            .await
            .expect("pay");
        let entered = client
            .post(format!("{base}/api/dungeons/{today}/enter"))
            .header("cookie", &cookie)
            .json(&json!({"quoteId": quote["quoteId"], "payerWallet": wallet, "txSignature": signature}))
            .send()
            .await
            .expect("enter");
        assert_eq!(entered.status(), 201);
        let body: Value = entered.json().await.expect("json");
        keys.push((
            body["runId"].as_str().expect("run").to_owned(),
            body["registrationKey"].as_str().expect("key").to_owned(),
        ));
    }
    keys
}

/// Play one run until `deadline` or its end; latencies in µs, and whether it ended.
async fn play(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    deadline: Instant,
) -> (Vec<u32>, bool) {
    let mut agent = GreedyAgent::new();
    let mut latencies = Vec::with_capacity(512);
    let mut body = json!({"action": "inventory", "turnNumber": 1});
    while Instant::now() < deadline {
        let sent = Instant::now();
        let response = client
            .post(url)
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .expect("turn");
        let status = response.status().as_u16();
        let reply: Value = response.json().await.expect("json");
        latencies.push(sent.elapsed().as_micros() as u32);
        let state: VisibleState = match status {
            200 => serde_json::from_value(reply).expect("state"),
            400 => serde_json::from_value(reply["state"].clone()).expect("state"),
            other => panic!("turn answered {other}: {reply}"),
        };
        if state.status.is_over() {
            return (latencies, true);
        }
        let action = agent.decide(&state);
        body = json!({"action": action.action, "target": action.target, "turnNumber": state.turn_number + 1});
    }
    (latencies, false)
}
