//! The six class strategies trade on the simulated market and behave per their class.

use crucible::market::{
    CsvFeed, Interval, MarketFeed, Pair, SimulatedMarket, real_feed, real_pair,
};
use crucible::paper::Side;
use crucible::sandbox::{
    BacktestReport, BacktestSpec, Sandbox, SandboxConfig, builtin_component, run_backtest,
};

const DAYS: usize = 30;

fn spec(class: &str, max_allocation: f64) -> BacktestSpec {
    let interval = Interval::H1;
    let ticks = DAYS * 24;
    let end = SimulatedMarket::origin() + (200 + ticks as i64) * interval.millis();
    let mut spec = BacktestSpec::new(class, Pair::new("SOL", "USDC"), interval, end, ticks);
    spec.settings.max_allocation = max_allocation;
    spec.paper.max_allocation_pct = max_allocation;
    spec
}

fn backtest_on(
    sandbox: &Sandbox,
    class: &str,
    feed: &dyn MarketFeed,
    spec: &BacktestSpec,
) -> BacktestReport {
    let strategy = sandbox
        .load(builtin_component(class).expect("builtin"))
        .expect("load");
    run_backtest(sandbox, &strategy, feed, spec, &mut |_, _| {}).expect("backtest")
}

fn backtest(sandbox: &Sandbox, class: &str, seed: u64, max_allocation: f64) -> BacktestReport {
    backtest_on(
        sandbox,
        class,
        &SimulatedMarket::new(seed),
        &spec(class, max_allocation),
    )
}

fn buys(r: &BacktestReport) -> impl Iterator<Item = &crucible::paper::Fill> {
    r.trades
        .iter()
        .map(|t| &t.fill)
        .filter(|f| f.side == Side::Buy)
}

#[test]
fn every_class_trades_without_faults() {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    for class in crucible::sandbox::BUILTIN_CLASSES {
        for seed in 1..=3 {
            let r = backtest(&sandbox, class, seed, 100.0);
            assert!(
                r.faults.is_empty(),
                "{class} seed {seed}: {:?}",
                r.faults.first()
            );
            assert!(
                r.metrics.total_trades >= 4,
                "{class} seed {seed} traded {} times",
                r.metrics.total_trades
            );
            assert!(r.metrics.round_trips >= 2, "{class} seed {seed}");
            assert_eq!(r.ticks, DAYS * 24);
            assert!(r.ledger.quote >= 0 && r.ledger.base >= 0);
            assert!(
                r.trades.iter().all(|t| t.fill.reason.is_some()),
                "{class} explains its trades"
            );
        }
    }
}

#[test]
fn defender_risks_less_than_gambler() {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    for seed in 1..=3 {
        let defender = backtest(&sandbox, "defender", seed, 100.0);
        let gambler = backtest(&sandbox, "gambler", seed, 100.0);
        assert!(
            defender.metrics.max_drawdown < gambler.metrics.max_drawdown,
            "seed {seed}: defender drawdown {} vs gambler {}",
            defender.metrics.max_drawdown,
            gambler.metrics.max_drawdown
        );
        assert!(
            defender.metrics.max_drawdown < 0.05,
            "seed {seed}: {}",
            defender.metrics.max_drawdown
        );
        // Defender sizes at 15 % of equity, gambler goes all in.
        assert!(defender.metrics.avg_trade_size < 0.2 * 10_000.0 * 1.1);
        assert!(gambler.metrics.avg_trade_size > 0.8 * 10_000.0 * 0.9);
        // Defender's stop (half a day's volatility, at most 4 %) is checked at each close: a
        // trip loses at most the stop plus the hour it was crossed in (a crash hour moves SOL
        // several percent), never a large part of its (15 %) position.
        for t in defender.trades.iter().filter(|t| t.fill.side == Side::Sell) {
            let loss = -(t.fill.realized_pnl.unwrap_or(0) as f64) / 1e6;
            assert!(
                loss < 0.1 * t.fill.notional as f64 / 1e6,
                "seed {seed}: loss {loss}"
            );
        }
    }
}

#[test]
fn technical_and_contrarian_classes_trade_on_their_indicators() {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    let fighter = backtest(&sandbox, "fighter", 1, 100.0);
    assert!(buys(&fighter).all(|f| {
        f.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("EMA 9/21 crossed up"))
    }));
    let rogue = backtest(&sandbox, "rogue", 1, 100.0);
    assert!(buys(&rogue).all(|f| {
        f.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("stretched (z -"))
    }));
    let gambler = backtest(&sandbox, "gambler", 1, 100.0);
    assert!(buys(&gambler).all(|f| f.reason.as_deref() == Some("20-candle breakout")));
}

