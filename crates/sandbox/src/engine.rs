//! The engine, the linker and loading components (validate → compile or load cached → pre-instantiate).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache::{ComponentCache, content_hash};
use super::gate::Gate;
use super::tick::TickState;
use super::wit::{v0_1, v0_2, v0_3};
use super::{LoadError, SandboxConfig};
use crucible_optimize::params::ParamSpec;

/// The sandbox: engines and linkers shared by every strategy and tick. Cheap to share (`Arc`
/// it); ticks on different threads run in parallel.
///
/// Two engines with the same limits and pooling configuration: the synchronous one (`fast`)
/// runs every component that does not import `model` on the caller's (blocking) thread; the
/// asynchronous one (`models`, built on the first component that imports `model`) runs the
/// others as futures, so a tick waiting for a model holds no thread (`Sandbox::tick_async`).
pub struct Sandbox {
    pub(super) fast: Lane,
    models: OnceLock<Result<ModelLane, String>>,
    pub(super) config: SandboxConfig,
    /// Compilations in progress (`config.compile_workers` at most), on either engine.
    compiling: Arc<Gate>,
    /// Runtime-profile ticks in progress (`config.runtime_concurrent_ticks` at most), on either
    /// engine.
    pub(super) runtime_ticks: Arc<Gate>,
}

/// One engine with its linkers and its cache of compiled artifacts.
pub(super) struct Lane {
    pub(super) engine: Engine,
    /// Our interfaces only, for components that import no WASI.
    linker: Linker<TickState>,
    /// The same plus the deterministic WASI 0.2 (with its deny-by-default `wasi:http`).
    wasi_linker: Linker<TickState>,
    cache: Option<ComponentCache>,
}

/// The asynchronous engine, and its instance slots: a tick waiting for a slot waits without a
/// thread, as one waiting for the model does.
pub(super) struct ModelLane {
    pub(super) lane: Lane,
    pub(super) slots: Arc<Gate>,
}

/// How a component runs, decided when it loads from what it imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Imports only our interfaces: small memory limit, the fast path.
    Bare,
    /// Brings a language runtime over WASI: the larger memory and fuel limits, a bounded number
    /// ticking at once.
    Runtime,
}

impl Profile {
    /// Stable name, as shown in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Bare => "bare",
            Profile::Runtime => "runtime",
        }
    }
}

/// The pre-instance of a loaded component, for the contract version and engine it needs.
#[derive(Clone)]
pub(super) enum Pre {
    /// Built against `crucible:strategy@0.1.0` (imports `host@0.1.0`): the synchronous engine.
    V1(v0_1::StrategyPre<TickState>),
    /// Built against 0.2.0 without importing `model` (or importing nothing of ours): the
    /// synchronous engine.
    V2(v0_2::StrategyPre<TickState>),
    /// Built against 0.3.0 without importing `model`: the synchronous engine.
    V3(v0_3::StrategyPre<TickState>),
    /// Imports `model@0.2.0`: the asynchronous engine.
    Model(v0_2::StrategyPre<TickState>),
    /// Imports `model@0.3.0`: the asynchronous engine.
    Model3(v0_3::StrategyPre<TickState>),
}

/// A validated, compiled component ready to tick: its `InstancePre` and identity.
#[derive(Clone)]
pub struct LoadedStrategy {
    pub(super) pre: Pre,
    /// Hex SHA-256 of the component bytes.
    pub hash: Arc<str>,
    /// Size of the component in bytes.
    pub size: usize,
    /// Whether the compiled artifact came from the disk cache.
    pub from_cache: bool,
    /// Whether the component imports WASI (and so ticks with a deterministic WASI context).
    pub wasi: bool,
    /// Time spent compiling or loading the artifact.
    pub load_time: Duration,
    /// The tunable parameters the component declares (none before 0.3.0), checked at load.
    pub(super) params: Arc<[ParamSpec]>,
}

