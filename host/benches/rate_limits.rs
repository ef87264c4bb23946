//! What a rate-limit check costs, by how the limit is shared (the measurement behind the choice
//! in docs/architecture.md, "Rate limits across nodes"):
//!
//! - on SQLite (one node): every limit counts in memory;
//! - on PostgreSQL: an exact limit (writes) runs a short transaction on the database, a
//!   gossiped limit (reads) counts in memory and queues a report for the other nodes.
//!
//! `cargo bench --bench rate_limits`; with `TEST_DATABASE_URL=postgres://…` for PostgreSQL.
//! `BENCH_CHECKS` (default 20,000) sets the checks per limit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::time::Instant;

use crucible::http::rate_limit::Limiter;
use support::env_number;

fn main() {
    let checks = env_number("BENCH_CHECKS", 20_000) as usize;
    let server = support::serve_on_one_core_with(|config| config.rate_limits = true);
    let (_, state, backend) = server.parts();
    let runtime = support::runtime();
    runtime.block_on(async {
        println!("rate-limit checks, {backend}, {checks} per limit, one client at a time:");
        for limiter in [
            &state.limits.tournament_reads,
            &state.limits.registrations_per_ip,
        ] {
            let per_check = measure(limiter, checks).await;
            println!(
                "  {:<22} ({:?} on several nodes) {:>9.2} µs per check",
                limiter.name(),
                limiter.sharing(),
                per_check
            );
        }
    });
}

/// Mean time per check, over `checks` clients (each admitted: a refusal would cost less).
async fn measure(limiter: &Limiter, checks: usize) -> f64 {
    let keys: Vec<String> = (0..checks)
        .map(|n| format!("198.51.{}.{}", n / 256, n % 256))
        .collect();
    let started = Instant::now();
    for key in &keys {
        limiter.check(key).await.expect("within the budget");
    }
    started.elapsed().as_secs_f64() * 1e6 / checks as f64
}
