//! {{name}}: a Crucible strategy. Buys when the fast EMA (`fast` candles, 12 by default) crosses
//! over the slow one with RSI not overbought, sells on the opposite cross. Change `on_tick` and
//! rebuild.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Whether the fast EMA was above the slow one on the previous tick.
    pub fast_above: Option<bool>,
}

pub struct Strategy;

/// A tunable parameter: an operator sets it per agent (`strategy.params`), `crucible strategy
/// optimize` searches its range, and the default runs otherwise. Declare more the same way
/// (`FloatParam`, `ChoiceParam`), list them in `params` and read them with `.get(ctx)`.
const FAST: IntParam = IntParam::new("fast", "fast EMA period, candles", 3, 30, 12);

impl crucible_sdk::prelude::Strategy for Strategy {
    type State = State;

    fn params() -> Vec<ParamSpec> {
        vec![FAST.spec()]
    }

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let close = &ctx.candles.close;
        let period = FAST.get_usize(ctx);
        let (Some(fast), Some(slow), Some(rsi)) = (
            indicators::ema(close, period),
            indicators::ema(close, 48),
            indicators::rsi(close, 14),
        ) else {
            return Ok(Vec::new());
        };
        let above = fast > slow;
        let crossed_up = above && state.fast_above == Some(false);
        let crossed_down = !above && state.fast_above == Some(true);
        state.fast_above = Some(above);
        if ctx.in_position() && crossed_down {
            return Ok(vec![
                Order::sell_all().because(format!("EMA {period}/48 crossed down")),
            ]);
        }
        if !ctx.in_position() && crossed_up && rsi < 70.0 {
            return Ok(vec![
                Order::buy(0.5).because(format!("EMA {period}/48 crossed up")),
            ]);
        }
        Ok(Vec::new())
    }
}

crucible_sdk::export!(Strategy);
