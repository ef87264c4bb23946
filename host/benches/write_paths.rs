//! The hot write paths against the router's floor, measured in one run: a dungeon turn and a
//! free registration over HTTP, each acknowledged only once durable, against an unknown path (a
//! 404 straight from the router, the least any request can cost).
//!
//! The server runs on one core (a current-thread runtime; the process pinned to CPU 0 when
//! `taskset` exists) and `wrk` loads it from the other core, 256 connections by default. Turns:
//! windows of `BENCH_RUNS` paid runs (512) entered over HTTP first, one for each wrk run of
//! turns (a run ends after 1,000 turns, and one saturated load plays a few hundred thousand),
//! then every request plays `inventory` (free, so no run dies) on the next run of its window in
//! turn; each is a real turn — the run's version moves, its `run:turn` event is stored,
//! watchers hear it. Registrations: one fresh wallet per request, anonymously, into an upcoming
//! free tournament (a new tournament for every wrk run, so no wallet repeats). Rate limits are
//! off: they are measured apart.
//!
//! `cargo bench --bench write_paths` (SQLite); with `TEST_DATABASE_URL=postgres://…` on
//! PostgreSQL. Needs `wrk`. `BENCH_SECONDS` (10), `BENCH_CONCURRENCY` (256), `BENCH_ROUNDS` (3)
//! and `BENCH_RUNS` (512) tune it; `BENCH_ONLY=turn` (or `registration`, or several with
//! commas: `floor,turn`) loads those paths alone, `BENCH_ROUNDS=0` skips the saturated rounds;
//! `BENCH_VERBOSE=1` prints each wrk report whole (its latency distribution). Then each path is
//! loaded again below saturation (when the floor is among the paths loaded): the same clients
//! paced to ask together for `BENCH_PACED_SHARE` (0.22; 0 skips it) of the floor's rate, for
//! the tail at that load (`support::wrk::paced_against_the_floor`; each paced load runs
//! `BENCH_PACED_WARMUP` seconds, 30, before it is measured for `BENCH_PACED_SECONDS`, 60: as a
//! steady load's p99 is: one flush stall of 100 ms, as a PostgreSQL checkpoint's end makes
//! every minute or two here, holds about 1 % of 10 s worth of requests, the p99 by itself, and
//! a sixth of that in 60 s), with the disk's flush
//! latency beside each paced load (`support::disk`): no durable answer comes sooner than the
//! disk's flush; on PostgreSQL also the WAL segments the cluster created and the time its
//! checkpoints spent syncing meanwhile (`support::postgres`), its own stalls; on SQLite the
//! write lane's WAL catch-ups meanwhile, each a stall of every write. At the end, the server's
//! own histograms of group-commit batch durations, of the writes' waits and (SQLite) of the
//! catch-ups over the whole bench.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::io::Write;

use support::env_number;
use support::wrk::{self, Load, pin_to_cpu};
use support::{disk, postgres};

/// Wallets written for the registration script. A load that outlasts them goes on into the
/// next tournament of its block ([`LAPS`]), so no wallet repeats in a tournament.
const WALLETS: usize = 400_000;
/// Tournaments each load of the registration script has for itself: enough for 1.6 million
/// registrations, over 90 s at the paced rate on the fastest machine measured (17,000 a
/// second).
const LAPS: u64 = 4;
/// Upcoming tournaments made for the registration runs, [`LAPS`] for each load of the script
/// (wrk loads a script twice per run, and each warm-up is a run).
const TOURNAMENTS: u64 = 64 * LAPS;
/// Seconds of turns one window of runs is given for (`BENCH_RUNS`, 512, of 1,000 turns each):
/// it holds 20 s at the saturated rate on the fastest machine measured (about 25,000 turns a
/// second).
const SECONDS_PER_WINDOW: u64 = 15;

