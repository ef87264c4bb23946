//! Backtests: tick a strategy over a feed's history with a paper ledger, as the scheduler would
//! tick a live paper agent (the same sandbox, limits and fill model), and record metrics, the
//! equity curve, trades and faults; `report` turns those into the summary.

use std::sync::Arc;

use crucible_market::{Candle, Interval, MarketError, MarketFeed, Pair};
use crucible_optimize::params::{Param, ParamSpec};
use crucible_paper::{Fill, Ledger, Metrics, OrderRequest, PaperConfig, PortfolioView};

use super::engine::{LoadedStrategy, Sandbox};
use super::model::ModelPort;
use super::report::{Breakdown, Summary, SummaryInput, summarize};
use super::tick::{AgentSettings, TickInput};

/// What to backtest.
#[derive(Debug, Clone)]
pub struct BacktestSpec {
    /// The pair traded.
    pub pair: Pair,
    /// One tick per candle of this interval.
    pub interval: Interval,
    /// Close time of the last tick, Unix ms.
    pub end: i64,
    /// Number of ticks (one per candle).
    pub ticks: usize,
    /// Candles handed to the strategy on each tick.
    pub window: usize,
    /// What the strategy sees as its agent's settings.
    pub settings: AgentSettings,
    /// Fee, slippage and allocation of the paper account.
    pub paper: PaperConfig,
    /// Starting capital, whole quote.
    pub initial_quote: f64,
    /// The agent id a WASI guest's random numbers are seeded with (with each tick's time).
    pub agent_id: String,
}

impl BacktestSpec {
    /// A spec with the platform defaults (200-candle window, 10,000 quote, 10 bps fee, 5 bps
    /// slippage, maxAllocation 100 %) for `class` on `pair`.
    pub fn new(class: &str, pair: Pair, interval: Interval, end: i64, ticks: usize) -> Self {
        let settings = AgentSettings {
            class: class.to_string(),
            base: pair.base.clone(),
            quote: pair.quote.clone(),
            interval: interval.as_str().to_string(),
            max_allocation: 100.0,
            personality: String::new(),
            model_id: "crucible/backtest".to_string(),
            params: Vec::new(),
        };
        BacktestSpec {
            pair,
            interval,
            end,
            ticks,
            window: 200,
            settings,
            paper: PaperConfig::default(),
            initial_quote: 10_000.0,
            agent_id: "backtest".to_string(),
        }
    }
}

/// A fill and when it happened.
#[derive(Debug, Clone)]
pub struct TradeRecord {
    /// The tick's time, Unix ms.
    pub ts: i64,
    /// The fill.
    pub fill: Fill,
}

/// A failed tick.
#[derive(Debug, Clone)]
pub struct FaultRecord {
    /// The tick's time, Unix ms.
    pub ts: i64,
    /// [`TickFault::kind`](crate::TickFault::kind).
    pub kind: &'static str,
    /// The fault, in words.
    pub message: String,
}

/// The outcome of a backtest.
#[derive(Debug, Clone)]
pub struct BacktestReport {
    /// The paper account's metrics at the last close.
    pub metrics: Metrics,
    /// Every fill, in order.
    pub trades: Vec<TradeRecord>,
    /// Every failed tick, in order.
    pub faults: Vec<FaultRecord>,
    /// Orders the ledger refused (allocation reached, nothing to sell, ...).
    pub rejected_orders: usize,
    /// Ticks run.
    pub ticks: usize,
    /// The paper account at the end.
    pub ledger: Ledger,
    /// Return of simply holding the base over the same ticks, percent.
    pub buy_and_hold_percent: f64,
    /// Fuel used by every tick together.
    pub fuel_used: u64,
    /// The most fuel one tick used.
    pub fuel_max: u64,
    /// The fuel budget per tick.
    pub fuel_limit: u64,
    /// The first tick's time, Unix ms.
    pub first_ts: i64,
    /// The last tick's time, Unix ms.
    pub last_ts: i64,
    /// Equity (whole quote) after each tick, preceded by the starting capital at the time of
    /// the close before the first tick.
    pub equity: Vec<(i64, f64)>,
    /// The close at the same times (the buy-and-hold benchmark).
    pub prices: Vec<(i64, f64)>,
    /// Ticks per year at this interval (annualises Sharpe and Sortino).
    pub periods_per_year: f64,
}

impl BacktestReport {
    /// The statistics of this run (see [`report`](crate::report) for every formula).
    pub fn summary(&self, breakdown: Option<Breakdown>) -> Summary {
        summarize(
            &SummaryInput {
                equity: &self.equity,
                prices: &self.prices,
                trades: &self.trades,
                faults: &self.faults,
                refused_orders: self.rejected_orders,
                ticks: self.ticks,
                fuel_used: self.fuel_used,
                fuel_max: self.fuel_max,
                fuel_limit: self.fuel_limit,
                periods_per_year: self.periods_per_year,
            },
            breakdown,
        )
    }
}

/// A tick's proposal, for a reviewer that may replace its orders (an agent's model, in a
/// backtest run with one).
#[derive(Debug)]
pub struct Proposal<'a> {
    /// The tick's time, Unix ms.
    pub now: i64,
    /// The last close.
    pub price: f64,
    /// The candles the strategy saw, oldest first.
    pub candles: &'a [Candle],
    /// The portfolio before the orders.
    pub portfolio: PortfolioView,
    /// The strategy's orders.
    pub orders: Vec<OrderRequest>,
}

