//! The integration tests: one binary (one link of the server and wasmtime, instead of one per
//! file), a module per area. Every test drives a real server on its own port and its own fresh
//! database (SQLite, or a fresh PostgreSQL schema when `TEST_DATABASE_URL` is set). Set
//! `TEST_LOG=1` (or a `RUST_LOG`-style filter) to see the server's logs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that cannot go on should fail loudly where it stopped"
)]

mod helpers;
mod host_ops;

mod abuse;
mod account;
mod admin;
mod agent_entries;
mod agent_thinking;
mod agent_ticks;
mod api_keys;
mod auth;
mod backtest_report;
mod browser;
mod chain_fixtures;
mod chain_simnet;
mod cli;
mod connections;
mod contract_edges;
mod contract_shapes;
mod crash_batches;
mod demo;
mod dungeon;
mod dungeon_ops;
mod entry_rules;
mod faults_disk;
mod faults_dungeon;
mod faults_money;
mod faults_partition;
mod faults_postgres;
mod faults_rpc;
mod faults_schedule;
mod faults_webhooks;
mod fuzz_endpoints;
mod fuzz_v1;
mod guest_languages;
mod leaderboard;
mod limits;
mod live_agents;
mod mcp;
mod metrics;
mod migrations;
mod model_providers;
mod multi_node;
mod openapi_document;
mod payouts;
mod platform;
mod prices;
mod read_caches;
mod readme_examples;
mod refunds;
mod registration;
mod retention;
mod sandbox_guests;
mod scheduler;
mod simnet_clients;
mod simnet_pool;
mod simnet_signatures;
mod spend_limits;
mod store_rows;
mod strategies_classes;
mod strategy_optimize;
mod strategy_params;
mod tournament_flows;
mod tournaments;
mod v1_agents;
mod v1_keys;
mod wasi;
mod web;
mod webhooks;
mod webhooks_egress;
mod webhooks_isolation;
