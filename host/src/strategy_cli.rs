//! `crucible strategy backtest|check`: try a strategy component on the simulated or a replayed
//! market, or validate one, without a server or database.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use crate::market::{CsvFeed, Interval, MarketFeed, Pair, SimulatedMarket};
use crate::paper::{PaperConfig, Side, UNIT};
use crate::sandbox::report::{Breakdown, Drawdown, Summary};
use crate::sandbox::{
    BUILTIN_CLASSES, BacktestReport, BacktestSpec, Sandbox, SandboxConfig, builtin_component,
    run_backtest_reviewed,
};
use crate::strategy_model::ModelSource;

#[derive(Debug, Args)]
pub(crate) struct StrategyArgs {
    #[command(subcommand)]
    pub command: StrategyCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum StrategyCommand {
    /// Backtest a class strategy or a component file on the simulated market or a CSV replay.
    Backtest(BacktestArgs),
    /// Every class over every interval and many seeds, and a replay of real candles: median and
    /// quartile returns against buy-and-hold, Sharpe, drawdown, trades and fees.
    Evaluate(crate::strategy_eval::EvaluateArgs),
    /// Search a strategy's declared parameters, judged out of sample: walk-forward folds over
    /// several market seeds and the real candles, the probability of backtest overfitting and
    /// the deflated Sharpe ratio of the winner.
    Optimize(crate::strategy_optimize::OptimizeArgs),
    /// Validate a component: size, format, world; prints its hash and compile time.
    Check(CheckArgs),
    /// Create a strategy project to start from: `--lang rust|python|js`.
    New(crate::strategy_new::NewArgs),
}

#[derive(Debug, Args)]
pub(crate) struct BacktestArgs {
    /// A class (fighter, ranger, mage, defender, gambler, rogue) or a path to a `.wasm` component.
    pub strategy: String,
    #[command(flatten)]
    pub market: MarketArgs,
    /// Candle interval: 5m, 15m, 1h, 4h, 1d.
    #[arg(long, default_value = "1h")]
    pub interval: String,
    /// Days of market to trade.
    #[arg(long, default_value_t = 30)]
    pub days: u32,
    /// Seed of the simulated market (same seed, same market).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Replay candles from a CSV file (`ts,open,high,low,close,volume`) instead of simulating.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// maxAllocation, percent of equity.
    #[arg(long, default_value_t = 100.0)]
    pub max_allocation: f64,
    /// Starting paper capital, quote tokens.
    #[arg(long, default_value_t = 10_000.0)]
    pub capital: f64,
    /// Trades to list (most recent).
    #[arg(long, default_value_t = 10)]
    pub show_trades: usize,
    /// Write the report as JSON on stdout (for machines) instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Add a per-period table (returns, trades, realised profit per UTC day, ISO week or month).
    #[arg(long, value_enum)]
    pub breakdown: Option<BreakdownArg>,
    /// Data directory (compiled components are cached in `<data-dir>/components`).
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub model: crate::strategy_model::ModelArgs,
}

/// `--breakdown day|week|month`: the report's [`Breakdown`] as a command-line value (the sandbox
/// crate knows nothing of the CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BreakdownArg {
    Day,
    Week,
    Month,
}

impl From<BreakdownArg> for Breakdown {
    fn from(arg: BreakdownArg) -> Self {
        match arg {
            BreakdownArg::Day => Breakdown::Day,
            BreakdownArg::Week => Breakdown::Week,
            BreakdownArg::Month => Breakdown::Month,
        }
    }
}

