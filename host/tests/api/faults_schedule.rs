//! A randomized schedule of real faults against two nodes on a private PostgreSQL, and a checker
//! over what the clients were told (docs/operations.md, "When the database fails").
//!
//! Six clients send sign-ups and free registrations to either node (the other one when a node
//! does not answer, as a balancer would), and two pay entry fees on the simnet and register
//! with them (`faults_money.rs`), one creates and starts agents whose webhooks go to a receiver
//! (`faults_webhooks.rs`), and one enters the dungeon paying from its embedded wallet and plays
//! turns (`faults_dungeon.rs`). Meanwhile, from a seeded schedule: PostgreSQL is stopped
//! (`immediate` or `fast`) and started again, a node is paused (SIGSTOP, then SIGCONT), cut off
//! from the database (node 0 runs in a network namespace; its packets to and from PostgreSQL
//! are dropped, `faults_partition.rs`) or killed (SIGKILL, then started again). Every node runs
//! with its clock skewed by up to a second either way (`--clock-offset-ms`, drawn again at each
//! restart). After each fault, the time until both nodes take a write again is measured.
//!
//! Afterwards the checker requires that every acknowledged write (201) is in the database, that
//! no answer was a 5xx other than 503, that both nodes serve normally within 5 s of the last
//! fault, that once the paid tournament has ended every acknowledged paid entry is registered
//! once with its fee and every prize is sent once and finalized, that every acknowledged agent
//! start told its webhook and no webhook was lost, that every acknowledged dungeon turn is kept
//! and each run paid once, and that no job is stuck.
//!
//! `FAULT_SECONDS` (default 60) sets how long it runs and `FAULT_SEED` replays a schedule (the
//! seed is printed either way). Needs root (PostgreSQL runs as the postgres user, node 0 in a
//! network namespace): ignored by default, run by name in CI with a short schedule.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::faults_dungeon;
use crate::faults_money;
use crate::faults_partition::Link;
use crate::faults_postgres::{
    PrivatePostgres, count_present, create_free_tournament, create_tournament, node_settings,
};
use crate::faults_webhooks::{self, Receiver};
use crate::helpers::server_process::ServerProcess;

/// What one request was told: its status, or 0 when no answer came (refused, reset, timed out).
type Told = Arc<Mutex<Vec<(Write, u16)>>>;

/// A write a client asked for, to look up afterwards.
#[derive(Debug, Clone)]
enum Write {
    SignUp(String),
    Registration(String),
}

fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status();
}

