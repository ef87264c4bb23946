//! Test fixture: a strategy that attacks the host in the way its agent's `personality` names.
//! One component for every attack keeps the nested guest build short. Any other personality
//! behaves (one small buy), so tests can check that well-behaved agents go on.
//!
//! Built `no_std` (the SDK's default runtime) and with the `std` feature (Rust's runtime and its
//! WASI imports); the attacks must end the same way in both.

#![cfg_attr(all(target_arch = "wasm32", not(feature = "std")), no_std)]

use core::hint::black_box;
use crucible_sdk::prelude::*;

pub struct Hostile;

#[inline(never)]
#[expect(
    unconditional_recursion,
    reason = "the point of the fixture: recursion that never ends"
)]
fn recurse(depth: u64, pad: &mut [u8; 256]) -> u64 {
    pad[(depth % 256) as usize] = depth as u8;
    // black_box keeps the recursion a real call chain (no tail-call or loop rewrite).
    1 + recurse(black_box(depth + 1), black_box(pad))
}

impl Strategy for Hostile {
    // A string: postcard copies it in one go, so `huge-output` tests the output limit, not fuel.
    type State = String;

    fn on_tick(ctx: &Context, state: &mut String) -> Result<Vec<Order>, String> {
        match ctx.config.personality.as_str() {
            "infinite-loop" => {
                let mut x = 0u64;
                loop {
                    x = black_box(x.wrapping_add(1));
                }
            }
            "memory-bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    black_box(&hoard);
                }
            }
            "deep-recursion" => {
                let mut pad = [0u8; 256];
                let n = recurse(0, &mut pad);
                Err(format!("returned from recursion {n}"))
            }
            "huge-output" => {
                // 4 MiB of state: far over the 64 KiB the host keeps.
                *state = "x".repeat(4 << 20);
                Ok(Vec::new())
            }
            "many-orders" => Ok((0..100).map(|_| Order::buy(0.0001)).collect()),
            "log-flood" => {
                for i in 0..1_000_000u32 {
                    log(Level::Info, &format!("flood line {i}"));
                }
                Ok(Vec::new())
            }
            "bad-order" => Ok(vec![Order::buy(f64::NAN)]),
            "panic" => panic!("strategy panicked on purpose"),
            "big-alloc" => {
                // Far beyond the initial memory's tail: the heap must grow, then still work.
                let big = vec![7u8; 3 << 20];
                Ok(vec![
                    Order::buy(0.01).because(format!("allocated {}", big.len())),
                ])
            }
            #[cfg(feature = "std")]
            "read-clock" => {
                // WASI is declared by every std guest but granted to none: this must trap.
                let now = std::time::SystemTime::now();
                Err(format!("read the clock: {now:?}"))
            }
            "error" => Err("strategy refused this tick".to_string()),
            _ => Ok(vec![Order::buy(0.01).because("well behaved")]),
        }
    }
}

crucible_sdk::export!(Hostile);
