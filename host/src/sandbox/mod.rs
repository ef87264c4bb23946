//! The strategy sandbox: runs class strategies as WebAssembly components.
//!
//! Owns the wasmtime [`Engine`](wasmtime::Engine) (pooling allocator, fuel), the on-disk cache of
//! compiled components, the `host.log` import, the deterministic WASI of std guests (`wasi`), and
//! the per-tick limits. A tick is a fresh
//! `Store` and instance, so nothing leaks between ticks or agents; whatever goes wrong inside a
//! guest (trap, timeout, memory, flood, malformed output) becomes a [`TickFault`] for that tick
//! alone. This module never touches the database, the market or the ledger: callers hand it a
//! [`TickInput`] and get orders back.

mod backtest;
mod builtin;
mod cache;
mod engine;
pub mod report;
mod tick;
mod wasi;

pub use backtest::{BacktestReport, BacktestSpec, FaultRecord, TradeRecord, run_backtest};
pub use builtin::{BUILTIN_CLASSES, builtin_component, test_guest};
pub use engine::{LoadedStrategy, Sandbox};
pub use tick::{AgentSettings, LogLine, TickInput, TickOutcome};

use std::path::PathBuf;

/// Generated host bindings of `wit/strategy.wit`.
pub(crate) mod wit {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "strategy",
        imports: { default: trappable },
    });
}

/// Limits and resources of the sandbox, with their defaults.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Linear memory a guest may grow to, bytes (16 MiB).
    pub max_memory_bytes: usize,
    /// Fuel (≈ wasm instructions) per tick. Fuel rather than wall time keeps backtests
    /// deterministic; the default is about 10 ms of guest time on this machine class.
    pub fuel_per_tick: u64,
    /// Largest component accepted for loading, bytes (10 MiB).
    pub max_component_bytes: usize,
    /// Log lines kept per tick, and bytes kept per line.
    pub max_log_lines: usize,
    pub max_log_line_bytes: usize,
    /// `log` calls after which the tick is stopped as a flood.
    pub log_flood_calls: u32,
    /// Bytes a guest may pass to the host in one call: a `log` line, or the whole `on-tick`
    /// result (wasmtime's hostcall fuel). Above `max_state_bytes` plus a full order list.
    pub max_hostcall_bytes: usize,
    /// Orders accepted per tick and bytes of state kept.
    pub max_orders: usize,
    pub max_state_bytes: usize,
    /// Ticks that may run at the same time (size of the instance pool).
    pub max_concurrent_ticks: u32,
    /// Where compiled components are cached (`<data_dir>/components`); `None` = memory only.
    pub cache_dir: Option<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            max_memory_bytes: 16 << 20,
            fuel_per_tick: 20_000_000,
            max_component_bytes: 10 << 20,
            max_log_lines: 32,
            max_log_line_bytes: 1024,
            log_flood_calls: 1_000,
            max_hostcall_bytes: 256 << 10,
            max_orders: 16,
            max_state_bytes: 64 << 10,
            max_concurrent_ticks: 32,
            cache_dir: None,
        }
    }
}

impl SandboxConfig {
    /// Defaults with the component cache under `<data_dir>/components`.
    pub fn with_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        SandboxConfig {
            cache_dir: Some(data_dir.into().join("components")),
            ..Self::default()
        }
    }
}

/// Why a component could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("component is {size} bytes; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("not a WebAssembly component: {0}")]
    Invalid(String),
    #[error("component does not target crucible:strategy/strategy@0.1.0: {0}")]
    WrongWorld(String),
    #[error("component cache: {0}")]
    Cache(#[from] std::io::Error),
    #[error("sandbox engine: {0}")]
    Engine(String),
}

/// Why one tick failed. The tick's orders are dropped; the agent goes on next tick.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TickFault {
    #[error("ran out of fuel (time limit per tick)")]
    Timeout,
    #[error("tried to grow memory past {limit} bytes")]
    MemoryLimit { limit: usize },
    #[error("call stack exhausted (runaway recursion)")]
    StackOverflow,
    #[error("logged more than {limit} lines in one tick")]
    LogFlood { limit: u32 },
    #[error("passed more than {limit} bytes to the host in one call (log line or output)")]
    OutputTooLarge { limit: usize },
    #[error("guest trapped: {0}")]
    Trap(String),
    #[error("invalid output: {0}")]
    InvalidOutput(String),
    #[error("strategy returned an error: {0}")]
    StrategyError(String),
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
