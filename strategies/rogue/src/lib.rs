//! Rogue: contrarian mean reversion. Buys when price is stretched two standard deviations
//! below its 20-candle mean (z-score), sells once it has reverted above the mean; gives up when
//! the stretch doubles or the reversion does not come.
//!
//! Cost-aware: the mean spans the same stretch of time at every interval (`costs::time_scale`),
//! and the way back to it must be worth at least two round trips of cost times that stretch (at
//! 5m the same stretch of time holds four times as many candles, each a chance to enter), so
//! small stretches of quiet 5-minute candles are left alone.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Ticks spent in the current position (gives up on a reversion that never comes).
    pub held: u32,
}

pub struct Rogue;

impl Strategy for Rogue {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let m = costs::time_scale(&ctx.config.interval);
        let close = &ctx.candles.close;
        let (Some(z), Some(mean), Some(price)) = (
            indicators::zscore(close, 20 * m),
            indicators::sma(close, 20 * m),
            ctx.candles.last_close(),
        ) else {
            return Ok(Vec::new());
        };
        let patience = 48 * m as u32;
        if ctx.in_position() {
            state.held += 1;
            if z > 0.0 {
                state.held = 0;
                return Ok(vec![
                    Order::sell_all().because(format!("reverted (z {z:.1})")),
                ]);
            }
            if z < -4.0 {
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
        if z < -2.0 && room > 2.0 * costs::ROUND_TRIP_COST * m as f64 {
            state.held = 0;
            return Ok(vec![
                Order::buy(0.4).because(format!("stretched (z {z:.1})")),
            ]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Rogue);