async fn client_loop(
    bases: Arc<RwLock<Vec<String>>>,
    tournament: String,
    id: u64,
    told: Told,
    next: Arc<AtomicU64>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    let client = crate::helpers::server_process::client(15);
    let mut rng = rand::rngs::StdRng::seed_from_u64(id);
    while !stop.load(Ordering::Relaxed) {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let (write, path, body) = if rng.gen_bool(0.5) {
            let email = format!("f{n}@example.com");
            (
                Write::SignUp(email.clone()),
                "/api/auth/signup".to_owned(),
                crate::helpers::server_process::sign_up_body(&email),
            )
        } else {
            let mut key = [0_u8; 32];
            key[..8].copy_from_slice(&n.to_le_bytes());
            key[31] = 7;
            let wallet = crucible::domain::WalletAddress::from_public_key(&key).to_string();
            (
                Write::Registration(wallet.clone()),
                format!("/api/tournaments/{tournament}/register"),
                json!({"registeredWallet": wallet, "txSignature": null}),
            )
        };
        let first = rng.gen_range(0..2_usize);
        let mut status = 0;
        for attempt in 0..2 {
            let base = {
                let bases = bases.read().expect("bases");
                bases[(first + attempt) % bases.len()].clone()
            };
            match client
                .post(format!("{base}{path}"))
                .json(&body)
                .send()
                .await
            {
                Ok(response) => {
                    status = response.status().as_u16();
                    break;
                }
                // No answer from this node: the balancer's next one. (A request that reached a
                // node and got no answer may still have been applied; it is not counted as
                // acknowledged either way.)
                Err(_) => continue,
            }
        }
        told.lock().expect("told").push((write, status));
        if status == 503 || status == 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Node `index` of the schedule: node 0 inside the link's namespace (reaching the database
/// through the link), node 1 on the host; its clock `offset_ms` off the system's.
async fn start_node(
    link: &Link,
    postgres: &PrivatePostgres,
    index: usize,
    offset_ms: i64,
) -> ServerProcess {
    if index == 0 {
        let url = postgres.url_at(&link.host_ip);
        ServerProcess::start_in(&link.namespace, &link.ns_ip, |c| {
            node_settings(c, &url, offset_ms)
        })
        .await
    } else {
        ServerProcess::start(|c| node_settings(c, &postgres.url(), offset_ms)).await
    }
}

/// How long until every node takes a write (a sign-up) again; at most 60 s.
async fn writes_again(
    client: &reqwest::Client,
    bases: &RwLock<Vec<String>>,
    probes: &mut u64,
    seed: u64,
) -> Duration {
    let since = Instant::now();
    let nodes = bases.read().expect("bases").clone();
    for base in nodes {
        loop {
            *probes += 1;
            let answer = crate::helpers::server_process::sign_up(
                client,
                &base,
                &format!("probe-{probes}@example.com"),
            )
            .send()
            .await;
            if answer.is_ok_and(|r| r.status().as_u16() == 201) {
                break;
            }
            assert!(
                since.elapsed() < Duration::from_secs(60),
                "{base} took no write within 60 s of a fault's end (seed {seed})"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    since.elapsed()
}

async fn healthy(client: &reqwest::Client, base: &str) -> bool {
    client
        .get(format!("{base}/api/health"))
        .send()
        .await
        .is_ok_and(|r| r.status().as_u16() == 200)
}

/// How long a schedule runs (`FAULT_SECONDS`, else `default_seconds`) and its seed
/// (`FAULT_SEED`, else a random one), printed under `name` so a failure can be replayed; and
/// the schedule's generator.
pub(crate) fn schedule_from_env(
    name: &str,
    default_seconds: u64,
) -> (u64, u64, rand::rngs::StdRng) {
    let seconds: u64 = std::env::var("FAULT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seconds);
    let seed: u64 = std::env::var("FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().r#gen());
    eprintln!("{name}: FAULT_SEED={seed} FAULT_SECONDS={seconds}");
    (seconds, seed, rand::rngs::StdRng::seed_from_u64(seed))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "runs PostgreSQL as the postgres user: needs root (CI runs it by name)"]
async fn faults_schedule_random_faults_lose_no_acknowledged_write() {
    let (seconds, seed, mut rng) = schedule_from_env("fault schedule", 60);

    // Node 0 runs in a network namespace of its own, so it can be cut off from the database.
    let link = Link::create();
    let postgres = PrivatePostgres::init_listening(&[&link.host_ip]);
    let url = postgres.url();
    // Each node's clock is up to a second off the system's, so up to 2 s apart (drawn again at
    // every restart): leases, schedules and deadlines are decided by one clock each
    // (docs/operations.md, "Clocks").
    let mut skew = || rng.gen_range(-1_000..=1_000_i64);
    let offsets = [skew(), skew()];
    let mut nodes: Vec<ServerProcess> = vec![
        start_node(&link, &postgres, 0, offsets[0]).await,
        start_node(&link, &postgres, 1, offsets[1]).await,
    ];
    eprintln!("clock offsets {offsets:?} ms");
    let bases = Arc::new(RwLock::new(
        nodes.iter().map(|n| n.base.clone()).collect::<Vec<_>>(),
    ));
    let tournament = create_free_tournament(&url);
    // A paid tournament, live while the faults run and ending just after them: its prizes are
    // then sent while the nodes recover, and the checker follows the money.
    let ends_at = chrono::Utc::now() + chrono::Duration::seconds(seconds as i64 + 5);
    let paid_tournament = create_tournament(
        &url,
        "1",
        chrono::Utc::now() + chrono::Duration::seconds(2),
        ends_at,
    );
    let escrow: crucible::chain::tx::Pubkey = {
        let details: serde_json::Value = nodes[0]
            .client
            .get(format!(
                "{}/api/tournaments/{paid_tournament}",
                nodes[0].base
            ))
            .send()
            .await
            .expect("tournament")
            .json()
            .await
            .expect("json");
        details["escrowWalletAddress"]
            .as_str()
            .unwrap_or_else(|| panic!("no escrow in {details}"))
            .parse()
            .expect("escrow")
    };
    let paid: faults_money::Paid = Arc::default();
    // An operator whose key's webhooks go to the test's receiver, reachable from both nodes.
    let receiver = Receiver::start(&link.host_ip).await;
    let operator = nodes[1].signup("operator@example.com").await;
    let key = nodes[1]
        .v1_key(
            &operator,
            &["agents:read", "agents:write", "agents:start"],
            Some(&receiver.url),
        )
        .await;
    let started: faults_webhooks::Started = Arc::default();
    // A player entering the dungeon from its embedded wallet and playing turns.
    let player = Arc::new(faults_dungeon::player(&nodes[1]).await);
    let runs: faults_dungeon::Runs = Arc::default();

    let told: Told = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let next = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..6)
        .map(|id| {
            tokio::spawn(client_loop(
                bases.clone(),
                tournament.clone(),
                id,
                told.clone(),
                next.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let payers: Vec<_> = (0..2)
        .map(|id| {
            tokio::spawn(faults_money::client_loop(
                bases.clone(),
                paid_tournament.clone(),
                escrow,
                id,
                paid.clone(),
                stop.clone(),
            ))
        })
        .collect();

    // Per kind of fault: how many, and the longest time from its end until both nodes took a
    // write again.
    let dungeon_player = tokio::spawn(faults_dungeon::client_loop(
        bases.clone(),
        player.clone(),
        runs.clone(),
        stop.clone(),
    ));
    let starter = tokio::spawn(faults_webhooks::client_loop(
        bases.clone(),
        key,
        started.clone(),
        stop.clone(),
    ));

    let mut faults: BTreeMap<&str, (usize, Duration)> = BTreeMap::new();
    let mut last_fault_end = Instant::now();
    let began = Instant::now();
    let probe = crate::helpers::server_process::client(5);
    let mut probes = 0;
    while began.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(500..2_500))).await;
        let target = rng.gen_range(0..nodes.len());
        let hold = Duration::from_millis(rng.gen_range(300..3_000));
        let kind = match rng.gen_range(0..5) {
            0 => {
                postgres.stop("immediate");
                tokio::time::sleep(hold).await;
                postgres.start();
                "postgres restart (immediate)"
            }
            1 => {
                postgres.stop("fast");
                tokio::time::sleep(hold).await;
                postgres.start();
                "postgres restart (fast)"
            }
            2 => {
                let pid = nodes[target].pid();
                signal(pid, "STOP");
                tokio::time::sleep(hold).await;
                signal(pid, "CONT");
                "node paused (SIGSTOP)"
            }
            3 => {
                link.cut(postgres.port());
                tokio::time::sleep(hold).await;
                link.heal();
                "node 0 cut off from the database (packets dropped)"
            }
            _ => {
                signal(nodes[target].pid(), "KILL");
                tokio::time::sleep(hold).await;
                nodes[target] =
                    start_node(&link, &postgres, target, rng.gen_range(-1_000..=1_000)).await;
                bases.write().expect("bases")[target] = nodes[target].base.clone();
                "node killed (SIGKILL) and started again"
            }
        };
        last_fault_end = Instant::now();
        let back = writes_again(&probe, &bases, &mut probes, seed).await;
        let (count, longest) = faults.entry(kind).or_default();
        *count += 1;
        *longest = (*longest).max(back);
    }

    // Both nodes serve normally again soon after the last fault.
    let mut recovered = Duration::ZERO;
    for node in &nodes {
        while !healthy(&probe, &node.base).await {
            assert!(
                last_fault_end.elapsed() < Duration::from_secs(5),
                "a node was not healthy within 5 s of the last fault (seed {seed})"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        recovered = recovered.max(last_fault_end.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients
        .into_iter()
        .chain(payers)
        .chain([starter, dungeon_player])
    {
        client.await.expect("a client panicked");
    }

    let told = told.lock().expect("told").clone();
    let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
    for (_, status) in &told {
        *by_status.entry(*status).or_default() += 1;
    }
    eprintln!(
        "seed {seed}: {} requests, answers {by_status:?}; faults {faults:?}; both nodes healthy \
         {recovered:?} after the last fault",
        told.len()
    );
    assert!(
        by_status.keys().all(|s| matches!(*s, 0 | 201 | 409 | 503)),
        "only 201, 503 (and 409 for a retried write), never another error (seed {seed}): {by_status:?}"
    );
    let acknowledged = |kind: fn(&Write) -> Option<&String>| -> Vec<String> {
        told.iter()
            .filter(|(_, s)| *s == 201)
            .filter_map(|(w, _)| kind(w).cloned())
            .collect()
    };
    let sign_ups = acknowledged(|w| match w {
        Write::SignUp(email) => Some(email),
        Write::Registration(_) => None,
    });
    let registrations = acknowledged(|w| match w {
        Write::Registration(wallet) => Some(wallet),
        Write::SignUp(_) => None,
    });
    assert!(
        !sign_ups.is_empty() && !registrations.is_empty(),
        "{by_status:?}"
    );

    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
    let present = count_present(
        &pool,
        "SELECT COUNT(*) FROM accounts WHERE email = $1",
        &sign_ups,
    )
    .await;
    assert_eq!(
        present,
        sign_ups.len(),
        "acknowledged sign-ups lost (seed {seed})"
    );
    let present = count_present(
        &pool,
        &format!(
            "SELECT COUNT(*) FROM tournament_registrations WHERE tournament_id = '{tournament}' AND wallet = $1"
        ),
        &registrations,
    )
    .await;
    assert_eq!(
        present,
        registrations.len(),
        "acknowledged registrations lost (seed {seed})"
    );

    // The money: once the paid tournament has ended, its prizes are sent once each.
    let paid = paid.lock().expect("paid").clone();
    let wait = (ends_at - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait).await;
    let money = faults_money::check(&pool, &bases, &paid_tournament, &paid, seed).await;
    eprintln!(
        "seed {seed}: {} paid entries tried, {} acknowledged and registered once each; {} \
         prizes sent once each and finalized",
        paid.len(),
        money.entries_acknowledged,
        money.payouts_sent
    );
    assert!(money.entries_acknowledged > 0, "no paid entry went through");

    // No webhook lost.
    let started = started.lock().expect("started").clone();
    let webhooks = faults_webhooks::check(&pool, &receiver, &started, seed).await;
    eprintln!(
        "seed {seed}: {} agent starts acknowledged, each active with its agent.started webhook; \
         {} webhooks recorded, all delivered ({} deliveries received, retries included)",
        webhooks.starts_acknowledged, webhooks.deliveries, webhooks.received
    );
    assert!(
        webhooks.starts_acknowledged > 0,
        "no agent start went through"
    );

    // Dungeon turns and the entries paid from the embedded wallet.
    let runs = runs.lock().expect("runs").clone();
    let dungeon = faults_dungeon::check(&pool, &bases, &player, &runs, seed).await;
    eprintln!(
        "seed {seed}: {} dungeon runs entered, {} turns acknowledged and every one kept, none \
         played twice; {} entry fees paid from the embedded wallet, one per run",
        dungeon.runs, dungeon.turns_acknowledged, dungeon.entries_paid
    );
    assert!(
        dungeon.turns_acknowledged > 0,
        "no dungeon turn went through"
    );

    // No job stuck: nothing due more than a minute ago is still undone.
    let overdue = crucible::clock::to_millis(chrono::Utc::now() - chrono::Duration::minutes(1));
    // With each one's claim and error, to tell a job nobody took from one a node kept.
    type Stuck = (String, i64, Option<String>, Option<i64>, Option<String>);
    let stuck: Vec<Stuck> = sqlx::query_as(
        "SELECT id, attempts, lease_owner, lease_until, last_error FROM jobs
         WHERE done_at IS NULL AND due_at < $1",
    )
    .bind(overdue)
    .fetch_all(&pool)
    .await
    .expect("jobs");
    assert!(stuck.is_empty(), "stuck jobs: {stuck:?} (seed {seed})");

    // The due queue holds exactly the active agents' schedules (one statement, so one snapshot
    // while the nodes keep ticking): no agent lost from it or left behind in it.
    let (active,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM agents WHERE status = 'active' AND next_tick_at IS NOT NULL",
    )
    .fetch_one(&pool)
    .await
    .expect("active agents");
    let out_of_step: Vec<(String,)> = sqlx::query_as(
        "SELECT COALESCE(a.id, d.agent_id)
         FROM (SELECT id, is_paper_trading, next_tick_at FROM agents
               WHERE status = 'active' AND next_tick_at IS NOT NULL) AS a
         FULL JOIN agent_due AS d
           ON d.agent_id = a.id AND d.next_tick_at = a.next_tick_at
          AND d.is_paper_trading = a.is_paper_trading
         WHERE a.id IS NULL OR d.agent_id IS NULL",
    )
    .fetch_all(&pool)
    .await
    .expect("due queue");
    assert!(active > 0, "no active agent (seed {seed})");
    assert!(
        out_of_step.is_empty(),
        "agents out of step with the due queue: {out_of_step:?} (seed {seed})"
    );
    eprintln!("seed {seed}: {active} active agents, each in the due queue at its next tick");
    pool.close().await;
}