impl LoadedStrategy {
    /// The limits this component ticks under.
    pub fn profile(&self) -> Profile {
        if self.wasi {
            Profile::Runtime
        } else {
            Profile::Bare
        }
    }

    /// Whether the component imports `crucible:strategy/model`: it ticks on the asynchronous
    /// engine, through [`Sandbox::tick_async`] with the agent's [`ModelPort`](super::ModelPort).
    pub fn uses_model(&self) -> bool {
        matches!(self.pre, Pre::Model(_) | Pre::Model3(_))
    }

    /// The contract version the component was built against (`"0.1.0"`, `"0.2.0"` or
    /// `"0.3.0"`).
    pub fn wit_version(&self) -> &'static str {
        match self.pre {
            Pre::V1(_) => "0.1.0",
            Pre::V2(_) | Pre::Model(_) => "0.2.0",
            Pre::V3(_) | Pre::Model3(_) => "0.3.0",
        }
    }

    /// The tunable parameters the component declares, in its order (none before 0.3.0).
    pub fn params(&self) -> &[ParamSpec] {
        &self.params
    }
}

impl std::fmt::Debug for LoadedStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedStrategy")
            .field("hash", &self.hash)
            .field("size", &self.size)
            .field("from_cache", &self.from_cache)
            .field("wasi", &self.wasi)
            .field("wit_version", &self.wit_version())
            .field("uses_model", &self.uses_model())
            .finish()
    }
}

/// With `PAGEMAP_SCAN`: dirty bytes of each pooled memory and table reset in place (not
/// handed back to the OS) between ticks. A fighter tick dirties a few pages around the 1 MiB
/// stack top, the data segment and the heap; anything a guest dirties beyond this is
/// decommitted as usual.
const KEEP_RESIDENT_SCANNED: usize = 1 << 20;

/// Without the scan (Linux < 6.7) the first bytes of a slot are memset whether dirty or not,
/// so keep that small: the rest is `madvise`d away and re-faulted on the next tick.
const KEEP_RESIDENT_UNSCANNED: usize = 128 << 10;

/// Add one generated interface to a linker, with the tick's store data as its host.
macro_rules! link {
    ($linker:expr, $($interface:ident)::+) => {
        $($interface)::+::add_to_linker::<TickState, HasSelf<TickState>>($linker, |s| s)
    };
}

/// The engine configuration both engines share, with `slots` instances in the pool.
fn engine_config(config: &SandboxConfig, slots: u32) -> Config {
    let mut pool = PoolingAllocationConfig::default();
    let keep_resident = if PoolingAllocationConfig::is_pagemap_scan_available() {
        KEEP_RESIDENT_SCANNED
    } else {
        KEEP_RESIDENT_UNSCANNED
    };
    pool.total_component_instances(slots)
        .total_core_instances(slots * 16)
        .max_core_instances_per_component(16)
        .total_memories(slots * 2)
        .max_memories_per_component(2)
        .total_tables(slots * 8)
        .max_tables_per_component(8)
        // One fiber stack per tick in progress (the asynchronous engine runs each on one).
        .total_stacks(slots)
        // Slots are sized for the larger (runtime) profile; each store's limiter holds a
        // bare guest to its own, smaller limit.
        .max_memory_size(config.max_memory_bytes.max(config.runtime_memory_bytes))
        // Reset the pages a tick dirtied in place instead of handing them back to the OS:
        // re-faulting them on the next instantiation was the dominant per-tick cost.
        // `PAGEMAP_SCAN` (Linux 6.7+) finds exactly the dirty pages, wherever they are
        // (a Rust guest's stack top sits at 1 MiB, not in the first pages). Fighter tick
        // 55 -> 26 us. `Auto`: where the kernel lacks it, wasmtime falls back to a memset
        // of the first `keep_resident` bytes.
        .pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(keep_resident)
        .table_keep_resident(keep_resident);
    let mut wasm = Config::new();
    wasm.strategy(wasmtime::Strategy::Cranelift)
        .wasm_component_model(true)
        .consume_fuel(true)
        // Fuel bounds the instructions a guest runs; the epoch bounds the wall time of a
        // tick that burns little fuel (a host call that blocks, a pathological page fault
        // storm). The epoch check is a load and a compare per loop header.
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    wasm
}