/// Every parameter `declared`, in its order: the value `given` names, or the default.
fn whole_params(declared: &[ParamSpec], given: &[Param]) -> Vec<Param> {
    declared
        .iter()
        .map(|spec| Param {
            name: spec.name.clone(),
            value: given
                .iter()
                .find(|p| p.name == spec.name)
                .map_or_else(|| spec.default.clone(), |p| p.value.clone()),
        })
        .collect()
}

/// Run `strategy` over `spec`; `progress(done, total)` is called as ticks complete.
pub fn run_backtest(
    sandbox: &Sandbox,
    strategy: &LoadedStrategy,
    feed: &dyn MarketFeed,
    spec: &BacktestSpec,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<BacktestReport, MarketError> {
    run_backtest_reviewed(
        sandbox,
        strategy,
        feed,
        spec,
        progress,
        &mut |p| p.orders,
        None,
    )
}

/// [`run_backtest`], with each tick's orders as `review` returns them from the strategy's
/// [`Proposal`] (faulted ticks are not reviewed), and a component's own model calls answered
/// by `model` (without one, each answers `no-endpoint`).
pub fn run_backtest_reviewed(
    sandbox: &Sandbox,
    strategy: &LoadedStrategy,
    feed: &dyn MarketFeed,
    spec: &BacktestSpec,
    progress: &mut dyn FnMut(usize, usize),
    review: &mut dyn FnMut(Proposal<'_>) -> Vec<OrderRequest>,
    model: Option<Arc<dyn ModelPort>>,
) -> Result<BacktestReport, MarketError> {
    let candles = feed.candles(
        &spec.pair,
        spec.interval,
        spec.end,
        spec.ticks + spec.window,
    )?;
    if candles.len() < 2 {
        return Err(MarketError::BadInput(
            "a backtest needs at least two candles".into(),
        ));
    }
    // The strategy sees every parameter it declares: those the spec names, defaults for the rest.
    let settings = AgentSettings {
        params: whole_params(strategy.params(), &spec.settings.params),
        ..spec.settings.clone()
    };
    // Tick on each candle after the warm-up window (or on all but the first if history is short).
    let first = candles.len().saturating_sub(spec.ticks).max(1);
    let total = candles.len() - first;
    let mut ledger = Ledger::new(spec.initial_quote, spec.paper);
    let mut state: Vec<u8> = Vec::new();
    let mut report_trades = Vec::new();
    let mut faults = Vec::new();
    let mut rejected = 0;
    let mut fuel_used = 0;
    let mut fuel_max = 0;
    ledger.mark(candles[first - 1].close);
    let whole = |ledger: &Ledger, price: f64| ledger.view(price).equity;
    let start_price = candles[first - 1].close;
    let mut equity = Vec::with_capacity(total + 1);
    let mut prices = Vec::with_capacity(total + 1);
    equity.push((candles[first].ts, whole(&ledger, start_price)));
    prices.push((candles[first].ts, start_price));
    for (done, i) in (first..candles.len()).enumerate() {
        let candle = candles[i];
        let now = candle.ts + spec.interval.millis();
        let price = candle.close;
        let window = &candles[(i + 1).saturating_sub(spec.window)..=i];
        let signals = feed.signals(&spec.pair, now)?;
        let portfolio = ledger.view(price);
        let input = TickInput {
            settings: &settings,
            now,
            candles: window,
            signals,
            portfolio,
            state: &state,
        };
        let outcome = match &model {
            Some(port) if strategy.uses_model() => wasmtime_wasi::runtime::in_tokio(
                sandbox.tick_async(&spec.agent_id, strategy, &input, Some(port.clone())),
            ),
            _ => sandbox.tick_as(&spec.agent_id, strategy, &input),
        };
        fuel_used += outcome.fuel_used;
        fuel_max = fuel_max.max(outcome.fuel_used);
        match outcome.result {
            Ok((orders, new_state)) => {
                let orders = review(Proposal {
                    now,
                    price,
                    candles: window,
                    portfolio,
                    orders,
                });
                for order in &orders {
                    match ledger.execute(order, price) {
                        Ok(fill) => report_trades.push(TradeRecord { ts: now, fill }),
                        Err(_) => rejected += 1,
                    }
                }
                state = new_state;
            }
            Err(fault) => faults.push(FaultRecord {
                ts: now,
                kind: fault.kind(),
                message: fault.to_string(),
            }),
        }
        ledger.mark(price);
        equity.push((now, whole(&ledger, price)));
        prices.push((now, price));
        progress(done + 1, total);
    }
    let last = candles[candles.len() - 1];
    Ok(BacktestReport {
        metrics: ledger.metrics(last.close, spec.interval.per_year()),
        trades: report_trades,
        faults,
        rejected_orders: rejected,
        ticks: total,
        buy_and_hold_percent: (last.close / start_price - 1.0) * 100.0,
        ledger,
        fuel_used,
        fuel_max,
        fuel_limit: sandbox.fuel_limit(strategy),
        equity,
        prices,
        periods_per_year: spec.interval.per_year(),
        first_ts: candles[first].ts + spec.interval.millis(),
        last_ts: last.ts + spec.interval.millis(),
    })
}
