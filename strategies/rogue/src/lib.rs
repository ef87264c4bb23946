//! Rogue: contrarian mean reversion. Buys when price is stretched two standard deviations
//! below its 20-candle mean (z-score), sells once it has reverted above the mean.

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
        let Some(z) = indicators::zscore(&ctx.candles.close, 20) else {
            return Ok(Vec::new());
        };
        if ctx.in_position() {
            state.held += 1;
            if z > 0.0 {
                state.held = 0;
                return Ok(vec![
                    Order::sell_all().because(format!("reverted (z {z:.1})")),
                ]);
            }
            if state.held > 48 {
                state.held = 0;
                return Ok(vec![Order::sell_all().because("no reversion in 48 ticks")]);
            }
            return Ok(Vec::new());
        }
        if z < -2.0 {
            state.held = 0;
            return Ok(vec![
                Order::buy(0.4).because(format!("stretched (z {z:.1})")),
            ]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Rogue);
