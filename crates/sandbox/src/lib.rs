//! The strategy sandbox: runs class strategies as WebAssembly components.
//!
//! Owns the wasmtime [`Engine`](wasmtime::Engine) (pooling allocator, fuel), the on-disk cache of
//! compiled components, the `host.log` import, the deterministic WASI of std guests (`wasi`), and
//! the per-tick limits. A tick is a fresh
//! `Store` and instance, so nothing leaks between ticks or agents; whatever goes wrong inside a
//! guest (trap, timeout, memory, flood, malformed output) becomes a [`TickFault`] for that tick
//! alone. A tick never touches the database, the market or the ledger: callers hand it a
//! [`TickInput`] and get orders back. Backtests ([`run_backtest`]) drive ticks over a
//! [`MarketFeed`](crucible_market::MarketFeed) with a paper [`Ledger`](crucible_paper::Ledger),
//! the crates below this one; nothing here knows HTTP, the database or the server.
//!
//! The built-in strategies and test guests are built for `wasm32-wasip2` by this crate's
//! `build.rs` and embedded ([`builtin_component`], [`test_guest`]).
//!
//! Three versions of the contract are served side by side (`wit/README.md`): `0.1.0`, `0.2.0`,
//! which adds the agent's language model, and `0.3.0`, which adds tunable parameters (read once
//! at load, [`LoadedStrategy::params`]; passed on every tick in [`AgentSettings::params`]). Components that never import `model` tick on the
//! synchronous engine (the fast path); those that do tick on a second, asynchronous engine
//! ([`Sandbox::tick_async`]) so a tick waiting for a model holds no OS thread. The sandbox knows
//! nothing of providers: the host hands it a [`ModelPort`].

#![warn(unreachable_pub, missing_docs)]

mod async_tick;
mod backtest;
mod builtin;
mod cache;
mod declare;
mod engine;
mod gate;
mod model;
#[cfg(test)]
mod model_tests;
pub mod report;
mod tick;
mod wasi;

pub use backtest::{
    BacktestReport, BacktestSpec, FaultRecord, Proposal, TradeRecord, run_backtest,
    run_backtest_reviewed,
};
pub use builtin::{BUILTIN_CLASSES, builtin_component, test_guest};
pub use crucible_optimize::params::{Param, ParamKind, ParamSpec, ParamValue};
pub use engine::{LoadedStrategy, Profile, Sandbox};
pub use model::{ModelCall, ModelFailure, ModelPort, ModelReply, ModelRole};
pub use tick::{AgentSettings, LogLine, TickInput, TickOutcome};

use std::path::PathBuf;

/// Generated host bindings of every served version of the contract. 0.2.0 added the `model`
/// interface and 0.3.0 tunable parameters (`params` export, `tick-context.params`); every other
/// type is the same, so `tick` converts to and from each with one macro.
pub(crate) mod wit {
    /// `wit/v0.1.0/strategy.wit`: `crucible:strategy@0.1.0`, kept so its components run unchanged.
    pub(crate) mod v0_1 {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.1.0",
            world: "strategy",
            imports: { default: trappable },
        });
    }

    /// `wit/v0.2.0/strategy.wit`: `crucible:strategy@0.2.0`, kept so its components run
    /// unchanged. `model.complete` is an async host function: a tick waiting for the model
    /// yields its thread.
    pub(crate) mod v0_2 {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.2.0",
            world: "strategy",
            imports: {
                "crucible:strategy/model.complete": async | trappable,
                default: trappable,
            },
        });
    }

    /// `wit/strategy.wit`: `crucible:strategy@0.3.0`, the current version (wit-parser reads only
    /// the `*.wit` files of `wit/` itself, so the archived versions beside it are not part of
    /// this package).
    pub(crate) mod v0_3 {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "strategy",
            imports: {
                "crucible:strategy/model.complete": async | trappable,
                default: trappable,
            },
        });
    }
}

