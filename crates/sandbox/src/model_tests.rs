//! Both contract versions and the model port, end to end through the embedded test guests:
//! `v0.1.0` (built against the archived contract) and `model-probe` (asks the model as its
//! personality says and turns each answer or error into an order).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crucible_market::{Candle, Interval, MarketFeed, Pair, SimulatedMarket};
use crucible_paper::{Ledger, OrderRequest, OrderSize, PaperConfig, Side};
use wasmtime::component::Component;

use super::engine::imports_model;
use super::{
    AgentSettings, BUILTIN_CLASSES, LoadedStrategy, ModelCall, ModelFailure, ModelPort, ModelReply,
    ModelRole, Profile, Sandbox, SandboxConfig, TickFault, TickInput, TickOutcome,
    builtin_component, test_guest,
};

/// A model port that answers every call the same way after `delay`, and records the calls.
struct FakeModel {
    answer: Result<ModelReply, ModelFailure>,
    delay: Duration,
    calls: Mutex<Vec<ModelCall>>,
}

impl FakeModel {
    fn new(answer: Result<ModelReply, ModelFailure>, delay: Duration) -> Arc<Self> {
        Arc::new(FakeModel {
            answer,
            delay,
            calls: Mutex::new(Vec::new()),
        })
    }

    fn says(text: &str) -> Arc<Self> {
        Self::new(Ok(reply(text)), Duration::ZERO)
    }

    fn calls(&self) -> Vec<ModelCall> {
        self.calls.lock().expect("calls").clone()
    }
}

fn reply(text: &str) -> ModelReply {
    ModelReply {
        text: text.into(),
        prompt_tokens: 12,
        completion_tokens: 3,
        latency_ms: 40,
    }
}

impl ModelPort for FakeModel {
    fn complete(
        &self,
        call: ModelCall,
    ) -> Pin<Box<dyn Future<Output = Result<ModelReply, ModelFailure>> + Send + '_>> {
        Box::pin(async move {
            self.calls.lock().expect("calls").push(call);
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.answer.clone()
        })
    }
}

/// Test sandboxes keep the second engine's pool small (address space is reserved per slot).
fn new_sandbox(config: SandboxConfig) -> Arc<Sandbox> {
    Arc::new(
        Sandbox::new(SandboxConfig {
            max_model_ticks: 256,
            ..config
        })
        .expect("sandbox"),
    )
}

fn load(sandbox: &Sandbox, guest: &str) -> LoadedStrategy {
    sandbox
        .load(test_guest(guest).expect("test guest"))
        .expect("load")
}

const NOW: i64 = 1_700_000_000_000;

/// An agent of some personality, with the market of its tick.
struct Agent {
    settings: AgentSettings,
    candles: Vec<Candle>,
    signals: crucible_market::Signals,
}

impl Agent {
    fn new(personality: &str) -> Self {
        let market = SimulatedMarket::new(5);
        let pair = Pair::new("SOL", "USDC");
        let end = SimulatedMarket::origin() + 400 * Interval::H1.millis();
        Agent {
            settings: AgentSettings {
                class: "mage".into(),
                base: "SOL".into(),
                quote: "USDC".into(),
                interval: "1h".into(),
                max_allocation: 100.0,
                personality: personality.into(),
                model_id: "test/probe".into(),
                params: Vec::new(),
            },
            candles: market
                .candles(&pair, Interval::H1, end, 50)
                .expect("candles"),
            signals: market.signals(&pair, end).expect("signals"),
        }
    }

    fn input(&self) -> TickInput<'_> {
        let price = self.candles.last().expect("candles").close;
        TickInput {
            settings: &self.settings,
            now: NOW,
            candles: &self.candles,
            signals: self.signals,
            portfolio: Ledger::new(10_000.0, PaperConfig::default()).view(price),
            state: &[],
        }
    }
}

fn tick(sandbox: &Sandbox, strategy: &LoadedStrategy, personality: &str) -> TickOutcome {
    sandbox.tick_as("agent-1", strategy, &Agent::new(personality).input())
}

