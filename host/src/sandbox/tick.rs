//! One tick: fresh store and instance, call `on-tick`, classify failures, validate the output.

use wasmtime::{ResourceLimiter, Store, Trap};

use super::engine::{LoadedStrategy, Sandbox};
use super::wit::crucible::strategy::{host, types as w};
use super::{SandboxConfig, TickFault};
use crate::market::{Candle, Signals};
use crate::paper::{OrderRequest, OrderSize, PortfolioView, Side};

/// The agent settings a strategy sees (the WIT `agent-config`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    pub class: String,
    pub base: String,
    pub quote: String,
    pub interval: String,
    pub max_allocation: f64,
    pub personality: String,
    pub model_id: String,
}

/// Everything one tick needs.
#[derive(Debug, Clone, Copy)]
pub struct TickInput<'a> {
    pub settings: &'a AgentSettings,
    /// Unix milliseconds.
    pub now: i64,
    pub candles: &'a [Candle],
    pub signals: Signals,
    pub portfolio: PortfolioView,
    pub state: &'a [u8],
}

/// A line the guest logged.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub level: &'static str,
    pub message: String,
}

/// What a tick produced: orders and new state, or the fault that stopped it; plus its logs.
#[derive(Debug)]
pub struct TickOutcome {
    pub result: Result<(Vec<OrderRequest>, Vec<u8>), TickFault>,
    pub logs: Vec<LogLine>,
    /// Log lines dropped over the per-tick cap.
    pub logs_dropped: u32,
    /// Fuel the tick consumed.
    pub fuel_used: u64,
}

/// Per-tick store data: the limiter and the log sink (nothing else is reachable from a guest).
pub struct TickState {
    limiter: TickLimiter,
    logs: LogSink,
}

impl w::Host for TickState {}

impl host::Host for TickState {
    fn log(&mut self, level: host::Level, message: String) -> wasmtime::Result<()> {
        let sink = &mut self.logs;
        sink.calls += 1;
        if sink.calls > sink.flood_calls {
            sink.flooded = true;
            wasmtime::bail!("log flood");
        }
        if sink.lines.len() >= sink.max_lines {
            sink.dropped += 1;
            return Ok(());
        }
        let level = match level {
            host::Level::Debug => "debug",
            host::Level::Info => "info",
            host::Level::Warn => "warn",
            host::Level::Error => "error",
        };
        sink.lines.push(LogLine {
            level,
            message: truncate(message, sink.max_line_bytes),
        });
        Ok(())
    }
}

struct LogSink {
    lines: Vec<LogLine>,
    calls: u32,
    dropped: u32,
    flooded: bool,
    max_lines: usize,
    max_line_bytes: usize,
    flood_calls: u32,
}

/// Memory and table limits, remembering whether a growth was refused (to name the fault).
struct TickLimiter {
    max_memory: usize,
    memory_denied: bool,
}

impl ResourceLimiter for TickLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.memory_denied = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }

    fn instances(&self) -> usize {
        16
    }

    fn tables(&self) -> usize {
        8
    }

    fn memories(&self) -> usize {
        2
    }
}

impl TickState {
    fn new(config: &SandboxConfig) -> Self {
        TickState {
            limiter: TickLimiter {
                max_memory: config.max_memory_bytes,
                memory_denied: false,
            },
            logs: LogSink {
                lines: Vec::new(),
                calls: 0,
                dropped: 0,
                flooded: false,
                max_lines: config.max_log_lines,
                max_line_bytes: config.max_log_line_bytes,
                flood_calls: config.log_flood_calls,
            },
        }
    }
}

impl Sandbox {
    /// Run one tick of `strategy` in a fresh instance. Never panics on guest behaviour.
    pub fn tick(&self, strategy: &LoadedStrategy, input: &TickInput<'_>) -> TickOutcome {
        let mut store = Store::new(&self.engine, TickState::new(&self.config));
        store.limiter(|s| &mut s.limiter);
        store.set_hostcall_fuel(self.config.max_hostcall_bytes);
        let fuel = self.config.fuel_per_tick;
        let result = match store.set_fuel(fuel) {
            Err(e) => Err(TickFault::Instantiate(e.to_string())),
            Ok(()) => {
                let ctx = to_wit(input);
                match strategy.pre.instantiate(&mut store) {
                    Err(e) => Err(self.classify(&e, store.data(), true)),
                    Ok(instance) => match instance.call_on_tick(&mut store, &ctx) {
                        Err(e) => Err(self.classify(&e, store.data(), false)),
                        Ok(Err(message)) => Err(TickFault::StrategyError(truncate(message, 200))),
                        Ok(Ok(output)) => self.validate(output),
                    },
                }
            }
        };
        let fuel_used = fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let state = store.into_data();
        TickOutcome {
            result,
            logs: state.logs.lines,
            logs_dropped: state.logs.dropped,
            fuel_used,
        }
    }

