//! Webhook outbox benchmark: what `webhooks::enqueue` costs a producer's transaction, and how
//! fast one worker (`webhooks::deliver_due`) drains a backlog into a local receiver that answers
//! 200 at once. The node (its runtime and the database's threads) is pinned to CPU 0, the
//! receiver to CPU 1, when `taskset` exists.
//!
//! `cargo bench --bench webhooks` (SQLite); with `TEST_DATABASE_URL=postgres://…` on PostgreSQL.
//! `BENCH_EVENTS` (default 100,000) sets how many events are queued and delivered,
//! `BENCH_ENQUEUE_TIMED` (default 2,000) how many of them are queued one per transaction.
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
    let events = env_number("BENCH_EVENTS", 100_000);
    let enqueue_timed = env_number("BENCH_ENQUEUE_TIMED", 2_000).min(events);
    // The node (its runtime, SQLite's threads) on CPU 0; the receiver pins itself to CPU 1.
    let pinned = support::wrk::pin_to_cpu(0);
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();
    let (hook_url, received) = start_receiver();

    let runtime = support::runtime();
    let account_id = runtime.block_on(setup_webhook_key(&base, &hook_url));
    let (enqueue_secs, bulk_secs) = runtime.block_on(async {
        let data = |n: u64| {
            json!({"agentId": "agt_bench", "type": "BUY", "token": "SOL",
                   "amount": 0.5, "price": 151.25, "txHash": null, "n": n})
        };
        let event = crucible::webhooks::Event::AgentTrade;
        // What a producer pays: one event in a transaction of its own.
        let started = Instant::now();
        for n in 0..enqueue_timed {
            let mut tx = state.store.begin().await.expect("begin");
            let queued =
                crucible::webhooks::enqueue(&mut tx, &account_id, event, data(n), state.now())
                    .await
                    .expect("enqueue");
            assert_eq!(queued, 1);
            tx.commit().await.expect("commit");
        }
        let enqueue_secs = started.elapsed().as_secs_f64();
        // The rest of the backlog in large transactions, to reach the delivery part quickly.
        let started = Instant::now();
        let mut n = enqueue_timed;
        while n < events {
            let mut tx = state.store.begin().await.expect("begin");
            for _ in 0..1_000.min(events - n) {
                crucible::webhooks::enqueue(&mut tx, &account_id, event, data(n), state.now())
                    .await
                    .expect("enqueue");
                n += 1;
            }
            tx.commit().await.expect("commit");
        }
        (enqueue_secs, started.elapsed().as_secs_f64())
    });

    let (batches_before, writes_before) = state.store.group_commit_counts();
    let started = Instant::now();
    let sent = runtime.block_on(async {
        let mut sent = 0;
        while sent < events as usize {
            sent += crucible::webhooks::deliver_due(&state.delivering())
                .await
                .expect("deliver");
        }
        sent
    });
    let deliver_secs = started.elapsed().as_secs_f64();
    let (batches, writes) = state.store.group_commit_counts();
    assert_eq!(sent as u64, events);
    assert_eq!(received.load(Ordering::Relaxed), events);
    let pending: (i64,) = runtime.block_on(async {
        sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'delivered'")
            .fetch_one(state.store.read())
            .await
            .expect("count")
    });
    assert_eq!(pending.0, 0, "every delivery recorded as delivered");

    println!(
        "webhooks, {backend}{}: enqueue (one event, one key, own transaction with commit) {:.0} events/s, \
         {:.0} µs each ({enqueue_timed} events; the other {} in transactions of 1,000 at {:.0}/s); \
         one worker delivering to a local 200 receiver on the other core: {events} deliveries in {:.2} s, \
         {:.0} deliveries/s, outcomes recorded in {} transactions ({:.1} per transaction)",
        if pinned { ", node pinned to CPU 0" } else { "" },
        enqueue_timed as f64 / enqueue_secs,
        enqueue_secs * 1e6 / enqueue_timed as f64,
        events - enqueue_timed,
        (events - enqueue_timed) as f64 / bulk_secs,
        deliver_secs,
        events as f64 / deliver_secs,
        batches - batches_before,
        (writes - writes_before) as f64 / (batches - batches_before).max(1) as f64,
    );
}

/// A receiver on its own thread that answers 200 and counts requests.
fn start_receiver() -> (String, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let counter = count.clone();
    std::thread::spawn(move || {
        pin_this_thread(1);
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

/// Pin the calling thread (and the threads it starts) to `cpu`, when `taskset` exists.
fn pin_this_thread(cpu: usize) {
    let Ok(task) = std::fs::read_link("/proc/thread-self") else {
        return;
    };
    let Some(tid) = task.file_name().and_then(|name| name.to_str()) else {
        return;
    };
    let _ = std::process::Command::new("taskset")
        .args(["-p", "-c", &cpu.to_string(), tid])
        .output();
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