async fn tick_async(
    sandbox: &Sandbox,
    strategy: &LoadedStrategy,
    personality: &str,
    model: Option<Arc<dyn ModelPort>>,
) -> TickOutcome {
    let agent = Agent::new(personality);
    sandbox
        .tick_async("agent-1", strategy, &agent.input(), model)
        .await
}

fn orders_of(outcome: TickOutcome) -> Vec<OrderRequest> {
    match outcome.result {
        Ok((orders, _)) => orders,
        Err(fault) => panic!("the tick faulted: {fault}"),
    }
}

fn reasons(orders: &[OrderRequest]) -> Vec<&str> {
    orders
        .iter()
        .map(|o| o.reason.as_deref().unwrap_or(""))
        .collect()
}

#[test]
fn a_component_built_against_0_1_0_loads_and_ticks_on_the_fast_path() {
    let sandbox = new_sandbox(SandboxConfig::default());
    let v1 = load(&sandbox, "v0.1.0");
    assert_eq!(v1.wit_version(), "0.1.0");
    assert!(!v1.uses_model());
    assert_eq!(v1.profile(), Profile::Bare, "imports host@0.1.0 only");
    let outcome = tick(&sandbox, &v1, "hello");
    assert_eq!(outcome.logs.len(), 1, "{:?}", outcome.logs);
    assert_eq!(outcome.logs[0].message, "0.1.0 guest ticking");
    assert_eq!(outcome.model_calls, 0);
    let orders = orders_of(outcome);
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0].side, Side::Buy);
    assert_eq!(orders[0].size, OrderSize::FractionOfEquity(0.1));
    assert_eq!(orders[0].reason.as_deref(), Some("v0.1.0 hello"));
}

#[test]
fn built_in_strategies_do_not_import_the_model_and_stay_on_the_fast_path() {
    let sandbox = new_sandbox(SandboxConfig::default());
    let engine = &sandbox.fast.engine;
    for class in BUILTIN_CLASSES {
        let bytes = builtin_component(class).expect("built-in");
        let component = Component::new(engine, bytes).expect("compile");
        let imports: Vec<String> = component
            .component_type()
            .imports(engine)
            .map(|(name, _)| name.to_string())
            .collect();
        assert!(
            imports
                .iter()
                .all(|name| !name.starts_with("crucible:strategy/model")),
            "{class} imports {imports:?}"
        );
        assert!(!imports_model(bytes), "{class}");
        let loaded = sandbox.load(bytes).expect("load");
        assert_eq!(loaded.wit_version(), "0.3.0", "{class}");
        assert!(!loaded.uses_model(), "{class}");
        assert_eq!(loaded.profile(), Profile::Bare, "{class}");
    }
    let probe = test_guest("model-probe").expect("probe");
    assert!(imports_model(probe), "the probe does import the model");
    assert!(load(&sandbox, "model-probe").uses_model());
}

#[tokio::test]
async fn the_probe_gets_the_models_answer_and_the_port_gets_the_request() {
    let sandbox = new_sandbox(SandboxConfig::default());
    let probe = load(&sandbox, "model-probe");
    let model = FakeModel::says("buy 0.5");
    let outcome = tick_async(&sandbox, &probe, "ask 1 schema", Some(model.clone())).await;
    assert_eq!(outcome.model_calls, 1);
    let orders = orders_of(outcome);
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0].side, Side::Buy);
    assert_eq!(orders[0].size, OrderSize::FractionOfEquity(0.5));
    assert_eq!(orders[0].reason.as_deref(), Some("model: buy 0.5"));
    assert_eq!(
        model.calls(),
        vec![ModelCall {
            messages: vec![(ModelRole::User, format!("tick {NOW} question 0"))],
            max_tokens: 16,
            temperature: 0.5,
            json_schema: Some(r#"{"type":"string"}"#.into()),
        }]
    );
}

