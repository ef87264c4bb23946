//! Soak benchmark (the hardening issue): the server on one core under a steady mix — tournament
//! reads, registrations, dungeon turns, agent ticks and webhook deliveries — for `BENCH_SECONDS`
//! (default 1800). Every `BENCH_WINDOW` seconds (default 30) it prints the requests, errors, p99
//! latency and resident memory of that window; at the end, memory growth after warm-up (the
//! first 10 % of the run), p99 of the first and last windows, total errors and lost webhooks.
//!
//! The load is open-loop: each kind is sent at a fixed rate whatever the answers take, so a
//! slowing server shows up as latency, not as a lighter load (past 256 waiting requests of a
//! kind, a tick is counted as an error rather than queued). Registrations fill tournaments of
//! 1,000 wallets one after another, and reads follow the one being filled: a single tournament
//! taking 10 registrations a second for half an hour, read 20 times a second, rebuilds an ever
//! larger board on every read (each registration changes it) — see the closing note of the
//! hardening issue. Agents are builtin paper agents on
//! 5 m intervals at `CRUCIBLE_TIME_SCALE` 300 (a tick per second each); their trades, starts and
//! stops are webhooks to a receiver on loopback, which counts each delivery id.
//!
//! It fails (non-zero exit) on any unexpected answer or any lost webhook, so the short version
//! in CI (`BENCH_SECONDS=60`) guards against regressions; memory and latency are reported.
//!
//! `cargo bench --bench soak`; `TEST_DATABASE_URL=postgres://…` for PostgreSQL; `BENCH_RPS`
//! (reads per second, default 40; registrations and turns are a quarter each) and
//! `BENCH_AGENTS` (default 20) tune it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use chrono::Duration as Span;
use crucible::dungeon::game::VisibleState;
use crucible::dungeon::game::agent::{Agent, GreedyAgent};
use crucible::tournaments::queries;
use serde_json::{Value, json};
use support::{env_number, percentile_ms, rss_mib};

/// What each kind of request should answer.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Read,
    Register,
    Turn,
}

const KINDS: [Kind; 3] = [Kind::Read, Kind::Register, Kind::Turn];

/// One window's samples, per kind: latencies (µs) and unexpected answers.
#[derive(Default)]
struct Window {
    latencies: [Vec<u32>; 3],
    errors: u64,
}

fn slot(kind: Kind) -> usize {
    KINDS.iter().position(|k| *k == kind).unwrap()
}

