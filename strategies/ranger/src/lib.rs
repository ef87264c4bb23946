//! Ranger: social sentiment. Smooths the sentiment signal (EMA kept in state) and rides the
//! crowd when it is bullish with normal or rising mention volume; leaves when the mood turns.
//!
//! Sentiment is weak, noisy information (`docs/markets.md`): cost-aware, the ranger smooths it
//! over half a day at every interval (so it holds for days, not candles) and asks for a stronger
//! mood, and a clearer turn, where a round trip costs more than a candle's typical move.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Exponentially smoothed sentiment; `None` before the first tick.
    pub mood: Option<f64>,
}

pub struct Ranger;

/// Half-life of the smoothed mood: sentiment speaks about the next hours, its noise lasts as
/// long, so the mood averages half a day.
const HALF_LIFE_MINUTES: f64 = 12.0 * 60.0;

impl Strategy for Ranger {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let alpha = costs::smoothing(&ctx.config.interval, HALF_LIFE_MINUTES);
        let s = ctx.signals.sentiment;
        let mood = match state.mood {
            Some(mood) => mood + alpha * (s - mood),
            None => s,
        };
        state.mood = Some(mood);
        let Some(sigma) = indicators::volatility(&ctx.candles.close, 48) else {
            return Ok(Vec::new());
        };
        let cost = costs::cost_in_sigmas(sigma, 2.0);
        let enter = 0.2 + 0.1 * cost;
        let leave = -0.05 - 0.1 * cost;

        let mut orders = Vec::new();
        if !ctx.in_position() && mood > enter && ctx.signals.mention_volume > 0.9 {
            orders.push(Order::buy(0.5).because(format!("crowd bullish ({mood:.2})")));
        } else if ctx.in_position() && mood < leave {
            orders.push(Order::sell_all().because(format!("crowd turned ({mood:.2})")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Ranger);
