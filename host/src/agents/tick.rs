//! One agent's tick, without I/O: market data at the agent's market clock → sandbox `on-tick` →
//! orders checked and filled by the paper ledger → what to store. The ticker (claiming and
//! storing) lives in [`super::ticker`].

use super::thinking::{AgentPort, DecisionRecord, ModelUse};
use crate::market::{Candle, Interval, MarketFeed, Pair};
use crate::paper::{Fill, Ledger, OrderRequest, PortfolioView};
use crate::sandbox::{AgentSettings, LoadedStrategy, Sandbox, TickInput};

/// Candles a strategy sees per tick.
pub(crate) const CANDLES_PER_TICK: usize = 200;

/// A claimed agent, as the tick needs it.
#[derive(Debug, Clone)]
pub(crate) struct DueAgent {
    pub id: String,
    pub account_id: String,
    pub settings: AgentSettings,
    /// The parameter values its operator chose (`strategy.params`), as stored.
    pub chosen_params: serde_json::Map<String, serde_json::Value>,
    pub strategy_component: Option<String>,
    pub ledger: String,
    pub state: Vec<u8>,
    pub consecutive_faults: i64,
    /// The hour its last tick marked the agent's equity for, when it surely did
    /// (`history::surely_marked_hour`): a tick in the same hour writes no mark.
    pub marked_hour: Option<i64>,
    pub clock_origin_wall: i64,
    pub clock_origin_market: i64,
    pub next_tick_at: i64,
    /// The custodial wallet (a live agent trades from it).
    pub wallet_address: String,
    /// The agent's own time scale, when it has one (the demo agents, so a fresh demo trades
    /// within a minute); otherwise the node's.
    pub time_scale: Option<u32>,
    /// The agent's own daily token budget, if it set one.
    pub model_tokens_per_day: Option<i64>,
    /// The UTC day `model_tokens_used` counts, and the count.
    pub model_tokens_day: Option<String>,
    pub model_tokens_used: i64,
}

impl DueAgent {
    /// Whether a tick stored at `now_ms` marks the agent's equity: one mark an hour, the first
    /// tick's, so not when its last tick surely marked this hour already (eleven ticks of
    /// twelve on 5m).
    pub(crate) fn marks_equity_at(&self, now_ms: i64) -> bool {
        self.marked_hour != Some(super::history::hour_of(now_ms))
    }

    /// Its token budget as claimed.
    pub(crate) fn token_budget(&self) -> super::thinking::TokenBudget<'_> {
        super::thinking::TokenBudget {
            per_day: self.model_tokens_per_day,
            day: self.model_tokens_day.as_deref(),
            used: self.model_tokens_used,
        }
    }

    /// The time scale this agent runs at on a node whose own is `node`.
    pub(crate) fn time_scale(&self, node: u32) -> u32 {
        self.time_scale.unwrap_or(node).max(1)
    }
}

/// A fill and whether it closed a round trip (and in profit).
#[derive(Debug, Clone)]
pub(crate) struct TradeFill {
    pub fill: Fill,
    pub closed_trip: bool,
    pub won_trip: bool,
}

/// What one tick produced.
#[derive(Debug, Clone)]
pub(crate) struct TickResult {
    pub market_ts: i64,
    /// The ledger after the tick (unchanged by a faulted tick, but marked at the new price).
    pub ledger: Ledger,
    pub state: Vec<u8>,
    pub price: Option<f64>,
    pub equity: Option<f64>,
    pub fills: Vec<TradeFill>,
    /// Why the ledger refused each order it did not fill, in order (not a fault: the tick goes on).
    pub refusals: Vec<String>,
    /// `kind: message` of the fault that stopped the tick, if any.
    pub fault: Option<String>,
    /// Who decided the orders and why (none for a faulted tick).
    pub decision: Option<DecisionRecord>,
}

/// The agent's market clock: wall time since start, sped up by its time scale (the node's
/// `time_scale` unless the agent has its own).
pub(crate) fn market_now(agent: &DueAgent, wall_now: i64, time_scale: u32) -> i64 {
    agent.clock_origin_market
        + (wall_now - agent.clock_origin_wall) * i64::from(agent.time_scale(time_scale))
}

/// What a tick does to its agent's row: the faults in a row now, and either the next due time
/// (still `active`) or the circuit breaker's reason (`error`, no next tick).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AfterTick {
    pub consecutive_faults: i64,
    pub status: &'static str,
    pub reason: Option<String>,
    pub next_tick_at: Option<i64>,
}