fn main() {
    let seconds = env_number("BENCH_SECONDS", 1800);
    let window_secs = env_number("BENCH_WINDOW", 30).max(1);
    let reads_per_sec = env_number("BENCH_RPS", 40).max(4);
    let agents = env_number("BENCH_AGENTS", 20) as usize;
    let server = support::serve_on_one_core_with(|config| {
        config.scheduler_interval_ms = 250;
        config.time_scale = 300;
        config.webhook_allow_private = true;
    });
    let (base, state, backend) = server.parts();

    let runtime = support::client_runtime();
    runtime.block_on(async move {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .build()
            .expect("client");
        let setup = Instant::now();
        // The receiver: every delivery id it was sent, and how many requests in all.
        let received: Arc<Mutex<HashSet<String>>> = Arc::default();
        let receiver_hits = Arc::new(AtomicU64::new(0));
        let receiver = {
            let (received, hits) = (received.clone(), receiver_hits.clone());
            let router = axum::Router::new().fallback(move |headers: HeaderMap| {
                let (received, hits) = (received.clone(), hits.clone());
                async move {
                    hits.fetch_add(1, Ordering::Relaxed);
                    if let Some(id) = headers.get("x-svc-delivery").and_then(|v| v.to_str().ok()) {
                        received.lock().unwrap().insert(id.to_owned());
                    }
                    "ok"
                }
            });
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let address = listener.local_addr().expect("addr");
            tokio::spawn(async move { axum::serve(listener, router).await.expect("receiver") });
            format!("http://{address}/hooks")
        };

        // Live free tournaments, each filled with `PER_TOURNAMENT` registrations before the next
        // one takes over (created up front, so the mix has no set-up step inside it): as many
        // tournaments of bounded size run side by side on a real service.
        let now = state.now();
        let tournaments = (seconds * (reads_per_sec / 4).max(1)).div_ceil(PER_TOURNAMENT) + 1;
        let mut tx = state.store.begin().await.expect("tx");
        for index in 0..tournaments {
            let tournament = queries::NewTournament {
                name: format!("Soak {index}"),
                is_paper_trading: true,
                end_date: now + Span::days(2),
                ..support::live_tournament(
                    &state,
                    &format!("trn_soak_{index}"),
                    PER_TOURNAMENT as usize,
                )
            };
            queries::insert(&mut tx, &tournament, now).await.expect("tournament");
        }
        tx.commit().await.expect("commit");

        // Agents with a webhook key, funded and started.
        let cookie = support::session(&client, &base, "operator@example.com").await;
        let key = support::post_as(
            &client,
            &format!("{base}/api/v1/api-keys"),
            &cookie,
            &json!({"name": "soak", "permissions": ["agents:read", "agents:write", "agents:start", "agents:stop"],
                    "webhookUrl": receiver}),
        )
        .await;
        let key = key["data"]["key"].as_str().expect("v1 key").to_owned();
        let mut agent_ids = Vec::with_capacity(agents);
        for n in 0..agents {
            let class = ["gambler", "fighter", "rogue", "ranger", "mage", "defender"][n % 6];
            let created: Value = client
                .post(format!("{base}/api/v1/public/agents/create"))
                .header("x-api-key", &key)
                .json(&json!({"name": format!("Soak {n}"), "username": format!("soak_{n}"), "class": class,
                              "modelId": "bench/soak",
                              "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"}, "timeInterval": "5m"}}))
                .send()
                .await
                .expect("create")
                .json()
                .await
                .expect("json");
            let agent_id = created["data"]["agentId"].as_str().expect("agent").to_owned();
            let wallet = created["data"]["walletAddress"].as_str().expect("wallet").to_owned();
            support::simnet_rpc(&client, &base, "requestAirdrop", json!([wallet, 50_000_000u64])).await;
            let started = client
                .post(format!("{base}/api/v1/public/agents/{agent_id}/start"))
                .header("x-api-key", &key)
                .send()
                .await
                .expect("start");
            assert_eq!(started.status(), 200, "start {agent_id}");
            agent_ids.push(agent_id);
        }
        // Dungeon runs to play, entered (and paid) through the API; more are entered as they end.
        let turns_per_sec = (reads_per_sec / 4).max(1);
        let runs_needed = ((seconds * turns_per_sec) / 60 + 10) as usize;
        let runs = support::enter_runs(&client, &base, &state, "player@example.com", runs_needed).await;
        println!(
            "setup ({backend}): {agents} agents started, {runs_needed} dungeon runs entered, in {:.1} s",
            setup.elapsed().as_secs_f64()
        );

        let windows: Arc<Mutex<Vec<Window>>> = Arc::default();
        let total_windows = seconds.div_ceil(window_secs) as usize;
        windows.lock().unwrap().resize_with(total_windows, Window::default);
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let record = {
            let windows = windows.clone();
            move |kind: Kind, latency: Duration, ok: bool| {
                let index = ((started.elapsed().as_secs() / window_secs) as usize).min(total_windows - 1);
                let mut windows = windows.lock().unwrap();
                let window = &mut windows[index];
                window.latencies[slot(kind)].push(latency.as_micros() as u32);
                if !ok {
                    window.errors += 1;
                }
            }
        };

        // The open-loop senders: reads and registrations at a fixed rate, each request on its
        // own task; turns at the same rate but one after another (a player waits for its turn).
        let mut senders = Vec::new();
        let registered = Arc::new(AtomicU64::new(0));
        {
            let (client, base, record, stop) = (client.clone(), base.clone(), record.clone(), stop.clone());
            let mut player = Player::new(runs);
            senders.push(tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_millis(1000 / turns_per_sec));
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                while !stop.load(Ordering::Relaxed) {
                    every.tick().await;
                    let sent = Instant::now();
                    let ok = player.turn(&client, &base).await;
                    record(Kind::Turn, sent.elapsed(), ok);
                }
            }));
        }
        for kind in [Kind::Read, Kind::Register] {
            let per_sec = if kind == Kind::Read { reads_per_sec } else { turns_per_sec };
            let (client, base, record, stop, registered) =
                (client.clone(), base.clone(), record.clone(), stop.clone(), registered.clone());
            let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
            senders.push(tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_millis(1000 / per_sec));
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
                let mut n: u64 = 0;
                while !stop.load(Ordering::Relaxed) {
                    every.tick().await;
                    n += 1;
                    // An open loop must not queue without bound when the server slows: past
                    // `MAX_IN_FLIGHT` waiting requests of a kind, a tick counts as an error.
                    let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                        record(kind, Duration::ZERO, false);
                        continue;
                    };
                    let (client, base, record, registered) =
                        (client.clone(), base.clone(), record.clone(), registered.clone());
                    tokio::spawn(async move {
                        let sent = Instant::now();
                        let ok = if kind == Kind::Read {
                            read(&client, &base, n, registered.load(Ordering::Relaxed)).await
                        } else {
                            let ok = register(&client, &base, n).await;
                            registered.fetch_max(n, Ordering::Relaxed);
                            ok
                        };
                        record(kind, sent.elapsed(), ok);
                        drop(permit);
                    });
                }
            }));
        }
        // Agents are stopped and started again now and then: more webhook deliveries.
        let restarts = {
            let (client, base, key, stop) = (client.clone(), base.clone(), key.clone(), stop.clone());
            let agent_ids = agent_ids.clone();
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    let agent_id = &agent_ids[n % agent_ids.len()];
                    n += 1;
                    for action in ["stop", "start"] {
                        let answer = client
                            .post(format!("{base}/api/v1/public/agents/{agent_id}/{action}"))
                            .header("x-api-key", &key)
                            .send()
                            .await
                            .expect("control");
                        assert_eq!(answer.status(), 200, "{action} {agent_id}");
                    }
                }
            })
        };

        // Memory, sampled once per window.
        let mut rss = Vec::with_capacity(total_windows);
        for _ in 0..total_windows {
            tokio::time::sleep(Duration::from_secs(window_secs)).await;
            rss.push(rss_mib());
            let index = rss.len() - 1;
            let windows = windows.lock().unwrap();
            let w = &windows[index];
            let all: usize = w.latencies.iter().map(Vec::len).sum();
            let mut merged: Vec<u32> = w.latencies.iter().flatten().copied().collect();
            merged.sort_unstable();
            println!(
                "window {:>3} ({:>5} s): {:>6.1} req/s, p99 {:>7.2} ms, errors {}, RSS {:.1} MiB",
                index + 1,
                (index + 1) as u64 * window_secs,
                all as f64 / window_secs as f64,
                if merged.is_empty() { 0.0 } else { percentile_ms(&merged, 0.99) },
                w.errors,
                rss[index],
            );
        }
        stop.store(true, Ordering::Relaxed);
        for sender in senders {
            sender.await.expect("sender");
        }
        restarts.await.expect("restarts");
        tokio::time::sleep(Duration::from_secs(2)).await;

        // Let the outbox drain, then compare what the server recorded with what arrived.
        for agent_id in &agent_ids {
            let _ = client
                .post(format!("{base}/api/v1/public/agents/{agent_id}/stop"))
                .header("x-api-key", &key)
                .send()
                .await;
        }
        let drained = Instant::now();
        let (pending, delivered, dead) = loop {
            let counts: Vec<(String, i64)> = sqlx::query_as(
                "SELECT status, COUNT(*) FROM webhook_deliveries GROUP BY status",
            )
            .fetch_all(state.store.read())
            .await
            .expect("deliveries");
            let of = |status: &str| counts.iter().find(|(s, _)| s == status).map_or(0, |(_, n)| *n);
            if of("pending") == 0 || drained.elapsed() > Duration::from_secs(60) {
                break (of("pending"), of("delivered"), of("dead"));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let delivered_ids: Vec<(String,)> =
            sqlx::query_as("SELECT id FROM webhook_deliveries WHERE status = 'delivered'")
                .fetch_all(state.store.read())
                .await
                .expect("ids");
        let arrived = received.lock().unwrap().clone();
        let lost = delivered_ids.iter().filter(|(id,)| !arrived.contains(id)).count() as i64
            + pending
            + dead;

        // The summary.
        let windows = windows.lock().unwrap();
        let warm = (total_windows / 10).max(1).min(total_windows - 1);
        let base_rss = rss[warm - 1].max(rss[warm.min(rss.len() - 1)]);
        let peak_after = rss[warm..].iter().copied().fold(0.0_f64, f64::max);
        let p99 = |w: &Window| {
            let mut merged: Vec<u32> = w.latencies.iter().flatten().copied().collect();
            merged.sort_unstable();
            if merged.is_empty() { 0.0 } else { percentile_ms(&merged, 0.99) }
        };
        let errors: u64 = windows.iter().map(|w| w.errors).sum();
        let requests: usize = windows.iter().map(|w| w.latencies.iter().map(Vec::len).sum::<usize>()).sum();
        println!(
            "soak, {backend}, server on 1 core, {seconds} s: {requests} requests ({reads_per_sec} reads/s, \
             {turns_per_sec} registrations/s, {turns_per_sec} turns/s), {agents} agents ticking, \
             {delivered} webhooks delivered ({} requests at the receiver)",
            receiver_hits.load(Ordering::Relaxed)
        );
        for kind in KINDS {
            let mut all: Vec<u32> = windows.iter().flat_map(|w| w.latencies[slot(kind)].iter().copied()).collect();
            all.sort_unstable();
            if !all.is_empty() {
                println!(
                    "  {kind:?}: {} requests, p50 {:.2} ms, p99 {:.2} ms",
                    all.len(),
                    percentile_ms(&all, 0.5),
                    percentile_ms(&all, 0.99)
                );
            }
        }
        println!(
            "  memory after warm-up: {base_rss:.1} MiB → peak {peak_after:.1} MiB ({:+.1} %); p99 first window {:.2} ms, last {:.2} ms",
            (peak_after - base_rss) / base_rss * 100.0,
            p99(&windows[0]),
            p99(&windows[total_windows - 1]),
        );
        println!("  errors {errors}, lost webhooks {lost} (pending {pending}, dead {dead})");
        assert_eq!(errors, 0, "unexpected answers during the soak");
        assert_eq!(lost, 0, "webhooks lost during the soak");
    });
}