/// The windows of runs a wrk run of turns that lasts `seconds` plays through.
fn windows_for(seconds: u64) -> usize {
    seconds.div_ceil(SECONDS_PER_WINDOW).max(1) as usize
}

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let concurrency = env_number("BENCH_CONCURRENCY", 256);
    let rounds = env_number("BENCH_ROUNDS", 3);
    let runs = env_number("BENCH_RUNS", 512) as usize;
    let paced_seconds = env_number("BENCH_PACED_SECONDS", 60);
    let warm_up_seconds = env_number("BENCH_PACED_WARMUP", 30);
    if !wrk::available("write_paths") {
        std::process::exit(2);
    }
    let pinned = pin_to_cpu(0);
    // Whatever was written just before (this bench's own binary, linked and copied: hundreds
    // of megabytes) goes to the disk now, not 30 s from now in the middle of a measured load,
    // where one such writeback once stalled a flush for 306 ms (docs/benchmarks.md, session 61).
    if let Err(error) = std::process::Command::new("sync").status() {
        eprintln!("sync: {error}");
    }
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();
    let scripts = tempfile::tempdir().expect("scripts dir");

    let runtime = support::runtime();
    let keys = runtime.block_on(async {
        let client = reqwest::Client::new();
        let started = std::time::Instant::now();
        // A window of `runs` for the check below and as many as each wrk run of turns needs:
        // each saturated round's, and the paced phase's probe (3 s), warm-up and measured load.
        let windows = 1
            + rounds as usize * windows_for(seconds)
            + windows_for(3)
            + windows_for(warm_up_seconds)
            + windows_for(paced_seconds);
        let entered = runs * windows;
        let keys = support::enter_runs(&client, &base, &state, "bench@example.com", entered).await;
        println!(
            "setup: {entered} paid runs entered over HTTP in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let mut tx = state.store.begin().await.expect("tx");
        for n in 0..TOURNAMENTS {
            let mut new = support::live_tournament(&state, &format!("trn_write_{n}"), 10_000_000);
            new.start_date = state.now() + chrono::Duration::days(1);
            new.end_date = state.now() + chrono::Duration::days(2);
            crucible::tournaments::queries::insert(&mut tx, &new, state.now())
                .await
                .expect("tournament");
        }
        tx.commit().await.expect("commit");
        keys
    });

    // Each wrk run of turns plays windows of runs of its own, as many as its seconds need, all
    // entered above: no run reaches its last turn during a load, after which it would answer
    // 409 at a fraction of a turn's cost, and no entry's work runs beside a measured load.
    let runs_file = scripts.path().join("runs.txt");
    write_runs(&runs_file, &keys[..runs]);
    // Where the next wrk run of turns starts in `keys`: the windows are consecutive.
    let next_window = std::cell::Cell::new(runs);
    let next_runs = |seconds: u64| {
        let start = next_window.get();
        let end = start + runs * windows_for(seconds);
        write_runs(
            &runs_file,
            keys.get(start..end)
                .expect("windows of runs for every wrk run of turns"),
        );
        next_window.set(end);
    };
    let wallets_file = scripts.path().join("wallets.txt");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&wallets_file).expect("wallets"));
    for _ in 0..WALLETS {
        let key = crucible::chain::Keypair::generate();
        writeln!(file, "{}", key.pubkey()).expect("write");
    }
    file.flush().expect("flush");
    // On the disk now, not 30 s later: the kernel would write these 18 MB out in one burst in
    // the middle of a measured load, and stall the database's flushes beside it
    // (docs/benchmarks.md, session 59).
    file.get_ref().sync_all().expect("sync wallets");
    let counter = scripts.path().join("round.txt");
    std::fs::write(&counter, "0").expect("counter");

    let turn_script = scripts.path().join("turn.lua");
    std::fs::write(
        &turn_script,
        format!(
            r#"
-- Every request is written once, here (wrk has set its Host header by now): formatting each
-- as it was sent took about a fifth of wrk's CPU on this load, CPU the machine's other
-- processes (PostgreSQL's among them) could use (docs/benchmarks.md, session 48).
local requests = {{}}
init = function()
  local body = '{{"action":"inventory"}}'
  for line in io.lines("{runs}") do
    local id, key = line:match("(%S+) (%S+)")
    requests[#requests + 1] = wrk.format("POST", "/api/dungeons/runs/" .. id .. "/turn",
      {{ ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }}, body)
  end
end
local n = 0
request = function()
  n = n % #requests + 1
  return requests[n]
end
"#,
            runs = runs_file.display()
        ),
    )
    .expect("turn script");
    let register_script = scripts.path().join("register.lua");
    std::fs::write(
        &register_script,
        format!(
            r#"
local counter = io.open("{counter}", "r")
local round = tonumber(counter:read("*l"))
counter:close()
counter = io.open("{counter}", "w")
counter:write(tostring(round + 1))
counter:close()
local lap = 0
local function tournament()
  return "/api/tournaments/trn_write_" .. ((round * {laps} + lap) % {tournaments}) .. "/register"
end
local path = tournament()
local wallets = {{}}
for line in io.lines("{wallets}") do wallets[#wallets + 1] = line end
local n = 0
request = function()
  n = n + 1
  if n > #wallets then
    n = 1
    lap = lap + 1
    path = tournament()
  end
  return wrk.format("POST", path, {{ ["Content-Type"] = "application/json" }},
    '{{"registeredWallet":"' .. wallets[n] .. '","txSignature":null}}')
end
"#,
            counter = counter.display(),
            laps = LAPS,
            tournaments = TOURNAMENTS,
            wallets = wallets_file.display(),
        ),
    )
    .expect("register script");

    // Each load answers what it should before it is loaded.
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let (run_id, key) = &keys[0];
        let turn = client
            .post(format!("{base}/api/dungeons/runs/{run_id}/turn"))
            .bearer_auth(key)
            .json(&serde_json::json!({"action": "inventory"}))
            .send()
            .await
            .expect("turn");
        let status = turn.status();
        let reply = turn.text().await.unwrap_or_default();
        assert_eq!(status, 200, "{reply}");
        let (state,): (String,) =
            sqlx::query_as("SELECT state FROM dungeon_run_snapshots WHERE run_id = $1")
                .bind(run_id)
                .fetch_one(state.store.read())
                .await
                .expect("state");
        println!(
            "  a turn answers {status}: {} bytes (the run's state snapshot: {} bytes)",
            reply.len(),
            state.len()
        );
        let wallet = crucible::chain::Keypair::generate().pubkey().to_string();
        let registered = client
            .post(format!(
                "{base}/api/tournaments/trn_write_{}/register",
                TOURNAMENTS - 1
            ))
            .json(&serde_json::json!({"registeredWallet": wallet, "txSignature": null}))
            .send()
            .await
            .expect("register");
        println!("  a registration answers {}", registered.status());
        assert_eq!(
            registered.status(),
            201,
            "{}",
            registered.text().await.unwrap_or_default()
        );
    });
    println!(
        "write paths, {backend}, server on 1 core{}, wrk -c{concurrency} -d{seconds}s from another core:",
        if pinned { " (pinned)" } else { "" }
    );
    let floor = format!("{base}/api/no-such-path");
    let loads = [
        (
            "unknown path (floor)",
            Load {
                url: &floor,
                headers: &[],
                script: None,
                prepare: None,
            },
        ),
        (
            "POST dungeon turn (inventory)",
            Load {
                url: &base,
                headers: &[],
                script: Some(&turn_script),
                prepare: Some(&next_runs),
            },
        ),
        (
            "POST free registration (1 wallet)",
            Load {
                url: &base,
                headers: &[],
                script: Some(&register_script),
                prepare: None,
            },
        ),
    ];
    // `BENCH_ONLY=turn` (or `registration`) loads that path alone, for a profiler to watch;
    // with the floor among them (`floor,turn`) the paced phase follows for those paths.
    let loads: Vec<_> = match std::env::var("BENCH_ONLY") {
        Ok(only) => {
            println!("  (only {only}; pid {})", std::process::id());
            loads
                .into_iter()
                .filter(|(name, _)| only.split(',').any(|one| name.contains(one)))
                .collect()
        }
        Err(_) => loads.into(),
    };
    if rounds > 0 {
        wrk::against_the_floor(&loads, concurrency, seconds, rounds);
    }
    // The tail below saturation: the same clients asking together for a share of the floor
    // (22 %: a little over the target, as pacing lands a little either side).
    let share = std::env::var("BENCH_PACED_SHARE")
        .ok()
        .and_then(|share| share.parse::<f64>().ok())
        .unwrap_or(0.22);
    let floor_chosen = loads
        .first()
        .is_some_and(|(name, _)| name.contains("floor"));
    if share > 0.0 && floor_chosen {
        // The flush probe writes beside the scripts, in the temporary directory: on the
        // machines this runs on, the disk the databases are on too.
        let flushes = || -> Box<dyn FnOnce() -> Option<String>> {
            let probe = disk::FlushProbe::start(scripts.path());
            Box::new(move || Some(probe.finish().to_string()))
        };
        let postgres_base = server.database.postgres_base();
        let cluster = || -> Box<dyn FnOnce() -> Option<String>> {
            let before = postgres_base.and_then(postgres::sample);
            Box::new(move || {
                let after = postgres::sample(postgres_base?)?;
                Some(postgres::Meanwhile::between(before?, after).to_string())
            })
        };
        // The SQLite lane's WAL catch-ups: each holds every write until it is done, so a
        // load's tail counts them.
        let store = &state.store;
        let catch_ups = || -> Box<dyn FnOnce() -> Option<String> + '_> {
            let (count_before, seconds_before) = store.wal_catch_ups();
            Box::new(move || {
                let (count, seconds) = store.wal_catch_ups();
                let caught_up = count.checked_sub(count_before).filter(|&n| n > 0)?;
                let stalled_ms = (seconds - seconds_before) * 1000.0;
                Some(format!(
                    "WAL catch-ups meanwhile: {caught_up}, {:.1} ms each on average, \
                     {stalled_ms:.0} ms in all",
                    stalled_ms / caught_up as f64
                ))
            })
        };
        wrk::paced_against_the_floor(
            &loads,
            wrk::Paced {
                concurrency,
                floor_seconds: seconds,
                seconds: paced_seconds,
                warm_up_seconds,
                share,
            },
            scripts.path(),
            &[&flushes, &cluster, &catch_ups],
        );
    }

    runtime.block_on(async {
        let (turns,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM dungeon_run_events WHERE kind = 'run:turn'")
                .fetch_one(state.store.read())
                .await
                .expect("turns");
        let (registered,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM tournament_registrations")
            .fetch_one(state.store.read())
            .await
            .expect("registrations");
        println!("stored: {turns} turns, {registered} registrations");
        // The server's own view of its flushes: how long its batches took, the whole bench.
        let metrics = reqwest::get(format!("{base}/metrics"))
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics text");
        let histogram = |name: &str| -> String {
            let prefix = format!("{name}_bucket{{le=\"");
            let buckets: Vec<String> = metrics
                .lines()
                .filter_map(|line| line.strip_prefix(prefix.as_str()))
                .filter_map(|rest| rest.split_once("\"} "))
                .map(|(bound, count)| format!("{bound} s: {count}"))
                .collect();
            buckets.join(", ")
        };
        println!("group-commit batches by duration, the whole bench (at most, cumulative):");
        println!(
            "  {}",
            histogram("crucible_group_commit_batch_duration_seconds")
        );
        // The writes' waits beside them: what a write waited that was not its batch's own time.
        println!(
            "writes by their wait from queued to answered, the whole bench (at most, cumulative):"
        );
        println!("  {}", histogram("crucible_group_commit_wait_seconds"));
        if backend == "sqlite" {
            println!(
                "the lane's WAL catch-ups by duration, the whole bench (at most, cumulative):"
            );
            println!("  {}", histogram("crucible_sqlite_wal_catch_up_seconds"));
        }
        // A turn whose run is not in the node's cache reads and parses its run first.
        let lookups = |outcome: &str| {
            let series = format!(
                "crucible_read_cache_lookups_total{{cache=\"dungeon_runs\",outcome=\"{outcome}\"}} "
            );
            metrics
                .lines()
                .find_map(|line| line.strip_prefix(series.as_str()))
                .unwrap_or("?")
                .to_owned()
        };
        println!(
            "turns that found their run in the node's cache: {} (and {} that read it)",
            lookups("hit"),
            lookups("miss")
        );
    });
}

/// The runs' ids and keys, one `id key` a line, for the turns' script.
fn write_runs(path: &std::path::Path, keys: &[(String, String)]) {
    let mut file = std::fs::File::create(path).expect("runs file");
    for (run_id, key) in keys {
        writeln!(file, "{run_id} {key}").expect("write");
    }
}