    fn classify(
        &self,
        error: &wasmtime::Error,
        state: &TickState,
        instantiating: bool,
    ) -> TickFault {
        if state.logs.flooded {
            return TickFault::LogFlood {
                limit: self.config.log_flood_calls,
            };
        }
        if state.limiter.memory_denied {
            return TickFault::MemoryLimit {
                limit: self.config.max_memory_bytes,
            };
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => TickFault::Timeout,
            Some(Trap::StackOverflow) => TickFault::StackOverflow,
            Some(trap) => TickFault::Trap(trap.to_string()),
            None => {
                let text = format!("{error:#}");
                // wasmtime's `HostcallFuelExhausted` is private; its message is stable in 48.x.
                if text.contains("fuel allocated for hostcalls") {
                    TickFault::OutputTooLarge {
                        limit: self.config.max_hostcall_bytes,
                    }
                } else if instantiating {
                    TickFault::Instantiate(text)
                } else {
                    TickFault::Trap(text)
                }
            }
        }
    }

    fn validate(&self, output: w::TickOutput) -> Result<(Vec<OrderRequest>, Vec<u8>), TickFault> {
        let limits = &self.config;
        if output.orders.len() > limits.max_orders {
            return Err(TickFault::InvalidOutput(format!(
                "{} orders; at most {} per tick",
                output.orders.len(),
                limits.max_orders
            )));
        }
        if output.state.len() > limits.max_state_bytes {
            return Err(TickFault::InvalidOutput(format!(
                "state of {} bytes; at most {}",
                output.state.len(),
                limits.max_state_bytes
            )));
        }
        let mut orders = Vec::with_capacity(output.orders.len());
        for (i, order) in output.orders.into_iter().enumerate() {
            let size = match order.size {
                w::Size::FractionOfEquity(f) if f.is_finite() && f > 0.0 && f <= 1.0 => {
                    OrderSize::FractionOfEquity(f)
                }
                w::Size::BaseAmount(a) if a.is_finite() && a > 0.0 => OrderSize::BaseAmount(a),
                w::Size::All => OrderSize::All,
                other => {
                    return Err(TickFault::InvalidOutput(format!(
                        "order {i}: size {other:?} (fractions are in (0, 1], amounts positive)"
                    )));
                }
            };
            let side = match order.side {
                w::Side::Buy => Side::Buy,
                w::Side::Sell => Side::Sell,
            };
            orders.push(OrderRequest {
                side,
                size,
                reason: order.reason.map(|r| truncate(r, 200)),
            });
        }
        Ok((orders, output.state))
    }
}

/// Copy the input into the WIT context: candles as six flat columns.
fn to_wit(input: &TickInput<'_>) -> w::TickContext {
    let s = input.settings;
    let c = input.candles;
    w::TickContext {
        config: w::AgentConfig {
            class: s.class.clone(),
            base: s.base.clone(),
            quote: s.quote.clone(),
            interval: s.interval.clone(),
            max_allocation: s.max_allocation,
            personality: s.personality.clone(),
            model_id: s.model_id.clone(),
        },
        now: input.now,
        candles: w::Candles {
            ts: c.iter().map(|k| k.ts).collect(),
            open: c.iter().map(|k| k.open).collect(),
            high: c.iter().map(|k| k.high).collect(),
            low: c.iter().map(|k| k.low).collect(),
            close: c.iter().map(|k| k.close).collect(),
            volume: c.iter().map(|k| k.volume).collect(),
        },
        signals: w::Signals {
            sentiment: input.signals.sentiment,
            mention_volume: input.signals.mention_volume,
            exchange_net_flow: input.signals.exchange_net_flow,
            whale_net_buy: input.signals.whale_net_buy,
            active_wallets_change: input.signals.active_wallets_change,
        },
        portfolio: w::Portfolio {
            base: input.portfolio.base,
            quote: input.portfolio.quote,
            avg_entry_price: input.portfolio.avg_entry_price,
            equity: input.portfolio.equity,
        },
        state: input.state.to_vec(),
    }
}

/// Cut a string to at most `max` bytes on a character boundary.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}
