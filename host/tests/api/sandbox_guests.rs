//! Hostile guests, malformed components and the compiled-component cache.
//!
//! Every attack must end as the right recorded fault for that tick alone: the sandbox keeps
//! serving, and a well-behaved agent ticking right after is unaffected.

use crucible::market::{Interval, MarketFeed, Pair, SimulatedMarket};
use crucible::paper::{Ledger, PaperConfig, Side};
use crucible::sandbox::{
    AgentSettings, LoadError, LoadedStrategy, Sandbox, SandboxConfig, TickFault, TickInput,
    TickOutcome, builtin_component, test_guest,
};

struct Fixture {
    sandbox: Sandbox,
    /// `no_std`, on the SDK's runtime like the built-in strategies.
    hostile: LoadedStrategy,
    /// The same attacks linking Rust's `std` (and so declaring WASI imports).
    hostile_std: LoadedStrategy,
    fighter: LoadedStrategy,
    candles: Vec<crucible::market::Candle>,
    signals: crucible::market::Signals,
}

fn fixture() -> Fixture {
    // Runtime (WASI) guests get a small memory limit here, so the std memory bomb reaches it
    // long before its fuel runs out, as the no_std one does at the bare limit.
    let sandbox = Sandbox::new(SandboxConfig {
        runtime_memory_bytes: 32 << 20,
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let hostile = sandbox
        .load(test_guest("hostile").expect("hostile guest"))
        .expect("load hostile");
    let hostile_std = sandbox
        .load(test_guest("hostile-std").expect("hostile std guest"))
        .expect("load hostile std");
    let fighter = sandbox
        .load(builtin_component("fighter").expect("fighter"))
        .expect("load fighter");
    let market = SimulatedMarket::new(3);
    let pair = Pair::new("SOL", "USDC");
    let end = SimulatedMarket::origin() + 400 * Interval::H1.millis();
    let candles = market
        .candles(&pair, Interval::H1, end, 200)
        .expect("candles");
    let signals = market.signals(&pair, end).expect("signals");
    Fixture {
        sandbox,
        hostile,
        hostile_std,
        fighter,
        candles,
        signals,
    }
}

fn settings(personality: &str) -> AgentSettings {
    AgentSettings {
        class: "rogue".into(),
        base: "SOL".into(),
        quote: "USDC".into(),
        interval: "1h".into(),
        max_allocation: 100.0,
        personality: personality.into(),
        model_id: "test/hostile".into(),
        params: Vec::new(),
    }
}

fn tick(f: &Fixture, strategy: &LoadedStrategy, personality: &str) -> TickOutcome {
    let settings = settings(personality);
    let ledger = Ledger::new(10_000.0, PaperConfig::default());
    let price = f.candles.last().expect("candles").close;
    let input = TickInput {
        settings: &settings,
        now: f.candles.last().expect("candles").ts + Interval::H1.millis(),
        candles: &f.candles,
        signals: f.signals,
        portfolio: ledger.view(price),
        state: &[],
    };
    f.sandbox.tick(strategy, &input)
}

/// After an attack, the same component behaves again and another agent's strategy still runs.
fn others_go_on(f: &Fixture) {
    let good = tick(f, &f.hostile, "polite");
    let (orders, _) = good
        .result
        .expect("a well-behaved tick of the same component succeeds");
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0].side, Side::Buy);
    assert_eq!(orders[0].reason.as_deref(), Some("well behaved"));
    tick(f, &f.fighter, "")
        .result
        .expect("another agent's fighter still ticks");
}

fn fault(outcome: &TickOutcome) -> &TickFault {
    match &outcome.result {
        Err(fault) => fault,
        Ok(output) => panic!("the tick must fail, it returned {output:?}"),
    }
}

#[test]
fn hostile_guests_are_stopped_with_the_right_reason() {
    let f = fixture();
    let cases: [(&str, &str); 8] = [
        ("infinite-loop", "timeout"),
        ("memory-bomb", "memory_limit"),
        ("deep-recursion", "stack_overflow"),
        ("huge-output", "output_too_large"),
        ("many-orders", "invalid_output"),
        ("log-flood", "log_flood"),
        ("bad-order", "invalid_output"),
        ("panic", "trap"),
    ];
    for (guest, strategy) in [("no_std", &f.hostile), ("std", &f.hostile_std)] {
        for (attack, kind) in cases {
            let outcome = tick(&f, strategy, attack);
            let fault = fault(&outcome);
            assert_eq!(fault.kind(), kind, "{guest} {attack}: {fault}");
            others_go_on(&f);
        }
    }
    // Only a std guest can ask for WASI; its clock reads the tick's time (see below).
    let clock = tick(&f, &f.hostile_std, "read-clock");
    assert_eq!(fault(&clock).kind(), "strategy_error");
}

