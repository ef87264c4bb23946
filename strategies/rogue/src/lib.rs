//! Rogue: contrarian mean reversion. Buys (`size` = 40 % of equity) when price is stretched
//! `entry_z` = two standard deviations below its `period` = 20-candle mean (z-score), sells once
//! it has reverted above the mean (z over `exit_z` = 0); gives up when the stretch doubles (z
//! under minus `stop_z` = 4) or the reversion does not come within `patience` = 48 candles.
//!
//! Cost-aware: the mean spans the same stretch of time at every interval (`costs::time_scale`),
//! and the way back to it must be worth at least two round trips of cost times that stretch (at
//! 5m the same stretch of time holds four times as many candles, each a chance to enter), so
//! small stretches of quiet 5-minute candles are left alone.
//!
//! The names in backticks with a value are its tunable parameters (`Rogue::params`); the
//! values given are their defaults, so an agent that sets none trades as before.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Ticks spent in the current position (gives up on a reversion that never comes).
    pub held: u32,
}

pub struct Rogue;

const PERIOD: IntParam = IntParam::new(
    "period",
    "mean and z-score window, candles (x2 at 15m, x4 at 5m; 50 is all the 5m window holds)",
    10,
    50,
    20,
);
const ENTRY_Z: FloatParam = FloatParam::new(
    "entry_z",
    "standard deviations under the mean to buy at",
    1.0,
    4.0,
    2.0,
);
const EXIT_Z: FloatParam = FloatParam::new(
    "exit_z",
    "z-score above which the reversion is taken (0: back at the mean)",
    -1.0,
    1.0,
    0.0,
);
const STOP_Z: FloatParam = FloatParam::new(
    "stop_z",
    "standard deviations under the mean at which it gives up",
    2.5,
    8.0,
    4.0,
);
const PATIENCE: IntParam = IntParam::new(
    "patience",
    "candles to wait for the reversion before giving up (x2 at 15m, x4 at 5m)",
    6,
    200,
    48,
);
const SIZE: FloatParam = FloatParam::new(
    "size",
    "entry size, fraction of equity (capped by the agent's max allocation)",
    0.1,
    1.0,
    0.4,
);

impl Strategy for Rogue {
    type State = State;

    fn params() -> Vec<ParamSpec> {
        vec![
            PERIOD.spec(),
            ENTRY_Z.spec(),
            EXIT_Z.spec(),
            STOP_Z.spec(),
            PATIENCE.spec(),
            SIZE.spec(),
        ]
    }

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let m = costs::time_scale(&ctx.config.interval);
        let close = &ctx.candles.close;
        let period = PERIOD.get_usize(ctx) * m;
        let (Some(z), Some(mean), Some(price)) = (
            indicators::zscore(close, period),
            indicators::sma(close, period),
            ctx.candles.last_close(),
        ) else {
            return Ok(Vec::new());
        };
        let patience = PATIENCE.get(ctx) as u32 * m as u32;
        if ctx.in_position() {
            state.held += 1;
            if z > EXIT_Z.get(ctx) {
                state.held = 0;
                return Ok(vec![
                    Order::sell_all().because(format!("reverted (z {z:.1})")),
                ]);
            }
            if z < -STOP_Z.get(ctx) {
                state.held = 0;
                return Ok(vec![
                    Order::sell_all().because(format!("stretch kept going (z {z:.1})")),
                ]);
            }
            if state.held > patience {
                state.held = 0;
                return Ok(vec![Order::sell_all().because("no reversion in time")]);
            }
            return Ok(Vec::new());
        }
        let room = mean / price - 1.0;
        if z < -ENTRY_Z.get(ctx) && room > 2.0 * costs::ROUND_TRIP_COST * m as f64 {
            state.held = 0;
            return Ok(vec![
                Order::buy(SIZE.get(ctx)).because(format!("stretched (z {z:.1})")),
            ]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Rogue);

#[cfg(test)]
mod tests {
    use super::*;

    /// The host refuses a component whose declaration breaks its rules.
    #[test]
    fn params_are_well_formed() {
        let specs = Rogue::params();
        assert!((3..=7).contains(&specs.len()));
        assert_eq!(crucible_sdk::params::check(&specs), Ok(()));
    }

    /// Hourly closes swinging 99/101, then `last`.
    fn closes_then(last: f64) -> Context {
        let mut ctx = Context::default();
        ctx.config.interval = "1h".into();
        ctx.candles.close = (0..39)
            .map(|i| if i % 2 == 0 { 99.0 } else { 101.0 })
            .chain([last])
            .collect();
        ctx
    }

    #[test]
    fn the_entry_stretch_is_a_parameter() {
        let ctx = closes_then(97.0);
        let z = indicators::zscore(&ctx.candles.close, 20).unwrap();
        assert!(z < -2.0 && z > -3.0, "{z}");
        let orders = Rogue::on_tick(&ctx, &mut State::default()).unwrap();
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].size, Size::FractionOfEquity(0.4));
        let ctx = ctx.with_param("entry_z", ParamValue::Float(3.0));
        assert!(
            Rogue::on_tick(&ctx, &mut State::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_exit_and_the_patience_are_parameters() {
        // In position just under the mean: held by default, sold once z -0.5 is enough.
        let mut ctx = closes_then(99.5);
        ctx.portfolio.base = 1.0;
        let z = indicators::zscore(&ctx.candles.close, 20).unwrap();
        assert!(z < 0.0 && z > -0.5, "{z}");
        let mut state = State::default();
        assert!(Rogue::on_tick(&ctx, &mut state).unwrap().is_empty());
        assert_eq!(state.held, 1);
        let early = ctx.clone().with_param("exit_z", ParamValue::Float(-0.5));
        assert_eq!(Rogue::on_tick(&early, &mut state).unwrap().len(), 1);
        // Held for 10 candles: patient by default, out with a patience of 6.
        let mut state = State { held: 10 };
        assert!(Rogue::on_tick(&ctx, &mut state).unwrap().is_empty());
        let impatient = ctx.with_param("patience", ParamValue::Int(6));
        let orders = Rogue::on_tick(&impatient, &mut state).unwrap();
        assert_eq!(orders[0].reason.as_deref(), Some("no reversion in time"));
    }
}
