//! Test fixture: a strategy whose parameter has a real and lasting effect. It holds half its
//! equity in the base token; `churn` is how many needless round trips (sell 1 % of equity, buy
//! it back) it makes every hour, on the candle that opens the hour. Each round trip only pays
//! fees and slippage, so less churn is better in every window of every market:
//! `crucible strategy optimize` must find `churn = 0` and see that its ranking holds out of
//! sample (a low probability of backtest overfitting).

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;

const CHURN: IntParam = IntParam::new(
    "churn",
    "needless round trips per hour (each only costs fees)",
    0,
    7,
    3,
);

const HOUR_MS: i64 = 3_600_000;

pub struct Robust;

impl Strategy for Robust {
    type State = ();

    fn params() -> Vec<ParamSpec> {
        vec![CHURN.spec()]
    }

    fn on_tick(ctx: &Context, _state: &mut ()) -> Result<Vec<Order>, String> {
        let mut orders = Vec::new();
        if !ctx.in_position() {
            orders.push(Order::buy(0.5).because("hold half"));
        } else if ctx.candles.ts.last().is_some_and(|ts| ts % HOUR_MS == 0) {
            for _ in 0..CHURN.get(ctx) {
                orders.push(Order::sell(0.01).because("churn"));
                orders.push(Order::buy(0.01).because("churn back"));
            }
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Robust);
