//! A node killed (SIGKILL) in the middle of group-committed batches: dungeon turns and free
//! registrations from many clients at once, so every kill lands among batches in flight. After
//! each restart: every acknowledged write is there, and nothing unacknowledged is there in part
//! (a registration's wallets all or none, a run's turns and events in step with its row).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::faults_dungeon::player;
use crate::faults_postgres::create_free_tournament;
use crate::helpers::fresh_database_url;
use crate::helpers::server_process::{ServerProcess, client};

/// Runs played at once, and registering clients beside them.
const RUNS: usize = 6;
const REGISTRARS: usize = 24;
const KILLS: usize = 3;

/// One registration request: its wallets, and whether a node acknowledged it (201).
struct Registration {
    wallets: Vec<String>,
    acknowledged: bool,
}

/// What a run's player saw: the highest turn acknowledged, the highest sent.
#[derive(Default, Clone, Copy)]
struct Turns {
    acknowledged: i64,
    sent: i64,
}

async fn start(data_dir: &std::path::Path, database_url: &str) -> ServerProcess {
    let (data_dir, database_url) = (data_dir.to_owned(), database_url.to_owned());
    ServerProcess::start(move |command| {
        command
            .env("CRUCIBLE_DATA_DIR", data_dir)
            .env("DATABASE_URL", database_url)
            .env("CRUCIBLE_RATE_LIMITS", "off");
    })
    .await
}

/// Enter today's dungeon `count` times, paying from the player's embedded wallet: (run, key).
async fn enter_runs(
    node: &ServerProcess,
    key: &str,
    wallet: &str,
    count: usize,
) -> Vec<(String, String)> {
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let mut runs = Vec::new();
    while runs.len() < count {
        let quote: Value = node
            .client
            .get(format!(
                "{}/api/dungeons/{today}/quote?wallet={wallet}",
                node.base
            ))
            .send()
            .await
            .expect("quote")
            .json()
            .await
            .expect("json");
        // The same quote until it is answered: the server pays once per quote, and answers
        // 202 until the payment is final.
        loop {
            let entered = node
                .client
                .post(format!("{}/api/dungeons/{today}/enter", node.base))
                .bearer_auth(key)
                .json(&json!({"quoteId": quote["quoteId"], "payFrom": "embedded", "class": "fighter"}))
                .send()
                .await
                .expect("enter");
            let status = entered.status().as_u16();
            let body: Value = entered.json().await.expect("json");
            match status {
                201 => {
                    runs.push((
                        body["runId"].as_str().expect("run").to_owned(),
                        body["registrationKey"].as_str().expect("key").to_owned(),
                    ));
                    break;
                }
                202 => tokio::time::sleep(Duration::from_millis(200)).await,
                other => panic!("enter answered {other}: {body}"),
            }
        }
    }
    runs
}

