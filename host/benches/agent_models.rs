//! Agents that think, at scale (`docs/agents.md`): 2,000 active agents on one node whose model
//! answers after 2 s, all due at once. Every decision must land within the tick interval (5m),
//! and waiting for models must hold no threads: the process's thread count and resident memory
//! are printed before and during the round. Then the cost of a tick whose model answers at once
//! against a tick without a model, in one run.
//!
//! The model is a local server speaking the OpenAI format, on a thread and runtime of its own;
//! the ticker runs on a current-thread runtime (one core's worth), as in `agent_ticks`.
//!
//! `cargo bench --bench agent_models`; `BENCH_AGENTS` (2,000), `BENCH_MODEL_DELAY_MS` (2,000),
//! `BENCH_COST_AGENTS` (1,000); `TEST_DATABASE_URL=postgres://…` for PostgreSQL.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use crucible::agents::ticker;
use crucible::clock::{ManualClock, to_millis};
use crucible::config::Config;
use crucible::secret::Secret;
use crucible::startup::Application;
use crucible::state::AppState;
use support::{env_number, rss_mib};

fn main() {
    let agents = env_number("BENCH_AGENTS", 2_000) as usize;
    let delay = Duration::from_millis(env_number("BENCH_MODEL_DELAY_MS", 2_000));
    let cost_agents = env_number("BENCH_COST_AGENTS", 1_000) as usize;
    let slow = fake_model(delay);
    let fast = fake_model(Duration::ZERO);
    let dir = tempfile::tempdir().expect("tempdir");
    let database = support::database_url(dir.path());
    let (url, backend) = (database.url.clone(), database.backend);
    let runtime = support::runtime();
    runtime.block_on(async move {
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let mut config = Config::for_tests(dir.path().to_path_buf(), url);
        config.model_endpoints = vec![
            crucible::models::endpoints::parse_setting(&format!("slow={slow}")).expect("slow"),
            crucible::models::endpoints::parse_setting(&format!("fast={fast}")).expect("fast"),
        ];
        for vendor in ["slow", "fast"] {
            config
                .model_default_keys
                .insert(vendor.into(), Secret::new("sk-bench"));
        }
        let app = Application::build_with_clock(config, clock.clone())
            .await
            .expect("app");
        let state = app.state().clone();
        state.agents.builtin("fighter").expect("builtin");
        let now = to_millis(state.now());
        let mut tx = state.store.begin().await.expect("tx");
        support::insert_account(&mut tx, now).await;
        tx.commit().await.expect("commit");

        // 1. Slow models, all due at once.
        seed(&state, "slow", "slow/m", agents).await;
        let (threads, rss) = (threads(), rss_mib());
        println!(
            "{agents} agents, model answers after {} ms, {backend}",
            delay.as_millis()
        );
        println!("before:  {threads} threads, {rss:.0} MiB resident");
        let running = Arc::new(AtomicBool::new(true));
        let sampler = tokio::spawn(sample(running.clone()));
        let started = Instant::now();
        let pass = ticker::run_due(&state.ticking(), "bench").await.expect("ticks");
        let seconds = started.elapsed().as_secs_f64();
        running.store(false, Ordering::Relaxed);
        let (max_threads, max_rss) = sampler.await.expect("sampler");
        assert_eq!(pass.ticked, agents, "every agent ticked once");
        let by_model = decided_by_model(&state, "slow").await;
        println!("during:  at most {max_threads} threads, {max_rss:.0} MiB resident");
        println!(
            "round:   {seconds:.1} s for {agents} ticks ({by_model} decided by the model), against a 5m interval (300 s): {}",
            if seconds < 300.0 { "every decision landed in time" } else { "LATE" }
        );
        clear(&state).await;

        // 2. The cost of asking a model that answers at once, against asking none.
        seed(&state, "fast", "fast/m", cost_agents).await;
        let started = Instant::now();
        let with_model = ticker::run_due(&state.ticking(), "bench").await.expect("ticks");
        let with_model_rate = with_model.ticked as f64 / started.elapsed().as_secs_f64();
        clear(&state).await;
        seed(&state, "none", "nobody/m", cost_agents).await;
        let started = Instant::now();
        let without = ticker::run_due(&state.ticking(), "bench").await.expect("ticks");
        let without_rate = without.ticked as f64 / started.elapsed().as_secs_f64();
        println!(
            "cost:    {with_model_rate:.0} ticks/s asking a model that answers at once, {without_rate:.0} ticks/s without a model ({:.1}x)",
            without_rate / with_model_rate
        );
    });
}

/// A server speaking OpenAI's chat completions on a thread of its own, answering a decision
/// after `delay`; its base URL.
fn fake_model(delay: Duration) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = support::client_runtime();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(format!("http://{}/v1", listener.local_addr().expect("addr")))
                .expect("send");
            let router = axum::Router::new().fallback(move || async move {
                tokio::time::sleep(delay).await;
                axum::Json(serde_json::json!({
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                        "content": "{\"action\":\"buy\",\"fraction\":0.1,\"reason\":\"bench\"}"}}],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 20},
                }))
            });
            axum::serve(listener, router).await.expect("serve");
        });
    });
    rx.recv().expect("model server")
}

/// Threads of this process (Linux).
fn threads() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Threads:").map(|v| v.trim().parse().ok()))
        })
        .flatten()
        .unwrap_or(0)
}

/// The most threads and resident memory seen while `running`.
async fn sample(running: Arc<AtomicBool>) -> (u64, f64) {
    let (mut threads_max, mut rss_max) = (0, 0.0_f64);
    while running.load(Ordering::Relaxed) {
        threads_max = threads_max.max(threads());
        rss_max = rss_max.max(rss_mib());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (threads_max, rss_max)
}

async fn decided_by_model(state: &AppState, prefix: &str) -> i64 {
    let (count,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM agent_decisions WHERE decided_by = 'model' AND agent_id LIKE $1",
    )
    .bind(format!("agt_{prefix}_%"))
    .fetch_one(state.store.read())
    .await
    .expect("count");
    count
}

/// Stop every agent, so the next part ticks only its own.
async fn clear(state: &AppState) {
    sqlx::query("UPDATE agents SET status = 'idle'")
        .execute(state.store.write())
        .await
        .expect("stop");
}

/// `agents` active fighters on 5m asking `model_id`, all due now.
async fn seed(state: &AppState, prefix: &str, model_id: &str, agents: usize) {
    let now = to_millis(state.now());
    let mut tx = state.store.begin().await.expect("tx");
    support::insert_active_agents(&mut tx, prefix, &["fighter"], model_id, agents, now).await;
    tx.commit().await.expect("commit");
}