#[test]
fn a_no_std_guest_grows_its_heap_and_traps_on_panic() {
    let f = fixture();
    let panicked = tick(&f, &f.hostile, "panic");
    assert_eq!(fault(&panicked).kind(), "trap");

    // 3 MiB is far past the initial memory: the heap grows and the tick still succeeds.
    let (orders, _) = tick(&f, &f.hostile, "big-alloc")
        .result
        .expect("a large allocation succeeds");
    assert_eq!(orders[0].reason.as_deref(), Some("allocated 3145728"));
    others_go_on(&f);
}

#[test]
fn fault_details_are_recorded() {
    let f = fixture();
    let limits = f.sandbox.config().clone();

    let loop_tick = tick(&f, &f.hostile, "infinite-loop");
    assert_eq!(*fault(&loop_tick), TickFault::Timeout);
    assert_eq!(
        loop_tick.fuel_used, limits.fuel_per_tick,
        "a timeout burns the whole budget"
    );

    let bomb = tick(&f, &f.hostile, "memory-bomb");
    assert_eq!(*fault(&bomb), TickFault::MemoryLimit { limit: 16 << 20 });

    let flood = tick(&f, &f.hostile, "log-flood");
    assert_eq!(
        *fault(&flood),
        TickFault::LogFlood {
            limit: limits.log_flood_calls
        }
    );
    assert_eq!(
        flood.logs.len(),
        limits.max_log_lines,
        "the first lines are kept"
    );
    assert_eq!(flood.logs[0].message, "flood line 0");
    assert_eq!(
        flood.logs_dropped,
        limits.log_flood_calls - limits.max_log_lines as u32
    );

    let huge = tick(&f, &f.hostile, "huge-output");
    assert_eq!(
        *fault(&huge),
        TickFault::OutputTooLarge {
            limit: limits.max_hostcall_bytes
        }
    );
    let many = tick(&f, &f.hostile, "many-orders");
    assert_eq!(
        *fault(&many),
        TickFault::InvalidOutput("100 orders; at most 16 per tick".into())
    );

    // The std guest's clock is the tick's `now`, 1 µs later on the second read; never the host's.
    let clock = tick(&f, &f.hostile_std, "read-clock");
    let now_ns = u128::try_from(f.candles.last().expect("candles").ts + Interval::H1.millis())
        .expect("after the epoch")
        * 1_000_000;
    assert_eq!(
        *fault(&clock),
        TickFault::StrategyError(format!("clock {now_ns} then {}", now_ns + 1_000))
    );

    let refused = tick(&f, &f.hostile, "error");
    assert_eq!(
        *fault(&refused),
        TickFault::StrategyError("strategy refused this tick".into())
    );
}

