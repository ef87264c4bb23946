//! A node cut off from its database while it holds leases (docs/operations.md, "Leases and
//! fencing"): node A runs in a network namespace the test creates (`ip netns`, a veth pair),
//! node B on the host, both on a private PostgreSQL. Agents tick every second on both. The
//! moment A is seen holding agents' tick leases, every packet between A and PostgreSQL is
//! dropped (not refused: `tc` sends them to a queue that holds nothing, both directions, the
//! database's port only — A's clients still reach it). Then:
//!
//! - B takes over every agent A held once A's lease has run out (and PostgreSQL has dropped A's
//!   silent session, with any row lock it held);
//! - A answers its clients within its request timeout (503 with `Retry-After`), never hangs;
//! - when the link heals, A writes nothing on the strength of the claims it lost (each agent's
//!   last tick stays B's, and A counts its stale ticks as dropped), and A serves writes again.
//!
//! Needs root (network namespaces, tc, PostgreSQL as the postgres user): ignored by default, run
//! by name in CI.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::faults_postgres::PrivatePostgres;
use crate::helpers::server_process::ServerProcess;

/// How long each node's claims last in this test (`--lease-ms`).
const LEASE_MS: u64 = 4_000;

fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A network namespace joined to this host by a veth pair, on a /24 of its own.
pub(crate) struct Link {
    pub namespace: String,
    host_if: String,
    ns_if: String,
    pub host_ip: String,
    pub ns_ip: String,
}

impl Link {
    pub(crate) fn create() -> Link {
        let tag = std::process::id() % 10_000;
        let subnet = 1 + std::process::id() % 250;
        let link = Link {
            namespace: format!("crucible-part-{tag}"),
            host_if: format!("crph{tag}"),
            ns_if: format!("crpn{tag}"),
            host_ip: format!("10.213.{subnet}.1"),
            ns_ip: format!("10.213.{subnet}.2"),
        };
        let (ns, host_if, ns_if) = (&link.namespace, &link.host_if, &link.ns_if);
        run("ip", &["netns", "add", ns]);
        run(
            "ip",
            &[
                "link", "add", host_if, "type", "veth", "peer", "name", ns_if,
            ],
        );
        run("ip", &["link", "set", ns_if, "netns", ns]);
        run(
            "ip",
            &[
                "addr",
                "add",
                &format!("{}/24", link.host_ip),
                "dev",
                host_if,
            ],
        );
        run("ip", &["link", "set", host_if, "up"]);
        run(
            "ip",
            &[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{}/24", link.ns_ip),
                "dev",
                ns_if,
            ],
        );
        run("ip", &["-n", ns, "link", "set", ns_if, "up"]);
        run("ip", &["-n", ns, "link", "set", "lo", "up"]);
        link
    }

    /// Drop every packet to and from `port` on the link, both ways: a partition between the
    /// node and the database only.
    pub(crate) fn cut(&self, port: u16) {
        let port = port.to_string();
        for (namespace, dev, direction) in [
            (Some(self.namespace.as_str()), self.ns_if.as_str(), "dport"),
            (None, self.host_if.as_str(), "sport"),
        ] {
            let tc = |args: &[&str]| {
                let mut all: Vec<&str> = Vec::new();
                if let Some(namespace) = namespace {
                    all.extend(["-n", namespace]);
                }
                all.extend(args);
                run("tc", &all);
            };
            // Two classes: everything goes to the first; the filter sends the database's
            // packets to the second, whose queue holds nothing, so each is dropped. (Built
            // from htb, u32 and pfifo, which every kernel has; netem or netfilter may be
            // missing, as on the CI machine.)
            tc(&[
                "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10",
            ]);
            for class in ["1:10", "1:20"] {
                tc(&[
                    "class", "add", "dev", dev, "parent", "1:", "classid", class, "htb", "rate",
                    "10gbit", "quantum", "1514",
                ]);
            }
            tc(&[
                "qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "pfifo", "limit",
                "0",
            ]);
            tc(&[
                "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                "match", "ip", direction, &port, "0xffff", "flowid", "1:20",
            ]);
        }
    }

    pub(crate) fn heal(&self) {
        run(
            "tc",
            &[
                "-n",
                &self.namespace,
                "qdisc",
                "del",
                "dev",
                &self.ns_if,
                "root",
            ],
        );
        run("tc", &["qdisc", "del", "dev", &self.host_if, "root"]);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the pair, and with it the pair.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
    }
}

