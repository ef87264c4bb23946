//! Defender: capital preservation. Mostly in quote; takes small positions (15 % of equity) only
//! in a calm uptrend (price above SMA(50), low ATR), with a tight 2 % stop and 4 % target.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Ticks to wait after a stop-out before entering again.
    pub cooldown: u32,
}

pub struct Defender;

impl Strategy for Defender {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let k = &ctx.candles;
        let Some(price) = k.last_close() else {
            return Ok(Vec::new());
        };
        if ctx.in_position() {
            let entry = ctx.portfolio.avg_entry_price.unwrap_or(price);
            if price <= entry * 0.98 {
                state.cooldown = 12;
                return Ok(vec![Order::sell_all().because("2% stop")]);
            }
            if price >= entry * 1.04 {
                return Ok(vec![Order::sell_all().because("4% target")]);
            }
            return Ok(Vec::new());
        }
        if state.cooldown > 0 {
            state.cooldown -= 1;
            return Ok(Vec::new());
        }
        let (Some(sma), Some(atr)) = (
            indicators::sma(&k.close, 50),
            indicators::atr(&k.high, &k.low, &k.close, 14),
        ) else {
            return Ok(Vec::new());
        };
        let calm = atr / price < 0.012;
        if price > sma && calm {
            return Ok(vec![Order::buy(0.15).because("calm uptrend")]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Defender);
