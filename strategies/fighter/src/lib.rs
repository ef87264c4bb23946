//! Fighter: technical analysis. Trend entries when EMA(`fast` = 9) pulls clear above
//! EMA(`slow` = 21), filtered by RSI(`rsi_period` = 14) so it does not buy an overbought market
//! (RSI under `rsi_entry_max` = 70); enters with `size` = 60 % of equity; exits when the fast EMA
//! falls clear below the slow one, or on an RSI blow-off (over `rsi_exit` = 80) once the trade
//! has paid its costs.
//!
//! Cost-aware: the periods stretch at intervals under an hour so they read the same stretch of
//! time (`costs::time_scale`), and "clear" means a gap between the EMAs of at least a round
//! trip's cost or `band` = half a candle's volatility, whichever is larger, times that stretch:
//! at 5m the averages must part further, relative to the candles, before it pays to trade, so
//! it does not churn.
//!
//! The names in backticks with a value are its tunable parameters (`Fighter::params`); the
//! values given are their defaults, so an agent that sets none trades as before.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Whether the fast EMA was last clearly above (true) or below (false) the slow one.
    pub fast_above: Option<bool>,
}

pub struct Fighter;

const FAST: IntParam = IntParam::new(
    "fast",
    "fast EMA period, candles (x2 at 15m, x4 at 5m)",
    3,
    20,
    9,
);
const SLOW: IntParam = IntParam::new(
    "slow",
    "slow EMA period, candles (x2 at 15m, x4 at 5m; 50 is all the 5m window holds)",
    10,
    50,
    21,
);
const RSI_PERIOD: IntParam = IntParam::new(
    "rsi_period",
    "RSI period, candles (x2 at 15m, x4 at 5m)",
    5,
    30,
    14,
);
const RSI_ENTRY_MAX: FloatParam = FloatParam::new(
    "rsi_entry_max",
    "no entry while RSI is at or above this (0-100)",
    50.0,
    90.0,
    70.0,
);
const RSI_EXIT: FloatParam = FloatParam::new(
    "rsi_exit",
    "take profit when RSI is above this (0-100), once the trade has paid two round trips",
    60.0,
    95.0,
    80.0,
);
const BAND: FloatParam = FloatParam::new(
    "band",
    "EMA gap that counts as a cross, in candle volatilities (never under a round trip's cost)",
    0.0,
    2.0,
    0.5,
);
const SIZE: FloatParam = FloatParam::new(
    "size",
    "entry size, fraction of equity (capped by the agent's max allocation)",
    0.1,
    1.0,
    0.6,
);

impl Strategy for Fighter {
    type State = State;

    fn params() -> Vec<ParamSpec> {
        vec![
            FAST.spec(),
            SLOW.spec(),
            RSI_PERIOD.spec(),
            RSI_ENTRY_MAX.spec(),
            RSI_EXIT.spec(),
            BAND.spec(),
            SIZE.spec(),
        ]
    }

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let close = &ctx.candles.close;
        let m = costs::time_scale(&ctx.config.interval);
        let (fast_period, slow_period) = (FAST.get_usize(ctx), SLOW.get_usize(ctx));
        let (Some(fast), Some(slow), Some(rsi), Some(sigma), Some(price)) = (
            indicators::ema(close, fast_period * m),
            indicators::ema(close, slow_period * m),
            indicators::rsi(close, RSI_PERIOD.get_usize(ctx) * m),
            indicators::volatility(close, 48),
            ctx.candles.last_close(),
        ) else {
            return Ok(Vec::new());
        };
        // Stretched periods still see only a few hours at 5m: the band widens with the stretch.
        let band = costs::ROUND_TRIP_COST.max(BAND.get(ctx) * sigma) * m as f64;
        let gap = (fast - slow) / price;
        // Between the bands the previous side stands (hysteresis).
        let above = if gap > band {
            Some(true)
        } else if gap < -band {
            Some(false)
        } else {
            state.fast_above
        };
        let crossed_up = above == Some(true) && state.fast_above == Some(false);
        let crossed_down = above == Some(false) && state.fast_above == Some(true);
        state.fast_above = above;

