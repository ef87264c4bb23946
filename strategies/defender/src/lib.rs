//! Defender: capital preservation. Mostly in quote; takes small positions (15 % of equity) only
//! in a calm uptrend (price above its 50-candle mean, volatility below its usual level), with a
//! tight stop and a target twice as far.
//!
//! Cost-aware: "calm" compares the last 14 candles' volatility with the last 100's, so it means
//! the same at every interval, and the stop is half a day's volatility (measured from the
//! candles), never closer than two round trips of cost nor further than 4 %.

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

/// The stop never lets a position lose more than this, however turbulent the market.
const MAX_STOP: f64 = 0.04;

impl Strategy for Defender {
    type State = State;

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
                state.cooldown = 12 * m as u32;
                return Ok(vec![
                    Order::sell_all().because(format!("{:.1}% stop", stop * 100.0)),
                ]);
            }
            if price >= entry * (1.0 + 2.0 * stop) {
                return Ok(vec![
                    Order::sell_all().because(format!("{:.1}% target", 2.0 * stop * 100.0)),
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
            indicators::sma(close, 50 * m),
            indicators::volatility(close, 14),
            indicators::volatility(close, 100),
        ) else {
            return Ok(Vec::new());
        };
        let calm = recent < usual;
        if price > sma && calm {
            let daily = costs::daily_volatility(usual, &ctx.config.interval);
            state.stop = (0.5 * daily).clamp(2.0 * costs::ROUND_TRIP_COST, MAX_STOP);
            return Ok(vec![Order::buy(0.15).because("calm uptrend")]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Defender);
