//! `wrk` from the other core: what the benches that load the server over HTTP to its limit
//! share (read_paths, mcp_reads). The server is pinned to CPU 0, wrk to CPU 1 (when `taskset`
//! exists).

use std::process::Command;

/// What wrk reported for one path.
pub struct Run {
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The slowest answer of the run.
    pub max_ms: Option<f64>,
    /// Only where the run's script prints it (the paced loads' do).
    pub p999_ms: Option<f64>,
    pub errors: String,
}

/// A load: the URL, extra headers, an optional Lua script (a POST body, say), and what to do
/// before each wrk run of it, outside its measurement, given the run's seconds (fresh dungeon
/// runs, whose turns are capped, enough for that long, for the turns' script).
pub struct Load<'a> {
    pub url: &'a str,
    pub headers: &'a [&'a str],
    pub script: Option<&'a std::path::Path>,
    pub prepare: Option<&'a dyn Fn(u64)>,
}

/// Whether wrk is installed; says how to get it when not.
pub fn available(bench: &str) -> bool {
    let found = Command::new("wrk").arg("--version").output().is_ok();
    if !found {
        eprintln!("{bench} needs wrk (Debian: apt-get install wrk)");
    }
    found
}

/// Rounds of (the floor, then each load): each load is compared with the floor of its own round
/// (the first load), and the median round is reported, so a noisy neighbour skews one round,
/// not all.
pub fn against_the_floor(loads: &[(&str, Load<'_>)], concurrency: u64, seconds: u64, rounds: u64) {
    let rounds = rounds.max(1) as usize;
    let mut runs: Vec<Vec<(f64, Run)>> = (0..loads.len()).map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        let mut floor = None;
        for ((_, load), runs) in loads.iter().zip(&mut runs) {
            let run = wrk(load, concurrency, seconds);
            let floor_rps = *floor.get_or_insert(run.requests_per_second);
            runs.push((run.requests_per_second / floor_rps, run));
        }
    }
    println!("median of {rounds} rounds (each path against the floor of its round):");
    for ((name, _), mut runs) in loads.iter().zip(runs) {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ratio, run) = &runs[runs.len() / 2];
        let ratios: Vec<String> = runs
            .iter()
            .map(|(r, _)| format!("{:.0}", r * 100.0))
            .collect();
        // The tail moves more from round to round than the rate: its median over the rounds.
        let mut p99s: Vec<f64> = runs.iter().map(|(_, run)| run.p99_ms).collect();
        p99s.sort_by(f64::total_cmp);
        println!(
            "  {name:<40} {:>9.0} req/s  {:>5.1} % of the floor (rounds: {} %)  p50 {:.2} ms  p99 {:.2} ms (median of the rounds {:.2} ms, {:.2}–{:.2}){}",
            run.requests_per_second,
            100.0 * ratio,
            ratios.join(", "),
            run.p50_ms,
            run.p99_ms,
            p99s[p99s.len() / 2],
            p99s[0],
            p99s[p99s.len() - 1],
            run.errors,
        );
    }
}

