//! The deterministic WASI of std guests: clocks read the tick's time, random numbers replay
//! exactly per agent and tick, stdout/stderr become the tick's log, and files, sockets and name
//! lookups are refused with an error the guest sees (never a host panic).

use crucible::market::{Interval, MarketFeed, Pair, SimulatedMarket};
use crucible::paper::{Ledger, PaperConfig};
use crucible::sandbox::{
    AgentSettings, LoadedStrategy, Sandbox, SandboxConfig, TickFault, TickInput, TickOutcome,
    builtin_component, test_guest,
};

struct Fixture {
    sandbox: Sandbox,
    std_guest: LoadedStrategy,
    candles: Vec<crucible::market::Candle>,
    signals: crucible::market::Signals,
}

fn fixture() -> Fixture {
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    let std_guest = sandbox
        .load(test_guest("hostile-std").expect("std guest"))
        .expect("load std guest");
    let market = SimulatedMarket::new(5);
    let pair = Pair::new("SOL", "USDC");
    let end = SimulatedMarket::origin() + 300 * Interval::H1.millis();
    let candles = market
        .candles(&pair, Interval::H1, end, 50)
        .expect("candles");
    let signals = market.signals(&pair, end).expect("signals");
    Fixture {
        sandbox,
        std_guest,
        candles,
        signals,
    }
}

impl Fixture {
    fn now(&self) -> i64 {
        self.candles.last().expect("candles").ts + Interval::H1.millis()
    }

    fn tick_at(&self, agent: &str, now: i64, personality: &str) -> TickOutcome {
        let settings = AgentSettings {
            class: "rogue".into(),
            base: "SOL".into(),
            quote: "USDC".into(),
            interval: "1h".into(),
            max_allocation: 100.0,
            personality: personality.into(),
            model_id: "test/wasi".into(),
            params: Vec::new(),
        };
        let ledger = Ledger::new(10_000.0, PaperConfig::default());
        let input = TickInput {
            settings: &settings,
            now,
            candles: &self.candles,
            signals: self.signals,
            portfolio: ledger.view(self.candles.last().expect("candles").close),
            state: &[],
        };
        self.sandbox.tick_as(agent, &self.std_guest, &input)
    }

    fn tick(&self, personality: &str) -> TickOutcome {
        self.tick_at("agent-1", self.now(), personality)
    }
}

/// The reason of the single order a tick returned.
fn reason(outcome: &TickOutcome) -> String {
    let (orders, _) = outcome.result.as_ref().expect("the tick succeeds");
    assert_eq!(orders.len(), 1);
    orders[0].reason.clone().expect("a reason")
}

fn strategy_error(outcome: &TickOutcome) -> String {
    match &outcome.result {
        Err(TickFault::StrategyError(message)) => message.clone(),
        other => panic!("expected the guest to report an error, got {other:?}"),
    }
}

#[test]
fn only_components_importing_wasi_get_a_wasi_context() {
    let f = fixture();
    assert!(f.std_guest.wasi, "a std guest imports WASI");
    let fighter = f
        .sandbox
        .load(builtin_component("fighter").expect("fighter"))
        .expect("load");
    assert!(!fighter.wasi, "built-in strategies stay on the fast path");
    let no_std = f
        .sandbox
        .load(test_guest("hostile").expect("no_std guest"))
        .expect("load");
    assert!(!no_std.wasi);
}

#[test]
fn random_replays_per_agent_and_tick() {
    let f = fixture();
    let now = f.now();
    let first = reason(&f.tick_at("agent-1", now, "random"));
    let again = reason(&f.tick_at("agent-1", now, "random"));
    assert_eq!(first, again, "the same agent and tick see the same numbers");

    // Secure bytes, insecure bytes and the insecure seed: three different hex strings.
    let parts: Vec<&str> = first.split(' ').collect();
    assert_eq!(parts.len(), 3, "{first}");
    assert_eq!(parts[0].len(), 32);
    assert_eq!(parts[1].len(), 32);
    assert_eq!(parts[2].len(), 32);
    assert!(parts[0] != parts[1] && parts[1] != parts[2] && parts[0] != parts[2]);

    let other_agent = reason(&f.tick_at("agent-2", now, "random"));
    let next_tick = reason(&f.tick_at("agent-1", now + Interval::H1.millis(), "random"));
    for other in [&other_agent, &next_tick] {
        let theirs: Vec<&str> = other.split(' ').collect();
        for (a, b) in parts.iter().zip(&theirs) {
            assert_ne!(a, b, "another agent or tick gets other numbers");
        }
    }
}

#[test]
fn files_sockets_and_name_lookups_are_refused_cleanly() {
    let f = fixture();
    let file = strategy_error(&f.tick("open-file"));
    assert!(file.starts_with("open failed (0 preopens): "), "{file}");

    let socket = strategy_error(&f.tick("open-socket"));
    assert!(socket.starts_with("socket failed: "), "{socket}");
    assert!(socket.to_lowercase().contains("access"), "{socket}");

    let lookup = strategy_error(&f.tick("name-lookup"));
    assert!(lookup.starts_with("lookup failed: "), "{lookup}");

    // No environment and no arguments (wasi-libc's working directory is a virtual `/`).
    let environment = reason(&f.tick("environment"));
    assert!(environment.starts_with("env 0 args 0 "), "{environment}");
    // The component and the sandbox go on.
    assert_eq!(reason(&f.tick("polite")), "well behaved");
}

#[test]
fn stdout_and_stderr_are_the_ticks_log_under_the_same_caps() {
    let f = fixture();
    let printed = f.tick("print");
    assert!(printed.result.is_ok(), "{:?}", printed.result);
    let lines: Vec<(&str, &str)> = printed
        .logs
        .iter()
        .map(|l| (l.level, l.message.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            ("info", "to stdout"),
            ("error", "to stderr in two writes"),
            ("error", "no newline at the end"),
        ]
    );

    let limits = f.sandbox.config().clone();
    let flood = f.tick("print-flood");
    assert_eq!(
        flood.result.as_ref().expect_err("a flood fails the tick"),
        &TickFault::LogFlood {
            limit: limits.log_flood_calls
        }
    );
    assert_eq!(flood.logs.len(), limits.max_log_lines);
    assert_eq!(flood.logs[0].message, "print line 0");
    assert_eq!(reason(&f.tick("polite")), "well behaved");
}
