//! One agent's tick, without I/O: market data at the agent's market clock → sandbox `on-tick` →
//! orders checked and filled by the paper ledger → what to store. The ticker (claiming and
//! storing) lives in [`super::ticker`].

use crate::market::{Interval, MarketFeed, Pair};
use crate::paper::{Fill, Ledger};
use crate::sandbox::{AgentSettings, LoadedStrategy, Sandbox, TickInput};

/// Candles a strategy sees per tick.
pub const CANDLES_PER_TICK: usize = 200;

/// A claimed agent, as the tick needs it.
#[derive(Debug, Clone)]
pub struct DueAgent {
    pub id: String,
    pub account_id: String,
    pub settings: AgentSettings,
    pub strategy_component: Option<String>,
    pub ledger: String,
    pub state: Vec<u8>,
    pub consecutive_faults: i64,
    pub clock_origin_wall: i64,
    pub clock_origin_market: i64,
    pub next_tick_at: i64,
}

/// A fill and whether it closed a round trip (and in profit).
#[derive(Debug, Clone)]
pub struct TradeFill {
    pub fill: Fill,
    pub closed_trip: bool,
    pub won_trip: bool,
}

/// What one tick produced.
#[derive(Debug, Clone)]
pub struct TickResult {
    pub market_ts: i64,
    /// The ledger after the tick (unchanged by a faulted tick, but marked at the new price).
    pub ledger: Ledger,
    pub state: Vec<u8>,
    pub price: Option<f64>,
    pub equity: Option<f64>,
    pub fills: Vec<TradeFill>,
    pub rejected_orders: usize,
    /// `kind: message` of the fault that stopped the tick, if any.
    pub fault: Option<String>,
}

/// The agent's market clock: wall time since start, sped up by the time scale.
pub fn market_now(agent: &DueAgent, wall_now: i64, time_scale: u32) -> i64 {
    agent.clock_origin_market + (wall_now - agent.clock_origin_wall) * i64::from(time_scale)
}

/// When the tick after one due at `due` (run at `now`) is due: one interval (shortened by the
/// time scale) later; after downtime, one interval from now — missed ticks run once, not N times.
pub fn next_due(due: i64, now: i64, interval: Interval, time_scale: u32) -> i64 {
    let period = (interval.millis() / i64::from(time_scale)).max(1);
    let next = due + period;
    if next <= now { now + period } else { next }
}

/// Run one tick. `strategy` is `Err(reason)` when the component could not be loaded.
pub fn run(
    sandbox: Option<&Sandbox>,
    strategy: Result<&LoadedStrategy, String>,
    market: &dyn MarketFeed,
    agent: &DueAgent,
    market_ts: i64,
) -> TickResult {
    let mut ledger: Ledger = match serde_json::from_str(&agent.ledger) {
        Ok(ledger) => ledger,
        Err(error) => {
            return faulted(
                Ledger::new(0.0, Default::default()),
                agent,
                market_ts,
                None,
                format!("ledger: {error}"),
            );
        }
    };
    let pair = Pair::new(&agent.settings.base, &agent.settings.quote);
    let interval: Interval = match agent.settings.interval.parse() {
        Ok(interval) => interval,
        Err(error) => return faulted(ledger, agent, market_ts, None, format!("market: {error}")),
    };
    let data = market
        .candles(&pair, interval, market_ts, CANDLES_PER_TICK)
        .and_then(|candles| Ok((market.signals(&pair, market_ts)?, candles)));
    let (signals, candles) = match data {
        Ok(data) => data,
        Err(error) => return faulted(ledger, agent, market_ts, None, format!("market: {error}")),
    };
    let Some(price) = candles.last().map(|candle| candle.close) else {
        return faulted(
            ledger,
            agent,
            market_ts,
            None,
            "market: no candles yet".into(),
        );
    };
    let (sandbox, strategy) = match (sandbox, strategy) {
        (Some(sandbox), Ok(strategy)) => (sandbox, strategy),
        (None, _) => {
            return faulted(
                ledger,
                agent,
                market_ts,
                Some(price),
                "instantiate: sandbox unavailable".into(),
            );
        }
        (_, Err(reason)) => {
            return faulted(
                ledger,
                agent,
                market_ts,
                Some(price),
                format!("instantiate: {reason}"),
            );
        }
    };
    let input = TickInput {
        settings: &agent.settings,
        now: market_ts,
        candles: &candles,
        signals,
        portfolio: ledger.view(price),
        state: &agent.state,
    };
    let outcome = sandbox.tick_as(&agent.id, strategy, &input);
    for line in &outcome.logs {
        tracing::debug!(agent_id = agent.id, level = line.level, message = %line.message, "strategy log");
    }
    let (orders, state) = match outcome.result {
        Ok(output) => output,
        Err(fault) => {
            return faulted(
                ledger,
                agent,
                market_ts,
                Some(price),
                format!("{}: {fault}", fault.kind()),
            );
        }
    };
    let mut fills = Vec::new();
    let mut rejected_orders = 0;
    for order in &orders {
        let (trips, wins) = (ledger.round_trips, ledger.winning_trips);
        match ledger.execute(order, price) {
            Ok(fill) => fills.push(TradeFill {
                fill,
                closed_trip: ledger.round_trips > trips,
                won_trip: ledger.winning_trips > wins,
            }),
            Err(rejection) => {
                rejected_orders += 1;
                tracing::debug!(agent_id = agent.id, %rejection, "order refused by the ledger");
            }
        }
    }
    ledger.mark(price);
    let equity = ledger.view(price).equity;
    TickResult {
        market_ts,
        ledger,
        state,
        price: Some(price),
        equity: Some(equity),
        fills,
        rejected_orders,
        fault: None,
    }
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
        rejected_orders: 0,
        fault: Some(fault),
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
            },
            strategy_component: None,
            ledger: String::new(),
            state: Vec::new(),
            consecutive_faults: 0,
            clock_origin_wall: 1_000,
            clock_origin_market: 5_000,
            next_tick_at: 0,
        };
        assert_eq!(market_now(&agent, 2_000, 300), 5_000 + 300_000);
    }
}
