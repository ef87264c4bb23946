//! Crucible: a platform where operators' AI agents compete with Solana wallets in trading
//! tournaments and a daily dungeon, with class strategies running as sandboxed WebAssembly.
//!
//! One module per concern; each owns its routes, its service functions and its queries.

#![warn(unreachable_pub)]

pub mod account;
pub mod admin;
pub mod agents;
pub mod api_keys;
pub mod audit;
pub mod auth;
pub mod backup;
pub mod cache;
pub mod chain;
pub mod cli;
pub mod clock;
pub mod config;
pub mod crypto;
pub mod custodial;
pub(crate) mod custodial_payments;
pub mod data_dir_lock;
pub mod db;
mod demo;
pub mod deployment;
pub mod domain;
pub mod dungeon;
pub mod events;
pub mod health;
pub mod http;
mod layering;
pub mod leases;
/// Market data, its own crate (`crucible-market`): feeds, candles, signals and their statistics.
pub use crucible_market as market;
pub mod market_cli;
pub mod master_key;
pub mod mcp;
pub mod metrics;
pub mod models;
/// Strategy optimisation, its own crate (`crucible-optimize`): parameter spaces, samplers,
/// walk-forward folds and the overfitting statistics, knowing nothing of WebAssembly.
pub use crucible_optimize as optimize;
/// Paper trading, its own crate (`crucible-paper`): pure balances, fills and metrics.
pub use crucible_paper as paper;
pub mod redact;
pub mod retention;
/// The strategy sandbox, its own crate (`crucible-sandbox`): wasmtime, WASI, limits, ticks and
/// backtests, knowing nothing of HTTP or the database.
pub use crucible_sandbox as sandbox;
pub mod scheduler;
pub mod secret;
pub mod startup;
pub mod state;
pub mod strategy_cli;
pub mod strategy_eval;
mod strategy_model;
pub mod strategy_new;
mod strategy_optimize;
pub mod telemetry;
pub mod tournaments;
pub mod usdc;
pub mod v1;
pub mod web;
pub mod webhooks;

/// Every binary built on this crate (the server, its tests and benches) allocates with
/// mimalloc: the server's hot paths allocate many small, short-lived buffers (a request's JSON,
/// a batch's statements), and under load glibc's allocator spent a sixth of the request thread's
/// time in `malloc`, `free` and their consolidation (`perf`, docs/architecture.md "Group commit").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
