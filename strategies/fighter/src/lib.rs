//! Fighter: technical analysis. Trend entries when EMA(9) pulls clear above EMA(21), filtered
//! by RSI(14) so it does not buy an overbought market; exits when the fast EMA falls clear below
//! the slow one, or on an RSI blow-off once the trade has paid its costs.
//!
//! Cost-aware: the periods stretch at intervals under an hour so they read the same stretch of
//! time (`costs::time_scale`), and "clear" means a gap between the EMAs of at least a round
//! trip's cost or half a candle's volatility, whichever is larger, times that stretch: at 5m the
//! averages must part further, relative to the candles, before it pays to trade, so it does not
//! churn.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Whether the fast EMA was last clearly above (true) or below (false) the slow one.
    pub fast_above: Option<bool>,
}

pub struct Fighter;

impl Strategy for Fighter {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let close = &ctx.candles.close;
        let m = costs::time_scale(&ctx.config.interval);
        let (Some(fast), Some(slow), Some(rsi), Some(sigma), Some(price)) = (
            indicators::ema(close, 9 * m),
            indicators::ema(close, 21 * m),
            indicators::rsi(close, 14 * m),
            indicators::volatility(close, 48),
            ctx.candles.last_close(),
        ) else {
            return Ok(Vec::new());
        };
        // Stretched periods still see only a few hours at 5m: the band widens with the stretch.
        let band = costs::ROUND_TRIP_COST.max(0.5 * sigma) * m as f64;
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
                orders.push(Order::sell_all().because("EMA 9/21 crossed down"));
            } else if rsi > 80.0 && price > entry * (1.0 + 2.0 * costs::ROUND_TRIP_COST) {
                orders.push(Order::sell_all().because(format!("RSI {rsi:.0} overbought")));
            }
        } else if crossed_up && rsi < 70.0 {
            orders.push(Order::buy(0.6).because(format!("EMA 9/21 crossed up, RSI {rsi:.0}")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Fighter);
