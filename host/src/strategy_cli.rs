//! `crucible strategy backtest|check`: try a strategy component on the simulated or a replayed
//! market, or validate one, without a server or database.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use crate::market::{CsvFeed, Interval, MarketFeed, Pair, SimulatedMarket};
use crate::paper::{PaperConfig, Side, UNIT};
use crate::sandbox::{
    BUILTIN_CLASSES, BacktestReport, BacktestSpec, Sandbox, SandboxConfig, builtin_component,
    run_backtest,
};

#[derive(Debug, Args)]
pub struct StrategyArgs {
    #[command(subcommand)]
    pub command: StrategyCommand,
}

#[derive(Debug, Subcommand)]
pub enum StrategyCommand {
    /// Backtest a class strategy or a component file on the simulated market or a CSV replay.
    Backtest(BacktestArgs),
    /// Validate a component: size, format, world; prints its hash and compile time.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct BacktestArgs {
    /// A class (fighter, ranger, mage, defender, gambler, rogue) or a path to a `.wasm` component.
    pub strategy: String,
    /// Token pair.
    #[arg(long, default_value = "SOL/USDC")]
    pub pair: String,
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
    /// Fee, basis points.
    #[arg(long, default_value_t = 10)]
    pub fee_bps: u32,
    /// Slippage, basis points.
    #[arg(long, default_value_t = 5)]
    pub slippage_bps: u32,
    /// Trades to list (most recent).
    #[arg(long, default_value_t = 10)]
    pub show_trades: usize,
    /// Data directory (compiled components are cached in `<data-dir>/components`).
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Path to a `.wasm` component.
    pub file: PathBuf,
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

/// Run a `crucible strategy` command.
pub fn run(args: StrategyArgs) -> anyhow::Result<()> {
    match args.command {
        StrategyCommand::Backtest(a) => backtest(a),
        StrategyCommand::Check(a) => check(a),
    }
}

fn check(args: CheckArgs) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("read {}", args.file.display()))?;
    let sandbox = Sandbox::new(SandboxConfig::with_data_dir(&args.data_dir))?;
    let loaded = sandbox
        .load(&bytes)
        .with_context(|| format!("{} is not a usable strategy", args.file.display()))?;
    println!("ok: {}", args.file.display());
    println!(
        "  world    crucible:strategy/strategy@0.1.0 (exports on-tick, imports host.log + WASI)"
    );
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

fn backtest(args: BacktestArgs) -> anyhow::Result<()> {
    let pair: Pair = args.pair.parse()?;
    let interval: Interval = args.interval.parse()?;
    if !(1.0..=100.0).contains(&args.max_allocation) {
        bail!("--max-allocation must be between 1 and 100");
    }
    let (bytes, class) = match builtin_component(&args.strategy) {
        Some(bytes) => (bytes.to_vec(), args.strategy.clone()),
        None if args.strategy.ends_with(".wasm")
            || std::path::Path::new(&args.strategy).exists() =>
        {
            let bytes =
                std::fs::read(&args.strategy).with_context(|| format!("read {}", args.strategy))?;
            (bytes, "custom".to_string())
        }
        None => bail!(
            "`{}` is neither a class ({}) nor a .wasm file",
            args.strategy,
            BUILTIN_CLASSES.join(", ")
        ),
    };
    let sandbox = Sandbox::new(SandboxConfig::with_data_dir(&args.data_dir))?;
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
        fee_bps: args.fee_bps,
        slippage_bps: args.slippage_bps,
        max_allocation_pct: args.max_allocation,
    };

    let mut bar = Progress::new(wanted >= 500 && std::io::stderr().is_terminal());
    let report = run_backtest(
        &sandbox,
        &strategy,
        feed.as_ref(),
        &spec,
        &mut |done, total| bar.update(done, total),
    )?;
    bar.finish();
    print_report(&args, &pair, interval, &source, &report);
    Ok(())
}

fn print_report(
    args: &BacktestArgs,
    pair: &Pair,
    interval: Interval,
    source: &str,
    r: &BacktestReport,
) {
    let m = &r.metrics;
    let when = |ts: i64| {
        chrono::DateTime::from_timestamp_millis(ts)
            .map_or(ts.to_string(), |t| t.format("%Y-%m-%d %H:%M").to_string())
    };
    println!("backtest  {} on {pair} {interval}, {source}", args.strategy);
    println!(
        "period    {} → {} UTC ({} ticks)",
        when(r.first_ts),
        when(r.last_ts),
        r.ticks
    );
    println!();
    println!("  {:<18} {:>14}", "metric", "value");
    println!("  {:<18} {:>14.2}", "totalPnl", m.total_pnl);
    println!("  {:<18} {:>13.2}%", "totalPnlPercent", m.total_pnl_percent);
    println!("  {:<18} {:>13.2}%", "buy & hold", r.buy_and_hold_percent);
    println!("  {:<18} {:>14.2}", "winRate", m.win_rate);
    println!("  {:<18} {:>14}", "totalTrades", m.total_trades);
    println!("  {:<18} {:>14}", "round trips", m.round_trips);
    println!("  {:<18} {:>14.2}", "avgTradeSize", m.avg_trade_size);
    println!("  {:<18} {:>13.2}%", "max drawdown", m.max_drawdown * 100.0);
    println!("  {:<18} {:>14.2}", "Sharpe", m.sharpe);
    println!("  {:<18} {:>14.2}", "fees paid", m.fees_paid);
    println!("  {:<18} {:>14.2}", "final equity", m.equity);
    println!("  {:<18} {:>14}", "refused orders", r.rejected_orders);
    println!("  {:<18} {:>14}", "failed ticks", r.faults.len());
    println!(
        "  {:<18} {:>14}",
        "fuel / tick",
        r.fuel_used / r.ticks.max(1) as u64
    );
    if !r.trades.is_empty() {
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