#[tokio::test]
async fn calls_beyond_the_limit_are_budget_exhausted_without_reaching_the_port() {
    let sandbox = new_sandbox(SandboxConfig::default());
    assert_eq!(sandbox.config().max_model_calls_per_tick, 4, "the default");
    let probe = load(&sandbox, "model-probe");
    let model = FakeModel::says("sell 0.25");
    let outcome = tick_async(&sandbox, &probe, "ask 6", Some(model.clone())).await;
    assert_eq!(
        outcome.model_calls, 4,
        "only the calls that reached the port"
    );
    assert_eq!(model.calls().len(), 4);
    let orders = orders_of(outcome);
    assert_eq!(
        reasons(&orders),
        [
            "model: sell 0.25",
            "model: sell 0.25",
            "model: sell 0.25",
            "model: sell 0.25",
            "model error: budget-exhausted",
            "model error: budget-exhausted",
        ]
    );

    let strict = new_sandbox(SandboxConfig {
        max_model_calls_per_tick: 1,
        ..SandboxConfig::default()
    });
    let probe = load(&strict, "model-probe");
    let outcome = tick_async(&strict, &probe, "ask 2", Some(model.clone())).await;
    assert_eq!(outcome.model_calls, 1);
    assert_eq!(
        reasons(&orders_of(outcome)),
        ["model: sell 0.25", "model error: budget-exhausted"]
    );
}

