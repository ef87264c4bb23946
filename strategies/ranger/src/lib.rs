//! Ranger: social sentiment. Smooths the sentiment signal (EMA kept in state) and rides the
//! crowd when it is bullish on rising mention volume; leaves when the mood turns.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Exponentially smoothed sentiment; `None` before the first tick.
    pub mood: Option<f64>,
}

pub struct Ranger;

const ALPHA: f64 = 0.3;

impl Strategy for Ranger {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let s = ctx.signals.sentiment;
        let mood = match state.mood {
            Some(m) => m + ALPHA * (s - m),
            None => s,
        };
        state.mood = Some(mood);

        let mut orders = Vec::new();
        if !ctx.in_position() && mood > 0.2 && ctx.signals.mention_volume > 0.9 {
            orders.push(Order::buy(0.5).because(format!("crowd bullish ({mood:.2})")));
        } else if ctx.in_position() && mood < -0.05 {
            orders.push(Order::sell_all().because(format!("crowd turned ({mood:.2})")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Ranger);