impl Lane {
    /// An engine, its epoch clock, its linkers (`add_ours` adds our interfaces, `add_wasi` WASI
    /// on top) and the artifact cache in `cache_dir`.
    fn new(
        config: &SandboxConfig,
        slots: u32,
        cache_dir: Option<std::path::PathBuf>,
        add_ours: impl FnOnce(&mut Linker<TickState>) -> wasmtime::Result<()>,
        add_wasi: impl FnOnce(&mut Linker<TickState>) -> wasmtime::Result<()>,
    ) -> Result<Self, LoadError> {
        let engine = Engine::new(&engine_config(config, slots))
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        start_epoch_clock(&engine);
        let mut linker = Linker::new(&engine);
        add_ours(&mut linker).map_err(|e| LoadError::Engine(e.to_string()))?;
        let mut wasi_linker = linker.clone();
        add_wasi(&mut wasi_linker).map_err(|e| LoadError::Engine(e.to_string()))?;
        let cache = match cache_dir {
            Some(dir) => Some(ComponentCache::new(dir, &engine, config.cache_key)?),
            None => None,
        };
        Ok(Lane {
            engine,
            linker,
            wasi_linker,
            cache,
        })
    }

    /// Resolve `component`'s imports against this lane's linker (with WASI or without).
    fn instance_pre(
        &self,
        component: &Component,
        wasi: bool,
    ) -> Result<InstancePre<TickState>, LoadError> {
        let wrong = |e: wasmtime::Error| LoadError::WrongWorld(format!("{e:#}"));
        if wasi {
            return self.wasi_linker.instantiate_pre(component).map_err(wrong);
        }
        // Without WASI: nothing unknown is left to resolve (see `Imports::of`), so this only
        // keeps the linker of the fast path free of definitions it would never use.
        let mut linker = self.linker.clone();
        linker
            .define_unknown_imports_as_traps(component)
            .map_err(wrong)?;
        linker.instantiate_pre(component).map_err(wrong)
    }
}

impl Sandbox {
    /// Build the synchronous engine (Cranelift, fuel, pooling allocator sized by `config`) and
    /// its linkers: `host` of both contract versions, and the same plus synchronous WASI.
    pub fn new(config: SandboxConfig) -> Result<Self, LoadError> {
        let fast = Lane::new(
            &config,
            config.max_concurrent_ticks,
            config.cache_dir.clone(),
            |linker| {
                // `host.log` only, for components that import no WASI (the built-in
                // strategies): their instantiation resolves nothing else and their store
                // carries no WASI context. `host@0.1.0` and `host@0.2.0` are the same function;
                // `types` has no functions, but components import it by name.
                link!(linker, v0_1::crucible::strategy::types)?;
                link!(linker, v0_1::crucible::strategy::host)?;
                link!(linker, v0_2::crucible::strategy::types)?;
                link!(linker, v0_2::crucible::strategy::host)?;
                link!(linker, v0_3::crucible::strategy::types)?;
                link!(linker, v0_3::crucible::strategy::host)
            },
            |linker| {
                // WASI 0.2 (sync bindings: these ticks run on blocking threads), virtualised
                // per tick in `wasi.rs`; `wasi:http` too, which refuses every outgoing
                // request.
                wasmtime_wasi::p2::add_to_linker_sync(linker)?;
                wasmtime_wasi_http::p2::add_only_http_to_linker_sync(linker)
            },
        )?;
        Ok(Sandbox {
            fast,
            models: OnceLock::new(),
            compiling: Gate::new(config.compile_workers),
            runtime_ticks: Gate::new(config.runtime_concurrent_ticks),
            config,
        })
    }

