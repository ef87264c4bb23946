//! Mage: on-chain analysis. Scores accumulation (tokens leaving exchanges, whales buying,
//! wallets joining), smooths the score in state and holds while accumulation dominates.
//!
//! On-chain flows are weak, noisy information (`docs/markets.md`): cost-aware, the mage smooths
//! over six hours at every interval and widens its entry and exit thresholds where a round trip
//! costs more than a candle's typical move.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::Signals;
use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub score: Option<f64>,
}

pub struct Mage;

/// Half-life of the smoothed score: flows speak about the next hour but their noise comes and
/// goes within hours, so the score averages six hours and the mage holds for a day or so.
const HALF_LIFE_MINUTES: f64 = 6.0 * 60.0;

/// Accumulation score: positive when smart money accumulates.
pub fn accumulation(s: &Signals) -> f64 {
    // Net flow is a small fraction of supply; scale it to the range of the other two.
    -s.exchange_net_flow * 200.0 + s.whale_net_buy + 2.0 * s.active_wallets_change
}

impl Strategy for Mage {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let alpha = costs::smoothing(&ctx.config.interval, HALF_LIFE_MINUTES);
        let now = accumulation(&ctx.signals);
        let score = match state.score {
            Some(prev) => prev + alpha * (now - prev),
            None => now,
        };
        state.score = Some(score);
        let Some(sigma) = indicators::volatility(&ctx.candles.close, 48) else {
            return Ok(Vec::new());
        };
        let cost = costs::cost_in_sigmas(sigma, 2.0);
        let enter = 0.25 + 0.1 * cost;
        let leave = -0.1 - 0.1 * cost;

        let mut orders = Vec::new();
        if !ctx.in_position() && score > enter {
            orders.push(Order::buy(0.5).because(format!("accumulation {score:.2}")));
        } else if ctx.in_position() && score < leave {
            orders.push(Order::sell_all().because(format!("distribution {score:.2}")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Mage);