/// The circuit breaker and the schedule, for paper and live ticks alike: a tick that faulted
/// [`super::ticker::FAULT_LIMIT`] times in a row stops its agent; otherwise the next tick is due
/// one interval on.
pub(crate) fn after_tick(
    agent: &DueAgent,
    fault: Option<&str>,
    now: i64,
    time_scale: u32,
) -> AfterTick {
    let limit = super::ticker::FAULT_LIMIT;
    let consecutive_faults = if fault.is_some() {
        agent.consecutive_faults + 1
    } else {
        0
    };
    if consecutive_faults >= limit {
        return AfterTick {
            consecutive_faults,
            status: "error",
            reason: Some(format!(
                "stopped after {limit} faulted ticks in a row; last: {}",
                fault.unwrap_or_default()
            )),
            next_tick_at: None,
        };
    }
    let interval: Interval = agent.settings.interval.parse().unwrap_or(Interval::H1);
    AfterTick {
        consecutive_faults,
        status: "active",
        reason: None,
        next_tick_at: Some(next_due(
            agent.next_tick_at,
            now,
            interval,
            agent.time_scale(time_scale),
        )),
    }
}

/// When the tick after one due at `due` (run at `now`) is due: one interval (shortened by the
/// time scale) later; after downtime, one interval from now — missed ticks run once, not N times.
pub(crate) fn next_due(due: i64, now: i64, interval: Interval, time_scale: u32) -> i64 {
    let period = (interval.millis() / i64::from(time_scale)).max(1);
    let next = due + period;
    if next <= now { now + period } else { next }
}

/// A paper tick up to the strategy's decision: the agent's ledger and what the strategy
/// decided (or why the tick stopped). [`finish`] fills the orders.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub market_ts: i64,
    pub ledger: Ledger,
    pub decision: Result<Decision, Fault>,
}

/// Run the strategy of a paper tick. `strategy` is `Err(reason)` when the component could not
/// be loaded.
pub(crate) fn prepare(
    sandbox: Option<&Sandbox>,
    strategy: Result<&LoadedStrategy, String>,
    market: &dyn MarketFeed,
    agent: &DueAgent,
    market_ts: i64,
) -> Prepared {
    let ledger = match ledger_of(agent, market_ts) {
        Ok(ledger) => ledger,
        Err(unreadable) => return *unreadable,
    };
    let decision = decide(sandbox, strategy, market, agent, market_ts, &|price| {
        ledger.view(price)
    });
    Prepared {
        market_ts,
        ledger,
        decision,
    }
}

/// [`prepare`] for a component that asks the agent's model through `port`.
pub(crate) async fn prepare_asking(
    sandbox: Option<&Sandbox>,
    strategy: Result<&LoadedStrategy, String>,
    market: &dyn MarketFeed,
    agent: &DueAgent,
    market_ts: i64,
    port: std::sync::Arc<AgentPort>,
) -> Prepared {
    let ledger = match ledger_of(agent, market_ts) {
        Ok(ledger) => ledger,
        Err(unreadable) => return *unreadable,
    };
    let view = |price| ledger.view(price);
    let decision = decide_asking(sandbox, strategy, market, agent, market_ts, &view, port).await;
    Prepared {
        market_ts,
        ledger,
        decision,
    }
}

/// The agent's paper ledger, or the faulted tick of one that does not read.
fn ledger_of(agent: &DueAgent, market_ts: i64) -> Result<Ledger, Box<Prepared>> {
    serde_json::from_str(&agent.ledger).map_err(|error| {
        Box::new(Prepared {
            market_ts,
            ledger: Ledger::new(0.0, Default::default()),
            decision: Err(fault(None, format!("ledger: {error}"))),
        })
    })
}

