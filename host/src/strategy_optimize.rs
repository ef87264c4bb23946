//! `crucible strategy optimize`: search a strategy's declared parameters with real backtests in
//! the sandbox, judged out of sample (walk-forward folds over several seeds of the simulated
//! market and the real candles), with the probability of backtest overfitting and the deflated
//! Sharpe ratio of the winner (`crucible-optimize` does the statistics; this module runs the
//! backtests and prints). See docs/strategies.md, "Optimising parameters".

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::market::{Interval, MarketFeed, Pair, SimulatedMarket, real_feed, real_pair};
use crate::optimize::params::{Param, to_json};
use crate::optimize::{
    Loss, Objective, PathRun, Progress, Report, SamplerKind, Scheme, StudyConfig, run_study,
};
use crate::paper::PaperConfig;
use crate::sandbox::{BUILTIN_CLASSES, BacktestSpec, LoadedStrategy, Sandbox, run_backtest};
use crate::strategy_eval::REAL_INTERVALS;

/// Candles every backtest warms up on before its first tick (what an agent's tick sees).
const WARM_UP: usize = 200;

#[derive(Debug, Args)]
pub(crate) struct OptimizeArgs {
    /// A class (fighter, ranger, mage, defender, gambler, rogue) or a path to a `.wasm` component.
    pub strategy: String,
    /// The class a component plays (what its `agent-config.class` says); a class's own name by
    /// default, `fighter` for a file.
    #[arg(long)]
    pub class: Option<String>,
    /// Trials, the declared defaults (trial 0) included.
    #[arg(long, default_value_t = 100)]
    pub trials: usize,
    /// Seed of the sampler: the same seed and inputs give the same report, byte for byte.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Backtests run at once (every core by default). Never changes the report.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// What a trial is scored by: sharpe, sortino, calmar, pnl_percent or max_drawdown.
    #[arg(long, default_value = "sharpe")]
    pub loss: String,
    /// Walk-forward folds per market path.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// How in-sample windows grow: `rolling` (the window just before) or `anchored` (everything
    /// before).
    #[arg(long, value_enum, default_value = "rolling")]
    pub scheme: SchemeArg,
    /// Trials with fewer trades than this in their out-of-sample windows get no score.
    #[arg(long, default_value_t = 5)]
    pub min_trades: u64,
    /// How trials are chosen: `tpe` (learns where good trials lie) or `halton` (spreads them
    /// evenly).
    #[arg(long, value_enum, default_value = "tpe")]
    pub sampler: SamplerArg,
    /// Seeds of the simulated market every trial runs on (1..=N).
    #[arg(long, default_value_t = 3)]
    pub market_seeds: u64,
    /// Leave out the real BTC/USDT candles (only shipped at 5m and 1h).
    #[arg(long)]
    pub no_real: bool,
    /// Candle interval: 5m, 15m, 1h, 4h, 1d.
    #[arg(long, default_value = "1h")]
    pub interval: String,
    /// Days of simulated market per path.
    #[arg(long, default_value_t = 90)]
    pub days: u32,
    #[command(flatten)]
    pub market: crate::strategy_cli::MarketArgs,
    /// maxAllocation, percent of equity.
    #[arg(long, default_value_t = 100.0)]
    pub max_allocation: f64,
    /// Blocks the history is cut into for the overfitting probability (even, 2 to 20).
    #[arg(long, default_value_t = 16)]
    pub pbo_splits: usize,
    /// Write the report as JSON on stdout (for machines) instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Data directory (compiled components are cached in `<data-dir>/components`).
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemeArg {
    Rolling,
    Anchored,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SamplerArg {
    Tpe,
    Halton,
}

/// One market path: a seed of the simulated market, or the real candles.
enum Path {
    Simulated { seed: u64, market: SimulatedMarket },
    Real { feed: crate::market::CsvFeed },
}

/// Backtests of one strategy over the paths: what the study optimises.
pub(crate) struct Backtests<'a> {
    sandbox: &'a Sandbox,
    strategy: &'a LoadedStrategy,
    class: String,
    pair: Pair,
    interval: Interval,
    days: u32,
    paper: PaperConfig,
    paths: Vec<Path>,
    /// Strategy ticks run, for the throughput line on stderr.
    ticks: AtomicU64,
}

impl Backtests<'_> {
    fn spec(&self, path: &Path, params: &[Param]) -> anyhow::Result<BacktestSpec> {
        let (pair, end, ticks) = match path {
            Path::Simulated { .. } => {
                let ticks = (i64::from(self.days) * 86_400_000 / self.interval.millis()).max(1);
                let end =
                    SimulatedMarket::origin() + (WARM_UP as i64 + ticks) * self.interval.millis();
                (self.pair.clone(), end, ticks as usize)
            }
            Path::Real { feed } => {
                let (_, end) = feed.span();
                let candles = feed.candles(&real_pair(), self.interval, end, usize::MAX)?;
                (
                    real_pair(),
                    end,
                    candles.len().saturating_sub(WARM_UP).max(1),
                )
            }
        };
        let mut spec = BacktestSpec::new(&self.class, pair, self.interval, end, ticks);
        spec.window = WARM_UP;
        spec.paper = self.paper;
        spec.settings.max_allocation = self.paper.max_allocation_pct;
        spec.settings.params = params.to_vec();
        Ok(spec)
    }
}