#[test]
fn signal_classes_follow_the_signals() {
    // On the simulated market (informative signals) ranger and mage trade; on a replay of the
    // very same candles without signals (CSV reads as neutral) they stay out.
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    let pair = Pair::new("SOL", "USDC");
    let s = spec("ranger", 100.0);
    let market = SimulatedMarket::new(1);
    let candles = market
        .candles(&pair, s.interval, s.end, s.ticks + s.window)
        .expect("candles");
    let csv: String = candles
        .iter()
        .map(|c| {
            format!(
                "{},{},{},{},{},{}\n",
                c.ts, c.open, c.high, c.low, c.close, c.volume
            )
        })
        .collect();
    let replay = CsvFeed::parse(pair, &csv).expect("csv");
    for class in ["ranger", "mage"] {
        let s = spec(class, 100.0);
        let live = backtest_on(&sandbox, class, &market, &s);
        let blind = backtest_on(&sandbox, class, &replay, &s);
        assert!(live.metrics.total_trades > 4, "{class}");
        assert_eq!(
            blind.metrics.total_trades, 0,
            "{class} must not trade without signals"
        );
    }
}

#[test]
fn max_allocation_is_enforced_and_backtests_are_deterministic() {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    let capped = backtest(&sandbox, "gambler", 2, 30.0);
    assert!(capped.metrics.total_trades > 0);
    // Equity stays near 10,000 here; every buy is at most 30 % of it (+ a little for drift).
    for f in buys(&capped) {
        assert!(
            f.notional as f64 / 1e6 <= 0.3 * capped.metrics.equity.max(10_000.0) * 1.2,
            "{f:?}"
        );
    }
    let again = backtest(&sandbox, "gambler", 2, 30.0);
    assert_eq!(capped.ledger, again.ledger);
    assert_eq!(capped.trades.len(), again.trades.len());
}

#[test]
fn every_class_replays_the_real_candles_without_a_failed_tick() {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    for interval in [Interval::M5, Interval::H1] {
        let feed = real_feed(interval).expect("real candles");
        let (_, end) = feed.span();
        let candles = feed
            .candles(&real_pair(), interval, end, usize::MAX)
            .expect("candles");
        let ticks = candles.len() - 200;
        for class in crucible::sandbox::BUILTIN_CLASSES {
            let spec = BacktestSpec::new(class, real_pair(), interval, end, ticks);
            let r = backtest_on(&sandbox, class, &feed, &spec);
            assert_eq!(r.ticks, ticks, "{class} at {interval}");
            assert!(
                r.faults.is_empty(),
                "{class} at {interval}: {:?}",
                r.faults.first()
            );
            assert!(r.ledger.quote >= 0 && r.ledger.base >= 0);
        }
    }
}

/// The small version of `crucible strategy evaluate` CI runs: every class, two intervals, a few
/// seeds and the real replay; no failed tick, and the capital-preserving class draws down least.
#[test]
fn a_small_evaluation_runs_every_class_and_the_real_replay() {
    use crucible::strategy_eval::{Plan, evaluate, missed_targets, rows};
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    let plan = Plan {
        seeds: 3,
        days: 20,
        pair: Pair::new("SOL", "USDC"),
        paper: crucible::paper::PaperConfig::default(),
        intervals: vec![Interval::H1, Interval::H4],
        jobs: 2,
        classes: crucible::sandbox::BUILTIN_CLASSES.to_vec(),
        components: Vec::new(),
    };
    let runs = evaluate(&sandbox, &plan).expect("evaluate");
    // 6 classes × 2 intervals × 3 seeds, and the real replay at 1h.
    assert_eq!(runs.len(), 6 * 2 * 3 + 6);
    assert!(runs.iter().all(|r| r.failed_ticks == 0));
    let rows = rows(&runs);
    assert_eq!(rows.len(), 6 * 2 + 6);
    let missed = missed_targets(&rows);
    assert!(
        !missed.iter().any(|m| m.contains("failed ticks")),
        "{missed:?}"
    );
    // At 1h (480 ticks a run); 120 ticks at 4h are too few for three seeds to order the classes.
    let hourly: Vec<_> = rows
        .iter()
        .filter(|r| !r.real && r.interval == Interval::H1)
        .collect();
    let defender = hourly
        .iter()
        .find(|r| r.class == "defender")
        .expect("defender");
    // A class that sat out these few short runs has no drawdown to compare.
    for r in hourly.iter().filter(|r| r.trades_median > 0.0) {
        assert!(
            defender.drawdown_median <= r.drawdown_median,
            "at 1h: defender {} vs {} {}",
            defender.drawdown_median,
            r.class,
            r.drawdown_median
        );
    }
}
