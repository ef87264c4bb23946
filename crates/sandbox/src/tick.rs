//! One tick: fresh store and instance, call `on-tick`, classify failures, validate the output.
//! This is the synchronous tick (the fast path); ticks of components that use the model run
//! the same steps as a future (`async_tick`).

use std::sync::{Arc, Mutex, MutexGuard};

use crucible_market::{Candle, Signals};
use crucible_optimize::params::ParamValue;
use crucible_paper::{OrderRequest, OrderSize, PortfolioView, Side};
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, ResourceLimiter, Store, Trap};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::engine::{EPOCH_TICK, LoadedStrategy, Pre, Profile, Sandbox};
use super::model::ModelSession;
use super::wasi::{self, WasiSeed};
use super::wit::{v0_1, v0_2, v0_3};
use super::{SandboxConfig, TickFault};

/// The agent settings a strategy sees (the WIT `agent-config`, and the parameters of 0.3.0's
/// `tick-context`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentSettings {
    /// The agent's class (`fighter`, ...).
    pub class: String,
    /// The token traded.
    pub base: String,
    /// The token it is priced in.
    pub quote: String,
    /// The candle interval (`1h`, ...).
    pub interval: String,
    /// Largest share of equity held in base, percent.
    pub max_allocation: f64,
    /// The free-text personality / system prompt the operator gave the agent (may be empty).
    pub personality: String,
    /// The agent's language model (`vendor/model`).
    pub model_id: String,
    /// Every parameter the component declares, at the agent's value or the default, in
    /// declaration order (`tick-context.params` of 0.3.0; older components never see them).
    pub params: Vec<crucible_optimize::params::Param>,
}

/// Everything one tick needs.
#[derive(Debug, Clone, Copy)]
pub struct TickInput<'a> {
    /// The agent's settings.
    pub settings: &'a AgentSettings,
    /// Unix milliseconds.
    pub now: i64,
    /// The last candles, oldest first.
    pub candles: &'a [Candle],
    /// The base token's signals now.
    pub signals: Signals,
    /// The paper portfolio before this tick's orders.
    pub portfolio: PortfolioView,
    /// What the strategy kept from its last tick.
    pub state: &'a [u8],
}

/// A line the guest logged.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// `debug`, `info`, `warn` or `error`.
    pub level: &'static str,
    /// The line, cut to `max_log_line_bytes`.
    pub message: String,
}

/// What a tick produced: orders and new state, or the fault that stopped it; plus its logs.
#[derive(Debug)]
pub struct TickOutcome {
    /// The orders and the new state, or the fault that stopped the tick.
    pub result: Result<(Vec<OrderRequest>, Vec<u8>), TickFault>,
    /// The lines the guest logged (at most `max_log_lines`).
    pub logs: Vec<LogLine>,
    /// Log lines dropped over the per-tick cap.
    pub logs_dropped: u32,
    /// Fuel the tick consumed (instructions, plus the bytes it logged at their fuel rate).
    pub fuel_used: u64,
    /// The most linear memory the instance asked for, bytes (its profile at upload).
    pub memory_peak: usize,
    /// `model.complete` calls that reached the [`ModelPort`](super::ModelPort) (not those
    /// answered `no-endpoint` or `budget-exhausted` by the sandbox), for the host to record.
    pub model_calls: u32,
}

impl TickOutcome {
    /// A tick that did not start: no instance, no fuel, `reason` as its fault.
    pub(super) fn skipped(reason: &str) -> Self {
        TickOutcome {
            result: Err(TickFault::Instantiate(reason.into())),
            logs: Vec::new(),
            logs_dropped: 0,
            fuel_used: 0,
            memory_peak: 0,
            model_calls: 0,
        }
    }
}

/// Per-tick store data: the limiter, the log sink and, for components that import WASI, the
/// deterministic WASI context (nothing else is reachable from a guest).
pub(super) struct TickState {
    limiter: TickLimiter,
    /// Shared with the WASI stdout/stderr streams, which log into it too.
    logs: Arc<Mutex<LogSink>>,
    /// What the WASI context is derived from; `None` for components linked without WASI.
    wasi_seed: Option<WasiSeed>,
    /// Built on the first WASI call of the tick, so a std guest that never calls WASI pays nothing.
    wasi: Option<WasiState>,
    /// The tick's model calls (none reach a port on the synchronous engine: it links no `model`).
    pub(super) model: ModelSession,
}

/// The WASI of one tick: `wasi:http` shares the resource table of the rest (its bodies are
/// `wasi:io` streams).
struct WasiState {
    ctx: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    hooks: wasi::NoOutgoingHttp,
}

