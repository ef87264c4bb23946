//! `crucible market stats`: the stylized facts of the real candles against the simulated
//! market's over several seeds, and the information coefficient of each simulated signal
//! (the tables of `docs/markets.md`).

use std::fmt::Write as _;

use anyhow::bail;
use clap::{Args, Subcommand};

use crate::market::stats::{StylizedFacts, aggregate, information_coefficient};
use crate::market::{
    BTC_USDT_1H, BTC_USDT_5M, Candle, CsvFeed, Interval, MarketFeed, SIGNAL_HORIZONS, STEP_MS,
    Signals, SimulatedMarket, real_pair,
};

#[derive(Debug, Args)]
pub(crate) struct MarketArgs {
    #[command(subcommand)]
    pub command: MarketCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum MarketCommand {
    /// Stylized facts of real BTC/USDT candles against the simulated market, and signal ICs.
    Stats(StatsArgs),
}

#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// Simulated seeds to measure (1, 2, ...).
    #[arg(long, default_value_t = 10)]
    pub seeds: u64,
    /// Days of simulated market per seed.
    #[arg(long, default_value_t = 90)]
    pub days: u32,
    /// Simulated base token (the real candles are BTC).
    #[arg(long, default_value = "BTC")]
    pub base: String,
}

/// Run a `crucible market` command.
pub(crate) fn run(args: MarketArgs) -> anyhow::Result<()> {
    match args.command {
        MarketCommand::Stats(a) => {
            print!("{}", stats_report(&a)?);
            Ok(())
        }
    }
}

/// The whole report as Markdown.
pub(crate) fn stats_report(args: &StatsArgs) -> anyhow::Result<String> {
    if args.seeds == 0 || args.seeds > 200 {
        bail!("--seeds must be between 1 and 200");
    }
    if !(2..=1000).contains(&args.days) {
        bail!("--days must be between 2 and 1000");
    }
    let steps = args.days as usize * 288;
    let histories = (1..=args.seeds)
        .map(|seed| SimulatedMarket::new(seed).history(&args.base, steps))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = String::new();
    let real = [
        (Interval::M5, real_candles(BTC_USDT_5M, Interval::M5)?),
        (Interval::H1, real_candles(BTC_USDT_1H, Interval::H1)?),
    ];
    writeln!(
        out,
        "Real: BTC/USDT (crates/market/data/real). Simulated: {}/USDC, seeds 1–{}, {} days each; \
         median [min, max] over seeds.\n",
        args.base.to_ascii_uppercase(),
        args.seeds,
        args.days
    )?;
    writeln!(
        out,
        "| interval | series | returns | volatility | excess kurtosis | acf r(1) | acf abs(1) | acf abs(5) | acf abs(20) | volume~abs |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|---|---|---|")?;
    for (interval, candles) in &real {
        let Some(r) = StylizedFacts::of(candles) else {
            bail!("too few real {interval} candles");
        };
        writeln!(
            out,
            "| {interval} | real | {} | {:.5} | {:.1} | {:+.3} | {:.3} | {:.3} | {:.3} | {:.2} |",
            r.returns,
            r.volatility,
            r.excess_kurtosis,
            r.acf_return_1,
            r.acf_abs_1,
            r.acf_abs_5,
            r.acf_abs_20,
            r.volume_abs_return
        )?;
        let per = (interval.millis() / STEP_MS) as usize;
        let facts: Vec<StylizedFacts> = histories
            .iter()
            .filter_map(|h| {
                let five: Vec<Candle> = h.iter().map(|(c, _)| *c).collect();
                StylizedFacts::of(&aggregate(&five, per))
            })
            .collect();
        let col = |f: fn(&StylizedFacts) -> f64, digits: usize| {
            let mut v: Vec<f64> = facts.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            let med = median(&v);
            let (lo, hi) = (v.first().copied(), v.last().copied());
            format!(
                "{med:.digits$} [{:.digits$}, {:.digits$}]",
                lo.unwrap_or(f64::NAN),
                hi.unwrap_or(f64::NAN)
            )
        };
        writeln!(
            out,
            "| {interval} | simulated | {} | {} | {} | {} | {} | {} | {} | {} |",
            facts.first().map_or(0, |f| f.returns),
            col(|f| f.volatility, 5),
            col(|f| f.excess_kurtosis, 1),
            col(|f| f.acf_return_1, 3),
            col(|f| f.acf_abs_1, 3),
            col(|f| f.acf_abs_5, 3),
            col(|f| f.acf_abs_20, 3),
            col(|f| f.volume_abs_return, 2),
        )?;
    }

    writeln!(
        out,
        "\nInformation coefficients (Spearman of the signal with the forward return; mention \
         volume with the forward absolute return; exchange net flow sign-flipped):\n"
    )?;
    writeln!(
        out,
        "| signal | horizon | mean IC | [min, max] over seeds | pooled IC |"
    )?;
    writeln!(out, "|---|---|---|---|---|")?;
    for (name, horizon) in SIGNAL_HORIZONS {
        let ics: Vec<f64> = histories
            .iter()
            .filter_map(|h| information_coefficient(&[h.as_slice()], name, horizon))
            .collect();
        let all: Vec<&[(Candle, Signals)]> = histories.iter().map(Vec::as_slice).collect();
        let pooled = information_coefficient(&all, name, horizon);
        let mean = ics.iter().sum::<f64>() / ics.len().max(1) as f64;
        let lo = ics.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ics.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        writeln!(
            out,
            "| {name} | {} | {mean:+.3} | [{lo:+.3}, {hi:+.3}] | {} |",
            horizon_label(horizon),
            pooled.map_or("n/a".to_string(), |p| format!("{p:+.3}"))
        )?;
    }
    Ok(out)
}

fn horizon_label(steps: usize) -> String {
    let minutes = steps * 5;
    if minutes.is_multiple_of(60) {
        format!("{} h", minutes / 60)
    } else {
        format!("{minutes} min")
    }
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if !n.is_multiple_of(2) => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn real_candles(text: &str, interval: Interval) -> anyhow::Result<Vec<Candle>> {
    let feed = CsvFeed::parse(real_pair(), text)?;
    let (_, end) = feed.span();
    Ok(feed.candles(&real_pair(), interval, end, usize::MAX)?)
}