/// Limits and resources of the sandbox, with their defaults.
///
/// Components come in two profiles, decided when they load (`Profile`): *bare* components import
/// nothing but `host.log` (the `no_std` Rust strategies) and keep small limits; *runtime*
/// components bring a language runtime over WASI (Python, JavaScript, Rust `std`) and get the
/// larger memory limit, but only `runtime_concurrent_ticks` of them tick at once, so a node's
/// memory stays bounded whatever authors upload.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Linear memory a bare guest may grow to, bytes (16 MiB).
    pub max_memory_bytes: usize,
    /// Linear memory a runtime guest may grow to, bytes (256 MiB; per deployment).
    pub runtime_memory_bytes: usize,
    /// Runtime guests ticking at the same time on this node (4).
    pub runtime_concurrent_ticks: usize,
    /// Fuel (≈ wasm instructions) per tick of a bare guest. Fuel rather than wall time keeps
    /// backtests deterministic; 20 M is about 10 ms of guest time on this machine class.
    pub fuel_per_tick: u64,
    /// Fuel per tick of a runtime guest: an interpreter spends many instructions per line of
    /// the strategy (see `docs/strategies.md` for what a tick of the Python example costs).
    pub runtime_fuel_per_tick: u64,
    /// Wall-clock guard behind fuel (epoch interruption): a tick still running after this is
    /// stopped even if it burns no fuel, e.g. blocked in a host call (2 s).
    pub tick_wall_time: std::time::Duration,
    /// Fuel charged per byte a guest passes to `log` or writes to stdout/stderr: copying its
    /// output is work the host does on the guest's behalf, so it counts against the tick.
    pub log_fuel_per_byte: u64,
    /// Largest component accepted for loading, bytes (40 MiB; per deployment).
    pub max_component_bytes: usize,
    /// Compilations running at the same time on this node (1): compiling a large component
    /// takes seconds of CPU, which must not starve requests and ticks.
    pub compile_workers: usize,
    /// Longest a compilation may take, waiting for a worker included (120 s).
    pub compile_timeout: std::time::Duration,
    /// Log lines kept per tick (32).
    pub max_log_lines: usize,
    /// Bytes kept per log line (1 KiB).
    pub max_log_line_bytes: usize,
    /// `log` calls after which the tick is stopped as a flood.
    pub log_flood_calls: u32,
    /// Bytes a guest may pass to the host in one call: a `log` line, or the whole `on-tick`
    /// result (wasmtime's hostcall fuel). Above `max_state_bytes` plus a full order list.
    pub max_hostcall_bytes: usize,
    /// Orders accepted per tick (16).
    pub max_orders: usize,
    /// Bytes of state kept between ticks (64 KiB).
    pub max_state_bytes: usize,
    /// Ticks that may run at the same time (size of the instance pool).
    pub max_concurrent_ticks: u32,
    /// Ticks of components that use the model which may be in progress at once, most of them
    /// waiting for an answer (size of the second engine's instance pool; 1024). A tick beyond
    /// them waits, without a thread, up to `tick_wall_time` for a slot. Each slot reserves
    /// address space for two linear memories (wasmtime's 4 GiB reservation each: about 8 TiB
    /// for 1024 slots, of the 128 TiB a 64-bit process has); memory is committed only as
    /// guests touch it.
    pub max_model_ticks: u32,
    /// `model.complete` calls one tick of an uploaded component may make (4); the calls beyond
    /// answer `budget-exhausted` without reaching the model.
    pub max_model_calls_per_tick: u32,
    /// Where compiled components are cached (`<data_dir>/components`); `None` = memory only.
    pub cache_dir: Option<PathBuf>,
    /// Key of the HMAC that authenticates every cached artifact before it is deserialised
    /// (derived from the master key by the server; a compiled artifact is native code).
    pub cache_key: [u8; 32],
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            max_memory_bytes: 16 << 20,
            runtime_memory_bytes: 256 << 20,
            runtime_concurrent_ticks: 4,
            fuel_per_tick: 20_000_000,
            runtime_fuel_per_tick: 200_000_000,
            tick_wall_time: std::time::Duration::from_secs(2),
            log_fuel_per_byte: 16,
            max_component_bytes: 40 << 20,
            compile_workers: 1,
            compile_timeout: std::time::Duration::from_secs(120),
            max_log_lines: 32,
            max_log_line_bytes: 1024,
            log_flood_calls: 1_000,
            max_hostcall_bytes: 256 << 10,
            max_orders: 16,
            max_state_bytes: 64 << 10,
            max_concurrent_ticks: 32,
            max_model_ticks: 1024,
            max_model_calls_per_tick: 4,
            cache_dir: None,
            cache_key: [0; 32],
        }
    }
}

