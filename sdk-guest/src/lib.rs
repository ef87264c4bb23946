//! `crucible-sdk`: write a Crucible strategy as one trait impl and one `export!` line.
//!
//! The host calls a strategy once per tick with a [`Context`] (agent configuration, recent
//! candles, market signals, paper portfolio) and the strategy's own typed state from the previous
//! tick. The strategy returns the [`Order`]s to place and mutates its state; the SDK encodes the
//! state into the blob the host keeps (postcard) and decodes it on the next tick.
//!
//! ```
//! #![cfg_attr(target_arch = "wasm32", no_std)]
//!
//! use crucible_sdk::prelude::*;
//!
//! #[derive(Default, serde::Serialize, serde::Deserialize)]
//! pub struct State { ticks: u64 }
//!
//! pub struct Hodl;
//!
//! impl Strategy for Hodl {
//!     type State = State;
//!     fn on_tick(ctx: &Context, state: &mut State) -> Result<Vec<Order>, String> {
//!         state.ticks += 1;
//!         if ctx.portfolio.base == 0.0 {
//!             return Ok(vec![Order::buy(0.5).because("first tick")]);
//!         }
//!         Ok(Vec::new())
//!     }
//! }
//!
//! crucible_sdk::export!(Hodl);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`, then try it with
//! `crucible strategy backtest target/wasm32-wasip2/release/<name>.wasm`.
//!
//! A strategy may also ask the agent's language model: see [`model::ask_model`].
//!
//! The same strategy compiles natively (the `export!` line only emits the component export
//! on `wasm32`), so its logic can be unit-tested with plain `cargo test`.
//!
//! # `no_std` by default
//! On wasm32 the SDK is `no_std` + `alloc` and brings the component's heap, panic handler (the
//! tick faults as a trap) and `cabi_realloc`. A strategy crate
//! starts with `#![cfg_attr(target_arch = "wasm32", no_std)]` and `use crucible_sdk::prelude::*;`
//! for `Vec`, `String`, `format!` and friends. The host instantiates a component every tick, and
//! Rust's `std` on `wasm32-wasip2` adds WASI plumbing that makes each tick about 4 µs slower.
//! A strategy that needs `std` enables the SDK's `std` feature and drops the `no_std` line.

#![cfg_attr(all(target_arch = "wasm32", not(feature = "std")), no_std)]
// A public library: what is `pub` is its API, and nothing else says `pub`.
#![warn(unreachable_pub)]

extern crate alloc;

pub mod costs;
pub mod indicators;
pub mod model;
pub mod params;
pub mod prelude;
#[cfg(all(target_arch = "wasm32", not(feature = "std")))]
mod runtime;
mod types;

pub use params::{ChoiceParam, FloatParam, IntParam, ParamKind, ParamSpec, ParamValue, Params};
pub use types::{AgentConfig, Candles, Context, Level, Order, Portfolio, Side, Signals, Size};

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Serialize, de::DeserializeOwned};

/// The generated bindings of `wit/strategy.wit` (`crucible:strategy@0.3.0`). Not part of the
/// API: use the types above. A component imports only what it calls: one that never calls
/// [`model::ask_model`] does not import `model`.
#[doc(hidden)]
pub mod __bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "strategy",
        pub_export_macro: true,
        export_macro_name: "__export_strategy",
        default_bindings_module: "crucible_sdk::__bindings",
    });
}

/// A trading strategy: a pure function of the tick's context and its own state.
pub trait Strategy {
    /// State kept between ticks (serialised with postcard; keep it small, at most 64 KiB).
    /// A state that no longer decodes (e.g. after a change of this type) restarts from
    /// `Default`.
    type State: Serialize + DeserializeOwned + Default;

    /// Decide this tick's orders. An `Err` skips the tick and is recorded as a strategy fault.
    fn on_tick(ctx: &Context, state: &mut Self::State) -> Result<Vec<Order>, String>;

    /// The tunable parameters (see [`params`]): what an operator may set when creating an agent
    /// and what `crucible strategy optimize` searches. None by default.
    fn params() -> Vec<ParamSpec> {
        Vec::new()
    }
}

/// Write a line to the agent's log (capped by the host: 1 KiB a line, 32 lines a tick).
/// A component that calls this anywhere imports `host.log`, which adds about 2 µs to each tick.
/// Outside a component (native tests) this does nothing.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    __bindings::crucible::strategy::host::log(level.into(), message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// Decode the state, run the strategy, encode the new state. Used by [`export!`].
#[doc(hidden)]
pub fn __run<S: Strategy>(
    ctx: __bindings::crucible::strategy::types::TickContext,
) -> Result<__bindings::crucible::strategy::types::TickOutput, String> {
    let (context, blob) = Context::from_wit(ctx);
    let mut state = decode_state::<S::State>(&blob);
    let orders = S::on_tick(&context, &mut state)?;
    let state =
        postcard::to_allocvec(&state).map_err(|e| alloc::format!("state does not encode: {e}"))?;
    Ok(__bindings::crucible::strategy::types::TickOutput {
        orders: orders.into_iter().map(Order::into_wit).collect(),
        state,
    })
}

/// The declaration, as the host reads it. Used by [`export!`].
#[doc(hidden)]
pub fn __params<S: Strategy>() -> Vec<__bindings::crucible::strategy::types::ParamSpec> {
    S::params().into_iter().map(params::spec_into_wit).collect()
}

/// Decode a state blob; empty or undecodable blobs give `Default` (a fresh start).
///
/// Silently: logging from the SDK would make every component import `host.log`, and that
/// import alone costs a tick ~2 µs (the canonical ABI needs two glue core modules to hand the
/// host the guest's memory).
pub fn decode_state<T: DeserializeOwned + Default>(blob: &[u8]) -> T {
    postcard::from_bytes::<T>(blob).unwrap_or_default()
}

/// Encode a state the way the host will hand it back (for native tests of a strategy).
pub fn encode_state<T: Serialize>(state: &T) -> Vec<u8> {
    postcard::to_allocvec(state).unwrap_or_default()
}

/// Export a [`Strategy`] as the component's `on-tick` and `params`. One line per strategy crate:
/// `crucible_sdk::export!(MyStrategy);`
#[macro_export]
macro_rules! export {
    ($strategy:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __CrucibleExport;
            impl $crate::__bindings::Guest for __CrucibleExport {
                fn on_tick(
                    ctx: $crate::__bindings::crucible::strategy::types::TickContext,
                ) -> ::core::result::Result<
                    $crate::__bindings::crucible::strategy::types::TickOutput,
                    $crate::prelude::String,
                > {
                    $crate::__run::<$strategy>(ctx)
                }

                fn params() -> $crate::prelude::Vec<
                    $crate::__bindings::crucible::strategy::types::ParamSpec,
                > {
                    $crate::__params::<$strategy>()
                }
            }
            $crate::__bindings::__export_strategy!(__CrucibleExport with_types_in $crate::__bindings);
        };
    };
}
