//! Gambler: high-risk momentum. Goes all in (`size` = 100 % of equity, up to maxAllocation)
//! when price breaks above its `channel` = 20-candle high while EMA(`fast` = 10) is above
//! EMA(`slow` = 40); rides the swing until the channel's low breaks or price falls
//! `trail_atr` = 6 ATR from its peak, so it keeps the large swings it bets on (with a tighter
//! exit it would be out of the market most of the time and swing less than the other classes).
//!
//! Cost-aware: at intervals under an hour the averages stretch to the same stretch of time
//! (`costs::time_scale`), and a breakout must clear the old high by a round trip's cost (twice
//! that at 5m), so a tick above the high by a hair does not buy. There the channels span
//! `channel_hours` = 16 hours (as much as the 200-candle window holds at 5m) and the stop is
//! 6 ATR of an hourly candle (ATR grows as √time): 6 ATR of a 5-minute candle would be cut by
//! the swings within an hour.
//!
//! The names in backticks with a value are its tunable parameters (`Gambler::params`); the
//! values given are their defaults, so an agent that sets none trades as before.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Highest close since entry (for the trailing stop).
    pub peak: f64,
}

pub struct Gambler;

const CHANNEL: IntParam = IntParam::new(
    "channel",
    "breakout channel at 1h and above, candles (its high buys, its low sells)",
    5,
    60,
    20,
);
const CHANNEL_HOURS: IntParam = IntParam::new(
    "channel_hours",
    "breakout channel under an hour, hours (16 is all the 5m window holds)",
    2,
    16,
    16,
);
const FAST: IntParam = IntParam::new(
    "fast",
    "fast EMA period of the trend filter, candles (x2 at 15m, x4 at 5m)",
    3,
    30,
    10,
);
const SLOW: IntParam = IntParam::new(
    "slow",
    "slow EMA period of the trend filter, candles (x2 at 15m, x4 at 5m; at most 50 fits 5m)",
    15,
    50,
    40,
);
/// Trailing stop from the peak, in ATR (of an hourly candle under an hour).
const TRAIL_ATR: FloatParam = FloatParam::new(
    "trail_atr",
    "trailing stop under the peak since entry, in ATR(14) (of an hourly candle under an hour)",
    1.0,
    12.0,
    6.0,
);
const SIZE: FloatParam = FloatParam::new(
    "size",
    "entry size, fraction of equity (capped by the agent's max allocation)",
    0.1,
    1.0,
    1.0,
);

/// Candles of the channels at an interval (the high a breakout clears, the low that ends the
/// ride), and what a breakout says.
fn channel(ctx: &Context) -> (usize, String) {
    match costs::interval_minutes(&ctx.config.interval) {
        Some(minutes) if minutes < 60 => {
            let hours = CHANNEL_HOURS.get_usize(ctx);
            (
                hours * (60 / minutes.max(1)) as usize,
                format!("{hours}-hour breakout"),
            )
        }
        _ => {
            let candles = CHANNEL.get_usize(ctx);
            (candles, format!("{candles}-candle breakout"))
        }
    }
}

impl Strategy for Gambler {
    type State = State;

    fn params() -> Vec<ParamSpec> {
        vec![
            CHANNEL.spec(),
            CHANNEL_HOURS.spec(),
            FAST.spec(),
            SLOW.spec(),
            TRAIL_ATR.spec(),
            SIZE.spec(),
        ]
    }

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let k = &ctx.candles;
        let n = k.len();
        let interval = ctx.config.interval.as_str();
        let m = costs::time_scale(interval);
        let (span, breakout) = channel(ctx);
        if n < span + 2 {
            return Ok(Vec::new());
        }
        let price = k.close[n - 1];
        // Channel of the candles before this one, so a breakout is a new extreme.
        let (Some(high), Some(low), Some(atr), Some(fast), Some(slow)) = (
            indicators::highest(&k.high[..n - 1], span),
            indicators::lowest(&k.low[..n - 1], span),
            indicators::atr(&k.high, &k.low, &k.close, 14 * m),
            indicators::ema(&k.close, FAST.get_usize(ctx) * m),
            indicators::ema(&k.close, SLOW.get_usize(ctx) * m),
        ) else {
            return Ok(Vec::new());
        };
        if ctx.in_position() {
            state.peak = state.peak.max(price);
            let trail = TRAIL_ATR.get(ctx) * costs::hourly_volatility(atr, interval);
            if price < low || price < state.peak - trail {
                state.peak = 0.0;
                return Ok(vec![Order::sell_all().because("momentum lost")]);
            }
            return Ok(Vec::new());
        }
        // Only breakouts in the direction of the trend: a breakout against it is mostly noise.
        let buffer = costs::ROUND_TRIP_COST * (m as f64 / 2.0).max(1.0);
        if price > high * (1.0 + buffer) && fast > slow {
            state.peak = price;
            return Ok(vec![Order::buy(SIZE.get(ctx)).because(breakout)]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Gambler);

#[cfg(test)]
mod tests {
    use super::*;

    /// The host refuses a component whose declaration breaks its rules.
    #[test]
    fn params_are_well_formed() {
        let specs = Gambler::params();
        assert!((3..=7).contains(&specs.len()));
        assert_eq!(crucible_sdk::params::check(&specs), Ok(()));
    }

    /// Hourly candles closing at 110 with a range of 2 (ATR 2), in a position whose peak was 120.
    fn after_a_peak() -> (Context, State) {
        let mut ctx = Context::default();
        ctx.config.interval = "1h".into();
        ctx.candles.close = vec![110.0; 60];
        ctx.candles.high = vec![111.0; 60];
        ctx.candles.low = vec![109.0; 60];
        ctx.portfolio.base = 1.0;
        (ctx, State { peak: 120.0 })
    }

    #[test]
    fn the_trailing_stop_is_a_parameter() {
        // 10 under the peak: inside 6 ATR (12), outside 4 ATR (8).
        let (ctx, mut state) = after_a_peak();
        assert!(Gambler::on_tick(&ctx, &mut state).unwrap().is_empty());
        assert_eq!(state.peak, 120.0);
        let ctx = ctx.with_param("trail_atr", ParamValue::Float(4.0));
        let orders = Gambler::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].size, Size::All);
    }

    #[test]
    fn the_channel_is_a_parameter() {
        // Out of the market, the last close 1 % over a high 20 candles back but under a newer one.
        let (mut ctx, mut state) = after_a_peak();
        ctx.portfolio.base = 0.0;
        let n = ctx.candles.close.len();
        for i in 0..n {
            ctx.candles.close[i] = 100.0 + i as f64 * 0.1;
            ctx.candles.high[i] = ctx.candles.close[i] + 0.5;
            ctx.candles.low[i] = ctx.candles.close[i] - 0.5;
        }
        ctx.candles.high[n - 25] = 120.0;
        ctx.candles.close[n - 1] = 108.0;
        let orders = Gambler::on_tick(&ctx, &mut state).unwrap();
        assert_eq!(orders.len(), 1, "{orders:?}");
        assert_eq!(orders[0].reason.as_deref(), Some("20-candle breakout"));
        assert_eq!(orders[0].size, Size::FractionOfEquity(1.0));
        let ctx = ctx.with_param("channel", ParamValue::Int(30));
        assert!(Gambler::on_tick(&ctx, &mut state).unwrap().is_empty());
    }
}
