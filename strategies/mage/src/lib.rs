//! Mage: on-chain analysis. Scores accumulation (tokens leaving exchanges, whales buying,
//! wallets joining), smooths the score in state and holds while accumulation dominates.

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::Signals;
use crucible_sdk::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub score: Option<f64>,
}

pub struct Mage;

/// Accumulation score: positive when smart money accumulates.
pub fn accumulation(s: &Signals) -> f64 {
    // Net flow is a small fraction of supply; scale it to the range of the other two.
    -s.exchange_net_flow * 200.0 + s.whale_net_buy + 2.0 * s.active_wallets_change
}

impl Strategy for Mage {
    type State = State;

    fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
        let now = accumulation(&ctx.signals);
        let score = match state.score {
            Some(prev) => prev + 0.4 * (now - prev),
            None => now,
        };
        state.score = Some(score);

        let mut orders = Vec::new();
        if !ctx.in_position() && score > 0.3 {
            orders.push(Order::buy(0.5).because(format!("accumulation {score:.2}")));
        } else if ctx.in_position() && score < -0.1 {
            orders.push(Order::sell_all().because(format!("distribution {score:.2}")));
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Mage);
