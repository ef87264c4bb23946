//! Fighter: technical analysis. Trend entries on an EMA(9)/EMA(21) cross, filtered by RSI(14)
//! so it does not buy an overbought market; exits on the opposite cross or an RSI blow-off.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Whether the fast EMA was above the slow one on the previous tick.
    pub fast_above: Option<bool>,
}

pub struct Fighter;

impl Strategy for Fighter {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let close = &ctx.candles.close;
        let (Some(fast), Some(slow), Some(rsi)) = (
            indicators::ema(close, 9),
            indicators::ema(close, 21),
            indicators::rsi(close, 14),
        ) else {
            return Ok(Vec::new());
        };
        let above = fast > slow;
        let crossed_up = above && state.fast_above == Some(false);
        let crossed_down = !above && state.fast_above == Some(true);
        state.fast_above = Some(above);

        let mut orders = Vec::new();
        if ctx.in_position() {
            if crossed_down {
                orders.push(Order::sell_all().because("EMA 9/21 crossed down"));
            } else if rsi > 80.0 {
                orders.push(Order::sell_all().because(format!("RSI {rsi:.0} overbought")));
            }
        } else if crossed_up && rsi < 70.0 {
            orders.push(Order::buy(0.6).because(format!("EMA 9/21 crossed up, RSI {rsi:.0}")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Fighter);