        let mut orders = Vec::new();
        if ctx.in_position() {
            let entry = ctx.portfolio.avg_entry_price.unwrap_or(price);
            if crossed_down {
                orders.push(
                    Order::sell_all()
                        .because(format!("EMA {fast_period}/{slow_period} crossed down")),
                );
            } else if rsi > RSI_EXIT.get(ctx)
                && price > entry * (1.0 + 2.0 * costs::ROUND_TRIP_COST)
            {
                orders.push(Order::sell_all().because(format!("RSI {rsi:.0} overbought")));
            }
        } else if crossed_up && rsi < RSI_ENTRY_MAX.get(ctx) {
            orders.push(Order::buy(SIZE.get(ctx)).because(format!(
                "EMA {fast_period}/{slow_period} crossed up, RSI {rsi:.0}"
            )));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Fighter);

#[cfg(test)]
mod tests {
    use super::*;

    /// The host refuses a component whose declaration breaks its rules.
    #[test]
    fn params_are_well_formed() {
        let specs = Fighter::params();
        assert!((3..=7).contains(&specs.len()));
        assert_eq!(crucible_sdk::params::check(&specs), Ok(()));
    }

    /// An hourly uptrend in steps of +5, -1: RSI(14) about 83, the fast EMA well above the slow.
    fn rally(entry: f64) -> Context {
        let mut close = Vec::new();
        let mut price = 100.0;
        for i in 0..80 {
            price += if i % 2 == 0 { 5.0 } else { -1.0 };
            close.push(price);
        }
        let mut ctx = Context::default();
        ctx.config.interval = "1h".into();
        ctx.candles.close = close;
        ctx.portfolio.base = 1.0;
        ctx.portfolio.avg_entry_price = Some(entry);
        ctx
    }

    #[test]
    fn the_rsi_exit_threshold_decides_the_blow_off() {
        let ctx = rally(150.0);
        let rsi = indicators::rsi(&ctx.candles.close, 14).unwrap();
        assert!(rsi > 80.0 && rsi < 90.0, "{rsi}");
        let mut state = State {
            fast_above: Some(true),
        };
        let orders = Fighter::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].size, Size::All);
        // Asking for a stronger blow-off keeps the position.
        let ctx = ctx.with_param("rsi_exit", ParamValue::Float(90.0));
        let mut state = State {
            fast_above: Some(true),
        };
        assert!(Fighter::on_tick(&ctx, &mut state).unwrap().is_empty());
    }

    #[test]
    fn entries_use_the_declared_size_and_periods() {
        // Flat, then a rally that lifts the fast EMA over the slow: a cross from below.
        let mut ctx = rally(0.0);
        ctx.portfolio = Default::default();
        ctx.candles.close = (0..70)
            .map(|i| 100.0 + if i % 2 == 0 { 0.5 } else { -0.5 })
            .chain([101.0, 103.0, 102.5, 104.0])
            .collect();
        let ctx = ctx.with_param("rsi_entry_max", ParamValue::Float(90.0));
        let mut state = State {
            fast_above: Some(false),
        };
        let orders = Fighter::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(orders.len(), 1, "{orders:?}");
        assert_eq!(orders[0].size, Size::FractionOfEquity(0.6));
        let ctx = ctx.with_param("size", ParamValue::Float(0.25));
        let mut state = State {
            fast_above: Some(false),
        };
        let orders = Fighter::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(orders[0].size, Size::FractionOfEquity(0.25));
        assert_eq!(
            orders[0]
                .reason
                .as_deref()
                .map(|r| r.starts_with("EMA 9/21")),
            Some(true)
        );
        // A slow EMA as quick as the fast one never parts from it: no cross.
        let ctx = ctx
            .with_param("slow", ParamValue::Int(9))
            .with_param("fast", ParamValue::Int(9));
        let mut state = State {
            fast_above: Some(false),
        };
        assert!(Fighter::on_tick(&ctx, &mut state).unwrap().is_empty());
    }
}