#[tokio::test]
async fn every_failure_reaches_the_guest_as_its_wit_case() {
    let sandbox = new_sandbox(SandboxConfig::default());
    let probe = load(&sandbox, "model-probe");
    for (failure, seen) in [
        (ModelFailure::NoEndpoint, "no-endpoint"),
        (ModelFailure::NoKey, "no-key"),
        (ModelFailure::BudgetExhausted, "budget-exhausted"),
        (ModelFailure::Timeout, "timeout"),
        (
            ModelFailure::Refused {
                status: 429,
                reason: "slow down".into(),
            },
            "refused (429): slow down",
        ),
        (
            ModelFailure::Malformed("not json".into()),
            "malformed: not json",
        ),
    ] {
        let model = FakeModel::new(Err(failure), Duration::ZERO);
        let outcome = tick_async(&sandbox, &probe, "ask 1", Some(model)).await;
        assert_eq!(outcome.model_calls, 1, "{seen}: the call reached the port");
        let orders = orders_of(outcome);
        assert_eq!(reasons(&orders), [format!("model error: {seen}")]);
        assert_eq!(orders[0].size, OrderSize::All);
    }
    // An answer that is no order is the guest's business: it says so.
    let outcome = tick_async(&sandbox, &probe, "ask 1", Some(FakeModel::says("hodl"))).await;
    assert_eq!(
        reasons(&orders_of(outcome)),
        [r#"model error: malformed: no order in "hodl""#]
    );
}

#[tokio::test]
async fn without_a_port_every_call_answers_no_endpoint() {
    let sandbox = new_sandbox(SandboxConfig::default());
    let probe = load(&sandbox, "model-probe");
    let outcome = tick_async(&sandbox, &probe, "ask 6", None).await;
    assert_eq!(outcome.model_calls, 0);
    let orders = orders_of(outcome);
    assert_eq!(orders.len(), 6);
    assert!(
        reasons(&orders)
            .iter()
            .all(|r| *r == "model error: no-endpoint"),
        "{orders:?}"
    );
}

#[test]
fn the_synchronous_tick_of_a_model_component_has_no_model() {
    // What a backtest does: no runtime of its own, no port.
    let sandbox = new_sandbox(SandboxConfig::default());
    let probe = load(&sandbox, "model-probe");
    let outcome = tick(&sandbox, &probe, "ask 2");
    assert_eq!(outcome.model_calls, 0);
    assert_eq!(
        reasons(&orders_of(outcome)),
        ["model error: no-endpoint", "model error: no-endpoint"]
    );
}

#[tokio::test]
async fn tick_async_of_a_component_without_the_model_is_the_synchronous_tick() {
    let sandbox = new_sandbox(SandboxConfig::default());
    let v1 = load(&sandbox, "v0.1.0");
    let model = FakeModel::says("buy 1");
    let outcome = tick_async(&sandbox, &v1, "async", Some(model.clone())).await;
    assert_eq!(reasons(&orders_of(outcome)), ["v0.1.0 async"]);
    assert!(model.calls().is_empty());
}

#[tokio::test]
async fn waiting_for_a_slow_model_is_not_charged_but_a_spinning_guest_is_still_stopped() {
    // Fuel far beyond what 2 s of spinning burns, so only the wall-time guard can stop it.
    let sandbox = new_sandbox(SandboxConfig {
        fuel_per_tick: 1 << 50,
        ..SandboxConfig::default()
    });
    assert_eq!(sandbox.config().tick_wall_time, Duration::from_secs(2));
    let probe = load(&sandbox, "model-probe");
    let slow = FakeModel::new(Ok(reply("buy 0.2")), Duration::from_secs(3));
    let started = Instant::now();
    let outcome = tick_async(&sandbox, &probe, "ask 1", Some(slow.clone())).await;
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert_eq!(reasons(&orders_of(outcome)), ["model: buy 0.2"]);

    let started = Instant::now();
    let outcome = tick_async(&sandbox, &probe, "ask 1 spin", Some(slow)).await;
    let took = started.elapsed();
    assert_eq!(outcome.result.err(), Some(TickFault::Timeout));
    assert_eq!(outcome.model_calls, 1);
    // 3 s waiting (given back), then about 2 s of spinning.
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

#[test]
fn two_hundred_ticks_waiting_on_the_model_hold_no_thread() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sandbox = new_sandbox(SandboxConfig::default());
    let probe = Arc::new(load(&sandbox, "model-probe"));
    let model = FakeModel::new(Ok(reply("buy 0.1")), Duration::from_secs(1));
    let started = Instant::now();
    let outcomes = runtime.block_on(async {
        let mut ticks = tokio::task::JoinSet::new();
        for _ in 0..200 {
            let (sandbox, probe, model) = (sandbox.clone(), probe.clone(), model.clone());
            // `spawn`: the tick's future is `Send`, as the scheduler needs.
            ticks.spawn(async move { tick_async(&sandbox, &probe, "ask 1", Some(model)).await });
        }
        ticks.join_all().await
    });
    let took = started.elapsed();
    assert_eq!(outcomes.len(), 200);
    for outcome in outcomes {
        assert_eq!(reasons(&orders_of(outcome)), ["model: buy 0.1"]);
    }
    assert_eq!(model.calls().len(), 200);
    // Two threads, 200 one-second waits: only if no wait holds a thread is this about 1 s.
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn each_engine_caches_its_artifacts_in_its_own_directory() {
    let data = tempfile::tempdir().expect("tempdir");
    let config = || SandboxConfig {
        max_model_ticks: 16,
        ..SandboxConfig::with_data_dir(data.path(), [3; 32])
    };
    let probe = test_guest("model-probe").expect("probe");
    let fighter = builtin_component("fighter").expect("fighter");
    let first = Sandbox::new(config()).expect("sandbox");
    assert!(!first.load(probe).expect("probe").from_cache);
    assert!(!first.load(fighter).expect("fighter").from_cache);
    let components = data.path().join("components");
    let probe_file = first.cache_file(probe).expect("probe's file");
    let fighter_file = first.cache_file(fighter).expect("fighter's file");
    assert_eq!(
        probe_file.parent(),
        Some(components.join("model").as_path())
    );
    assert_eq!(fighter_file.parent(), Some(components.as_path()));
    assert!(probe_file.is_file() && fighter_file.is_file());
    // A restart loads both from their engine's cache.
    let restarted = Sandbox::new(config()).expect("sandbox");
    let probe = restarted.load(probe).expect("probe");
    assert!(probe.from_cache && probe.uses_model());
    assert!(restarted.load(fighter).expect("fighter").from_cache);
}

#[test]
fn the_default_configuration_builds_the_model_engine() {
    // 1024 slots: address space reserved up front, no memory until guests touch it.
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    assert_eq!(sandbox.config().max_model_ticks, 1024);
    let probe = load(&sandbox, "model-probe");
    assert!(probe.uses_model());
}
