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
                // The host's WASI clock reads the tick's time, 1 µs later on each read.
                let nanos = |t: std::time::SystemTime| {
                    t.duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos())
                };
                let first = nanos(std::time::SystemTime::now());
                let second = nanos(std::time::SystemTime::now());
                Err(format!("clock {first} then {second}"))
            }
            #[cfg(feature = "std")]
            "random" => {
                // All three WASI random interfaces, hex, as the order's reason.
                let hex =
                    |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
                let secure = wasip2::random::random::get_random_bytes(16);
                let insecure = wasip2::random::insecure::get_insecure_random_bytes(16);
                let (a, b) = wasip2::random::insecure_seed::insecure_seed();
                Ok(vec![Order::buy(0.01).because(format!(
                    "{} {} {a:016x}{b:016x}",
                    hex(&secure),
                    hex(&insecure)
                ))])
            }
            #[cfg(feature = "std")]
            "open-file" => match std::fs::read("/etc/passwd") {
                Ok(bytes) => Ok(vec![
                    Order::buy(0.01).because(format!("read {}", bytes.len())),
                ]),
                Err(e) => Err(format!(
                    "open failed ({} preopens): {e}",
                    wasip2::filesystem::preopens::get_directories().len()
                )),
            },
            #[cfg(feature = "std")]
            "open-socket" => {
                use wasip2::sockets::network::IpAddressFamily;
                match wasip2::sockets::tcp_create_socket::create_tcp_socket(IpAddressFamily::Ipv4) {
                    Ok(_) => Ok(vec![Order::buy(0.01).because("socket created")]),
                    Err(e) => Err(format!("socket failed: {e:?}")),
                }
            }
            #[cfg(feature = "std")]
            "name-lookup" => {
                let network = wasip2::sockets::instance_network::instance_network();
                match wasip2::sockets::ip_name_lookup::resolve_addresses(&network, "example.com") {
                    Ok(_) => Ok(vec![Order::buy(0.01).because("lookup started")]),
                    Err(e) => Err(format!("lookup failed: {e:?}")),
                }
            }
            #[cfg(feature = "std")]
            "environment" => Ok(vec![Order::buy(0.01).because(format!(
                "env {} args {} cwd {}",
                std::env::vars_os().count(),
                std::env::args_os().count(),
                std::env::current_dir().is_ok()
            ))]),
            #[cfg(feature = "std")]
            "print" => {
                println!("to stdout");
                eprint!("to stderr ");
                eprintln!("in two writes");
                // stderr is unbuffered in Rust's std: this reaches the host without a newline.
                eprint!("no newline at the end");
                Ok(Vec::new())
            }
            #[cfg(feature = "std")]
            "print-flood" => {
                for i in 0..1_000_000u32 {
                    println!("print line {i}");
                }
                Ok(Vec::new())
            }
            "error" => Err("strategy refused this tick".to_string()),
            // Not an attack: an order a fresh paper account must refuse (it holds no base).
            "sell-nothing" => Ok(vec![Order::sell_all().because("nothing to sell yet")]),
            _ => Ok(vec![Order::buy(0.01).because("well behaved")]),
        }
    }
}

crucible_sdk::export!(Hostile);