/// The simulated pair and the paper fill model's costs, as every backtesting command takes them.
#[derive(Debug, Args)]
pub(crate) struct MarketArgs {
    /// Token pair.
    #[arg(long, default_value = "SOL/USDC")]
    pub pair: String,
    /// Fee, basis points.
    #[arg(long, default_value_t = 10)]
    pub fee_bps: u32,
    /// Slippage, basis points.
    #[arg(long, default_value_t = 5)]
    pub slippage_bps: u32,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// Path to a `.wasm` component.
    pub file: PathBuf,
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

/// Run a `crucible strategy` command.
pub(crate) fn run(args: StrategyArgs) -> anyhow::Result<()> {
    match args.command {
        // On a thread of its own, outside the async runtime: WASI guests use wasmtime-wasi's
        // blocking bindings, which must not run on a runtime thread.
        StrategyCommand::Backtest(a) => std::thread::scope(|scope| {
            scope
                .spawn(|| backtest(a))
                .join()
                .unwrap_or_else(|_| bail!("the backtest thread panicked"))
        }),
        StrategyCommand::Evaluate(a) => std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let sandbox = Sandbox::new(cli_sandbox_config(&a.data_dir)?)?;
                    crate::strategy_eval::run(&a, &sandbox)
                })
                .join()
                .unwrap_or_else(|_| bail!("the evaluation thread panicked"))
        }),
        StrategyCommand::Optimize(a) => std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut config = cli_sandbox_config(&a.data_dir)?;
                    // Every job ticks at once: the instance pool must hold them all.
                    let jobs = a.jobs.unwrap_or_else(|| {
                        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
                    });
                    config.max_concurrent_ticks = config.max_concurrent_ticks.max(jobs as u32);
                    let sandbox = Sandbox::new(config)?;
                    crate::strategy_optimize::run(&a, &sandbox)
                })
                .join()
                .unwrap_or_else(|_| bail!("the optimisation thread panicked"))
        }),
        StrategyCommand::Check(a) => check(a),
        StrategyCommand::New(a) => {
            let dir = crate::strategy_new::run(&a)?;
            println!("{}", crate::strategy_new::next_steps(a.lang, &dir));
            Ok(())
        }
    }
}

fn check(args: CheckArgs) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("read {}", args.file.display()))?;
    let sandbox = Sandbox::new(cli_sandbox_config(&args.data_dir)?)?;
    let loaded = sandbox
        .load(&bytes)
        .with_context(|| format!("{} is not a usable strategy", args.file.display()))?;
    println!("ok: {}", args.file.display());
    let imports = if loaded.uses_model() {
        "host.log + model.complete + WASI"
    } else {
        "host.log + WASI"
    };
    println!(
        "  world    crucible:strategy/strategy@{} (exports on-tick, imports {imports})",
        loaded.wit_version()
    );
    if !loaded.params().is_empty() {
        let names: Vec<&str> = loaded.params().iter().map(|p| p.name.as_str()).collect();
        println!("  params   {}", names.join(", "));
    }
    println!("  size     {} bytes", loaded.size);
    println!("  sha256   {}", loaded.hash);
    let how = if loaded.from_cache {
        "loaded from cache"
    } else {
        "compiled"
    };
    println!("  {how} in {:.1} ms", loaded.load_time.as_secs_f64() * 1e3);
    Ok(())
}

/// The component a command names: a class's built-in one (and the class), or a `.wasm` file's
/// bytes.
pub(crate) fn component_of(strategy: &str) -> anyhow::Result<(Vec<u8>, Option<String>)> {
    match builtin_component(strategy) {
        Some(bytes) => Ok((bytes.to_vec(), Some(strategy.to_owned()))),
        None if strategy.ends_with(".wasm") || std::path::Path::new(strategy).exists() => {
            let bytes = std::fs::read(strategy).with_context(|| format!("read {strategy}"))?;
            Ok((bytes, None))
        }
        None => bail!(
            "`{strategy}` is neither a class ({}) nor a .wasm file",
            BUILTIN_CLASSES.join(", ")
        ),
    }
}

