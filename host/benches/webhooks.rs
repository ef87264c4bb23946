//! Webhook outbox benchmark: what `webhooks::enqueue` costs a producer's transaction, and how
//! fast one worker (`webhooks::deliver_due`, 8 requests in flight) drains the outbox into a
//! local receiver that answers 200 at once.
//!
//! `cargo bench --bench webhooks` (SQLite); with `TEST_DATABASE_URL=postgres://…` on PostgreSQL.
//! `BENCH_EVENTS` (default 5000) sets how many events are queued and delivered.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::json;
use support::env_number;

fn main() {
    let events = env_number("BENCH_EVENTS", 5000);
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();
    let (hook_url, received) = start_receiver();

    let runtime = support::client_runtime();
    runtime.block_on(async move {
        let account_id = setup_webhook_key(&base, &hook_url).await;

        let started = Instant::now();
        for n in 0..events {
            let mut tx = state.store.begin().await.expect("begin");
            let data = json!({"agentId": "agt_bench", "type": "BUY", "token": "SOL",
                              "amount": 0.5, "price": 151.25, "txHash": null, "n": n});
            let queued = crucible::webhooks::enqueue(&mut tx, &account_id, crucible::webhooks::Event::AgentTrade, data, state.now())
                .await
                .expect("enqueue");
            assert_eq!(queued, 1);
            tx.commit().await.expect("commit");
        }
        let enqueue_secs = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let mut sent = 0;
        while sent < events as usize {
            sent += crucible::webhooks::deliver_due(&state.delivering()).await.expect("deliver");
        }
        let deliver_secs = started.elapsed().as_secs_f64();
        assert_eq!(received.load(Ordering::Relaxed), events);
        let pending: (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'delivered'")
                .fetch_one(state.store.read())
                .await
                .expect("count");
        assert_eq!(pending.0, 0);

        println!(
            "webhooks, {backend}: enqueue (one event, one key, own transaction with commit) {:.0} events/s, \
             {:.0} µs each; one worker delivering to a local 200 receiver: {events} deliveries in {:.2} s, \
             {:.0} deliveries/s",
            events as f64 / enqueue_secs,
            enqueue_secs * 1e6 / events as f64,
            deliver_secs,
            events as f64 / deliver_secs,
        );
    });
}

/// A receiver on its own thread that answers 200 and counts requests.
fn start_receiver() -> (String, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let counter = count.clone();
    std::thread::spawn(move || {
        let runtime = support::runtime();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr")).expect("send");
            let router = axum::Router::new().fallback(move || {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::Relaxed);
                    "ok"
                }
            });
            axum::serve(listener, router).await.expect("receiver");
        });
    });
    let address = rx.recv().expect("receiver started");
    (format!("http://{address}/hook"), count)
}

/// Sign up and mint a key with a webhook URL; the account id.
async fn setup_webhook_key(base: &str, hook_url: &str) -> String {
    let client = reqwest::Client::new();
    let signup = client
        .post(format!("{base}/api/auth/signup"))
        .json(
            &json!({"email": "bench@example.com", "password": "correct horse 9",
                      "acceptTerms": true, "acceptPrivacy": true}),
        )
        .send()
        .await
        .expect("signup");
    let cookie = signup.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("cookie pair")
        .to_owned();
    let account: serde_json::Value = signup.json().await.expect("account");
    let url = format!("{base}/api/api-keys");
    let key = support::as_session(client.post(&url), &url, &cookie)
        .json(&json!({"name": "bench", "webhookUrl": hook_url}))
        .send()
        .await
        .expect("key");
    assert_eq!(key.status(), 201);
    account["id"].as_str().expect("id").to_owned()
}
