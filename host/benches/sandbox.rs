//! Sandbox costs (targets: ≤ 20 µs per tick with 200 candles; 10,000 agents < 1 s on
//! one core): a fighter tick in a fresh instance vs the same fighter logic compiled natively,
//! 10,000 agents ticked in a row on one thread, cold compile and warm load from the cache.
//!
//! `cargo bench -p crucible --bench sandbox`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use crucible::market::{Candle, Interval, MarketFeed, Pair, SimulatedMarket};
use crucible::paper::{Ledger, PaperConfig};
use crucible::sandbox::{AgentSettings, Sandbox, SandboxConfig, TickInput, builtin_component};
use crucible_sdk::Strategy;

fn market() -> (Vec<Candle>, crucible::market::Signals) {
    let m = SimulatedMarket::new(9);
    let pair = Pair::new("SOL", "USDC");
    let end = SimulatedMarket::origin() + 400 * Interval::H1.millis();
    (
        m.candles(&pair, Interval::H1, end, 200).expect("candles"),
        m.signals(&pair, end).expect("signals"),
    )
}

fn settings() -> AgentSettings {
    AgentSettings {
        class: "fighter".into(),
        base: "SOL".into(),
        quote: "USDC".into(),
        interval: "1h".into(),
        max_allocation: 100.0,
        personality: String::new(),
        model_id: "bench/fighter".into(),
        params: Vec::new(),
    }
}

/// The SDK context the native fighter sees (what the guest gets after lifting).
fn native_context(
    candles: &[Candle],
    settings: &AgentSettings,
    view: crucible::paper::PortfolioView,
) -> crucible_sdk::Context {
    crucible_sdk::Context {
        config: crucible_sdk::AgentConfig {
            class: settings.class.clone(),
            base: settings.base.clone(),
            quote: settings.quote.clone(),
            interval: settings.interval.clone(),
            max_allocation: settings.max_allocation,
            personality: settings.personality.clone(),
            model_id: settings.model_id.clone(),
        },
        now: 0,
        candles: crucible_sdk::Candles {
            ts: candles.iter().map(|c| c.ts).collect(),
            open: candles.iter().map(|c| c.open).collect(),
            high: candles.iter().map(|c| c.high).collect(),
            low: candles.iter().map(|c| c.low).collect(),
            close: candles.iter().map(|c| c.close).collect(),
            volume: candles.iter().map(|c| c.volume).collect(),
        },
        signals: crucible_sdk::Signals::default(),
        portfolio: crucible_sdk::Portfolio {
            base: view.base,
            quote: view.quote,
            avg_entry_price: view.avg_entry_price,
            equity: view.equity,
        },
        params: crucible_sdk::Params::default(),
    }
}

fn ticks(c: &mut Criterion) {
    let (candles, signals) = market();
    let settings = settings();
    let ledger = Ledger::new(10_000.0, PaperConfig::default());
    let view = ledger.view(candles[candles.len() - 1].close);
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    let fighter = sandbox
        .load(builtin_component("fighter").expect("fighter"))
        .expect("load");
    let state = crucible_sdk::encode_state(&strategy_fighter::State {
        fast_above: Some(false),
    });

    let mut group = c.benchmark_group("tick_200_candles");
    group.bench_function("wasm_fighter_instantiate_and_on_tick", |b| {
        b.iter(|| {
            let input = TickInput {
                settings: &settings,
                now: 0,
                candles: &candles,
                signals,
                portfolio: view,
                state: &state,
            };
            let outcome = sandbox.tick(&fighter, black_box(&input));
            black_box(outcome.result.expect("tick"));
        })
    });
    // Fixed cost: fresh store + instantiate + a call that does almost nothing (no candles).
    let polite = sandbox
        .load(crucible::sandbox::test_guest("hostile").expect("guest"))
        .expect("load");
    group.bench_function("wasm_minimal_instantiate_and_call_no_candles", |b| {
        b.iter(|| {
            let input = TickInput {
                settings: &settings,
                now: 0,
                candles: &[],
                signals,
                portfolio: view,
                state: &[],
            };
            black_box(
                sandbox
                    .tick(&polite, black_box(&input))
                    .result
                    .expect("tick"),
            );
        })
    });
    // A Rust `std` guest, linked with the deterministic WASI: a tick that makes no WASI call
    // (no context built), and one that reads random numbers and the clock... through WASI.
    let std_guest = sandbox
        .load(crucible::sandbox::test_guest("hostile-std").expect("guest"))
        .expect("load");
    assert!(std_guest.wasi && !fighter.wasi);
    for (name, personality) in [
        ("wasm_std_guest_wasi_linked_no_wasi_call", "polite"),
        ("wasm_std_guest_wasi_random_call", "random"),
    ] {
        let mut settings = settings.clone();
        settings.personality = personality.into();
        group.bench_function(name, |b| {
            b.iter(|| {
                let input = TickInput {
                    settings: &settings,
                    now: 0,
                    candles: &[],
                    signals,
                    portfolio: view,
                    state: &[],
                };
                black_box(
                    sandbox
                        .tick_as("bench", &std_guest, black_box(&input))
                        .result
                        .expect("tick"),
                );
            })
        });
    }
    group.bench_function("native_fighter_same_logic", |b| {
        b.iter(|| {
            // The same work as the guest: build the context, decode state, decide, encode state.
            let ctx = native_context(black_box(&candles), &settings, view);
            let mut s: strategy_fighter::State = crucible_sdk::decode_state(black_box(&state));
            let orders = strategy_fighter::Fighter::on_tick(&ctx, &mut s).expect("native tick");
            black_box((orders, crucible_sdk::encode_state(&s)));
        })
    });
    group.finish();

    let mut group = c.benchmark_group("one_core");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("10000_agents_sequential", |b| {
        // 10,000 agents with their own portfolios and states, ticked one after another.
        let ledgers: Vec<Ledger> = (0..100)
            .map(|i| Ledger::new(1_000.0 + f64::from(i) * 100.0, PaperConfig::default()))
            .collect();
        let price = candles[candles.len() - 1].close;
        b.iter(|| {
            for agent in 0..10_000usize {
                let input = TickInput {
                    settings: &settings,
                    now: agent as i64,
                    candles: &candles,
                    signals,
                    portfolio: ledgers[agent % 100].view(price),
                    state: &state,
                };
                black_box(sandbox.tick(&fighter, &input).result.is_ok());
            }
        })
    });
    group.finish();
}