    /// The asynchronous engine, built on first use: the same limits and pooling configuration
    /// with `max_model_ticks` slots, `host` and `model` of 0.2.0 (`model.complete` an async host
    /// function), async WASI, and its own cache subdirectory (`<cache_dir>/model`) so the
    /// artifacts of the two engines never overwrite each other.
    pub(super) fn models(&self) -> Result<&ModelLane, LoadError> {
        let built = self.models.get_or_init(|| {
            let config = &self.config;
            let lane = Lane::new(
                config,
                config.max_model_ticks,
                config.cache_dir.as_ref().map(|dir| dir.join("model")),
                |linker| {
                    link!(linker, v0_2::crucible::strategy::types)?;
                    link!(linker, v0_2::crucible::strategy::host)?;
                    link!(linker, v0_2::crucible::strategy::model)?;
                    link!(linker, v0_3::crucible::strategy::types)?;
                    link!(linker, v0_3::crucible::strategy::host)?;
                    link!(linker, v0_3::crucible::strategy::model)
                },
                |linker| {
                    wasmtime_wasi::p2::add_to_linker_async(linker)?;
                    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
                },
            );
            lane.map(|lane| ModelLane {
                lane,
                slots: Gate::new(config.max_model_ticks as usize),
            })
            .map_err(|e| e.to_string())
        });
        built
            .as_ref()
            .map_err(|e| LoadError::Engine(format!("the engine of model components: {e}")))
    }

    /// The cache file a component's compiled artifact lives in (tests tamper with it).
    pub fn cache_file(&self, bytes: &[u8]) -> Option<std::path::PathBuf> {
        let lane = if imports_model(bytes) {
            &self.models().ok()?.lane
        } else {
            &self.fast
        };
        Some(lane.cache.as_ref()?.file_of(&content_hash(bytes)))
    }

    /// The limits this sandbox enforces.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// Validate and prepare a component: size limit, component format, imports we provide and
    /// the `on-tick` export of our world. Compiled once, by the engine it will tick on (the
    /// asynchronous one if it imports `model`); reused from that engine's disk cache.
    pub fn load(&self, bytes: &[u8]) -> Result<LoadedStrategy, LoadError> {
        if bytes.len() > self.config.max_component_bytes {
            return Err(LoadError::TooLarge {
                size: bytes.len(),
                limit: self.config.max_component_bytes,
            });
        }
        if !wasmparser_is_component(bytes) {
            return Err(LoadError::Invalid(
                "the bytes are not a WebAssembly component (build with --target wasm32-wasip2)"
                    .into(),
            ));
        }
        let hash = content_hash(bytes);
        let started = Instant::now();
        let asks_model = imports_model(bytes);
        let lane = if asks_model {
            &self.models()?.lane
        } else {
            &self.fast
        };
        let (component, from_cache) = self.compile_or_load(lane, &hash, bytes)?;
        let load_time = started.elapsed();
        let imports = Imports::of(&component, &lane.engine)?;
        if imports.model != asks_model {
            return Err(LoadError::WrongWorld(
                "its import of `crucible:strategy/model` is not a top-level import".into(),
            ));
        }
        let instance_pre = lane.instance_pre(&component, imports.wasi)?;
        let wrong = |e: wasmtime::Error| LoadError::WrongWorld(format!("{e:#}"));
        let version = imports
            .version
            .unwrap_or(if exports_params(&component, &lane.engine) {
                Version::V3
            } else {
                Version::V2
            });
        let pre = match (imports.model, version) {
            (true, Version::V3) => {
                Pre::Model3(v0_3::StrategyPre::new(instance_pre).map_err(wrong)?)
            }
            (true, _) => Pre::Model(v0_2::StrategyPre::new(instance_pre).map_err(wrong)?),
            (false, Version::V1) => Pre::V1(v0_1::StrategyPre::new(instance_pre).map_err(wrong)?),
            (false, Version::V2) => Pre::V2(v0_2::StrategyPre::new(instance_pre).map_err(wrong)?),
            (false, Version::V3) => Pre::V3(v0_3::StrategyPre::new(instance_pre).map_err(wrong)?),
        };
        let mut loaded = LoadedStrategy {
            pre,
            hash: hash.into(),
            size: bytes.len(),
            from_cache,
            wasi: imports.wasi,
            load_time,
            params: Arc::from(Vec::new()),
        };
        loaded.params = self.declared_params(&loaded)?.into();
        Ok(loaded)
    }

