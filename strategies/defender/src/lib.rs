//! Defender: capital preservation. Mostly in quote; takes small positions (`size` = 15 % of
//! equity) only in a calm uptrend (price above its `trend_period` = 50-candle mean, volatility
//! below its usual level), with a tight stop and a target `target` = twice as far; after a
//! stop-out it waits `cooldown` = 12 candles before entering again.
//!
//! Cost-aware: "calm" compares the last `calm_period` = 14 candles' volatility with the last
//! 100's, so it means the same at every interval, and the stop is `stop_days` = half a day's
//! volatility (measured from the candles), never closer than two round trips of cost nor further
//! than `max_stop` = 4 %. The trend's mean and the cooldown stretch at intervals under an hour
//! (`costs::time_scale`).
//!
//! The names in backticks with a value are its tunable parameters (`Defender::params`); the
//! values given are their defaults, so an agent that sets none trades as before.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Ticks to wait after a stop-out before entering again.
    pub cooldown: u32,
    /// Stop distance fixed at entry, fraction of the entry price.
    pub stop: f64,
}

pub struct Defender;

const TREND_PERIOD: IntParam = IntParam::new(
    "trend_period",
    "mean the price must be above, candles (x2 at 15m, x4 at 5m; 50 is all the 5m window holds)",
    10,
    50,
    50,
);
const CALM_PERIOD: IntParam = IntParam::new(
    "calm_period",
    "recent volatility window, candles: calm when it is below the last 100 candles'",
    5,
    50,
    14,
);
const STOP_DAYS: FloatParam = FloatParam::new(
    "stop_days",
    "stop distance, days of volatility (within two round trips of cost and max_stop)",
    0.1,
    2.0,
    0.5,
);
/// The stop never lets a position lose more than this, however turbulent the market.
const MAX_STOP: FloatParam = FloatParam::new(
    "max_stop",
    "widest stop, fraction of the entry price",
    0.01,
    0.1,
    0.04,
);
const TARGET: FloatParam = FloatParam::new(
    "target",
    "profit target, multiples of the stop distance",
    1.0,
    5.0,
    2.0,
);
const SIZE: FloatParam = FloatParam::new(
    "size",
    "entry size, fraction of equity (capped by the agent's max allocation)",
    0.05,
    0.5,
    0.15,
);
const COOLDOWN: IntParam = IntParam::new(
    "cooldown",
    "candles to wait after a stop-out (x2 at 15m, x4 at 5m)",
    0,
    48,
    12,
);

impl Strategy for Defender {
    type State = State;

    fn params() -> Vec<ParamSpec> {
        vec![
            TREND_PERIOD.spec(),
            CALM_PERIOD.spec(),
            STOP_DAYS.spec(),
            MAX_STOP.spec(),
            TARGET.spec(),
            SIZE.spec(),
            COOLDOWN.spec(),
        ]
    }

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let k = &ctx.candles;
        let Some(price) = k.last_close() else {
            return Ok(Vec::new());
        };
        let m = costs::time_scale(&ctx.config.interval);
        if ctx.in_position() {
            let entry = ctx.portfolio.avg_entry_price.unwrap_or(price);
            let stop = if state.stop > 0.0 { state.stop } else { 0.02 };
            if price <= entry * (1.0 - stop) {
                state.cooldown = COOLDOWN.get(ctx) as u32 * m as u32;
                return Ok(vec![
                    Order::sell_all().because(format!("{:.1}% stop", stop * 100.0)),
                ]);
            }
            let target = TARGET.get(ctx);
            if price >= entry * (1.0 + target * stop) {
                return Ok(vec![
                    Order::sell_all().because(format!("{:.1}% target", target * stop * 100.0)),
                ]);
            }
            return Ok(Vec::new());
        }
        if state.cooldown > 0 {
            state.cooldown -= 1;
            return Ok(Vec::new());
        }
        let close = &k.close;
        let (Some(sma), Some(recent), Some(usual)) = (
            indicators::sma(close, TREND_PERIOD.get_usize(ctx) * m),
            indicators::volatility(close, CALM_PERIOD.get_usize(ctx)),
            indicators::volatility(close, 100),
        ) else {
            return Ok(Vec::new());
        };
        let calm = recent < usual;
        if price > sma && calm {
            let daily = costs::daily_volatility(usual, &ctx.config.interval);
            state.stop =
                (STOP_DAYS.get(ctx) * daily).clamp(2.0 * costs::ROUND_TRIP_COST, MAX_STOP.get(ctx));
            return Ok(vec![Order::buy(SIZE.get(ctx)).because("calm uptrend")]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Defender);

#[cfg(test)]
mod tests {
    use super::*;

    /// The host refuses a component whose declaration breaks its rules.
    #[test]
    fn params_are_well_formed() {
        let specs = Defender::params();
        assert!((3..=7).contains(&specs.len()));
        assert_eq!(crucible_sdk::params::check(&specs), Ok(()));
    }

    /// In a position entered at 100 with a 2 % stop, the price now at `price`.
    fn holding_at(price: f64) -> (Context, State) {
        let mut ctx = Context::default();
        ctx.config.interval = "1h".into();
        ctx.candles.close = vec![100.0, price];
        ctx.portfolio.base = 1.0;
        ctx.portfolio.avg_entry_price = Some(100.0);
        let state = State {
            cooldown: 0,
            stop: 0.02,
        };
        (ctx, state)
    }

    #[test]
    fn the_target_is_a_parameter() {
        // 3.5 % up: short of the default target (twice the stop, 4 %), past one of 1.5 stops.
        let (ctx, mut state) = holding_at(103.5);
        assert!(Defender::on_tick(&ctx, &mut state).unwrap().is_empty());
        let ctx = ctx.with_param("target", ParamValue::Float(1.5));
        let orders = Defender::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].reason.as_deref(), Some("3.0% target"));
    }

    #[test]
    fn a_stop_out_waits_the_declared_cooldown() {
        let (ctx, mut state) = holding_at(97.0);
        let orders = Defender::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(orders[0].reason.as_deref(), Some("2.0% stop"));
        assert_eq!(state.cooldown, 12);
        let ctx = ctx.with_param("cooldown", ParamValue::Int(3));
        Defender::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(state.cooldown, 3);
        let mut ctx = ctx.with_param("cooldown", ParamValue::Int(5));
        ctx.config.interval = "5m".into();
        Defender::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(state.cooldown, 20);
    }
}