fn loading(c: &mut Criterion) {
    let bytes = builtin_component("fighter").expect("fighter");
    let mut group = c.benchmark_group("load_fighter");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    let uncached = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    group.bench_function("cold_compile", |b| {
        b.iter(|| black_box(uncached.load(bytes).expect("compile")))
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let cached = Sandbox::new(SandboxConfig::with_data_dir(dir.path(), [7; 32])).expect("sandbox");
    cached.load(bytes).expect("prime the cache");
    group.bench_function("warm_load_from_cache", |b| {
        b.iter(|| {
            let loaded = cached.load(bytes).expect("load");
            assert!(loaded.from_cache);
            black_box(loaded)
        })
    });
    group.finish();
}

/// Python and JavaScript strategies (built by `.ci/run` into `target/guests/`; skipped with a
/// note when absent): a tick with 200 candles, cold compile and warm load of the runtime.
fn guest_languages(c: &mut Criterion) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests");
    let (candles, signals) = market();
    let settings = settings();
    let ledger = Ledger::new(10_000.0, PaperConfig::default());
    let view = ledger.view(candles[candles.len() - 1].close);
    for name in ["python-momentum", "js-momentum"] {
        let Ok(bytes) = std::fs::read(dir.join(format!("{name}.wasm"))) else {
            eprintln!("{name}: target/guests/{name}.wasm not built (see .ci/run); skipped");
            continue;
        };
        let cache = tempfile::tempdir().expect("tempdir");
        let sandbox =
            Sandbox::new(SandboxConfig::with_data_dir(cache.path(), [7; 32])).expect("sandbox");
        let mut group = c.benchmark_group(name);
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(20));
        group.bench_function("cold_compile", |b| {
            b.iter(|| {
                let _ = std::fs::remove_dir_all(cache.path().join("components"));
                let fresh = Sandbox::new(SandboxConfig::with_data_dir(cache.path(), [7; 32]))
                    .expect("sandbox");
                black_box(fresh.load(&bytes).expect("compile"))
            })
        });
        let strategy = sandbox.load(&bytes).expect("load");
        group.bench_function("warm_load_from_cache", |b| {
            b.iter(|| {
                let loaded = sandbox.load(&bytes).expect("load");
                assert!(loaded.from_cache);
                black_box(loaded)
            })
        });
        group.bench_function("tick_200_candles", |b| {
            b.iter(|| {
                let input = TickInput {
                    settings: &settings,
                    now: 0,
                    candles: &candles,
                    signals,
                    portfolio: view,
                    state: &[],
                };
                let outcome = sandbox.tick(&strategy, black_box(&input));
                black_box(outcome.result.expect("tick"));
            })
        });
        let outcome = sandbox.tick(
            &strategy,
            &TickInput {
                settings: &settings,
                now: 0,
                candles: &candles,
                signals,
                portfolio: view,
                state: &[],
            },
        );
        eprintln!(
            "{name}: fuel per tick {} (budget {}), memory {} MiB",
            outcome.fuel_used,
            sandbox.fuel_limit(&strategy),
            outcome.memory_peak >> 20
        );
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = ticks, loading, guest_languages
}
criterion_main!(benches);