#[test]
fn wrong_world_garbage_and_oversized_components_are_refused_on_load() {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");

    let wrong = sandbox
        .load(test_guest("wrong-world").expect("fixture"))
        .expect_err("wrong world");
    assert!(matches!(wrong, LoadError::WrongWorld(_)), "{wrong}");
    assert!(
        wrong.to_string().contains("crucible:strategy/strategy"),
        "{wrong}"
    );

    for garbage in [
        &b"definitely not wasm"[..],
        b"",
        b"\0asm\x01\0\0\0",
        b"\0asm\x0d\0\x01\0\xff\xff\xff",
    ] {
        let error = sandbox.load(garbage).expect_err("garbage");
        assert!(
            matches!(error, LoadError::Invalid(_)),
            "{garbage:?}: {error}"
        );
    }

    let small = Sandbox::new(SandboxConfig {
        max_component_bytes: 1024,
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let fighter = builtin_component("fighter").expect("fighter");
    assert!(matches!(
        small.load(fighter),
        Err(LoadError::TooLarge { size, limit: 1024 }) if size == fighter.len()
    ));
}

#[test]
fn compiled_components_are_cached_on_disk_and_tampering_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = builtin_component("defender").expect("defender");

    let first = Sandbox::new(SandboxConfig::with_data_dir(dir.path(), [7; 32])).expect("sandbox");
    let cold = first.load(bytes).expect("compile");
    assert!(!cold.from_cache);
    let warm = first.load(bytes).expect("from cache");
    assert!(warm.from_cache);
    assert_eq!(warm.hash, cold.hash);

    // A restart (new engine, same data dir) reuses the artifact.
    let restarted =
        Sandbox::new(SandboxConfig::with_data_dir(dir.path(), [7; 32])).expect("sandbox");
    assert!(restarted.load(bytes).expect("load").from_cache);

    // A tampered artifact fails its checksum: recompiled, never deserialised.
    let cache_dir = dir.path().join("components");
    let file = std::fs::read_dir(&cache_dir)
        .expect("cache dir")
        .next()
        .expect("one artifact")
        .expect("entry")
        .path();
    let mut artifact = std::fs::read(&file).expect("read artifact");
    let last = artifact.len() - 1;
    artifact[last] ^= 0xff;
    std::fs::write(&file, &artifact).expect("tamper");
    let reloaded = restarted.load(bytes).expect("recompile");
    assert!(!reloaded.from_cache);
    assert!(restarted.load(bytes).expect("cached again").from_cache);

    // Files are authenticated with a key from the master key, not a bare checksum: a server
    // with another master key (or someone who can write the directory but lacks the key) cannot
    // make it load an artifact, even an intact one.
    let other_key =
        Sandbox::new(SandboxConfig::with_data_dir(dir.path(), [8; 32])).expect("sandbox");
    assert!(!other_key.load(bytes).expect("recompile").from_cache);
    assert_eq!(
        other_key.cache_file(bytes),
        restarted.cache_file(bytes),
        "both use the same file"
    );
    // The other key's server rewrote the file with its own tag: the first key now refuses it.
    assert!(!restarted.load(bytes).expect("recompile").from_cache);
}

/// A component importing one instance `name` that exports `get: func()`, and nothing else.
pub(crate) fn importing(name: &str) -> Vec<u8> {
    let mut instance = wasm_encoder::InstanceType::new();
    instance
        .ty()
        .function()
        .params(Vec::<(&str, wasm_encoder::PrimitiveValType)>::new())
        .result(None);
    instance.export("get", wasm_encoder::ComponentTypeRef::Func(0));
    importing_instance(name, &instance)
}

/// A component importing one instance `name` that exports the resource type `resource`.
fn importing_resource(name: &str, resource: &str) -> Vec<u8> {
    let mut instance = wasm_encoder::InstanceType::new();
    instance.export(
        resource,
        wasm_encoder::ComponentTypeRef::Type(wasm_encoder::TypeBounds::SubResource),
    );
    importing_instance(name, &instance)
}

fn importing_instance(name: &str, instance: &wasm_encoder::InstanceType) -> Vec<u8> {
    use wasm_encoder::{Component, ComponentImportSection, ComponentTypeRef, ComponentTypeSection};
    let mut types = ComponentTypeSection::new();
    types.instance(instance);
    let mut imports = ComponentImportSection::new();
    imports.import(name, ComponentTypeRef::Instance(0));
    let mut component = Component::new();
    component.section(&types).section(&imports);
    component.finish()
}

#[test]
fn imports_the_host_cannot_satisfy_are_refused_on_load_naming_them() {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    // A WASI package the host does not implement, and one it does in a version it does not.
    for name in ["wasi:keyvalue/store@0.2.0", "wasi:http/types@0.3.0"] {
        let refused = sandbox.load(&importing(name)).expect_err(name);
        assert!(matches!(refused, LoadError::WrongWorld(_)), "{refused}");
        assert!(refused.to_string().contains(name), "{name}: {refused}");
    }
    // wasi:http 0.2 is linked (in the version componentize-js imports): what is refused then
    // is the missing `on-tick`, not the import.
    let linked = sandbox
        .load(&importing_resource("wasi:http/types@0.2.10", "fields"))
        .expect_err("no on-tick");
    assert!(
        !linked.to_string().contains("wasi:http"),
        "wasi:http is provided: {linked}"
    );
}