impl TickState {
    fn logs(&self) -> MutexGuard<'_, LogSink> {
        // A poisoned sink only means a panic elsewhere in this tick; its lines are still valid.
        self.logs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TickState {
    fn wasi_state(&mut self) -> &mut WasiState {
        let logs = &self.logs;
        // Only WASI-linked components call in here, and those always have a seed; a missing one
        // would still get the deny-by-default context, seeded from nothing.
        let seed = self.wasi_seed.unwrap_or(WasiSeed {
            agent: [0; 32],
            now: 0,
        });
        self.wasi.get_or_insert_with(|| WasiState {
            ctx: wasi::context(seed, logs),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks: wasi::NoOutgoingHttp,
        })
    }
}

impl WasiView for TickState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let state = self.wasi_state();
        WasiCtxView {
            ctx: &mut state.ctx,
            table: &mut state.table,
        }
    }
}

impl WasiHttpView for TickState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        let state = self.wasi_state();
        WasiHttpCtxView {
            ctx: &mut state.http,
            table: &mut state.table,
            hooks: &mut state.hooks,
        }
    }
}

impl TickState {
    /// `host.log`, of either contract version.
    fn log_line(&mut self, level: &'static str, message: String) -> wasmtime::Result<()> {
        match self.logs().push(level, message) {
            Pushed::Ok => Ok(()),
            Pushed::Flood => wasmtime::bail!("log flood"),
            Pushed::OutOfFuel => wasmtime::bail!(OUT_OF_LOG_FUEL),
        }
    }
}

/// `on-tick`'s result in either contract version (the types are the same in both), for
/// `Sandbox::validate`.
pub(super) struct GuestOutput {
    orders: Vec<GuestOrder>,
    state: Vec<u8>,
}

struct GuestOrder {
    side: Side,
    size: GuestSize,
    reason: Option<String>,
}

/// The WIT `size`, not yet checked.
#[derive(Debug)]
enum GuestSize {
    FractionOfEquity(f64),
    BaseAmount(f64),
    All,
}

/// What one contract version needs from the host beyond its generated bindings: `host.log`,
/// the input copied into its `tick-context` (candles as six flat columns), and its
/// `tick-output` read back. The versions share every type, so this is the same code for each.
macro_rules! per_version {
    ($v:ident) => {
        per_version!($v, |_input| {});
    };
    ($v:ident, with_params) => {
        per_version!($v, |input| { params: params_into_wit!($v, input) });
    };
    ($v:ident, |$input:ident| { $($extra:tt)* }) => {
        const _: () = {
            use $v::crucible::strategy::{host, types as w};

            impl w::Host for TickState {}

            impl host::Host for TickState {
                fn log(&mut self, level: host::Level, message: String) -> wasmtime::Result<()> {
                    let level = match level {
                        host::Level::Debug => "debug",
                        host::Level::Info => "info",
                        host::Level::Warn => "warn",
                        host::Level::Error => "error",
                    };
                    self.log_line(level, message)
                }
            }

            impl From<&TickInput<'_>> for w::TickContext {
                fn from($input: &TickInput<'_>) -> Self {
                    let input = $input;
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
                        $($extra)*
                    }
                }
            }

            impl From<w::TickOutput> for GuestOutput {
                fn from(output: w::TickOutput) -> Self {
                    GuestOutput {
                        orders: output
                            .orders
                            .into_iter()
                            .map(|order| GuestOrder {
                                side: match order.side {
                                    w::Side::Buy => Side::Buy,
                                    w::Side::Sell => Side::Sell,
                                },
                                size: match order.size {
                                    w::Size::FractionOfEquity(f) => GuestSize::FractionOfEquity(f),
                                    w::Size::BaseAmount(a) => GuestSize::BaseAmount(a),
                                    w::Size::All => GuestSize::All,
                                },
                                reason: order.reason,
                            })
                            .collect(),
                        state: output.state,
                    }
                }
            }
        };
    };
}

/// `tick-context.params` of a version that has them.
macro_rules! params_into_wit {
    ($v:ident, $input:ident) => {{
        use $v::crucible::strategy::types as w;
        $input
            .settings
            .params
            .iter()
            .map(|p| w::Param {
                name: p.name.clone(),
                value: match &p.value {
                    ParamValue::Int(i) => w::ParamValue::Int(*i),
                    ParamValue::Float(f) => w::ParamValue::Float(*f),
                    ParamValue::Choice(c) => w::ParamValue::Choice(c.clone()),
                },
            })
            .collect()
    }};
}