#[tokio::test]
async fn a_node_killed_among_batches_keeps_every_acknowledged_write_and_no_half_of_any() {
    let data_dir = tempfile::tempdir().expect("dir");
    let database_url = fresh_database_url(data_dir.path()).await;
    let mut node = start(data_dir.path(), &database_url).await;
    let tournament = create_free_tournament(&database_url);
    let owner = player(&node).await;
    eprintln!("player ready");
    let runs = enter_runs(&node, &owner.key, &owner.wallet, RUNS).await;
    eprintln!("{RUNS} runs entered");
    let turns: Arc<Mutex<Vec<Turns>>> = Arc::new(Mutex::new(vec![Turns::default(); RUNS]));
    let registrations: Arc<Mutex<Vec<Registration>>> = Arc::default();
    let mut batched = 0.0_f64;

    for kill in 0..KILLS {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for (index, (run_id, key)) in runs.iter().cloned().enumerate() {
            let (base, stop, turns) = (node.base.clone(), stop.clone(), turns.clone());
            tasks.push(tokio::spawn(async move {
                let client = client(5);
                while !stop.load(Ordering::Relaxed) {
                    let number = {
                        let mut all = turns.lock().expect("turns");
                        // After a kill the run goes on from what is stored, whatever was
                        // acknowledged: a turn sent and not answered may have been played.
                        all[index].sent = all[index].acknowledged.max(all[index].sent) + 1;
                        all[index].sent
                    };
                    let answer = client
                        .post(format!("{base}/api/dungeons/runs/{run_id}/turn"))
                        .bearer_auth(&key)
                        .json(&json!({"action": "inventory", "turnNumber": number}))
                        .send()
                        .await;
                    match answer.map(|r| r.status().as_u16()) {
                        Ok(200) => turns.lock().expect("turns")[index].acknowledged = number,
                        _ => break,
                    }
                }
            }));
        }
        for registrar in 0..REGISTRARS {
            let (base, stop, registrations) =
                (node.base.clone(), stop.clone(), registrations.clone());
            let path = format!("/api/tournaments/{tournament}/register");
            tasks.push(tokio::spawn(async move {
                let client = client(5);
                let mut n = 0_usize;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    // Every third request registers two wallets at once.
                    let wallets: Vec<String> = (0..1 + usize::from(n.is_multiple_of(3)))
                        .map(|_| crucible::chain::Keypair::generate().pubkey().to_string())
                        .collect();
                    let index = {
                        let mut all = registrations.lock().expect("registrations");
                        all.push(Registration {
                            wallets: wallets.clone(),
                            acknowledged: false,
                        });
                        all.len() - 1
                    };
                    let answer = client
                        .post(format!("{base}{path}"))
                        .json(&json!({"registeredWallets": wallets, "txSignature": null}))
                        .send()
                        .await;
                    match answer.map(|r| r.status().as_u16()) {
                        Ok(201) => {
                            registrations.lock().expect("registrations")[index].acknowledged = true
                        }
                        Ok(status) => panic!("registration {registrar}/{n} answered {status}"),
                        Err(_) => break,
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(700 + 400 * kill as u64)).await;
        let (batches, writes) = crate::helpers::group_commit_counts(&node.client, &node.base).await;
        batched = batched.max(writes as f64 / batches.max(1) as f64);
        // SIGKILL with requests and batches in flight.
        drop(node);
        stop.store(true, Ordering::Relaxed);
        for task in tasks {
            task.await.expect("client");
        }
        node = start(data_dir.path(), &database_url).await;
        eprintln!("kill {kill}: restarted");
        check(&database_url, &tournament, &runs, &turns, &registrations).await;
    }
    assert!(
        batched > 1.5,
        "the load formed batches (mean batch {batched:.1})"
    );
    let registered = registrations
        .lock()
        .expect("registrations")
        .iter()
        .filter(|r| r.acknowledged)
        .count();
    eprintln!("{registered} registrations acknowledged; mean batch up to {batched:.1} writes");
    assert!(
        registered > 50,
        "only {registered} registrations acknowledged"
    );
}

async fn check(
    database_url: &str,
    tournament: &str,
    runs: &[(String, String)],
    turns: &Mutex<Vec<Turns>>,
    registrations: &Mutex<Vec<Registration>>,
) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(database_url)
        .await
        .expect("database");
    let stored: HashSet<String> = sqlx::query_as::<_, (String,)>(
        "SELECT wallet FROM tournament_registrations WHERE tournament_id = $1",
    )
    .bind(tournament)
    .fetch_all(&pool)
    .await
    .expect("registrations")
    .into_iter()
    .map(|(wallet,)| wallet)
    .collect();
    for registration in registrations.lock().expect("registrations").iter() {
        let present = registration
            .wallets
            .iter()
            .filter(|wallet| stored.contains(*wallet))
            .count();
        if registration.acknowledged {
            assert_eq!(
                present,
                registration.wallets.len(),
                "an acknowledged registration is lost"
            );
        } else {
            assert!(
                present == 0 || present == registration.wallets.len(),
                "half of an unacknowledged registration is stored"
            );
        }
    }
    let (seats,): (i64,) =
        sqlx::query_as("SELECT current_participants FROM tournaments WHERE id = $1")
            .bind(tournament)
            .fetch_one(&pool)
            .await
            .expect("seats");
    assert_eq!(
        seats,
        stored.len() as i64,
        "the seat count agrees with the rows"
    );

    let mut seen_turns = turns.lock().expect("turns").clone();
    for ((run_id, _), seen) in runs.iter().zip(seen_turns.iter_mut()) {
        let (turn_number, last_seq, state, state_seq): (i64, i64, String, i64) = sqlx::query_as(
            "SELECT r.turn_number, r.last_seq, s.state, s.seq
             FROM dungeon_runs r JOIN dungeon_run_snapshots s ON s.run_id = r.id WHERE r.id = $1",
        )
        .bind(run_id)
        .fetch_one(&pool)
        .await
        .expect("run");
        assert!(
            turn_number >= seen.acknowledged && turn_number <= seen.sent.max(seen.acknowledged),
            "{run_id}: {turn_number} stored, {} acknowledged, {} sent",
            seen.acknowledged,
            seen.sent
        );
        // The snapshot and the turns stored after it add up to the row.
        let snapshot: crucible::dungeon::game::Run = serde_json::from_str(&state).expect("state");
        let (after,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM dungeon_run_events
             WHERE run_id = $1 AND seq > $2 AND turn_number IS NOT NULL AND action IS NOT NULL",
        )
        .bind(run_id)
        .bind(state_seq)
        .fetch_one(&pool)
        .await
        .expect("turns after the snapshot");
        assert_eq!(
            snapshot.turn_number() as i64 + after,
            turn_number,
            "{run_id}: snapshot and row agree"
        );
        let events: Vec<(i64, Option<i64>)> = sqlx::query_as(
            "SELECT seq, turn_number FROM dungeon_run_events WHERE run_id = $1 ORDER BY seq",
        )
        .bind(run_id)
        .fetch_all(&pool)
        .await
        .expect("events");
        let seqs: Vec<i64> = events.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(
            seqs,
            (1..=last_seq).collect::<Vec<_>>(),
            "{run_id}: events in step"
        );
        let numbers: Vec<i64> = events.iter().filter_map(|(_, number)| *number).collect();
        assert_eq!(
            numbers,
            (1..=turn_number).collect::<Vec<_>>(),
            "{run_id}: one event per turn"
        );
        // The next round goes on from what is stored.
        seen.acknowledged = turn_number;
        seen.sent = turn_number;
    }
    *turns.lock().expect("turns") = seen_turns;
    pool.close().await;
}