/// The tail at a given load, where [`against_the_floor`] gives it at saturation: there every one
/// of the clients has a request waiting all the time, so the mean latency is simply the clients
/// over the rate (Little's law: 256 clients at 13,000 answers/s wait 20 ms on average however
/// the server is built). Here the same clients are paced so that together they ask for `share`
/// of the floor's rate (the floor measured just before, in the same run): each waits a random
/// pause after every answer (uniform, its mean set so the clients' cycles add up to the rate,
/// and random so they do not fall into step), and the tail is what a request meets at that
/// load. Prints, per load after the floor, the rate reached (as a share of the floor) and the
/// latency percentiles, and below them what each of `watches` saw meanwhile: a durable write's
/// tail is never shorter than the disk's stalls ([`super::disk`]) or the database's own
/// ([`super::postgres`]).
///
/// Each paced load first runs unmeasured for `warm_up_seconds`. The kernel writes a page out
/// about 30 s after it was dirtied, so a load measured from its start meets the writeback of
/// whatever ran before it (the saturated rounds, at several times its rate: paced registrations'
/// p99 55–95 ms after them, 4–7 ms alone; docs/benchmarks.md, session 61) and never its own. After
/// a warm-up as long as that delay, the measured window meets the writeback of the load's own
/// earlier writes, as a load that had been running all along would.
pub fn paced_against_the_floor(
    loads: &[(&str, Load<'_>)],
    Paced {
        concurrency,
        floor_seconds,
        seconds,
        warm_up_seconds,
        share,
    }: Paced,
    scripts: &std::path::Path,
    watches: &[&Watch<'_>],
) {
    let Some(((_, floor_load), rest)) = loads.split_first() else {
        return;
    };
    let floor = wrk(floor_load, concurrency, floor_seconds).requests_per_second;
    let target = share * floor;
    println!(
        "paced: {concurrency} clients asking together for {:.0} % of the floor \
         ({floor:.0} req/s now): {target:.0} req/s",
        share * 100.0
    );
    for (n, (name, load)) in rest.iter().enumerate() {
        // Each client's cycle (its answer's wait, then its pause) must last
        // `concurrency / target`; a short run first tells how much of it the answer takes.
        let cycle_ms = concurrency as f64 * 1000.0 / target;
        let paced = |pause_ms: f64, seconds: u64| {
            let script = scripts.join(format!("paced_{n}.lua"));
            std::fs::write(&script, pacing_script(load.script, pause_ms)).expect("paced script");
            let load = Load {
                url: load.url,
                headers: load.headers,
                script: Some(&script),
                prepare: load.prepare,
            };
            wrk(&load, concurrency, seconds)
        };
        // The pause that leaves each cycle its length, given the answers' wait a load with
        // `paused_ms` pauses met.
        let pause_for = |run: &Run, paused_ms: f64| {
            let answer_ms =
                (concurrency as f64 * 1000.0 / run.requests_per_second - paused_ms).max(0.0);
            (cycle_ms - answer_ms).max(0.0)
        };
        let mut pause_ms = pause_for(&paced(cycle_ms, 3), cycle_ms);
        if warm_up_seconds > 0 {
            // The warm-up sets the pause again: over its seconds the answers wait longer than
            // in the 3 s probe (the writeback it meets, the runs' tables grown), and with the
            // probe's pause a measured load of registrations fell 13 % short of the rate asked
            // while its answers' median was 6 ms (docs/benchmarks.md, session 62).
            pause_ms = pause_for(&paced(pause_ms, warm_up_seconds), pause_ms);
        }
        let watching: Vec<_> = watches.iter().map(|watch| watch()).collect();
        let run = paced(pause_ms, seconds);
        let seen: Vec<String> = watching.into_iter().filter_map(|finish| finish()).collect();
        let beyond = |label: &str, ms: Option<f64>| {
            ms.map_or(String::new(), |ms| format!("  {label} {ms:.2} ms"))
        };
        println!(
            "  {name:<40} {:>9.0} req/s  {:>5.1} % of the floor  p50 {:.2} ms  p99 {:.2} ms{}{}  ({seconds} s){}",
            run.requests_per_second,
            100.0 * run.requests_per_second / floor,
            run.p50_ms,
            run.p99_ms,
            beyond("p99.9", run.p999_ms),
            beyond("max", run.max_ms),
            run.errors,
        );
        // Short of the rate asked by a tenth or more: with no pause left, the path's ceiling
        // (the figures a saturated load's, by Little's law); with pauses, the answers waited
        // longer than while the pause was set.
        if run.requests_per_second < 0.9 * target {
            let why = if pause_ms == 0.0 {
                "the path's ceiling: this tail is a saturated load's"
            } else {
                "its answers waited longer than while its pause was set"
            };
            println!(
                "    short: asked for {target:.0} req/s, answered {:.0} ({why})",
                run.requests_per_second
            );
        }
        for line in seen {
            println!("    {line}");
        }
    }
}

/// How [`paced_against_the_floor`] loads: the clients, the seconds the floor is measured for,
/// the seconds each load is measured for and run before that, and the share of the floor they
/// ask for together.
pub struct Paced {
    pub concurrency: u64,
    pub floor_seconds: u64,
    pub seconds: u64,
    pub warm_up_seconds: u64,
    pub share: f64,
}

/// Something watched through each measured paced load: called just before the load, it
/// returns what to call just after, which gives the line to print below the load's (or
/// nothing).
pub type Watch<'a> = dyn Fn() -> Box<dyn FnOnce() -> Option<String> + 'a> + 'a;

/// A wrk script that runs `script` (when there is one), pauses each connection a random
/// `0..2 × mean_ms` after every answer (wrk's `delay`, whole milliseconds: the fraction is
/// dithered), and at the end prints the 99.9th percentile in wrk's own form, beside its 99th.
fn pacing_script(script: Option<&std::path::Path>, mean_ms: f64) -> String {
    let run = script.map_or(String::new(), |path| {
        format!("dofile(\"{}\")\n", path.display())
    });
    format!(
        "{run}math.randomseed(os.time())
function delay()
  local pause = math.random() * 2 * {mean_ms}
  local whole = math.floor(pause)
  if math.random() < pause - whole then whole = whole + 1 end
  return whole
end
function done(summary, latency, requests)
  io.write(string.format(\"  99.9%%   %.2fms\\n\", latency:percentile(99.9) / 1000))
end
"
    )
}

/// Pin this process (and the threads it starts later) to `cpu`, so wrk gets the other core.
pub fn pin_to_cpu(cpu: usize) -> bool {
    Command::new("taskset")
        .args([
            "-p",
            "-c",
            &cpu.to_string(),
            &std::process::id().to_string(),
        ])
        .output()
        .is_ok_and(|output| output.status.success())
}

pub fn wrk(load: &Load<'_>, concurrency: u64, seconds: u64) -> Run {
    if let Some(prepare) = load.prepare {
        prepare(seconds);
    }
    // A short warm-up fills the caches and the connection pools first.
    let mut warm = wrk_command(load, concurrency.min(16), 1);
    warm.output().expect("wrk warm-up");
    let output = wrk_command(load, concurrency, seconds)
        .output()
        .expect("wrk");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if std::env::var_os("BENCH_VERBOSE").is_some() {
        // wrk's own report: the latency distribution beyond the two percentiles kept.
        println!("{text}");
    }
    parse(&text).unwrap_or_else(|| panic!("unexpected wrk output:\n{text}"))
}

fn wrk_command(load: &Load<'_>, concurrency: u64, seconds: u64) -> Command {
    let mut command = if Command::new("taskset").arg("-V").output().is_ok() {
        let mut command = Command::new("taskset");
        command.args(["-c", "1", "wrk"]);
        command
    } else {
        Command::new("wrk")
    };
    command.args([
        "-t1",
        &format!("-c{concurrency}"),
        &format!("-d{seconds}s"),
        "--latency",
    ]);
    for header in load.headers {
        command.args(["-H", header]);
    }
    if let Some(script) = load.script {
        command.arg("-s").arg(script);
    }
    command.arg(load.url);
    command
}

/// Requests/s, the 50th and 99th latency percentiles, and any errors wrk counted.
fn parse(text: &str) -> Option<Run> {
    let value = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|line| line.strip_prefix(prefix))
            .map(str::trim)
    };
    let requests_per_second = value("Requests/sec:")?.parse().ok()?;
    let p50_ms = duration_ms(value("50%")?)?;
    let p99_ms = duration_ms(value("99%")?)?;
    // `Latency  avg  stdev  max  +/- stdev`, the thread's line.
    let max_ms = value("Latency")
        .and_then(|stats| stats.split_whitespace().nth(2))
        .and_then(duration_ms);
    let p999_ms = value("99.9%").and_then(duration_ms);
    let mut errors = String::new();
    if let Some(socket) = value("Socket errors:") {
        errors.push_str(&format!("  socket errors: {socket}"));
    }
    if let Some(non_2xx) = value("Non-2xx or 3xx responses:") {
        errors.push_str(&format!("  non-2xx: {non_2xx}"));
    }
    Some(Run {
        requests_per_second,
        p50_ms,
        p99_ms,
        max_ms,
        p999_ms,
        errors,
    })
}

/// wrk's durations: `812.00us`, `1.25ms`, `2.01s`.
fn duration_ms(text: &str) -> Option<f64> {
    let (number, factor) = if let Some(us) = text.strip_suffix("us") {
        (us, 0.001)
    } else if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1.0)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1000.0)
    } else {
        return None;
    };
    number.trim().parse::<f64>().ok().map(|n| n * factor)
}