per_version!(v0_1);
per_version!(v0_2);
per_version!(v0_3, with_params);

/// The tick's log: `host.log` calls and the lines a WASI guest writes to stdout/stderr, under
/// one set of caps (lines kept, bytes per line, calls before a flood).
pub(super) struct LogSink {
    lines: Vec<LogLine>,
    calls: u32,
    dropped: u32,
    flooded: bool,
    max_lines: usize,
    max_line_bytes: usize,
    flood_calls: u32,
    /// Unterminated stdout and stderr text (at most `max_line_bytes` each; the rest is cut).
    partial: [Vec<u8>; 2],
    /// Bytes the guest handed over (logged, written, or dropped over the caps): charged as fuel.
    copied: u64,
    /// Bytes the tick may hand over before it is out of fuel, at `log_fuel_per_byte`.
    copy_budget: u64,
    /// Whether the copied bytes went over the budget (the tick then fails as out of fuel).
    out_of_fuel: bool,
}

/// Whether a line was taken (kept or counted as dropped), or the tick is a flood, or the bytes
/// it copied used up its fuel.
pub(super) enum Pushed {
    Ok,
    Flood,
    OutOfFuel,
}

impl LogSink {
    /// Count `bytes` handed over by the guest; true once they exceed the tick's budget.
    fn copy(&mut self, bytes: usize) -> bool {
        self.copied = self.copied.saturating_add(bytes as u64);
        self.out_of_fuel |= self.copied > self.copy_budget;
        self.out_of_fuel
    }

    /// One log call: counts toward the flood limit, kept if under the line cap.
    fn push(&mut self, level: &'static str, message: String) -> Pushed {
        self.calls += 1;
        if self.copy(message.len()) {
            return Pushed::OutOfFuel;
        }
        if self.calls > self.flood_calls {
            self.flooded = true;
            return Pushed::Flood;
        }
        if self.lines.len() >= self.max_lines {
            self.dropped += 1;
            return Pushed::Ok;
        }
        self.lines.push(LogLine {
            level,
            message: truncate(message, self.max_line_bytes),
        });
        Pushed::Ok
    }

    /// Bytes written to stdout (`info`) or stderr (`error`): every complete line is one log call.
    pub(super) fn write_stdio(&mut self, level: &'static str, bytes: &[u8]) -> Pushed {
        if self.copy(bytes.len()) {
            return Pushed::OutOfFuel;
        }
        let which = usize::from(level != "info");
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            let (text, ended) = match chunk.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (chunk, false),
            };
            let room = self
                .max_line_bytes
                .saturating_sub(self.partial[which].len());
            self.partial[which].extend_from_slice(&text[..text.len().min(room)]);
            if ended {
                match self.end_line(which, level) {
                    Pushed::Ok => {}
                    stopped => return stopped,
                }
            }
        }
        Pushed::Ok
    }

    /// Log the pending stdout or stderr text as one line.
    fn end_line(&mut self, which: usize, level: &'static str) -> Pushed {
        let bytes = std::mem::take(&mut self.partial[which]);
        let line = String::from_utf8_lossy(&bytes);
        let line = line.strip_suffix('\r').unwrap_or(&line).to_string();
        // The bytes were counted when written; the line itself is not copied again.
        self.copied = self.copied.saturating_sub(line.len() as u64);
        self.push(level, line)
    }

    /// At the end of the tick: text written without a final newline is still a line.
    fn finish(&mut self) {
        for (which, level) in [(0, "info"), (1, "error")] {
            if !self.partial[which].is_empty() {
                // Past the flood limit the tick has failed already; nothing more to record.
                let _ = self.end_line(which, level);
            }
        }
    }
}