/// Requests of one kind waiting for an answer before the load generator stops adding more.
const MAX_IN_FLIGHT: usize = 256;

/// Registrations each tournament takes before the next one opens.
const PER_TOURNAMENT: u64 = 1_000;

/// The tournament registrations currently go to, after `registered` of them.
fn current_tournament(registered: u64) -> String {
    format!("trn_soak_{}", registered / PER_TOURNAMENT)
}

/// Alternately the tournament list and the first leaderboard page of the tournament being filled.
async fn read(client: &reqwest::Client, base: &str, n: u64, registered: u64) -> bool {
    let path = if n.is_multiple_of(2) {
        "/api/tournaments?status=live".to_owned()
    } else {
        format!(
            "/api/tournaments/{}/leaderboard?pageSize=100",
            current_tournament(registered)
        )
    };
    matches!(client.get(format!("{base}{path}")).send().await, Ok(r) if r.status() == 200)
}

/// A fresh wallet into the soak tournament.
async fn register(client: &reqwest::Client, base: &str, n: u64) -> bool {
    let mut key = [3u8; 32];
    key[..8].copy_from_slice(&n.to_le_bytes());
    let wallet = crucible::domain::WalletAddress::from_public_key(&key).to_string();
    let answer = client
        .post(format!(
            "{base}/api/tournaments/{}/register",
            current_tournament(n - 1)
        ))
        .json(&json!({"registeredWallet": wallet, "txSignature": null}))
        .send()
        .await;
    matches!(answer, Ok(r) if r.status() == 201)
}

