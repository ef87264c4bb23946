//! Gambler: high-risk momentum. Goes all in (up to maxAllocation) when price breaks above its
//! 20-candle high while EMA(10) is above EMA(40); rides the swing until the 20-candle low breaks
//! or price falls 6 ATR from its peak, so it keeps the large swings it bets on (with a tighter
//! exit it would be out of the market most of the time and swing less than the other classes).
//!
//! Cost-aware: at intervals under an hour the averages stretch to the same stretch of time
//! (`costs::time_scale`), and a breakout must clear the old high by a round trip's cost (twice
//! that at 5m), so a tick above the high by a hair does not buy. There the channels span 16 hours
//! (as much as the 200-candle window holds at 5m) and the stop is 6 ATR of an hourly candle (ATR
//! grows as √time): 6 ATR of a 5-minute candle would be cut by the swings within an hour.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Highest close since entry (for the trailing stop).
    pub peak: f64,
}

pub struct Gambler;

/// Trailing stop from the peak, in ATR (of an hourly candle under an hour).
const TRAIL_ATR: f64 = 6.0;

/// Candles of the channels at an interval (the high a breakout clears, the low that ends the
/// ride), and what a breakout says.
fn channel(interval: &str) -> (usize, &'static str) {
    match costs::interval_minutes(interval) {
        Some(minutes) if minutes < 60 => (16 * (60 / minutes.max(1)) as usize, "16-hour breakout"),
        _ => (20, "20-candle breakout"),
    }
}

impl Strategy for Gambler {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let k = &ctx.candles;
        let n = k.len();
        let interval = ctx.config.interval.as_str();
        let m = costs::time_scale(interval);
        let (span, breakout) = channel(interval);
        if n < span + 2 {
            return Ok(Vec::new());
        }
        let price = k.close[n - 1];
        // Channel of the candles before this one, so a breakout is a new extreme.
        let (Some(high), Some(low), Some(atr), Some(fast), Some(slow)) = (
            indicators::highest(&k.high[..n - 1], span),
            indicators::lowest(&k.low[..n - 1], span),
            indicators::atr(&k.high, &k.low, &k.close, 14 * m),
            indicators::ema(&k.close, 10 * m),
            indicators::ema(&k.close, 40 * m),
        ) else {
            return Ok(Vec::new());
        };
        if ctx.in_position() {
            state.peak = state.peak.max(price);
            let trail = TRAIL_ATR * costs::hourly_volatility(atr, interval);
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
            return Ok(vec![Order::buy(1.0).because(breakout)]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Gambler);
