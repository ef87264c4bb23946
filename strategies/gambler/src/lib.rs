//! Gambler: high-risk momentum. Goes all in (up to maxAllocation) when price breaks above its
//! 20-candle high; rides it until a 10-candle low breaks or price falls 3 ATR from its peak.

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
        if n < 22 {
            return Ok(Vec::new());
        }
        let price = k.close[n - 1];
        // Channel of the candles before this one, so a breakout is a new extreme.
        let (Some(high20), Some(low10), Some(atr)) = (
            indicators::highest(&k.high[..n - 1], 20),
            indicators::lowest(&k.low[..n - 1], 10),
            indicators::atr(&k.high, &k.low, &k.close, 14),
        ) else {
            return Ok(Vec::new());
        };
        if ctx.in_position() {
            state.peak = state.peak.max(price);
            if price < low10 || price < state.peak - 3.0 * atr {
                state.peak = 0.0;
                return Ok(vec![Order::sell_all().because("momentum lost")]);
            }
            return Ok(Vec::new());
        }
        if price > high20 {
            state.peak = price;
            return Ok(vec![Order::buy(1.0).because("20-candle breakout")]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Gambler);