fn backtest(args: BacktestArgs) -> anyhow::Result<()> {
    let pair: Pair = args.market.pair.parse()?;
    let interval: Interval = args.interval.parse()?;
    if !(1.0..=100.0).contains(&args.max_allocation) {
        bail!("--max-allocation must be between 1 and 100");
    }
    let (bytes, class) = component_of(&args.strategy)?;
    let class = class.unwrap_or_else(|| "custom".to_owned());
    let sandbox = Sandbox::new(cli_sandbox_config(&args.data_dir)?)?;
    let strategy = sandbox.load(&bytes)?;

    let wanted = (i64::from(args.days) * 86_400_000 / interval.millis()).max(1) as usize;
    let (feed, end, source): (Box<dyn MarketFeed>, i64, String) = match &args.csv {
        Some(path) => {
            let feed = CsvFeed::from_path(pair.clone(), path)?;
            let end = feed.span().1;
            (Box::new(feed), end, format!("CSV {}", path.display()))
        }
        None => {
            let market = SimulatedMarket::new(args.seed);
            // Start after a warm-up window so the first tick already sees 200 candles.
            let end = SimulatedMarket::origin() + (200 + wanted as i64) * interval.millis();
            (
                Box::new(market),
                end,
                format!("simulated market, seed {}", args.seed),
            )
        }
    };
    let mut spec = BacktestSpec::new(&class, pair.clone(), interval, end, wanted);
    spec.settings.max_allocation = args.max_allocation;
    spec.initial_quote = args.capital;
    spec.paper = PaperConfig {
        fee_bps: args.market.fee_bps,
        slippage_bps: args.market.slippage_bps,
        max_allocation_pct: args.max_allocation,
    };

    let mut mind = match ModelSource::from_args(&args.model)? {
        Some(source) => {
            spec.settings.personality = source.personality().to_owned();
            spec.settings.model_id = source.model_id().to_owned();
            let builtin = builtin_component(&args.strategy).is_some();
            Some(source.mind(
                builtin,
                &class,
                &pair,
                interval.as_str(),
                args.max_allocation,
            )?)
        }
        None => None,
    };
    let port = mind.as_ref().map(|mind| mind.port());
    // A model that answers in seconds makes even a short run long: show progress then too.
    let slow = wanted >= 500 || mind.is_some();
    let mut bar = Progress::new(slow && std::io::stderr().is_terminal());
    let report = run_backtest_reviewed(
        &sandbox,
        &strategy,
        feed.as_ref(),
        &spec,
        &mut |done, total| bar.update(done, total),
        &mut |proposal| match &mut mind {
            Some(mind) => mind.review(proposal),
            None => proposal.orders,
        },
        port,
    )?;
    bar.finish();
    let tally = mind.map_or_else(crate::strategy_model::rule_only, |mind| mind.into_tally());
    let summary = report.summary(args.breakdown.map(Breakdown::from));
    if args.json {
        let mut json = json_report(&args, &spec, &source, &report, &summary);
        json["decisions"] = serde_json::to_value(&tally)?;
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print_report(&args, &pair, interval, &source, &report);
        print_decisions(&tally);
        print_summary(&args, &spec, &summary);
        print_trades(&args, &pair, &report);
    }
    Ok(())
}

/// Who decided the ticks: the class rule alone, or the model (and why the rule did when it did).
pub(crate) fn print_decisions(tally: &crate::strategy_model::DecisionTally) {
    let Some(model) = &tally.model else {
        println!("Decided by:     the class rule (no model asked; --model VENDOR/MODEL asks one)");
        return;
    };
    let why: Vec<String> = tally
        .rule_why
        .iter()
        .map(|(why, n)| format!("{why} {n}"))
        .collect();
    println!(
        "Decided by:     {model} ({}): {} ticks by the model, {} by the rule{}",
        tally.source,
        tally.by_model,
        tally.by_rule,
        if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join(", "))
        }
    );
    if tally.component_calls > 0 {
        println!(
            "Component:      {} calls of its own to the model",
            tally.component_calls
        );
    }
    println!(
        "Model tokens:   {} prompt, {} completion",
        tally.prompt_tokens, tally.completion_tokens
    );
}

/// What the report says about how it was produced: the server's sandbox limits and fill model.
fn engine_json(spec: &BacktestSpec, report: &BacktestReport) -> serde_json::Value {
    let limits = SandboxConfig::default();
    serde_json::json!({
        "sandbox": "the server's strategy sandbox: same engine, limits and deterministic WASI",
        "fillModel": "the server's paper ledger (crucible::paper): market orders at the close with fee and slippage, maxAllocation enforced",
        "fuelPerTick": report.fuel_limit,
        "maxMemoryBytes": limits.max_memory_bytes,
        "maxOrdersPerTick": limits.max_orders,
        "feeBps": spec.paper.fee_bps,
        "slippageBps": spec.paper.slippage_bps,
        "maxAllocationPercent": spec.paper.max_allocation_pct,
    })
}

fn json_report(
    args: &BacktestArgs,
    spec: &BacktestSpec,
    source: &str,
    report: &BacktestReport,
    summary: &Summary,
) -> serde_json::Value {
    let trades: Vec<serde_json::Value> = report
        .trades
        .iter()
        .map(|t| {
            serde_json::json!({
                "ts": t.ts,
                "side": if t.fill.side == Side::Buy { "buy" } else { "sell" },
                "base": t.fill.base as f64 / UNIT,
                "price": t.fill.price,
                "notional": t.fill.notional as f64 / UNIT,
                "fee": t.fill.fee as f64 / UNIT,
                "realizedPnl": t.fill.realized_pnl.map(|p| p as f64 / UNIT),
                "reason": t.fill.reason,
            })
        })
        .collect();
    let faults: Vec<serde_json::Value> = report
        .faults
        .iter()
        .map(|f| serde_json::json!({ "ts": f.ts, "kind": f.kind, "message": f.message }))
        .collect();
    serde_json::json!({
        "strategy": args.strategy,
        "pair": spec.pair.to_string(),
        "interval": spec.interval.as_str(),
        "source": source,
        "firstTs": report.first_ts,
        "lastTs": report.last_ts,
        "engine": engine_json(spec, report),
        "summary": summary,
        "trades": trades,
        "faults": faults,
    })
}

