//! `crucible strategy evaluate`: every class over every interval and many seeds of the simulated
//! market, plus a replay of the real BTC/USDT candles, summarised per class and interval
//! (median and quartiles of the return against buy-and-hold, median Sharpe, drawdown, trades
//! and fees) and checked against the targets of `docs/markets.md`.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, bail};
use clap::Args;

use crate::market::{Interval, MarketFeed, Pair, SimulatedMarket, real_feed, real_pair};
use crate::paper::PaperConfig;
use crate::sandbox::{
    BUILTIN_CLASSES, BacktestSpec, LoadedStrategy, Sandbox, builtin_component,
    run_backtest_reviewed,
};
use crate::strategy_model::{BacktestMind, DecisionTally, ModelSource};

/// The intervals evaluated.
pub(crate) const EVAL_INTERVALS: [Interval; 3] = [Interval::M5, Interval::H1, Interval::H4];
/// The intervals of the real replay (the shipped candles are too few for 4h after the
/// 200-candle warm-up).
pub(crate) const REAL_INTERVALS: [Interval; 2] = [Interval::M5, Interval::H1];

#[derive(Debug, Args)]
pub(crate) struct EvaluateArgs {
    /// Seeds of the simulated market (1..=N).
    #[arg(long, default_value_t = 30)]
    pub seeds: u64,
    /// Days per backtest.
    #[arg(long, default_value_t = 90)]
    pub days: u32,
    #[command(flatten)]
    pub market: crate::strategy_cli::MarketArgs,
    /// Intervals to evaluate, comma-separated (the real replay runs at those of 5m and 1h).
    #[arg(long, value_delimiter = ',', default_value = "5m,1h,4h")]
    pub intervals: Vec<String>,
    /// Classes to evaluate, comma-separated (all six by default; the targets that compare
    /// classes compare only those evaluated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fighter,ranger,mage,defender,gambler,rogue"
    )]
    pub classes: Vec<String>,
    /// Backtests run at once.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Print the target check and exit non-zero when a target is missed.
    #[arg(long)]
    pub check: bool,
    /// Evaluate a class from this component instead of the built-in one, `CLASS=PATH.wasm`
    /// (repeatable): measures a changed class without rebuilding the server.
    #[arg(long = "component", value_name = "CLASS=PATH")]
    pub components: Vec<String>,
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: std::path::PathBuf,
    #[command(flatten)]
    pub model: crate::strategy_model::ModelArgs,
}

/// Where a run's candles came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Simulated(u64),
    Real,
}

