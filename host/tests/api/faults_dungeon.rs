//! Dungeon runs under faults: a client that enters today's dungeon paying from its account's
//! embedded wallet (the server signs and sends the payment) and plays each run's first turns
//! with the engine's greedy agent, through either node, retrying a turn with the same
//! `turnNumber` when no answer came. The checker: every turn a node acknowledged is in its run,
//! none was played twice or unasked, and the embedded wallet paid exactly one entry fee per run
//! there is (no payment lost, none counted twice). Used by the random fault schedule
//! (`faults_schedule.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crucible::dungeon::game::VisibleState;
use crucible::dungeon::game::agent::{Agent, GreedyAgent};
use serde_json::{Value, json};

use crate::helpers::server_process::{ServerProcess, airdrop};

/// Turns played per run before the client enters another (a run is long; entries are the
/// money).
const TURNS_PER_RUN: u64 = 12;

/// Lamports and raw USDC the embedded wallet starts with: enough for every entry of a long run.
const FUNDS: u64 = 100_000_000_000;

/// One run the client entered: the highest turn a node acknowledged (200, or 400 for an
/// illegal action, which is played and charged too) and the highest it sent.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub run_id: String,
    pub acknowledged: u64,
    pub sent: u64,
}

pub(crate) type Runs = Arc<Mutex<Vec<Run>>>;

/// The player: an account key that may pay entries from the embedded wallet, and that wallet.
pub(crate) struct Player {
    pub key: String,
    pub wallet: String,
}

/// Sign up on `node`, mint a key with `write` and spend limits, and fund the embedded wallet.
pub(crate) async fn player(node: &ServerProcess) -> Player {
    let cookie = node.signup("dungeon@example.com").await;
    let key = node
        .session_write(
            &cookie,
            "POST",
            "/api/api-keys",
            json!({"name": "faults", "scopes": ["read", "write"],
                   "spend": {"maxUsdcPerEntry": 5, "maxUsdcPerDay": 1_000_000}}),
        )
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let wallets: Value = node
        .client
        .get(format!("{}/api/account/wallets", node.base))
        .bearer_auth(&key)
        .send()
        .await
        .expect("wallets")
        .json()
        .await
        .expect("json");
    let wallet = wallets["wallets"]
        .as_array()
        .and_then(|all| all.iter().find(|w| w["kind"] == "custodial"))
        .and_then(|w| w["address"].as_str())
        .unwrap_or_else(|| panic!("no embedded wallet: {wallets}"))
        .to_owned();
    let funded = airdrop(&node.client, &node.base, &wallet, FUNDS, FUNDS).await;
    assert!(
        funded.as_ref().is_some_and(|f| f["error"].is_null()),
        "{funded:?}"
    );
    Player { key, wallet }
}

/// The embedded wallet's USDC, raw (as the node says; `None` when it cannot say now).
pub(crate) async fn usdc(client: &reqwest::Client, base: &str, key: &str) -> Option<u64> {
    let wallets: Value = client
        .get(format!("{base}/api/account/wallets"))
        .bearer_auth(key)
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    wallets["wallets"]
        .as_array()?
        .iter()
        .find(|w| w["kind"] == "custodial")?["usdcRaw"]
        .as_str()?
        .parse()
        .ok()
}

