//! Test fixture: a strategy built to overfit. Its one parameter, `pattern`, seeds a random
//! long-or-flat schedule (one coin flip per UTC day): no value of it knows anything about the
//! market, so whichever value backtests best did so by luck, and a search over many values
//! "memorises" the path it was run on. `crucible strategy optimize` must say so (a high
//! probability of backtest overfitting, an out-of-sample score no better than chance).

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;

const PATTERN: IntParam = IntParam::new(
    "pattern",
    "seed of the daily long-or-flat schedule (means nothing)",
    0,
    1_000_000,
    0,
);

const DAY_MS: i64 = 86_400_000;

/// SplitMix64's finaliser: a well-mixed bit from (pattern, day).
fn coin(pattern: i64, day: i64) -> bool {
    let mut z = (pattern as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((day as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) & 1 == 1
}

pub struct Overfit;

impl Strategy for Overfit {
    type State = ();

    fn params() -> Vec<ParamSpec> {
        vec![PATTERN.spec()]
    }

    fn on_tick(ctx: &Context, _state: &mut ()) -> Result<Vec<Order>, String> {
        let long = coin(PATTERN.get(ctx), ctx.now.div_euclid(DAY_MS));
        Ok(match (long, ctx.in_position()) {
            (true, false) => vec![Order::buy(1.0).because("the pattern says long")],
            (false, true) => vec![Order::sell_all().because("the pattern says flat")],
            _ => Vec::new(),
        })
    }
}

crucible_sdk::export!(Overfit);