/// Each node's settings: on `database_url`, its agents' model at `model` (a provider that
/// never answers, so every tick waits the model's 2 s timeout while its claim is held, then
/// decides by its rule).
fn node_settings(command: &mut Command, database_url: &str, model: &str) {
    command
        .env("DATABASE_URL", database_url)
        .env("CRUCIBLE_MODEL_ENDPOINTS", format!("openai={model}"))
        .env("CRUCIBLE_MODEL_KEY_OPENAI", "sk-test")
        .env("CRUCIBLE_MODEL_TIMEOUT_MS", "2000")
        // A's metrics are read from outside its namespace.
        .env("CRUCIBLE_METRICS_TOKEN", "metrics-token")
        // Agents' 5m interval ticks every second.
        .env("CRUCIBLE_TIME_SCALE", "300")
        .env("CRUCIBLE_LEASE_MS", LEASE_MS.to_string())
        .env("CRUCIBLE_REQUEST_TIMEOUT_MS", "5000")
        .args(["--rate-limits", "off"]);
}

async fn health(client: &reqwest::Client, base: &str) -> Value {
    client
        .get(format!("{base}/api/health"))
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("json")
}

async fn node_id(server: &ServerProcess) -> String {
    health(&server.client, &server.base).await["node"]
        .as_str()
        .expect("node")
        .to_owned()
}

async fn dropped_ticks(server: &ServerProcess) -> u64 {
    crate::helpers::metric(
        &server.client,
        &server.base,
        Some("metrics-token"),
        r#"crucible_agent_ticks_total{outcome="dropped"}"#,
    )
    .await
    .expect("the dropped ticks counter")
}

/// The agents `node` holds a tick claim on, with their last stored tick.
async fn held_by(pool: &sqlx::AnyPool, node: &str) -> Vec<(String, i64)> {
    sqlx::query_as(
        "SELECT id, COALESCE(last_tick_at, 0) FROM agents WHERE tick_lease_owner LIKE $1 ORDER BY id",
    )
    .bind(format!("{node}:%"))
    .fetch_all(pool)
    .await
    .expect("held")
}

async fn last_tick(pool: &sqlx::AnyPool, agent_id: &str) -> i64 {
    let (at,): (i64,) =
        sqlx::query_as("SELECT COALESCE(last_tick_at, 0) FROM agents WHERE id = $1")
            .bind(agent_id)
            .fetch_one(pool)
            .await
            .expect("agent");
    at
}

