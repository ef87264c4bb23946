//! Gambler: high-risk momentum. Goes all in (up to maxAllocation) when price breaks above its
//! 20-candle high while EMA(10) is above EMA(40); rides it until a 10-candle low breaks or price
//! falls 3 ATR from its peak.
//!
//! Cost-aware: at intervals under an hour the channels stretch to the same stretch of time
//! (`costs::time_scale`), and a breakout must clear the old high by a round trip's cost (twice
//! that at 5m), so a tick above the high by a hair does not buy.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Highest close since entry (for the trailing stop).
    pub peak: f64,
}

pub struct Gambler;

impl Strategy for Gambler {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let k = &ctx.candles;
        let n = k.len();
        let m = costs::time_scale(&ctx.config.interval);
        if n < 20 * m + 2 {
            return Ok(Vec::new());
        }
        let price = k.close[n - 1];
        // Channel of the candles before this one, so a breakout is a new extreme.
        let (Some(high), Some(low), Some(atr), Some(fast), Some(slow)) = (
            indicators::highest(&k.high[..n - 1], 20 * m),
            indicators::lowest(&k.low[..n - 1], 10 * m),
            indicators::atr(&k.high, &k.low, &k.close, 14 * m),
            indicators::ema(&k.close, 10 * m),
            indicators::ema(&k.close, 40 * m),
        ) else {
            return Ok(Vec::new());
        };
        if ctx.in_position() {
            state.peak = state.peak.max(price);
            // The trailing stop is 3 ATR of the hourly-equivalent candle (ATR grows as √time).
            let trail = 3.0 * atr * if m == 4 { 2.0 } else { 1.0 };
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
            return Ok(vec![Order::buy(1.0).because("20-candle breakout")]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Gambler);