    fn compile_or_load(
        &self,
        lane: &Lane,
        hash: &str,
        bytes: &[u8],
    ) -> Result<(Component, bool), LoadError> {
        if let Some(cache) = &lane.cache
            && let Some(artifact) = cache.get(hash)
            && let Ok(component) = deserialize(&lane.engine, &artifact)
        {
            return Ok((component, true));
        }
        let artifact = self.compile_bounded(&lane.engine, bytes)?;
        let component = deserialize(&lane.engine, &artifact)
            .map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        if let Some(cache) = &lane.cache {
            // A cache that cannot be written costs a recompile next start, nothing more.
            if let Err(error) = cache.put(hash, &artifact) {
                tracing::warn!(%error, "could not write compiled component to the cache");
            }
        }
        Ok((component, false))
    }
}

/// The contract version a component was built against: named by its imports of our interfaces,
/// or, when it imports none, by its exports (only 0.3.0 exports `params`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
    V3,
}

/// Whether the component exports a top-level `params` (the declaration of 0.3.0).
fn exports_params(component: &Component, engine: &Engine) -> bool {
    component
        .component_type()
        .exports(engine)
        .any(|(name, _)| name == "params")
}

/// What a compiled component imports, checked against what this host provides.
struct Imports {
    /// `None` when it imports nothing of ours.
    version: Option<Version>,
    wasi: bool,
    model: bool,
}

impl Imports {
    /// Our interfaces (of one version: 0.1.0 or 0.2.0), plus WASI 0.2 of [`WASI_PACKAGES`] if
    /// the component imports any `wasi:*` interface. Anything else — another world, another
    /// version of ours, a `wasi:*` package this host lacks — is refused here, at upload, naming
    /// it; an import whose types the linker cannot match is refused by `instantiate_pre` in
    /// [`Sandbox::load`], at upload too. Nothing unresolved is left for a tick to discover.
    fn of(component: &Component, engine: &Engine) -> Result<Self, LoadError> {
        let mut found = Imports {
            version: None,
            wasi: false,
            model: false,
        };
        let mut version = None;
        for (name, _) in component.component_type().imports(engine) {
            if let Some(ours) = name.strip_prefix(OUR_PACKAGE) {
                let (interface, at) = ours.split_once('@').unwrap_or((ours, ""));
                let this = match at {
                    "0.1.0" => Version::V1,
                    "0.2.0" => Version::V2,
                    "0.3.0" => Version::V3,
                    _ => {
                        return Err(LoadError::WrongWorld(format!(
                            "it imports `{name}`; this host serves crucible:strategy 0.1.0, \
                             0.2.0 and 0.3.0"
                        )));
                    }
                };
                if version.is_some_and(|v| v != this) {
                    return Err(LoadError::WrongWorld(
                        "it imports interfaces of more than one version of crucible:strategy"
                            .into(),
                    ));
                }
                version = Some(this);
                found.model |= interface == "model";
                continue;
            }
            let package = name.split('/').next().unwrap_or(name);
            if !WASI_PACKAGES.contains(&package) {
                return Err(LoadError::WrongWorld(format!(
                    "it imports `{name}`, which this host does not provide"
                )));
            }
            found.wasi = true;
        }
        found.version = version;
        Ok(found)
    }
}

