//! Test fixture: a `crucible:strategy@0.2.0` strategy that asks the model as its agent's
//! `personality` says, so host tests can see every answer and every error reach the guest.
//!
//! The personality is words: `ask N` asks N times (one user message `tick <now> question <i>`,
//! 16 tokens, temperature 0.5); `schema` adds a JSON schema to each request; `spin` loops
//! forever after the last answer (the wall-time guard must still stop it). Each answer becomes
//! one order: text `buy 0.5` buys 0.5 of equity, `sell 0.3` sells; each error (or an answer that
//! is no order) becomes a sell-all whose reason says `model error: <case>`, e.g.
//! `model error: no-key`.

#![cfg_attr(target_arch = "wasm32", no_std)]

use core::hint::black_box;
use crucible_sdk::model::{ModelError, ModelRequest, ask_model};
use crucible_sdk::prelude::*;

pub struct Probe;

/// What the personality asks for.
struct Plan {
    asks: u32,
    schema: bool,
    spin: bool,
}

fn plan(personality: &str) -> Plan {
    let mut plan = Plan {
        asks: 0,
        schema: false,
        spin: false,
    };
    let mut words = personality.split_whitespace();
    while let Some(word) = words.next() {
        match word {
            "ask" => plan.asks = words.next().and_then(|n| n.parse().ok()).unwrap_or(1),
            "schema" => plan.schema = true,
            "spin" => plan.spin = true,
            _ => {}
        }
    }
    plan
}

/// `buy 0.5` / `sell 0.3` as an order.
fn order_of(text: &str) -> Option<Order> {
    let mut words = text.split_whitespace();
    let side = words.next()?;
    let fraction: f64 = words.next()?.parse().ok()?;
    let reason = format!("model: {}", text.trim());
    match side {
        "buy" => Some(Order::buy(fraction).because(reason)),
        "sell" => Some(Order::sell(fraction).because(reason)),
        _ => None,
    }
}

fn failed(error: &ModelError) -> Order {
    Order::sell_all().because(format!("model error: {error}"))
}

impl Strategy for Probe {
    type State = ();

    fn on_tick(ctx: &Context, _state: &mut ()) -> Result<Vec<Order>, String> {
        let plan = plan(&ctx.config.personality);
        let mut orders = Vec::new();
        for i in 0..plan.asks {
            let mut request = ModelRequest::new(format!("tick {} question {i}", ctx.now))
                .max_tokens(16)
                .temperature(0.5);
            if plan.schema {
                request = request.json_schema(r#"{"type":"string"}"#);
            }
            let order = match ask_model(request) {
                Ok(answer) => order_of(&answer.text).unwrap_or_else(|| {
                    failed(&ModelError::Malformed(format!(
                        "no order in {:?}",
                        answer.text
                    )))
                }),
                Err(error) => failed(&error),
            };
            orders.push(order);
        }
        if plan.spin {
            let mut x = 0u64;
            loop {
                x = black_box(x.wrapping_add(1));
            }
        }
        Ok(orders)
    }
}

crucible_sdk::export!(Probe);