/// Plays the pool's runs one after another with the engine's greedy agent: one turn per call,
/// the next run once one ends. Turns of one run are sequential, as a real player's are.
struct Player {
    runs: Vec<(String, String)>,
    agent: GreedyAgent,
    body: Value,
}

impl Player {
    fn new(runs: Vec<(String, String)>) -> Self {
        Player {
            runs,
            agent: GreedyAgent::new(),
            body: json!({"action": "inventory", "turnNumber": 1}),
        }
    }

    /// One turn; false on an unexpected answer.
    async fn turn(&mut self, client: &reqwest::Client, base: &str) -> bool {
        let Some((run_id, key)) = self.runs.first().cloned() else {
            return false;
        };
        let answer = client
            .post(format!("{base}/api/dungeons/runs/{run_id}/turn"))
            .bearer_auth(&key)
            .json(&self.body)
            .send()
            .await;
        let Ok(answer) = answer else { return false };
        let status = answer.status().as_u16();
        let reply: Value = answer.json().await.unwrap_or(Value::Null);
        let state: Option<VisibleState> = match status {
            200 => serde_json::from_value(reply).ok(),
            // An illegal action is a normal answer; the state comes with it.
            400 => serde_json::from_value(reply["state"].clone()).ok(),
            _ => None,
        };
        let Some(state) = state else { return false };
        if state.status.is_over() {
            self.runs.remove(0);
            self.agent = GreedyAgent::new();
            self.body = json!({"action": "inventory", "turnNumber": 1});
        } else {
            let action = self.agent.decide(&state);
            self.body = json!({"action": action.action, "target": action.target, "turnNumber": state.turn_number + 1});
        }
        true
    }
}