/// Fill a prepared tick's orders on its ledger: `orders` if given (what the agent's model
/// decided), else the strategy's own.
pub(crate) fn finish(
    agent: &DueAgent,
    prepared: Prepared,
    orders: Option<Vec<OrderRequest>>,
) -> TickResult {
    let Prepared {
        market_ts,
        mut ledger,
        decision,
    } = prepared;
    let decision = match decision {
        Ok(decision) => decision,
        Err(fault) => return faulted(ledger, agent, market_ts, fault.price, fault.message),
    };
    let price = decision.price;
    let orders = orders.unwrap_or(decision.orders);
    let mut fills = Vec::new();
    let mut refusals = Vec::new();
    for order in &orders {
        let (trips, wins) = (ledger.round_trips, ledger.winning_trips);
        match ledger.execute(order, price) {
            Ok(fill) => fills.push(TradeFill {
                fill,
                closed_trip: ledger.round_trips > trips,
                won_trip: ledger.winning_trips > wins,
            }),
            Err(rejection) => {
                tracing::debug!(agent_id = agent.id, %rejection, "order refused by the ledger");
                refusals.push(rejection.to_string());
            }
        }
    }
    ledger.mark(price);
    let equity = ledger.view(price).equity;
    TickResult {
        market_ts,
        ledger,
        state: decision.state,
        price: Some(price),
        equity: Some(equity),
        fills,
        refusals,
        fault: None,
        decision: None,
    }
}

/// What a strategy decided at one tick: the feed's price, its orders and its new state.
#[derive(Debug, Clone)]
pub(crate) struct Decision {
    pub price: f64,
    pub orders: Vec<OrderRequest>,
    pub state: Vec<u8>,
    /// The candles the strategy saw (oldest first) and the portfolio it was shown: what the
    /// agent's model is briefed with.
    pub candles: Vec<Candle>,
    pub portfolio: PortfolioView,
    /// What an uploaded component's model calls spent and said (none for one that asks none).
    pub model_use: Option<ModelUse>,
}

/// Why a tick stopped before orders: `kind: message`, and the price if it was known.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub price: Option<f64>,
    pub message: String,
}

fn fault(price: Option<f64>, message: String) -> Fault {
    Fault { price, message }
}

/// The market an agent's tick sees: the price, the candles (oldest first) and the signals.
struct MarketView {
    price: f64,
    candles: Vec<Candle>,
    signals: crate::market::Signals,
}

impl MarketView {
    /// What the strategy is handed at `market_ts`, with `portfolio`.
    fn input<'a>(
        &'a self,
        agent: &'a DueAgent,
        market_ts: i64,
        portfolio: PortfolioView,
    ) -> TickInput<'a> {
        TickInput {
            settings: &agent.settings,
            now: market_ts,
            candles: &self.candles,
            signals: self.signals,
            portfolio,
            state: &agent.state,
        }
    }
}

/// Market data at `market_ts` for the agent's pair and interval.
fn market_view(
    market: &dyn MarketFeed,
    agent: &DueAgent,
    market_ts: i64,
) -> Result<MarketView, Fault> {
    let pair = Pair::new(&agent.settings.base, &agent.settings.quote);
    let interval: Interval = agent
        .settings
        .interval
        .parse()
        .map_err(|error| fault(None, format!("market: {error}")))?;
    let (signals, candles) = market
        .candles(&pair, interval, market_ts, CANDLES_PER_TICK)
        .and_then(|candles| Ok((market.signals(&pair, market_ts)?, candles)))
        .map_err(|error| fault(None, format!("market: {error}")))?;
    let Some(price) = candles.last().map(|candle| candle.close) else {
        return Err(fault(None, "market: no candles yet".into()));
    };
    Ok(MarketView {
        price,
        candles,
        signals,
    })
}

/// The sandbox and the loaded strategy, or why the tick cannot run.
fn runnable<'a>(
    sandbox: Option<&'a Sandbox>,
    strategy: Result<&'a LoadedStrategy, String>,
    price: f64,
) -> Result<(&'a Sandbox, &'a LoadedStrategy), Fault> {
    match (sandbox, strategy) {
        (Some(sandbox), Ok(strategy)) => Ok((sandbox, strategy)),
        (None, _) => Err(fault(
            Some(price),
            "instantiate: sandbox unavailable".into(),
        )),
        (_, Err(reason)) => Err(fault(Some(price), format!("instantiate: {reason}"))),
    }
}

/// What the strategy's tick came to.
fn decided(
    agent: &DueAgent,
    view: MarketView,
    portfolio: PortfolioView,
    outcome: crate::sandbox::TickOutcome,
) -> Result<Decision, Fault> {
    for line in &outcome.logs {
        tracing::debug!(agent_id = agent.id, level = line.level, message = %line.message, "strategy log");
    }
    match outcome.result {
        Ok((orders, state)) => Ok(Decision {
            price: view.price,
            orders,
            state,
            candles: view.candles,
            portfolio,
            model_use: None,
        }),
        Err(error) => Err(fault(
            Some(view.price),
            format!("{}: {error}", error.kind()),
        )),
    }
}