/// Prefix of our package's interface names (`crucible:strategy/host@0.2.0`).
const OUR_PACKAGE: &str = "crucible:strategy/";

/// Whether `bytes` import `crucible:strategy/model`, read from the component's own import
/// sections (nested modules and components skipped) before anything is compiled: the engine
/// that compiles a component depends on it. Unreadable bytes say no; compiling reports them.
pub(super) fn imports_model(bytes: &[u8]) -> bool {
    use wasmparser::{Parser, Payload};
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(payload) = payload else {
            return false;
        };
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) if depth == 0 => return false,
            Payload::End(_) => depth -= 1,
            Payload::ComponentImportSection(imports) if depth == 0 => {
                let model = imports.into_iter().any(|import| {
                    import.is_ok_and(|i| i.name.name.starts_with("crucible:strategy/model@"))
                });
                if model {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

impl Sandbox {
    /// Compile on a worker of the node's bounded pool, within `compile_timeout` (waiting for a
    /// free worker included). A compilation that overruns is abandoned by its caller but keeps
    /// its worker until Cranelift returns, so overruns cannot pile up compilations either.
    fn compile_bounded(&self, engine: &Engine, bytes: &[u8]) -> Result<Vec<u8>, LoadError> {
        let limit = self.config.compile_timeout;
        let started = Instant::now();
        let permit = self
            .compiling
            .enter(limit)
            .ok_or(LoadError::CompileTimeout(limit))?;
        let (done, outcome) = std::sync::mpsc::channel();
        let engine = engine.clone();
        let bytes = bytes.to_vec();
        std::thread::Builder::new()
            .name("component-compile".into())
            .spawn(move || {
                let _permit = permit;
                // The receiver is gone if the caller gave up waiting; nothing to tell then.
                let _ = done.send(engine.precompile_component(&bytes));
            })
            .map_err(LoadError::Cache)?;
        let left = limit.saturating_sub(started.elapsed());
        match outcome.recv_timeout(left) {
            Ok(compiled) => compiled.map_err(|e| LoadError::Invalid(format!("{e:#}"))),
            Err(_) => Err(LoadError::CompileTimeout(limit)),
        }
    }
}

/// Advance `engine`'s epoch every [`EPOCH_TICK`] from a thread of its own, which ends when the
/// engine is dropped.
fn start_epoch_clock(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("sandbox-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        });
    if let Err(error) = spawned {
        // Without the clock, ticks are still bounded by fuel; say so rather than fail.
        tracing::warn!(%error, "could not start the sandbox's epoch clock");
    }
}

/// Granularity of the wall-clock guard.
pub(super) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The WASI 0.2 packages the WASI linkers implement: `wasmtime_wasi::p2::add_to_linker_sync`
/// (`_async` on the asynchronous engine), and `wasi:http` from `wasmtime_wasi_http`.
const WASI_PACKAGES: &[&str] = &[
    "wasi:io",
    "wasi:clocks",
    "wasi:random",
    "wasi:cli",
    "wasi:filesystem",
    "wasi:sockets",
    "wasi:http",
];

/// Load an artifact produced by this engine's `precompile_component`.
#[expect(
    unsafe_code,
    reason = "wasmtime can only load precompiled code unsafely; see SAFETY"
)]
fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `artifact` is either what `Engine::precompile_component` of this same engine just
    // returned, or a cache file this server wrote whose SHA-256 and engine compatibility hash
    // were checked by `ComponentCache::get`. wasmtime additionally checks its own header.
    unsafe { Component::deserialize(engine, artifact) }
}

/// A component starts with `\0asm`, then version 0x0d and layer 0x01 (a core module has layer 0).
fn wasmparser_is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && &bytes[..4] == b"\0asm" && bytes[6..8] == [0x01, 0x00]
}
