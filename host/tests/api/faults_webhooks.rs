//! Agent starts and their webhooks under faults: a client that creates, funds and starts agents
//! through either node with a key whose webhooks go to a receiver of the test's, and the checker
//! — every acknowledged start left its agent active and told the receiver (`agent.started`), and
//! every webhook the nodes recorded was delivered (at least once; none lost, none dead). Used by
//! the random fault schedule (`faults_schedule.rs`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use serde_json::{Value, json};

/// A webhook receiver: every delivery id it was sent (retries included).
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    pub seen: Arc<Mutex<Vec<String>>>,
    pub url: String,
}

impl Receiver {
    /// Listening on `address` (one every node can reach).
    pub(crate) async fn start(address: &str) -> Receiver {
        let listener = tokio::net::TcpListener::bind((address, 0))
            .await
            .expect("bind");
        let receiver = Receiver {
            seen: Arc::default(),
            url: format!("http://{}/hooks", listener.local_addr().expect("addr")),
        };
        let seen = receiver.seen.clone();
        let router = axum::Router::new().fallback(move |headers: HeaderMap| {
            let seen = seen.clone();
            async move {
                if let Some(id) = headers.get("x-svc-delivery").and_then(|v| v.to_str().ok()) {
                    seen.lock().expect("seen").push(id.to_owned());
                }
                "ok"
            }
        });
        tokio::spawn(async move { axum::serve(listener, router).await.expect("receiver") });
        receiver
    }
}

/// Agents whose start a node acknowledged (200).
pub(crate) type Started = Arc<Mutex<Vec<String>>>;

/// Create, fund and start agents with `key` until `stop`, through either node.
pub(crate) async fn client_loop(
    bases: Arc<RwLock<Vec<String>>>,
    key: String,
    started: Started,
    stop: Arc<AtomicBool>,
) {
    let client = crate::helpers::server_process::client(15);
    let mut n = 0_u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let base = {
            let nodes = bases.read().expect("bases");
            nodes[n as usize % nodes.len()].clone()
        };
        let created = client
            .post(format!("{base}/api/v1/public/agents/create"))
            .header("x-api-key", &key)
            .json(
                &json!({"name": format!("Fault {n}"), "username": format!("fault_{n}"),
                          "class": "fighter", "modelId": "openai/gpt-test",
                          "strategy": {"type": "builtin",
                                       "tokenPair": {"base": "SOL", "quote": "USDC"},
                                       "timeInterval": "1d"}}),
            )
            .send()
            .await;
        let Some(agent) = json_of(created).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let (Some(agent_id), Some(wallet)) = (
            agent["data"]["agentId"].as_str(),
            agent["data"]["walletAddress"].as_str(),
        ) else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        // Funded and started, each through whichever node answers.
        let mut ok = false;
        for attempt in 0..10_usize {
            let base = {
                let nodes = bases.read().expect("bases");
                nodes[(n as usize + attempt) % nodes.len()].clone()
            };
            let funded =
                crate::helpers::server_process::airdrop(&client, &base, wallet, 50_000_000, 0)
                    .await
                    .is_some_and(|b| b["error"].is_null());
            if !funded {
                tokio::time::sleep(Duration::from_millis(300)).await;
                continue;
            }
            let start = client
                .post(format!("{base}/api/v1/public/agents/{agent_id}/start"))
                .header("x-api-key", &key)
                .send()
                .await;
            if start.is_ok_and(|r| r.status().as_u16() == 200) {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        if ok {
            started.lock().expect("started").push(agent_id.to_owned());
        }
    }
}

async fn json_of(answer: reqwest::Result<reqwest::Response>) -> Option<Value> {
    let answer = answer.ok()?;
    if !answer.status().is_success() {
        return None;
    }
    answer.json().await.ok()
}

/// What the webhook checker counted.
#[derive(Debug)]
pub(crate) struct WebhooksChecked {
    pub starts_acknowledged: usize,
    pub deliveries: usize,
    pub received: usize,
}

/// The checker: waits (up to two minutes) for every recorded webhook to be delivered.
pub(crate) async fn check(
    pool: &sqlx::AnyPool,
    receiver: &Receiver,
    started: &[String],
    seed: u64,
) -> WebhooksChecked {
    // Every acknowledged start left its agent active, with its `agent.started` webhook.
    for agent_id in started {
        let (status,): (String,) = sqlx::query_as("SELECT status FROM agents WHERE id = $1")
            .bind(agent_id)
            .fetch_one(pool)
            .await
            .expect("agent");
        assert_eq!(status, "active", "{agent_id} (seed {seed})");
        let (told,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE event = 'agent.started' AND payload LIKE $1",
        )
        .bind(format!("%{agent_id}%"))
        .fetch_one(pool)
        .await
        .expect("count");
        assert!(
            told >= 1,
            "{agent_id} started with no webhook (seed {seed})"
        );
    }
    // Every recorded webhook is delivered, and the receiver has it.
    let waiting = Instant::now();
    let delivered: Vec<String> = loop {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT id, status FROM webhook_deliveries ORDER BY id")
                .fetch_all(pool)
                .await
                .expect("deliveries");
        assert!(
            rows.iter().all(|(_, status)| status != "dead"),
            "a webhook died (seed {seed})"
        );
        if rows.iter().all(|(_, status)| status == "delivered") {
            break rows.into_iter().map(|(id, _)| id).collect();
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "webhooks still pending 120 s after the faults (seed {seed})"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let seen: BTreeSet<String> = receiver
        .seen
        .lock()
        .expect("seen")
        .iter()
        .cloned()
        .collect();
    let lost: Vec<&String> = delivered.iter().filter(|id| !seen.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "webhooks recorded delivered but never received: {lost:?} (seed {seed})"
    );
    WebhooksChecked {
        starts_acknowledged: started.len(),
        deliveries: delivered.len(),
        received: receiver.seen.lock().expect("seen").len(),
    }
}