async fn sign_up(client: &reqwest::Client, base: &str, email: &str) -> reqwest::Result<u16> {
    let response = crate::helpers::server_process::sign_up(client, base, email)
        .send()
        .await?;
    let status = response.status().as_u16();
    if status == 503 {
        assert!(
            response.headers().get("retry-after").is_some(),
            "a 503 carries Retry-After"
        );
    }
    Ok(status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "creates network namespaces and runs PostgreSQL as postgres: needs root (CI runs it by name)"]
async fn faults_partition_a_cut_off_node_loses_its_leases_writes_nothing_stale_and_rejoins() {
    let link = Link::create();
    let postgres = PrivatePostgres::init_listening(&[&link.host_ip]);
    // Accepts connections (the kernel does, into its backlog) and never answers.
    let silent = std::net::TcpListener::bind((link.host_ip.as_str(), 0)).expect("bind");
    let model = format!("http://{}/v1", silent.local_addr().expect("addr"));
    let b = ServerProcess::start(|c| node_settings(c, &postgres.url(), &model)).await;
    let a = ServerProcess::start_in(&link.namespace, &link.ns_ip, |c| {
        node_settings(c, &postgres.url_at(&link.host_ip), &model)
    })
    .await;
    let a_node = node_id(&a).await;

    let cookie = b.signup("operator@example.com").await;
    let key = b
        .v1_key(
            &cookie,
            &["agents:read", "agents:write", "agents:start"],
            None,
        )
        .await;
    let mut agents = Vec::new();
    for n in 0..24 {
        agents.push(
            b.start_agent(
                &key,
                json!({"name": format!("Agent {n}"), "username": format!("agent{n}"),
                       "class": "fighter", "modelId": "openai/gpt-test",
                       "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                                    "timeInterval": "5m"}}),
            )
            .await,
        );
    }

    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&postgres.url())
        .await
        .expect("connect");

    // First A is paused (SIGSTOP) holding claims, until B has taken them over, then resumed:
    // what A had in flight reaches the database at once, under tokens it no longer holds.
    // (Caught between claiming and storing, A has no transaction open; caught inside one, its
    // session is dropped by PostgreSQL and nothing of it is stored either: try again until a
    // stale tick is seen refused.)
    // (B, whose passes happen to come first, would claim every agent each time: it is paused
    // while A claims, and resumed once A is caught holding.)
    let (pid, b_pid) = (a.pid().to_string(), b.pid().to_string());
    let mut refused = false;
    for attempt in 1..=8 {
        let before = dropped_ticks(&a).await;
        run("kill", &["-STOP", &b_pid]);
        let held = catch_holding(
            &pool,
            &a_node,
            || run("kill", &["-STOP", &pid]),
            || run("kill", &["-CONT", &pid]),
        )
        .await;
        run("kill", &["-CONT", &b_pid]);
        let (taken_over, took) = taken_over(&pool, &a_node, &held).await;
        run("kill", &["-CONT", &pid]);
        // Wait until A's stale batch has reached the database (its model calls time out first),
        // then look: it was refused, and B's ticks stand.
        let resumed = Instant::now();
        let mut dropped = before;
        while dropped == before && resumed.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(200)).await;
            dropped = dropped_ticks(&a).await;
        }
        assert_not_overwritten(&pool, &taken_over).await;
        eprintln!(
            "pause {attempt}: A held {} agents, B took them over in {took:?}; A's stale batch \
             came back {:?} after it resumed and {} of its ticks were refused",
            held.len(),
            resumed.elapsed(),
            dropped - before
        );
        if dropped > before {
            refused = true;
            break;
        }
    }
    assert!(refused, "A's stale ticks were refused, and counted");

    // Then A is cut off from the database holding claims.
    run("kill", &["-STOP", &b_pid]);
    let held = catch_holding(&pool, &a_node, || link.cut(postgres.port()), || link.heal()).await;
    run("kill", &["-CONT", &b_pid]);
    let client = crate::helpers::server_process::client(15);
    let (taken_over, takeover) = taken_over(&pool, &a_node, &held).await;

    // Meanwhile A answers its clients, within its request timeout, with a 503.
    let asked = Instant::now();
    let status = sign_up(&client, &a.base, "during-the-cut@example.com")
        .await
        .expect("A answers while cut off");
    assert_eq!(status, 503, "A cannot write while cut off");
    assert!(
        asked.elapsed() < Duration::from_secs(8),
        "{:?}",
        asked.elapsed()
    );
    let health = health(&client, &a.base).await;
    assert!(
        health["database"]
            .as_str()
            .is_some_and(|d| d.starts_with("unavailable")),
        "{health}"
    );
    // B keeps working.
    assert_eq!(
        sign_up(&client, &b.base, "b-during-the-cut@example.com")
            .await
            .expect("B"),
        201
    );

    link.heal();
    let healed = Instant::now();
    // A serves writes again.
    let mut n = 0;
    let rejoined = loop {
        n += 1;
        let answer = sign_up(&client, &a.base, &format!("after-{n}@example.com")).await;
        if answer.is_ok_and(|s| s == 201) {
            break healed.elapsed();
        }
        assert!(
            healed.elapsed() < Duration::from_secs(60),
            "A did not rejoin within 60 s of the heal"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Whatever A still had in flight has reached the database by now: nothing of it stuck.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_not_overwritten(&pool, &taken_over).await;
    eprintln!(
        "cut off: A held {} agents; B took them all over {takeover:?} after the cut; A \
         rejoined {rejoined:?} after the heal; A dropped {} stale ticks in all",
        held.len(),
        dropped_ticks(&a).await
    );
    pool.close().await;
}

/// Wait until `node` holds claims, then apply `fault`; if it no longer holds any then (its
/// ticks were stored meanwhile), `undo` it and try again. The claims it was caught with.
async fn catch_holding(
    pool: &sqlx::AnyPool,
    node: &str,
    fault: impl Fn(),
    undo: impl Fn(),
) -> Vec<(String, i64)> {
    let watch = Instant::now();
    loop {
        assert!(
            watch.elapsed() < Duration::from_secs(60),
            "{node} was never caught holding a claim"
        );
        if held_by(pool, node).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        }
        fault();
        let held = held_by(pool, node).await;
        if !held.is_empty() {
            return held;
        }
        undo();
    }
}

/// Wait until every agent of `held` has been ticked again by another node than `node`; each
/// one's last tick then, and how long it took.
async fn taken_over(
    pool: &sqlx::AnyPool,
    node: &str,
    held: &[(String, i64)],
) -> (std::collections::BTreeMap<String, i64>, Duration) {
    let since = Instant::now();
    let mut taken = std::collections::BTreeMap::new();
    while taken.len() < held.len() {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "the other node did not take the work over within 60 s ({} of {})",
            taken.len(),
            held.len()
        );
        let still_held = held_by(pool, node).await;
        for (agent_id, before) in held {
            let now = last_tick(pool, agent_id).await;
            if now > *before && !still_held.iter().any(|(id, _)| id == agent_id) {
                taken.entry(agent_id.clone()).or_insert(now);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (taken, since.elapsed())
}

/// No agent's last stored tick went back before the one the other node stored on taking it
/// over: nothing stale was written.
async fn assert_not_overwritten(
    pool: &sqlx::AnyPool,
    taken_over: &std::collections::BTreeMap<String, i64>,
) {
    for (agent_id, taken_at) in taken_over {
        let now = last_tick(pool, agent_id).await;
        assert!(
            now >= *taken_at,
            "{agent_id}: a stale tick overwrote the new holder's ({now} < {taken_at})"
        );
    }
}
