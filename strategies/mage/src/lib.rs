//! Mage: on-chain analysis. Scores accumulation (tokens leaving exchanges, whales buying,
//! wallets joining), smooths the score in state and holds while accumulation dominates: buys
//! `size` = 50 % of equity when the score is over `enter` = 0.25, sells when it falls under
//! `leave` = -0.1.
//!
//! On-chain flows are weak, noisy information (`docs/markets.md`): cost-aware, the mage smooths
//! over six hours (`half_life_hours` = 6) at every interval and widens its entry and exit
//! thresholds where a round trip costs more than a candle's typical move (`cost_margin` = 0.1
//! of score per round trip's cost in candle volatilities, at most two).
//!
//! The names in backticks with a value are its tunable parameters (`Mage::params`); the
//! values given are their defaults, so an agent that sets none trades as before.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::Signals;
use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub score: Option<f64>,
}

pub struct Mage;

/// Half-life of the smoothed score: flows speak about the next hour but their noise comes and
/// goes within hours, so the score averages six hours and the mage holds for a day or so.
const HALF_LIFE_HOURS: FloatParam = FloatParam::new(
    "half_life_hours",
    "half-life of the smoothed accumulation score, hours (the same at every interval)",
    1.0,
    48.0,
    6.0,
);
const ENTER: FloatParam = FloatParam::new(
    "enter",
    "smoothed accumulation score to enter above, before the cost margin",
    0.0,
    1.0,
    0.25,
);
const LEAVE: FloatParam = FloatParam::new(
    "leave",
    "smoothed accumulation score to leave below, before the cost margin",
    -0.5,
    0.2,
    -0.1,
);
const COST_MARGIN: FloatParam = FloatParam::new(
    "cost_margin",
    "score added to enter (and taken from leave) per round trip's cost in candle volatilities",
    0.0,
    0.5,
    0.1,
);
const SIZE: FloatParam = FloatParam::new(
    "size",
    "entry size, fraction of equity (capped by the agent's max allocation)",
    0.1,
    1.0,
    0.5,
);

/// Accumulation score: positive when smart money accumulates.
pub fn accumulation(s: &Signals) -> f64 {
    // Net flow is a small fraction of supply; scale it to the range of the other two.
    -s.exchange_net_flow * 200.0 + s.whale_net_buy + 2.0 * s.active_wallets_change
}

impl Strategy for Mage {
    type State = State;

    fn params() -> Vec<ParamSpec> {
        vec![
            HALF_LIFE_HOURS.spec(),
            ENTER.spec(),
            LEAVE.spec(),
            COST_MARGIN.spec(),
            SIZE.spec(),
        ]
    }

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let alpha = costs::smoothing(&ctx.config.interval, HALF_LIFE_HOURS.get(ctx) * 60.0);
        let now = accumulation(&ctx.signals);
        let score = match state.score {
            Some(prev) => prev + alpha * (now - prev),
            None => now,
        };
        state.score = Some(score);
        let Some(sigma) = indicators::volatility(&ctx.candles.close, 48) else {
            return Ok(Vec::new());
        };
        let cost = costs::cost_in_sigmas(sigma, 2.0);
        let margin = COST_MARGIN.get(ctx);
        let enter = ENTER.get(ctx) + margin * cost;
        let leave = LEAVE.get(ctx) - margin * cost;

        let mut orders = Vec::new();
        if !ctx.in_position() && score > enter {
            orders.push(Order::buy(SIZE.get(ctx)).because(format!("accumulation {score:.2}")));
        } else if ctx.in_position() && score < leave {
            orders.push(Order::sell_all().because(format!("distribution {score:.2}")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Mage);

#[cfg(test)]
mod tests {
    use super::*;

    /// The host refuses a component whose declaration breaks its rules.
    #[test]
    fn params_are_well_formed() {
        let specs = Mage::params();
        assert!((3..=7).contains(&specs.len()));
        assert_eq!(crucible_sdk::params::check(&specs), Ok(()));
    }

    /// An hourly tick on candles swinging ±2 % (a round trip costs 0.15 candle volatilities),
    /// with whales buying: the score is 0.3, the entry asks for 0.265 and the exit for -0.115.
    fn whales_buying() -> Context {
        let mut ctx = Context::default();
        ctx.config.interval = "1h".into();
        ctx.candles.close = (0..60)
            .map(|i| if i % 2 == 0 { 100.0 } else { 102.0 })
            .collect();
        ctx.signals.whale_net_buy = 0.3;
        ctx
    }

    #[test]
    fn the_thresholds_are_the_parameters() {
        let ctx = whales_buying();
        let orders = Mage::on_tick(&ctx, &mut State::default()).unwrap();
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].size, Size::FractionOfEquity(0.5));
        let demanding = ctx.clone().with_param("enter", ParamValue::Float(0.4));
        assert!(
            Mage::on_tick(&demanding, &mut State::default())
                .unwrap()
                .is_empty()
        );
        // In position with the score down to -0.2: out at the default exit, held with a lower one.
        let mut ctx = ctx;
        ctx.signals.whale_net_buy = -0.2;
        ctx.portfolio.base = 1.0;
        let orders = Mage::on_tick(&ctx, &mut State::default()).unwrap();
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].size, Size::All);
        let patient = ctx.with_param("leave", ParamValue::Float(-0.3));
        assert!(
            Mage::on_tick(&patient, &mut State::default())
                .unwrap()
                .is_empty()
        );
    }
}