/// Memory and table limits, remembering whether a growth was refused (to name the fault).
struct TickLimiter {
    max_memory: usize,
    memory_denied: bool,
    /// Largest size any memory was created with or grown to.
    peak: usize,
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
        self.peak = self.peak.max(desired);
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

/// Error text of a tick stopped because the bytes it logged used up its fuel.
pub(super) const OUT_OF_LOG_FUEL: &str = "out of fuel copying log output";

/// The limits of one profile.
pub(super) struct ProfileLimits {
    pub(super) memory: usize,
    pub(super) fuel: u64,
}

impl ProfileLimits {
    pub(super) fn of(config: &SandboxConfig, profile: Profile) -> Self {
        match profile {
            Profile::Bare => ProfileLimits {
                memory: config.max_memory_bytes,
                fuel: config.fuel_per_tick,
            },
            Profile::Runtime => ProfileLimits {
                memory: config.runtime_memory_bytes,
                fuel: config.runtime_fuel_per_tick,
            },
        }
    }
}

impl TickState {
    pub(super) fn new(config: &SandboxConfig, limits: &ProfileLimits, model: ModelSession) -> Self {
        TickState {
            limiter: TickLimiter {
                max_memory: limits.memory,
                memory_denied: false,
                peak: 0,
            },
            logs: Arc::new(Mutex::new(LogSink {
                lines: Vec::new(),
                calls: 0,
                dropped: 0,
                flooded: false,
                max_lines: config.max_log_lines,
                max_line_bytes: config.max_log_line_bytes,
                flood_calls: config.log_flood_calls,
                partial: [Vec::new(), Vec::new()],
                copied: 0,
                copy_budget: limits.fuel / config.log_fuel_per_byte.max(1),
                out_of_fuel: false,
            })),
            wasi_seed: None,
            wasi: None,
            model,
        }
    }
}

/// How a tick's instance failed, for `Sandbox::settle`.
pub(super) enum Failed {
    Instantiate(wasmtime::Error),
    Call(wasmtime::Error),
}

/// What running `on-tick` gave: the guest's own result, or how the instance failed.
pub(super) type Ran = Result<Result<GuestOutput, String>, Failed>;

impl Sandbox {
    /// The fuel one tick of `strategy` may burn (per its profile).
    pub fn fuel_limit(&self, strategy: &LoadedStrategy) -> u64 {
        ProfileLimits::of(&self.config, strategy.profile()).fuel
    }

    /// Run one tick of `strategy` in a fresh instance. Never panics on guest behaviour.
    ///
    /// The tick belongs to no agent in particular: a WASI guest's random numbers depend on the
    /// tick time alone. The scheduler and backtests use [`Sandbox::tick_as`].
    pub fn tick(&self, strategy: &LoadedStrategy, input: &TickInput<'_>) -> TickOutcome {
        self.tick_as("", strategy, input)
    }

    /// Run one tick of `strategy` for agent `agent_id`: a WASI guest's random numbers are seeded
    /// from the agent id and the tick time, so a replay of the same tick sees the same values.
    ///
    /// Blocks the calling thread for the tick (use a blocking thread). A component that uses the
    /// model runs here too, driven to completion on this thread, with no model: every call
    /// answers `no-endpoint` (what a backtest sees). Live ticks of those go through
    /// [`Sandbox::tick_async`].
    pub fn tick_as(
        &self,
        agent_id: &str,
        strategy: &LoadedStrategy,
        input: &TickInput<'_>,
    ) -> TickOutcome {
        // Instantiate and call `on-tick` with the pre-instance of either version (each with
        // its own generated types; the same code).
        macro_rules! on_tick {
            ($pre:expr) => {
                |store: &mut Store<TickState>| -> Ran {
                    let instance = $pre.instantiate(&mut *store).map_err(Failed::Instantiate)?;
                    let ran = instance.call_on_tick(store, &input.into());
                    Ok(ran.map_err(Failed::Call)?.map(GuestOutput::from))
                }
            };
        }
        match &strategy.pre {
            Pre::V1(pre) => self.tick_sync(agent_id, strategy, input, on_tick!(pre)),
            Pre::V2(pre) => self.tick_sync(agent_id, strategy, input, on_tick!(pre)),
            Pre::V3(pre) => self.tick_sync(agent_id, strategy, input, on_tick!(pre)),
            Pre::Model(_) | Pre::Model3(_) => {
                wasmtime_wasi::runtime::in_tokio(self.tick_async(agent_id, strategy, input, None))
            }
        }
    }

    /// The synchronous tick around `run` (instantiate and call, per contract version).
    fn tick_sync(
        &self,
        agent_id: &str,
        strategy: &LoadedStrategy,
        input: &TickInput<'_>,
        run: impl FnOnce(&mut Store<TickState>) -> Ran,
    ) -> TickOutcome {
        let profile = strategy.profile();
        let limits = ProfileLimits::of(&self.config, profile);
        // Runtime guests may each use far more memory than bare ones: only a few at once.
        let _place = match profile {
            Profile::Bare => None,
            Profile::Runtime => match self.runtime_ticks.enter(self.config.tick_wall_time) {
                Some(permit) => Some(permit),
                None => {
                    return TickOutcome::skipped(
                        "every runtime slot stayed busy; the tick is skipped",
                    );
                }
            },
        };
        let mut store = self.store(
            &self.fast.engine,
            agent_id,
            strategy,
            input,
            &limits,
            ModelSession::new(None, 0),
        );
        store.epoch_deadline_trap();
        store.set_epoch_deadline(epochs(self.config.tick_wall_time));
        let result = match store.set_fuel(limits.fuel) {
            Err(e) => Err(TickFault::Instantiate(e.to_string())),
            Ok(()) => {
                let ran = run(&mut store);
                self.settle(ran, store.data(), &limits)
            }
        };
        self.outcome(store, limits.fuel, result)
    }