/// One backtest's outcome.
#[derive(Debug, Clone)]
pub struct Run {
    pub class: &'static str,
    pub interval: Interval,
    pub(crate) source: Source,
    pub return_percent: f64,
    pub buy_and_hold_percent: f64,
    pub sharpe: f64,
    pub max_drawdown: f64,
    pub trades: u64,
    pub fees: f64,
    pub ticks: usize,
    pub failed_ticks: usize,
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct Plan {
    pub seeds: u64,
    pub days: u32,
    pub pair: Pair,
    pub paper: PaperConfig,
    pub intervals: Vec<Interval>,
    pub jobs: usize,
    /// Classes evaluated (a subset of the built-ins).
    pub classes: Vec<&'static str>,
    /// Components that replace built-in classes, by class.
    pub components: Vec<(&'static str, Vec<u8>)>,
}

/// Run every class over every interval and seed, and the real replay.
pub fn evaluate(sandbox: &Sandbox, plan: &Plan) -> anyhow::Result<Vec<Run>> {
    Ok(evaluate_with(sandbox, plan, None)?.0)
}

/// [`evaluate`], each tick decided by `model` when given (`docs/agents.md`), and how the ticks
/// were decided across all runs.
pub(crate) fn evaluate_with(
    sandbox: &Sandbox,
    plan: &Plan,
    model: Option<&ModelSource>,
) -> anyhow::Result<(Vec<Run>, DecisionTally)> {
    let mut strategies = Vec::new();
    for class in BUILTIN_CLASSES
        .into_iter()
        .filter(|c| plan.classes.contains(c))
    {
        let bytes = match plan.components.iter().find(|(c, _)| *c == class) {
            Some((_, bytes)) => bytes.as_slice(),
            None => builtin_component(class).context("a built-in class has no component")?,
        };
        strategies.push((class, sandbox.load(bytes)?));
    }
    // One job per seed (its market is generated once and shared by its backtests), and one per
    // real interval.
    let mut jobs: Vec<Source> = (1..=plan.seeds).map(Source::Simulated).collect();
    jobs.push(Source::Real);
    let next = AtomicUsize::new(0);
    let runs = Mutex::new(Vec::new());
    let tally = Mutex::new(match model {
        Some(_) => DecisionTally::default(),
        None => crate::strategy_model::rule_only(),
    });
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..plan.jobs.clamp(1, 16) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&source) = jobs.get(i) else { break };
                    match run_job(sandbox, &strategies, plan, source, model) {
                        Ok(done) => {
                            let mut runs = runs.lock().unwrap_or_else(|p| p.into_inner());
                            let mut tally = tally.lock().unwrap_or_else(|p| p.into_inner());
                            for (run, decided) in done {
                                runs.push(run);
                                if let Some(decided) = decided {
                                    tally.model = decided.model.clone();
                                    tally.source = decided.source;
                                    tally.add(&decided);
                                }
                            }
                        }
                        Err(e) => {
                            *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut runs = runs.into_inner().unwrap_or_else(|p| p.into_inner());
    // Workers finish in any order; sort so the table does not depend on scheduling.
    runs.sort_by_key(|r| {
        (
            r.class,
            r.interval.millis(),
            match r.source {
                Source::Simulated(s) => s,
                Source::Real => 0,
            },
        )
    });
    Ok((runs, tally.into_inner().unwrap_or_else(|p| p.into_inner())))
}

fn run_job(
    sandbox: &Sandbox,
    strategies: &[(&'static str, LoadedStrategy)],
    plan: &Plan,
    source: Source,
    model: Option<&ModelSource>,
) -> anyhow::Result<Vec<(Run, Option<DecisionTally>)>> {
    let mut out = Vec::new();
    match source {
        Source::Simulated(seed) => {
            let market = SimulatedMarket::new(seed);
            for &interval in &plan.intervals {
                let ticks = (i64::from(plan.days) * 86_400_000 / interval.millis()).max(1) as usize;
                let end = SimulatedMarket::origin() + (200 + ticks as i64) * interval.millis();
                for (class, strategy) in strategies {
                    let spec = spec(class, plan, plan.pair.clone(), interval, end, ticks);
                    let mind = mind_for(model, plan, class, &spec)?;
                    out.push(one(sandbox, strategy, &market, &spec, class, source, mind)?);
                }
            }
        }
        Source::Real => {
            for interval in REAL_INTERVALS
                .into_iter()
                .filter(|i| plan.intervals.contains(i))
            {
                let feed = real_feed(interval)?;
                let (_, end) = feed.span();
                let candles = feed.candles(&real_pair(), interval, end, usize::MAX)?;
                let ticks = candles.len().saturating_sub(200).max(1);
                for (class, strategy) in strategies {
                    let spec = spec(class, plan, real_pair(), interval, end, ticks);
                    let mind = mind_for(model, plan, class, &spec)?;
                    out.push(one(sandbox, strategy, &feed, &spec, class, source, mind)?);
                }
            }
        }
    }
    Ok(out)
}

fn spec(
    class: &str,
    plan: &Plan,
    pair: Pair,
    interval: Interval,
    end: i64,
    ticks: usize,
) -> BacktestSpec {
    let mut spec = BacktestSpec::new(class, pair, interval, end, ticks);
    spec.paper = plan.paper;
    spec.settings.max_allocation = plan.paper.max_allocation_pct;
    spec
}

/// The mind that asks `model` in a run of `class` (a class replaced by a component decides
/// alone, as an uploaded component does on the server).
fn mind_for(
    model: Option<&ModelSource>,
    plan: &Plan,
    class: &str,
    spec: &BacktestSpec,
) -> anyhow::Result<Option<BacktestMind>> {
    let Some(model) = model else {
        return Ok(None);
    };
    let builtin = !plan.components.iter().any(|(c, _)| *c == class);
    Ok(Some(model.mind(
        builtin,
        class,
        &spec.pair,
        spec.interval.as_str(),
        spec.settings.max_allocation,
    )?))
}

fn one(
    sandbox: &Sandbox,
    strategy: &LoadedStrategy,
    feed: &dyn MarketFeed,
    spec: &BacktestSpec,
    class: &'static str,
    source: Source,
    mut mind: Option<BacktestMind>,
) -> anyhow::Result<(Run, Option<DecisionTally>)> {
    let mut spec = spec.clone();
    if let Some(mind) = &mind {
        spec.settings.model_id = mind.model_id().to_owned();
        spec.settings.personality = mind.personality().to_owned();
    }
    let port = mind.as_ref().map(|mind| mind.port());
    let report = run_backtest_reviewed(
        sandbox,
        strategy,
        feed,
        &spec,
        &mut |_, _| {},
        &mut |proposal| match &mut mind {
            Some(mind) => mind.review(proposal),
            None => proposal.orders,
        },
        port,
    )?;
    let run = Run {
        class,
        interval: spec.interval,
        source,
        return_percent: report.metrics.total_pnl_percent,
        buy_and_hold_percent: report.buy_and_hold_percent,
        sharpe: report.metrics.sharpe,
        max_drawdown: report.metrics.max_drawdown,
        trades: report.metrics.total_trades,
        fees: report.metrics.fees_paid,
        ticks: report.ticks,
        failed_ticks: report.faults.len(),
    };
    Ok((run, mind.map(|mind| mind.into_tally())))
}

/// The summary of one class at one interval on one kind of source.
#[derive(Debug, Clone)]
pub struct Row {
    pub class: &'static str,
    pub interval: Interval,
    pub real: bool,
    pub runs: usize,
    pub return_q1: f64,
    pub return_median: f64,
    pub return_q3: f64,
    pub buy_and_hold_median: f64,
    pub sharpe_median: f64,
    pub drawdown_median: f64,
    pub trades_median: f64,
    pub fees_median: f64,
    pub failed_ticks: usize,
}

/// Group runs by class, interval and kind of source.
pub fn rows(runs: &[Run]) -> Vec<Row> {
    let mut out = Vec::new();
    for real in [false, true] {
        for class in BUILTIN_CLASSES {
            for interval in EVAL_INTERVALS {
                let group: Vec<&Run> = runs
                    .iter()
                    .filter(|r| {
                        r.class == class
                            && r.interval == interval
                            && (r.source == Source::Real) == real
                    })
                    .collect();
                if group.is_empty() {
                    continue;
                }
                let col = |f: fn(&Run) -> f64| -> Vec<f64> {
                    let mut v: Vec<f64> = group.iter().map(|r| f(r)).collect();
                    v.sort_by(f64::total_cmp);
                    v
                };
                let ret = col(|r| r.return_percent);
                out.push(Row {
                    class,
                    interval,
                    real,
                    runs: group.len(),
                    return_q1: quantile(&ret, 0.25),
                    return_median: quantile(&ret, 0.5),
                    return_q3: quantile(&ret, 0.75),
                    buy_and_hold_median: quantile(&col(|r| r.buy_and_hold_percent), 0.5),
                    sharpe_median: quantile(&col(|r| r.sharpe), 0.5),
                    drawdown_median: quantile(&col(|r| r.max_drawdown), 0.5),
                    trades_median: quantile(&col(|r| r.trades as f64), 0.5),
                    fees_median: quantile(&col(|r| r.fees), 0.5),
                    failed_ticks: group.iter().map(|r| r.failed_ticks).sum(),
                });
            }
        }
    }
    out
}

/// Linear-interpolated quantile `q` (0..=1) of sorted values (NaN when empty).
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

/// The table, as Markdown.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| class | interval | market | runs | return median [q1, q3] | buy & hold median | Sharpe median | max drawdown median | trades median | fees median | failed ticks |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:+.1} % [{:+.1}, {:+.1}] | {:+.1} % | {:.2} | {:.1} % | {:.0} | {:.0} | {} |",
            r.class,
            r.interval,
            if r.real { "real BTC/USDT" } else { "simulated" },
            r.runs,
            r.return_median,
            r.return_q1,
            r.return_q3,
            r.buy_and_hold_median,
            r.sharpe_median,
            r.drawdown_median * 100.0,
            r.trades_median,
            r.fees_median,
            r.failed_ticks
        );
    }
    out
}

/// The targets of `docs/markets.md` on the simulated rows; each miss as a sentence.
pub fn missed_targets(rows: &[Row]) -> Vec<String> {
    let sim: Vec<&Row> = rows.iter().filter(|r| !r.real).collect();
    let mut missed = Vec::new();
    for r in &sim {
        if r.return_median < -10.0 {
            missed.push(format!(
                "{} at {}: median return {:+.1} % is below -10 %",
                r.class, r.interval, r.return_median
            ));
        }
        if r.sharpe_median > 2.5 {
            missed.push(format!(
                "{} at {}: median Sharpe {:.2} is above 2.5",
                r.class, r.interval, r.sharpe_median
            ));
        }
    }
    for interval in EVAL_INTERVALS {
        let at: Vec<&&Row> = sim.iter().filter(|r| r.interval == interval).collect();
        // The comparisons need the class they single out (`--classes` may leave it out).
        let has = |class: &str| at.iter().any(|r| r.class == class);
        let lowest_dd = at
            .iter()
            .min_by(|a, b| a.drawdown_median.total_cmp(&b.drawdown_median));
        if let Some(r) = lowest_dd
            && has("defender")
            && r.class != "defender"
        {
            missed.push(format!(
                "at {interval}: {} has a lower median drawdown than defender",
                r.class
            ));
        }
        let widest = at
            .iter()
            .max_by(|a, b| (a.return_q3 - a.return_q1).total_cmp(&(b.return_q3 - b.return_q1)));
        if let Some(r) = widest
            && has("gambler")
            && r.class != "gambler"
        {
            missed.push(format!(
                "at {interval}: {} has a wider return spread than gambler",
                r.class
            ));
        }
    }
    for r in rows.iter().filter(|r| r.failed_ticks > 0) {
        missed.push(format!(
            "{} at {} ({}): {} failed ticks",
            r.class,
            r.interval,
            if r.real { "real" } else { "simulated" },
            r.failed_ticks
        ));
    }
    missed
}

/// The built-in class of this name.
fn builtin_class(name: &str) -> anyhow::Result<&'static str> {
    match BUILTIN_CLASSES.into_iter().find(|c| *c == name) {
        Some(class) => Ok(class),
        None => bail!("{name:?} is not a built-in class"),
    }
}

/// `CLASS=PATH`: the built-in class and the bytes of the component that replaces it.
fn component_override(arg: &str) -> anyhow::Result<(&'static str, Vec<u8>)> {
    let Some((class, path)) = arg.split_once('=') else {
        bail!("--component takes CLASS=PATH, got {arg:?}");
    };
    let class = builtin_class(class)?;
    let bytes = std::fs::read(path).with_context(|| format!("reading {path}"))?;
    Ok((class, bytes))
}

/// `crucible strategy evaluate`.
pub(crate) fn run(args: &EvaluateArgs, sandbox: &Sandbox) -> anyhow::Result<()> {
    if args.seeds == 0 || args.seeds > 1000 {
        bail!("--seeds must be between 1 and 1000");
    }
    if !(1..=365).contains(&args.days) {
        bail!("--days must be between 1 and 365");
    }
    let plan = Plan {
        seeds: args.seeds,
        days: args.days,
        pair: args.market.pair.parse()?,
        paper: PaperConfig {
            fee_bps: args.market.fee_bps,
            slippage_bps: args.market.slippage_bps,
            max_allocation_pct: 100.0,
        },
        intervals: args
            .intervals
            .iter()
            .map(|i| i.parse::<Interval>())
            .collect::<Result<_, _>>()?,
        jobs: args.jobs,
        classes: args
            .classes
            .iter()
            .map(|c| builtin_class(c))
            .collect::<anyhow::Result<_>>()?,
        components: args
            .components
            .iter()
            .map(|c| component_override(c))
            .collect::<anyhow::Result<_>>()?,
    };
    let model = ModelSource::from_args(&args.model)?;
    let (runs, tally) = evaluate_with(sandbox, &plan, model.as_ref())?;
    let rows = rows(&runs);
    println!(
        "Simulated {} (seeds 1–{}, {} days each) and real BTC/USDT replays; fee {} bps, slippage {} bps.\n",
        plan.pair, plan.seeds, plan.days, args.market.fee_bps, args.market.slippage_bps
    );
    print!("{}", table(&rows));
    println!();
    crate::strategy_cli::print_decisions(&tally);
    let missed = missed_targets(&rows);
    if missed.is_empty() {
        println!("\nTargets: all met.");
    } else {
        println!("\nTargets missed:");
        for m in &missed {
            println!("- {m}");
        }
        if args.check {
            bail!("{} targets missed", missed.len());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.25), 2.0);
        assert_eq!(quantile(&[1.0, 2.0], 0.5), 1.5);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn comparisons_need_the_class_they_single_out() {
        // `--classes fighter,rogue`: neither defender nor gambler to compare with.
        let runs: Vec<Run> = (1..=4)
            .flat_map(|seed| {
                let s = seed as f64;
                [
                    run("fighter", seed, -20.0 + s * 10.0, 0.01, 0.1),
                    run("rogue", seed, s, 0.2, 0.1),
                ]
            })
            .collect();
        assert!(missed_targets(&rows(&runs)).is_empty());
    }

    #[test]
    fn component_overrides_name_a_built_in_class_and_a_file() {
        assert_eq!(builtin_class("rogue").expect("built in"), "rogue");
        assert!(builtin_class("wizard").is_err());
        assert!(component_override("rogue").is_err(), "no path");
        assert!(component_override("wizard=/dev/null").is_err());
        assert!(component_override("rogue=/nonexistent/rogue.wasm").is_err());
        let (class, bytes) = component_override("rogue=/dev/null").expect("readable");
        assert_eq!(class, "rogue");
        assert!(bytes.is_empty());
    }

    fn run(class: &'static str, seed: u64, ret: f64, drawdown: f64, sharpe: f64) -> Run {
        Run {
            class,
            interval: Interval::H1,
            source: Source::Simulated(seed),
            return_percent: ret,
            buy_and_hold_percent: 0.0,
            sharpe,
            max_drawdown: drawdown,
            trades: 10,
            fees: 1.0,
            ticks: 100,
            failed_ticks: 0,
        }
    }

    #[test]
    fn targets_name_each_miss() {
        // Defender steady, gambler wide: every target met.
        let mut runs = Vec::new();
        for seed in 1..=4 {
            let s = seed as f64;
            runs.push(run("defender", seed, -1.0 + s * 0.1, 0.03, 0.1));
            runs.push(run("gambler", seed, -20.0 + s * 10.0, 0.3, 0.5));
            runs.push(run("fighter", seed, -2.0 + s, 0.1, 0.3));
        }
        let good = rows(&runs);
        assert_eq!(good.len(), 3);
        assert!(
            missed_targets(&good).is_empty(),
            "{:?}",
            missed_targets(&good)
        );
        // A losing, leaking fighter with the narrowest drawdown breaks three targets.
        for r in runs.iter_mut().filter(|r| r.class == "fighter") {
            r.return_percent -= 30.0;
            r.sharpe = 3.0;
            r.max_drawdown = 0.01;
            r.failed_ticks = 1;
        }
        let missed = missed_targets(&rows(&runs));
        assert_eq!(missed.len(), 4, "{missed:?}");
        assert!(missed[0].contains("below -10 %"));
        assert!(missed[1].contains("above 2.5"));
        assert!(missed[2].contains("lower median drawdown than defender"));
        assert!(missed[3].contains("4 failed ticks"));
    }
}