impl Objective for Backtests<'_> {
    fn paths(&self) -> Vec<String> {
        self.paths
            .iter()
            .map(|path| match path {
                Path::Simulated { seed, .. } => format!("seed {seed}"),
                Path::Real { .. } => "real BTC/USDT".to_owned(),
            })
            .collect()
    }

    fn run(&self, params: &[Param], path: usize) -> Result<PathRun, String> {
        let Some(path) = self.paths.get(path) else {
            return Err(format!("no path {path}"));
        };
        let spec = self.spec(path, params).map_err(|e| format!("{e:#}"))?;
        let feed: &dyn MarketFeed = match path {
            Path::Simulated { market, .. } => market,
            Path::Real { feed } => feed,
        };
        let report = run_backtest(self.sandbox, self.strategy, feed, &spec, &mut |_, _| {})
            .map_err(|e| e.to_string())?;
        self.ticks.fetch_add(report.ticks as u64, Ordering::Relaxed);
        // A trade at a tick's time belongs to the bar that tick closed (equity[k + 1] is the
        // equity after tick k, at that tick's time).
        let times: Vec<i64> = report.equity.iter().map(|(ts, _)| *ts).collect();
        let trades = report
            .trades
            .iter()
            .map(|trade| times.partition_point(|ts| *ts < trade.ts))
            .collect();
        Ok(PathRun {
            equity: report.equity.iter().map(|(_, value)| *value).collect(),
            trades,
            periods_per_year: report.periods_per_year,
        })
    }
}

/// The report with what it was run on, as `--json` writes it.
#[derive(Serialize)]
struct Output<'a> {
    strategy: &'a str,
    class: &'a str,
    component_sha256: &'a str,
    interval: &'a str,
    days: u32,
    pair: String,
    fee_bps: u32,
    slippage_bps: u32,
    /// The winner as an agent's `strategy.params`.
    winner_params: serde_json::Map<String, serde_json::Value>,
    #[serde(flatten)]
    report: &'a Report,
}