/// POST `body` to `path` on the nodes, from `first`, until an answer other than none or 503
/// comes, for up to 20 s; the status and body.
async fn post_until_answered(
    client: &reqwest::Client,
    bases: &RwLock<Vec<String>>,
    first: usize,
    path: &str,
    bearer: &str,
    body: &Value,
) -> (u16, Value) {
    let began = Instant::now();
    let mut attempt = first;
    loop {
        let base = {
            let nodes = bases.read().expect("bases");
            nodes[attempt % nodes.len()].clone()
        };
        attempt += 1;
        let answer = client
            .post(format!("{base}{path}"))
            .bearer_auth(bearer)
            .json(body)
            .send()
            .await;
        let (status, reply) = match answer {
            Ok(response) => {
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        };
        if !matches!(status, 0 | 202 | 503) || began.elapsed() > Duration::from_secs(20) {
            return (status, reply);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Enter and play until `stop`.
pub(crate) async fn client_loop(
    bases: Arc<RwLock<Vec<String>>>,
    player: Arc<Player>,
    runs: Runs,
    stop: Arc<AtomicBool>,
) {
    let client = crate::helpers::server_process::client(15);
    let mut n = 0_usize;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
        let base = {
            let nodes = bases.read().expect("bases");
            nodes[n % nodes.len()].clone()
        };
        let quote = client
            .get(format!(
                "{base}/api/dungeons/{today}/quote?wallet={}",
                player.wallet
            ))
            .send()
            .await;
        let Some(quote_id) = (match quote {
            Ok(r) if r.status().is_success() => r
                .json::<Value>()
                .await
                .ok()
                .and_then(|q| q["quoteId"].as_str().map(str::to_owned)),
            _ => None,
        }) else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        // The same quote again after no answer: the server pays once per quote.
        let (status, entered) = post_until_answered(
            &client,
            &bases,
            n,
            &format!("/api/dungeons/{today}/enter"),
            &player.key,
            &json!({"quoteId": quote_id, "payFrom": "embedded", "class": "fighter"}),
        )
        .await;
        if status != 201 {
            continue;
        }
        let run_id = entered["runId"].as_str().expect("runId").to_owned();
        let run_key = entered["registrationKey"]
            .as_str()
            .expect("registrationKey")
            .to_owned();
        let mut run = Run {
            run_id: run_id.clone(),
            acknowledged: 0,
            sent: 0,
        };
        let mut agent = GreedyAgent::new();
        let mut state: Option<VisibleState> = None;
        for number in 1..=TURNS_PER_RUN {
            let body = match &state {
                None => json!({"action": "inventory", "turnNumber": number}),
                Some(state) if state.status.is_over() => break,
                Some(state) => {
                    let action = agent.decide(state);
                    json!({"action": action.action, "target": action.target,
                           "turnNumber": number})
                }
            };
            run.sent = number;
            let (status, reply) = post_until_answered(
                &client,
                &bases,
                n,
                &format!("/api/dungeons/runs/{run_id}/turn"),
                &run_key,
                &body,
            )
            .await;
            let visible = match status {
                200 => reply,
                400 => reply["state"].clone(),
                _ => break,
            };
            run.acknowledged = number;
            match serde_json::from_value(visible) {
                Ok(visible) => state = Some(visible),
                Err(_) => break,
            }
        }
        runs.lock().expect("runs").push(run);
    }
}

/// What the dungeon checker counted.
#[derive(Debug)]
pub(crate) struct DungeonChecked {
    pub runs: usize,
    pub turns_acknowledged: u64,
    pub entries_paid: u64,
}

/// The checker: run after the schedule, once the settling jobs have had their time.
pub(crate) async fn check(
    pool: &sqlx::AnyPool,
    bases: &RwLock<Vec<String>>,
    player: &Player,
    runs: &[Run],
    seed: u64,
) -> DungeonChecked {
    for run in runs {
        let (stored,): (i64,) =
            sqlx::query_as("SELECT turn_number FROM dungeon_runs WHERE id = $1")
                .bind(&run.run_id)
                .fetch_one(pool)
                .await
                .expect("run");
        let stored = u64::try_from(stored).expect("turns");
        assert!(
            stored >= run.acknowledged && stored <= run.sent,
            "{}: {stored} turns stored, {} acknowledged, {} sent (seed {seed})",
            run.run_id,
            run.acknowledged,
            run.sent
        );
    }
    // Every entry fee paid from the embedded wallet opened exactly one run: a payment whose
    // answer was lost is settled into its run by its job (or forgotten if it never landed).
    let client = crate::helpers::server_process::client(15);
    let base = bases.read().expect("bases")[1].clone();
    let fee: u64 = 1_000_000;
    let began = Instant::now();
    loop {
        let (entered,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM dungeon_runs r JOIN accounts a ON a.id = r.account_id
              WHERE a.email = 'dungeon@example.com'",
        )
        .fetch_one(pool)
        .await
        .expect("runs");
        let entered = u64::try_from(entered).expect("count");
        if let Some(held) = usdc(&client, &base, &player.key).await {
            let paid = FUNDS - held;
            if paid == entered * fee {
                return DungeonChecked {
                    runs: runs.len(),
                    turns_acknowledged: runs.iter().map(|r| r.acknowledged).sum(),
                    entries_paid: entered,
                };
            }
            assert!(
                began.elapsed() < Duration::from_secs(120),
                "the embedded wallet paid {paid} raw for {entered} runs of {fee} (seed {seed})"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
