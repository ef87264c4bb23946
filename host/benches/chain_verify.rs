//! Payment verifications per second against the embedded simnet, over HTTP exactly as a
//! registration does it (`getSignatureStatuses` + `getTransaction` jsonParsed + the pure check),
//! and the pure check alone on a recorded mainnet-format response for comparison.
//!
//! `cargo bench --bench chain_verify` (SQLite in a temp dir; finality 0 so the payment is final).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use crucible::chain::verify::verify_transaction;
use crucible::chain::{ExpectedPayment, Keypair, PaymentStatus};
use crucible::config::{Config, sqlite_url_in};
use crucible::startup::Application;
use serde_json::Value;

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config::for_tests(dir.path().to_path_buf(), sqlite_url_in(dir.path()));
    let (chain, signature, expected) = runtime.block_on(async {
        let app = Application::build(config).await.expect("build");
        let chain = Arc::clone(&app.state().chain);
        tokio::spawn(app.run_until_stopped(std::future::pending()));
        let payer = Keypair::generate();
        chain
            .rpc()
            .request_airdrop(
                &payer.pubkey().to_string(),
                1_000_000_000,
                Some(100_000_000),
            )
            .await
            .expect("airdrop");
        let escrow = chain.escrow().address.clone();
        let memo = "reg:bench:0123456789abcdef";
        let signature = chain
            .transfer_token(&payer, &escrow, chain.stablecoin_mint(), 25_000_000, memo)
            .await
            .expect("pay");
        let expected = ExpectedPayment {
            payer: payer.pubkey().to_string(),
            recipient: escrow.to_string(),
            mint: chain.stablecoin_mint().to_owned(),
            amount_raw: 25_000_000,
            memo: memo.to_owned(),
        };
        (chain, signature, expected)
    });

    let mut group = c.benchmark_group("chain");
    group.throughput(Throughput::Elements(1));
    group.bench_function("verify_payment over HTTP against simnet", |b| {
        b.iter(|| {
            let status = runtime
                .block_on(chain.verify_payment(black_box(&signature), &expected))
                .expect("verify");
            assert!(matches!(status, PaymentStatus::Verified { .. }));
        })
    });

    let path = format!(
        "{}/tests/fixtures/chain/usdc_transfer_with_memo.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    let tx = fixture["result"].clone();
    let recorded = ExpectedPayment {
        payer: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM".into(),
        recipient: "3h1zGmCwsRJnVk5BuRNMLsPaQu1y2aqXqXDWYCgrp5UG".into(),
        mint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v".into(),
        amount_raw: 25_000_000,
        memo: "reg:7f3c9a1e-2b44-4a8e-9d61-0c5e8f2a7b10:4e1f0c2a9b8d7e6f".into(),
    };
    group.bench_function("verify_transaction (pure check)", |b| {
        b.iter(|| verify_transaction(black_box(&tx), &recorded))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