/// Run `crucible strategy optimize`.
pub(crate) fn run(args: &OptimizeArgs, sandbox: &Sandbox) -> anyhow::Result<()> {
    let interval: Interval = args.interval.parse()?;
    let pair: Pair = args.market.pair.parse()?;
    if !(1.0..=100.0).contains(&args.max_allocation) {
        bail!("--max-allocation must be between 1 and 100");
    }
    let loss: Loss = args
        .loss
        .parse()
        .map_err(|e| anyhow::anyhow!("--loss: {e}"))?;
    let (bytes, builtin_class) = crate::strategy_cli::component_of(&args.strategy)?;
    let is_builtin = builtin_class.is_some();
    let class = builtin_class.unwrap_or_else(|| "fighter".to_owned());
    let class = args.class.clone().unwrap_or(class);
    if !BUILTIN_CLASSES.contains(&class.as_str()) {
        bail!("--class must be one of {}", BUILTIN_CLASSES.join(", "));
    }
    let strategy = sandbox
        .load(&bytes)
        .with_context(|| format!("{} is not a usable strategy", args.strategy))?;
    if strategy.params().is_empty() {
        bail!(
            "{} declares no parameters (components built against crucible:strategy 0.3.0 declare \
             them with `params`; see docs/strategies.md, \"Parameters\")",
            args.strategy
        );
    }
    let mut paths: Vec<Path> = (1..=args.market_seeds)
        .map(|seed| Path::Simulated {
            seed,
            market: SimulatedMarket::new(seed),
        })
        .collect();
    if !args.no_real && REAL_INTERVALS.contains(&interval) {
        paths.push(Path::Real {
            feed: real_feed(interval)?,
        });
    }
    if paths.is_empty() {
        bail!("no market paths: give --market-seeds 1 or more, or an interval with real candles");
    }
    let backtests = Backtests {
        sandbox,
        strategy: &strategy,
        class: class.clone(),
        pair: pair.clone(),
        interval,
        days: args.days,
        paper: PaperConfig {
            fee_bps: args.market.fee_bps,
            slippage_bps: args.market.slippage_bps,
            max_allocation_pct: args.max_allocation,
        },
        paths,
        ticks: AtomicU64::new(0),
    };
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let config = StudyConfig {
        trials: args.trials,
        seed: args.seed,
        jobs,
        folds: args.folds,
        scheme: match args.scheme {
            SchemeArg::Rolling => Scheme::Rolling,
            SchemeArg::Anchored => Scheme::Anchored,
        },
        loss,
        min_trades: args.min_trades,
        sampler: match args.sampler {
            SamplerArg::Tpe => SamplerKind::Tpe,
            SamplerArg::Halton => SamplerKind::Halton,
        },
        pbo_splits: args.pbo_splits,
    };
    let progress = ProgressLine::new(std::io::stderr().is_terminal(), loss);
    let started = Instant::now();
    let report = run_study(strategy.params(), &backtests, &config, &|p| {
        progress.show(p)
    })?;
    progress.finish();
    // Timings go to stderr: the report itself stays byte-identical from run to run.
    let took = started.elapsed().as_secs_f64().max(1e-9);
    let ticks = backtests.ticks.load(Ordering::Relaxed);
    eprintln!(
        "{} trials in {took:.1} s on {jobs} jobs: {:.2} trials/s, {:.0} strategy ticks/s",
        report.trials,
        report.trials as f64 / took,
        ticks as f64 / took,
    );
    let winner_params = to_json(&report.winner.params);
    if args.json {
        let output = Output {
            strategy: &args.strategy,
            class: &class,
            component_sha256: &strategy.hash,
            interval: interval.as_str(),
            days: args.days,
            pair: format!("{}/{}", pair.base, pair.quote),
            fee_bps: args.market.fee_bps,
            slippage_bps: args.market.slippage_bps,
            winner_params,
            report: &report,
        };
        println!("{}", serde_json::to_string_pretty(&output)?);
        return Ok(());
    }
    println!(
        "Optimising {} as {class} on {} {} candles, {} days per simulated path \
         (fee {} bps, slippage {} bps)",
        args.strategy,
        format_args!("{}/{}", pair.base, pair.quote),
        interval.as_str(),
        args.days,
        args.market.fee_bps,
        args.market.slippage_bps,
    );
    println!("component sha256 {}", strategy.hash);
    println!();
    print!("{}", report.render_text());
    println!();
    println!("Create an agent with the winner (POST /api/v1/public/agents/create):");
    println!(
        "  \"strategy\": {{\"type\": \"{}\", \"timeInterval\": \"{}\", \"params\": {}}}",
        if is_builtin {
            "builtin".to_owned()
        } else {
            format!("custom:{}", strategy.hash)
        },
        interval.as_str(),
        serde_json::Value::Object(winner_params)
    );
    Ok(())
}

/// Progress on stderr: one line rewritten in place on a terminal, a line every tenth otherwise.
struct ProgressLine {
    terminal: bool,
    loss: Loss,
    last_tenth: Mutex<usize>,
}

impl ProgressLine {
    fn new(terminal: bool, loss: Loss) -> Self {
        ProgressLine {
            terminal,
            loss,
            last_tenth: Mutex::new(usize::MAX),
        }
    }

    fn show(&self, progress: Progress) {
        let best = progress
            .best
            .map_or_else(|| "none yet".to_owned(), |b| format!("{b:.3}"));
        let line = format!(
            "trial {}/{}, best out-of-sample {} {best}",
            progress.done,
            progress.total,
            self.loss.as_str()
        );
        let mut err = std::io::stderr().lock();
        // Best effort: a closed stderr must not stop the study.
        if self.terminal {
            let _ = write!(err, "\r{line}   ");
            let _ = err.flush();
            return;
        }
        let tenth = progress.done * 10 / progress.total.max(1);
        let mut last = self.last_tenth.lock().unwrap_or_else(|p| p.into_inner());
        if *last != tenth {
            *last = tenth;
            let _ = writeln!(err, "{line}");
        }
    }

    fn finish(&self) {
        if self.terminal {
            let _ = writeln!(std::io::stderr());
        }
    }
}