    /// A fresh store for one tick of `strategy` on `engine`: limiter, hostcall fuel, the WASI
    /// seed of WASI guests, the model session. Fuel and the epoch deadline are the caller's.
    pub(super) fn store(
        &self,
        engine: &Engine,
        agent_id: &str,
        strategy: &LoadedStrategy,
        input: &TickInput<'_>,
        limits: &ProfileLimits,
        model: ModelSession,
    ) -> Store<TickState> {
        let mut data = TickState::new(&self.config, limits, model);
        if strategy.wasi {
            data.wasi_seed = Some(WasiSeed::new(agent_id, input.now));
        }
        let mut store = Store::new(engine, data);
        store.limiter(|s| &mut s.limiter);
        store.set_hostcall_fuel(self.config.max_hostcall_bytes);
        store
    }

    /// The tick's result from what running it gave.
    pub(super) fn settle(
        &self,
        ran: Ran,
        state: &TickState,
        limits: &ProfileLimits,
    ) -> Result<(Vec<OrderRequest>, Vec<u8>), TickFault> {
        match ran {
            Err(Failed::Instantiate(e)) => Err(self.classify(&e, state, limits, true)),
            Err(Failed::Call(e)) => Err(self.classify(&e, state, limits, false)),
            Ok(Err(message)) => Err(TickFault::StrategyError(truncate(message, 200))),
            Ok(Ok(output)) => self.validate(output),
        }
    }

    /// The outcome of a tick that ran in `store` with `fuel`: fuel used (with the bytes it
    /// logged), memory peak, logs and model calls.
    pub(super) fn outcome(
        &self,
        store: Store<TickState>,
        fuel: u64,
        result: Result<(Vec<OrderRequest>, Vec<u8>), TickFault>,
    ) -> TickOutcome {
        let copied = store.data().logs().copied;
        let fuel_used = fuel
            .saturating_sub(store.get_fuel().unwrap_or(0))
            .saturating_add(copied.saturating_mul(self.config.log_fuel_per_byte));
        let state = store.into_data();
        let memory_peak = state.limiter.peak;
        let model_calls = state.model.reached;
        let mut logs = state.logs();
        logs.finish();
        TickOutcome {
            result,
            logs: std::mem::take(&mut logs.lines),
            logs_dropped: logs.dropped,
            fuel_used,
            memory_peak,
            model_calls,
        }
    }

    pub(super) fn classify(
        &self,
        error: &wasmtime::Error,
        state: &TickState,
        limits: &ProfileLimits,
        instantiating: bool,
    ) -> TickFault {
        if state.logs().out_of_fuel {
            return TickFault::Timeout;
        }
        if state.logs().flooded {
            return TickFault::LogFlood {
                limit: self.config.log_flood_calls,
            };
        }
        if state.limiter.memory_denied {
            return TickFault::MemoryLimit {
                limit: limits.memory,
            };
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel | Trap::Interrupt) => TickFault::Timeout,
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

    fn validate(&self, output: GuestOutput) -> Result<(Vec<OrderRequest>, Vec<u8>), TickFault> {
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
                GuestSize::FractionOfEquity(f) if f.is_finite() && f > 0.0 && f <= 1.0 => {
                    OrderSize::FractionOfEquity(f)
                }
                GuestSize::BaseAmount(a) if a.is_finite() && a > 0.0 => OrderSize::BaseAmount(a),
                GuestSize::All => OrderSize::All,
                other => {
                    return Err(TickFault::InvalidOutput(format!(
                        "order {i}: size {other:?} (fractions are in (0, 1], amounts positive)"
                    )));
                }
            };
            orders.push(OrderRequest {
                side: order.side,
                size,
                reason: order.reason.map(|r| truncate(r, 200)),
            });
        }
        Ok((orders, output.state))
    }
}

/// Epoch ticks in `wall` (at least one).
pub(super) fn epochs(wall: std::time::Duration) -> u64 {
    (wall.as_millis() / EPOCH_TICK.as_millis().max(1)).max(1) as u64
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