fn print_report(
    args: &BacktestArgs,
    pair: &Pair,
    interval: Interval,
    source: &str,
    r: &BacktestReport,
) {
    println!("backtest  {} on {pair} {interval}, {source}", args.strategy);
    println!(
        "period    {} → {} UTC ({} ticks)",
        when(r.first_ts),
        when(r.last_ts),
        r.ticks
    );
}

fn when(ts: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ts)
        .map_or(ts.to_string(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

/// A statistic that may be undefined (see `sandbox::report`): `n/a` then.
fn opt(value: Option<f64>, suffix: &str) -> String {
    value.map_or("n/a".to_string(), |v| format!("{v:.2}{suffix}"))
}

fn drawdown_span(d: &Drawdown) -> String {
    match (d.start, d.end) {
        (Some(start), Some(end)) => format!("{} → {}", when(start), when(end)),
        _ => "none".to_string(),
    }
}

fn print_summary(args: &BacktestArgs, spec: &BacktestSpec, s: &Summary) {
    let limits = SandboxConfig::default();
    println!(
        "engine    the server's sandbox (fuel {}/tick, {} MiB memory, deterministic WASI) and \
         paper fill model (fee {} bps, slippage {} bps, maxAllocation {}%)",
        s.ticks.fuel_limit,
        limits.max_memory_bytes >> 20,
        spec.paper.fee_bps,
        spec.paper.slippage_bps,
        spec.paper.max_allocation_pct
    );
    let b = &s.benchmark;
    println!();
    println!("  {:<22} {:>14} {:>14}", "", "strategy", "buy & hold");
    println!(
        "  {:<22} {:>14.2} {:>14}",
        "final equity", s.final_equity, ""
    );
    println!(
        "  {:<22} {:>13.2}% {:>13.2}%",
        "total return", s.total_return_percent, b.total_return_percent
    );
    println!(
        "  {:<22} {:>14} {:>14}",
        "CAGR",
        opt(s.cagr_percent, "%"),
        opt(b.cagr_percent, "%")
    );
    println!(
        "  {:<22} {:>14} {:>14}",
        "Sharpe",
        opt(s.sharpe, ""),
        opt(b.sharpe, "")
    );
    println!("  {:<22} {:>14}", "Sortino", opt(s.sortino, ""));
    println!("  {:<22} {:>14}", "Calmar", opt(s.calmar, ""));
    println!(
        "  {:<22} {:>13.2}% {:>13.2}%",
        "max drawdown",
        s.max_drawdown.fraction * 100.0,
        b.max_drawdown.fraction * 100.0
    );
    println!(
        "  {:<22} {}",
        "drawdown peak → trough",
        drawdown_span(&s.max_drawdown)
    );
    let t = &s.trades;
    println!();
    println!(
        "  {:<22} {:>14}",
        "fills (buy/sell)",
        format!("{} ({}/{})", t.fills, t.buys, t.sells)
    );
    println!(
        "  {:<22} {:>14}",
        "win rate",
        opt(t.win_rate.map(|w| w * 100.0), "%")
    );
    println!("  {:<22} {:>14}", "profit factor", opt(t.profit_factor, ""));
    println!(
        "  {:<22} {:>14}",
        "expectancy / sell",
        opt(t.expectancy, "")
    );
    println!(
        "  {:<22} {:>14}",
        "longest losing streak", t.longest_losing_streak
    );
    let day = |d: &Option<crate::sandbox::report::DayReturn>| {
        d.as_ref().map_or("n/a".to_string(), |d| {
            format!("{} {:+.2}%", d.day, d.return_percent)
        })
    };
    println!("  {:<22} {:>14}", "best day", day(&s.best_day));
    println!("  {:<22} {:>14}", "worst day", day(&s.worst_day));
    println!("  {:<22} {:>14.2}", "fees paid", t.fees_paid);
    println!("  {:<22} {:>14}", "refused orders", s.refused_orders);
    println!();
    let failed = if s.ticks.failed_by_kind.is_empty() {
        String::new()
    } else {
        let kinds: Vec<String> = s
            .ticks
            .failed_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        format!(" ({})", kinds.join(", "))
    };
    println!("  {:<22} {:>14}{failed}", "failed ticks", s.ticks.failed);
    println!("  {:<22} {:>14}", "fuel / tick", s.ticks.fuel_per_tick);
    println!("  {:<22} {:>14}", "most fuel in a tick", s.ticks.fuel_max);

    if !s.by_reason.is_empty() {
        println!();
        println!("trades by reason:");
        println!(
            "  {:<40} {:>6} {:>6} {:>14}",
            "reason", "buys", "sells", "realised"
        );
        for r in &s.by_reason {
            println!(
                "  {:<40} {:>6} {:>6} {:>14.2}",
                r.reason, r.buys, r.sells, r.realized_pnl
            );
        }
    }
    if let (Some(rows), Some(by)) = (&s.breakdown, args.breakdown) {
        println!();
        println!("by {}:", format!("{by:?}").to_lowercase());
        println!(
            "  {:<12} {:>14} {:>10} {:>6} {:>6} {:>6} {:>14}",
            "period", "end equity", "return", "fills", "sells", "wins", "realised"
        );
        for row in rows {
            println!(
                "  {:<12} {:>14.2} {:>9.2}% {:>6} {:>6} {:>6} {:>14.2}",
                row.period,
                row.end_equity,
                row.return_percent,
                row.fills,
                row.sells,
                row.wins,
                row.realized_pnl
            );
        }
    }
}

fn print_trades(args: &BacktestArgs, pair: &Pair, r: &BacktestReport) {
    if !r.trades.is_empty() && args.show_trades > 0 {
        println!();
        let shown = r.trades.len().min(args.show_trades);
        println!("last {shown} of {} trades:", r.trades.len());
        for t in &r.trades[r.trades.len() - shown..] {
            let f = &t.fill;
            let side = if f.side == Side::Buy { "BUY " } else { "SELL" };
            let pnl = f
                .realized_pnl
                .map_or(String::new(), |p| format!("  pnl {:+.2}", p as f64 / UNIT));
            let reason = f.reason.as_deref().unwrap_or("");
            println!(
                "  {}  {side} {:>14.6} {} @ {:<12.6} {:>10.2} {}{pnl}  {reason}",
                when(t.ts),
                f.base as f64 / UNIT,
                pair.base,
                f.price,
                f.notional as f64 / UNIT,
                pair.quote
            );
        }
    }
    if let Some(first) = r.faults.first() {
        println!();
        println!(
            "{} failed ticks; first at {}: [{}] {}",
            r.faults.len(),
            when(first.ts),
            first.kind,
            first.message
        );
    }
}

/// A one-line progress bar on stderr, drawn only for long runs on a terminal-ish stderr.
struct Progress {
    enabled: bool,
    last: usize,
}

impl Progress {
    fn new(enabled: bool) -> Self {
        Progress {
            enabled,
            last: usize::MAX,
        }
    }

    fn update(&mut self, done: usize, total: usize) {
        if !self.enabled || total == 0 {
            return;
        }
        let pct = done * 100 / total;
        if pct == self.last {
            return;
        }
        self.last = pct;
        let filled = pct * 30 / 100;
        let mut err = std::io::stderr().lock();
        // Best effort: a closed stderr must not stop the backtest.
        let _ = write!(
            err,
            "\r[{}{}] {pct:>3}% {done}/{total} ticks",
            "#".repeat(filled),
            ".".repeat(30 - filled)
        );
        let _ = err.flush();
    }

    fn finish(&mut self) {
        if self.enabled && self.last != usize::MAX {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// The sandbox of a CLI tool: the server's limits, and the server's compiled-component cache
/// when the data dir holds the master key file that authenticates it (without one, compile in
/// memory: a CLI tool never creates a master key as a side effect).
fn cli_sandbox_config(data_dir: &std::path::Path) -> anyhow::Result<SandboxConfig> {
    if !data_dir.join(crate::crypto::MASTER_KEY_FILE).exists() {
        return Ok(SandboxConfig::default());
    }
    let sealer = crate::crypto::Sealer::load(None, data_dir)?;
    Ok(SandboxConfig::with_data_dir(
        data_dir,
        sealer.derived_key("component-cache"),
    ))
}