/// Market data at `market_ts` → sandbox `on-tick` with the portfolio `portfolio` gives at the
/// feed's price. Shared by paper ticks (the ledger's view) and live ticks (the wallet's).
pub(crate) fn decide(
    sandbox: Option<&Sandbox>,
    strategy: Result<&LoadedStrategy, String>,
    market: &dyn MarketFeed,
    agent: &DueAgent,
    market_ts: i64,
    portfolio: &dyn Fn(f64) -> PortfolioView,
) -> Result<Decision, Fault> {
    let view = market_view(market, agent, market_ts)?;
    let (sandbox, strategy) = runnable(sandbox, strategy, view.price)?;
    let portfolio = portfolio(view.price);
    let input = view.input(agent, market_ts, portfolio);
    let outcome = sandbox.tick_as(&agent.id, strategy, &input);
    decided(agent, view, portfolio, outcome)
}

/// [`decide`] for a component that asks the agent's model (`crucible:strategy@0.2.0`): the
/// tick runs on the async engine, its model calls go to `port`, and no thread waits for them.
pub(crate) async fn decide_asking(
    sandbox: Option<&Sandbox>,
    strategy: Result<&LoadedStrategy, String>,
    market: &dyn MarketFeed,
    agent: &DueAgent,
    market_ts: i64,
    portfolio: &(dyn Fn(f64) -> PortfolioView + Sync),
    port: std::sync::Arc<AgentPort>,
) -> Result<Decision, Fault> {
    let view = market_view(market, agent, market_ts)?;
    let (sandbox, strategy) = runnable(sandbox, strategy, view.price)?;
    let portfolio = portfolio(view.price);
    let input = view.input(agent, market_ts, portfolio);
    let outcome = sandbox
        .tick_async(&agent.id, strategy, &input, Some(port.clone()))
        .await;
    let mut decision = decided(agent, view, portfolio, outcome)?;
    decision.model_use = Some(port.usage());
    Ok(decision)
}

fn faulted(
    mut ledger: Ledger,
    agent: &DueAgent,
    market_ts: i64,
    price: Option<f64>,
    fault: String,
) -> TickResult {
    if let Some(price) = price {
        ledger.mark(price);
    }
    TickResult {
        market_ts,
        equity: price.map(|price| ledger.view(price).equity),
        ledger,
        state: agent.state.clone(),
        price,
        fills: Vec::new(),
        refusals: Vec::new(),
        fault: Some(fault),
        decision: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missed_ticks_run_once_then_keep_the_cadence() {
        let hour = Interval::H1.millis();
        assert_eq!(next_due(0, 10, Interval::H1, 1), hour);
        // Ten hours of downtime: the next tick is one interval after now, not ten catch-ups.
        assert_eq!(next_due(0, 10 * hour, Interval::H1, 1), 11 * hour);
    }

    #[test]
    fn the_time_scale_shortens_the_wall_period() {
        assert_eq!(next_due(0, 0, Interval::M5, 300), 1_000);
        let agent = DueAgent {
            id: "a".into(),
            account_id: "b".into(),
            settings: AgentSettings {
                class: "fighter".into(),
                base: "SOL".into(),
                quote: "USDC".into(),
                interval: "5m".into(),
                max_allocation: 100.0,
                personality: String::new(),
                model_id: "x/y".into(),
                params: Vec::new(),
            },
            chosen_params: Default::default(),
            strategy_component: None,
            ledger: String::new(),
            state: Vec::new(),
            consecutive_faults: 0,
            marked_hour: None,
            clock_origin_wall: 1_000,
            clock_origin_market: 5_000,
            next_tick_at: 0,
            wallet_address: String::new(),
            time_scale: None,
            model_tokens_per_day: None,
            model_tokens_day: None,
            model_tokens_used: 0,
        };
        assert_eq!(market_now(&agent, 2_000, 300), 5_000 + 300_000);
        // An agent with its own scale keeps it, whatever the node's.
        let fast = DueAgent {
            time_scale: Some(3_600),
            ..agent.clone()
        };
        assert_eq!(market_now(&fast, 2_000, 300), 5_000 + 3_600_000);
    }
}
