//! Ranger: social sentiment. Smooths the sentiment signal (EMA kept in state) and rides the
//! crowd with `size` = 50 % of equity when the mood is bullish (over `enter` = 0.2) with normal
//! or rising mention volume (at least `min_mentions` = 0.9 of usual); leaves when the mood
//! turns (under `leave` = -0.05).
//!
//! Sentiment is weak, noisy information (`docs/markets.md`): cost-aware, the ranger smooths it
//! over half a day (`half_life_hours` = 12) at every interval (so it holds for days, not
//! candles) and asks for a stronger mood, and a clearer turn, where a round trip costs more than
//! a candle's typical move (`cost_margin` = 0.1 of mood per round trip's cost in candle
//! volatilities, at most two).
//!
//! The names in backticks with a value are its tunable parameters (`Ranger::params`); the
//! values given are their defaults, so an agent that sets none trades as before.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Exponentially smoothed sentiment; `None` before the first tick.
    pub mood: Option<f64>,
}

pub struct Ranger;

/// Half-life of the smoothed mood: sentiment speaks about the next hours, its noise lasts as
/// long, so the mood averages half a day.
const HALF_LIFE_HOURS: FloatParam = FloatParam::new(
    "half_life_hours",
    "half-life of the smoothed sentiment, hours (the same at every interval)",
    1.0,
    48.0,
    12.0,
);
const ENTER: FloatParam = FloatParam::new(
    "enter",
    "smoothed sentiment (-1 to 1) to enter above, before the cost margin",
    0.0,
    0.8,
    0.2,
);
const LEAVE: FloatParam = FloatParam::new(
    "leave",
    "smoothed sentiment (-1 to 1) to leave below, before the cost margin",
    -0.5,
    0.2,
    -0.05,
);
const COST_MARGIN: FloatParam = FloatParam::new(
    "cost_margin",
    "sentiment added to enter (and taken from leave) per round trip's cost in candle volatilities",
    0.0,
    0.5,
    0.1,
);
const MIN_MENTIONS: FloatParam = FloatParam::new(
    "min_mentions",
    "mention volume (x its recent average) needed to enter",
    0.0,
    2.0,
    0.9,
);
const SIZE: FloatParam = FloatParam::new(
    "size",
    "entry size, fraction of equity (capped by the agent's max allocation)",
    0.1,
    1.0,
    0.5,
);

impl Strategy for Ranger {
    type State = State;

    fn params() -> Vec<ParamSpec> {
        vec![
            HALF_LIFE_HOURS.spec(),
            ENTER.spec(),
            LEAVE.spec(),
            COST_MARGIN.spec(),
            MIN_MENTIONS.spec(),
            SIZE.spec(),
        ]
    }

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let alpha = costs::smoothing(&ctx.config.interval, HALF_LIFE_HOURS.get(ctx) * 60.0);
        let s = ctx.signals.sentiment;
        let mood = match state.mood {
            Some(mood) => mood + alpha * (s - mood),
            None => s,
        };
        state.mood = Some(mood);
        let Some(sigma) = indicators::volatility(&ctx.candles.close, 48) else {
            return Ok(Vec::new());
        };
        let cost = costs::cost_in_sigmas(sigma, 2.0);
        let margin = COST_MARGIN.get(ctx);
        let enter = ENTER.get(ctx) + margin * cost;
        let leave = LEAVE.get(ctx) - margin * cost;

        let mut orders = Vec::new();
        if !ctx.in_position() && mood > enter && ctx.signals.mention_volume > MIN_MENTIONS.get(ctx)
        {
            orders.push(Order::buy(SIZE.get(ctx)).because(format!("crowd bullish ({mood:.2})")));
        } else if ctx.in_position() && mood < leave {
            orders.push(Order::sell_all().because(format!("crowd turned ({mood:.2})")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Ranger);

#[cfg(test)]
mod tests {
    use super::*;

    /// The host refuses a component whose declaration breaks its rules.
    #[test]
    fn params_are_well_formed() {
        let specs = Ranger::params();
        assert!((3..=7).contains(&specs.len()));
        assert_eq!(crucible_sdk::params::check(&specs), Ok(()));
    }

    /// A first hourly tick (no mood yet: it is this tick's sentiment) on candles swinging ±2 %,
    /// so a round trip costs 0.15 candle volatilities and the entry asks for 0.215.
    fn bullish(sentiment: f64) -> Context {
        let mut ctx = Context::default();
        ctx.config.interval = "1h".into();
        ctx.candles.close = (0..60)
            .map(|i| if i % 2 == 0 { 100.0 } else { 102.0 })
            .collect();
        ctx.signals.sentiment = sentiment;
        ctx.signals.mention_volume = 1.0;
        ctx
    }

    #[test]
    fn the_entry_threshold_and_size_are_the_parameters() {
        let ctx = bullish(0.25);
        let orders = Ranger::on_tick(&ctx, &mut State::default()).unwrap();
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].size, Size::FractionOfEquity(0.5));
        let sized = ctx.clone().with_param("size", ParamValue::Float(0.3));
        let orders = Ranger::on_tick(&sized, &mut State::default()).unwrap();
        assert_eq!(orders[0].size, Size::FractionOfEquity(0.3));
        // A more demanding entry, or more mentions asked for, stays out.
        for (name, value) in [("enter", 0.3), ("cost_margin", 0.5), ("min_mentions", 1.2)] {
            let ctx = ctx.clone().with_param(name, ParamValue::Float(value));
            assert!(
                Ranger::on_tick(&ctx, &mut State::default())
                    .unwrap()
                    .is_empty(),
                "{name}"
            );
        }
    }

    #[test]
    fn a_longer_half_life_moves_the_mood_less() {
        let ctx = bullish(1.0);
        let mut fast = State { mood: Some(0.0) };
        Ranger::on_tick(&ctx, &mut fast).unwrap();
        let slow_ctx = ctx.with_param("half_life_hours", ParamValue::Float(48.0));
        let mut slow = State { mood: Some(0.0) };
        Ranger::on_tick(&slow_ctx, &mut slow).unwrap();
        // 1 - 0.5^(1/12) and 1 - 0.5^(1/48) of the way to 1.
        assert!((fast.mood.unwrap() - (1.0 - 0.5f64.powf(1.0 / 12.0))).abs() < 1e-12);
        assert!((slow.mood.unwrap() - (1.0 - 0.5f64.powf(1.0 / 48.0))).abs() < 1e-12);
    }
}
