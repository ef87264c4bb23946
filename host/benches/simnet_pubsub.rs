//! Websocket confirmations at scale: `BENCH_SIGNATURES` (1,000) transfers are each awaited by a
//! `signatureSubscribe` at `finalized`, spread over `BENCH_CONNECTIONS` (10) websockets, the way
//! `confirmTransaction` of many clients waits on one node. All subscriptions are made first, then
//! every transfer is sent at once; the figure is the time from each transaction's finality
//! (its execution time on the ledger + `BENCH_FINALITY_MS`, 2,000) to its notification arriving
//! at the client, p50/p99/max. The server runs on one core (a current-thread runtime on its own
//! thread); the clients on another.
//!
//! `cargo bench --bench simnet_pubsub`; `TEST_DATABASE_URL=postgres://…` for PostgreSQL.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use crucible::chain::Keypair;
use crucible::chain::tx::{Message, Transaction, instructions};
use futures_util::{SinkExt, StreamExt, stream};
use serde_json::{Value, json};
use support::{env_number, percentile_ms};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite;

/// Wall-clock milliseconds (fractional), the clock the simnet stamps executions with.
fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
        * 1000.0
}

async fn rpc(client: &reqwest::Client, base: &str, method: &str, params: Value) -> Value {
    support::simnet_rpc(client, base, method, params).await["result"].clone()
}

fn main() {
    let signatures = env_number("BENCH_SIGNATURES", 1_000) as usize;
    let connections = env_number("BENCH_CONNECTIONS", 10).max(1) as usize;
    let finality_ms = env_number("BENCH_FINALITY_MS", 2_000);
    let server = support::serve_on_one_core_with(move |config| {
        config.simnet_finality_ms = finality_ms;
        config.max_streams_per_client = connections + 1;
        config.max_streams = connections + 16;
    });
    let (base, state, backend) = server.parts();
    let ws_url = format!("{}/simnet/rpc", base.replacen("http", "ws", 1));

    let runtime = support::runtime();
    runtime.block_on(async move {
        let client = reqwest::Client::new();
        let payer = Keypair::generate();
        let payer_key = payer.pubkey();
        rpc(
            &client,
            &base,
            "requestAirdrop",
            json!([payer_key.to_string(), 100_000_000_000u64]),
        )
        .await;
        // One wave per connection: a fresh blockhash (the simnet lands each transaction in its
        // own slot, so one blockhash is good for 150 of them), the wave's transfers signed, a
        // finalized `signatureSubscribe` for each, then the wave sent. Finality comes
        // `BENCH_FINALITY_MS` after execution, so every subscription is still waiting when the
        // last wave is sent: they are all open at once.
        let notified: Arc<Mutex<HashMap<String, f64>>> = Arc::default();
        let mut readers = Vec::new();
        let mut sending = Duration::ZERO;
        let per_wave = signatures.div_ceil(connections);
        for wave in 0..connections {
            let count = per_wave.min(signatures - (wave * per_wave).min(signatures));
            if count == 0 {
                break;
            }
            let latest = rpc(&client, &base, "getLatestBlockhash", json!([])).await;
            let blockhash: [u8; 32] = bs58::decode(latest["value"]["blockhash"].as_str().unwrap())
                .into_vec()
                .unwrap()
                .try_into()
                .unwrap();
            // Each transfer pays a fresh wallet its rent-exempt minimum and a little more, so no
            // two transactions are alike.
            let chunk: Vec<(String, String)> = (0..count)
                .map(|n| {
                    let to = Keypair::generate().pubkey();
                    let lamports = 1_000_000 + (wave * per_wave + n) as u64;
                    let ix = instructions::system_transfer(&payer_key, &to, lamports);
                    let message = Message::new_legacy(&[ix], &payer_key, blockhash);
                    let tx = Transaction::sign(message, &[payer.signing_key()]).unwrap();
                    let wire = base64::engine::general_purpose::STANDARD
                        .encode(tx.serialize().unwrap());
                    (tx.signature(), wire)
                })
                .collect();

            let (socket, _) = tokio_tungstenite::connect_async(ws_url.as_str())
                .await
                .expect("websocket");
            let (mut sink, mut source) = socket.split();
            for (n, (signature, _)) in chunk.iter().enumerate() {
                let request = json!({"jsonrpc": "2.0", "id": n, "method": "signatureSubscribe",
                    "params": [signature, {"commitment": "finalized"}]});
                sink.send(tungstenite::Message::Text(request.to_string().into()))
                    .await
                    .expect("subscribe");
            }
            let mut by_subscription = HashMap::new();
            while by_subscription.len() < chunk.len() {
                let message = source.next().await.expect("open").expect("frame");
                let reply: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
                let n = reply["id"].as_u64().expect("an answer") as usize;
                let id = reply["result"].as_u64().expect("a subscription id");
                by_subscription.insert(id, chunk[n].0.clone());
            }
            let notified = notified.clone();
            readers.push(tokio::spawn(async move {
                let _sink = sink;
                let mut left = by_subscription.len();
                while left > 0 {
                    let message = source.next().await.expect("open").expect("frame");
                    let at = wall_ms();
                    let note: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
                    assert_eq!(note["method"], "signatureNotification", "{note}");
                    assert!(note["params"]["result"]["value"]["err"].is_null(), "{note}");
                    let id = note["params"]["subscription"].as_u64().unwrap();
                    let signature = by_subscription.get(&id).expect("ours").clone();
                    notified.lock().await.insert(signature, at);
                    left -= 1;
                }
            }));

            let sent = Instant::now();
            stream::iter(chunk.iter())
                .for_each_concurrent(32, |(_, wire)| {
                    let (client, base) = (&client, &base);
                    async move {
                        rpc(
                            client,
                            base,
                            "sendTransaction",
                            json!([wire, {"encoding": "base64"}]),
                        )
                        .await;
                    }
                })
                .await;
            sending += sent.elapsed();
        }
        tokio::time::timeout(
            Duration::from_millis(finality_ms + 60_000),
            futures_util::future::join_all(readers),
        )
        .await
        .expect("every notification within a minute of finality");

        let executed: Vec<(String, i64)> =
            sqlx::query_as("SELECT signature, executed_at FROM simnet_transactions")
                .fetch_all(state.store.read())
                .await
                .expect("ledger");
        let notified = notified.lock().await;
        let mut delays_us: Vec<u32> = executed
            .iter()
            .filter_map(|(signature, executed_at)| {
                let at = notified.get(signature)?;
                let finality = (*executed_at + finality_ms as i64) as f64;
                // The ledger stamps whole milliseconds: a delay under one is reported as zero.
                Some(((at - finality).max(0.0) * 1000.0) as u32)
            })
            .collect();
        assert_eq!(delays_us.len(), signatures, "every transfer notified");
        delays_us.sort_unstable();
        println!(
            "{signatures} finalized signatureSubscribe confirmations over {connections} websockets, \
             one core, {backend}"
        );
        println!(
            "sent in {:.2} s ({:.0} tx/s); finality → notification: p50 {:.1} ms, p99 {:.1} ms, \
             max {:.1} ms",
            sending.as_secs_f64(),
            signatures as f64 / sending.as_secs_f64(),
            percentile_ms(&delays_us, 0.50),
            percentile_ms(&delays_us, 0.99),
            percentile_ms(&delays_us, 1.0),
        );
    });
}