impl SandboxConfig {
    /// Defaults with the component cache under `<data_dir>/components`, authenticated with
    /// `cache_key`.
    pub fn with_data_dir(data_dir: impl Into<PathBuf>, cache_key: [u8; 32]) -> Self {
        SandboxConfig {
            cache_dir: Some(data_dir.into().join("components")),
            cache_key,
            ..Self::default()
        }
    }
}

/// Why a component could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Larger than `max_component_bytes`.
    #[error("component is {size} bytes; the limit is {limit}")]
    TooLarge {
        /// The component's size, bytes.
        size: usize,
        /// The limit, bytes.
        limit: usize,
    },
    /// Not a WebAssembly component, or one wasmtime refuses.
    #[error("not a WebAssembly component: {0}")]
    Invalid(String),
    /// A component of another world or contract version.
    #[error(
        "component does not target crucible:strategy/strategy (0.1.0, 0.2.0 or 0.3.0, the versions this host serves): {0}"
    )]
    WrongWorld(String),
    /// Its `params` export failed, or declared parameters the host refuses.
    #[error("the component's parameter declaration: {0}")]
    Params(String),
    /// The on-disk cache of compiled components failed.
    #[error("component cache: {0}")]
    Cache(#[from] std::io::Error),
    /// wasmtime could not build an engine or link the host functions.
    #[error("sandbox engine: {0}")]
    Engine(String),
    /// Compilation (waiting for a worker included) took longer than `compile_timeout`.
    #[error("compiling the component took longer than {0:?}; make it smaller")]
    CompileTimeout(std::time::Duration),
}

/// Why one tick failed. The tick's orders are dropped; the agent goes on next tick.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TickFault {
    /// Out of fuel, or stopped by the wall-clock guard.
    #[error("ran out of fuel (time limit per tick)")]
    Timeout,
    /// Tried to grow linear memory past the profile's limit.
    #[error("tried to grow memory past {limit} bytes")]
    MemoryLimit {
        /// The limit, bytes.
        limit: usize,
    },
    /// Runaway recursion.
    #[error("call stack exhausted (runaway recursion)")]
    StackOverflow,
    /// Too many `log` calls in one tick.
    #[error("logged more than {limit} lines in one tick")]
    LogFlood {
        /// The limit, calls.
        limit: u32,
    },
    /// One call handed the host more than `max_hostcall_bytes`.
    #[error("passed more than {limit} bytes to the host in one call (log line or output)")]
    OutputTooLarge {
        /// The limit, bytes.
        limit: usize,
    },
    /// Any other trap (unreachable, out-of-bounds access, ...).
    #[error("guest trapped: {0}")]
    Trap(String),
    /// Orders or state the host refuses (too many, malformed, too large).
    #[error("invalid output: {0}")]
    InvalidOutput(String),
    /// `on-tick` returned its error case.
    #[error("strategy returned an error: {0}")]
    StrategyError(String),
    /// No instance slot was free in time, or instantiation failed.
    #[error("no free instance slot or instantiation failed: {0}")]
    Instantiate(String),
}

impl TickFault {
    /// Stable short name recorded with the fault (logs, database, API).
    pub fn kind(&self) -> &'static str {
        match self {
            TickFault::Timeout => "timeout",
            TickFault::MemoryLimit { .. } => "memory_limit",
            TickFault::StackOverflow => "stack_overflow",
            TickFault::LogFlood { .. } => "log_flood",
            TickFault::OutputTooLarge { .. } => "output_too_large",
            TickFault::Trap(_) => "trap",
            TickFault::InvalidOutput(_) => "invalid_output",
            TickFault::StrategyError(_) => "strategy_error",
            TickFault::Instantiate(_) => "instantiate",
        }
    }
}
