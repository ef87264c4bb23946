//! The engine, the linker and loading components (validate → compile or load cached → pre-instantiate).

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache::{ComponentCache, content_hash};
use super::gate::Gate;
use super::tick::TickState;
use super::wit::{Strategy, StrategyPre};
use super::{LoadError, SandboxConfig};

/// The sandbox: one engine and linker shared by every strategy and tick. Cheap to share
/// (`Arc` it); ticks on different threads run in parallel.
pub struct Sandbox {
    pub(super) engine: Engine,
    linker: Linker<TickState>,
    /// `linker` plus deterministic WASI 0.2, for components that import `wasi:*`.
    wasi_linker: Linker<TickState>,
    cache: Option<ComponentCache>,
    pub(super) config: SandboxConfig,
    /// Compilations in progress (`config.compile_workers` at most).
    compiling: Arc<Gate>,
    /// Runtime-profile ticks in progress (`config.runtime_concurrent_ticks` at most).
    pub(super) runtime_ticks: Arc<Gate>,
}

/// How a component runs, decided when it loads from what it imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Imports only `host.log`: small memory limit, the fast path.
    Bare,
    /// Brings a language runtime over WASI: the larger memory and fuel limits, a bounded number
    /// ticking at once.
    Runtime,
}

impl Profile {
    /// Stable name, as shown in the API.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Profile::Bare => "bare",
            Profile::Runtime => "runtime",
        }
    }
}

/// A validated, compiled component ready to tick: its `InstancePre` and identity.
#[derive(Clone)]
pub struct LoadedStrategy {
    pub(super) pre: StrategyPre<TickState>,
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
}

impl std::fmt::Debug for LoadedStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedStrategy")
            .field("hash", &self.hash)
            .field("size", &self.size)
            .field("from_cache", &self.from_cache)
            .field("wasi", &self.wasi)
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

impl Sandbox {
    /// Build the engine (Cranelift, fuel, pooling allocator sized by `config`) and the linkers
    /// (`host.log`, and `host.log` plus WASI; see `linker_for`).
    pub fn new(config: SandboxConfig) -> Result<Self, LoadError> {
        let mut pool = PoolingAllocationConfig::default();
        let keep_resident = if PoolingAllocationConfig::is_pagemap_scan_available() {
            KEEP_RESIDENT_SCANNED
        } else {
            KEEP_RESIDENT_UNSCANNED
        };
        let slots = config.max_concurrent_ticks;
        pool.total_component_instances(slots)
            .total_core_instances(slots * 16)
            .max_core_instances_per_component(16)
            .total_memories(slots * 2)
            .max_memories_per_component(2)
            .total_tables(slots * 8)
            .max_tables_per_component(8)
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
        let engine = Engine::new(&wasm).map_err(|e| LoadError::Engine(e.to_string()))?;
        start_epoch_clock(&engine);

        // `host.log` only, for components that import no WASI (the built-in strategies): their
        // instantiation resolves nothing else and their store carries no WASI context.
        let mut linker = Linker::new(&engine);
        Strategy::add_to_linker::<TickState, HasSelf<TickState>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        // The same plus WASI 0.2 (sync bindings: ticks run on blocking threads), virtualised
        // per tick in `sandbox::wasi`.
        let mut wasi_linker = linker.clone();
        wasmtime_wasi::p2::add_to_linker_sync(&mut wasi_linker)
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        // `wasi:http` too, which refuses every outgoing request (`sandbox::wasi`).
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut wasi_linker)
            .map_err(|e| LoadError::Engine(e.to_string()))?;

        let cache = match &config.cache_dir {
            Some(dir) => Some(ComponentCache::new(dir.clone(), &engine, config.cache_key)?),
            None => None,
        };
        Ok(Sandbox {
            engine,
            linker,
            wasi_linker,
            cache,
            compiling: Gate::new(config.compile_workers),
            runtime_ticks: Gate::new(config.runtime_concurrent_ticks),
            config,
        })
    }

    /// The cache file a component's compiled artifact lives in (tests tamper with it).
    pub fn cache_file(&self, bytes: &[u8]) -> Option<std::path::PathBuf> {
        let cache = self.cache.as_ref()?;
        Some(cache.file_of(&content_hash(bytes)))
    }

    /// The limits this sandbox enforces.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// Validate and prepare a component: size limit, component format, imports we provide and
    /// the `on-tick` export of our world. Compiled once; reused from the disk cache.
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
        let (component, from_cache) = self.compile_or_load(&hash, bytes)?;
        let load_time = started.elapsed();
        let (linker, wasi) = self.linker_for(&component)?;
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
        let pre =
            StrategyPre::new(instance_pre).map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
        Ok(LoadedStrategy {
            pre,
            hash: hash.into(),
            size: bytes.len(),
            from_cache,
            wasi,
            load_time,
        })
    }

    /// The linker for one component and whether it uses WASI: our `host` interface, plus the
    /// deterministic WASI 0.2 (with its deny-by-default `wasi:http`) if the component imports
    /// any `wasi:*` interface. An import this host does not provide — another world, or a
    /// `wasi:*` package outside [`WASI_PACKAGES`] — is refused here, at upload, naming it; one
    /// whose version or types the linker cannot match is refused by `instantiate_pre` in
    /// [`Sandbox::load`], at upload too. Nothing unresolved is left for a tick to discover.
    fn linker_for(&self, component: &Component) -> Result<(Linker<TickState>, bool), LoadError> {
        let mut wasi = false;
        for (name, _) in component.component_type().imports(&self.engine) {
            let ours = name.starts_with("crucible:strategy/") && name.ends_with("@0.1.0");
            let package = name.split('/').next().unwrap_or(name);
            let provided_wasi = WASI_PACKAGES.contains(&package);
            wasi |= provided_wasi;
            if !(ours || provided_wasi) {
                return Err(LoadError::WrongWorld(format!(
                    "it imports `{name}`, which this host does not provide"
                )));
            }
        }
        if !wasi {
            let mut linker = self.linker.clone();
            linker
                .define_unknown_imports_as_traps(component)
                .map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
            return Ok((linker, false));
        }
        Ok((self.wasi_linker.clone(), true))
    }

    fn compile_or_load(&self, hash: &str, bytes: &[u8]) -> Result<(Component, bool), LoadError> {
        if let Some(cache) = &self.cache
            && let Some(artifact) = cache.get(hash)
            && let Ok(component) = deserialize(&self.engine, &artifact)
        {
            return Ok((component, true));
        }
        let artifact = self.compile_bounded(bytes)?;
        let component = deserialize(&self.engine, &artifact)
            .map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        if let Some(cache) = &self.cache {
            // A cache that cannot be written costs a recompile next start, nothing more.
            if let Err(error) = cache.put(hash, &artifact) {
                tracing::warn!(%error, "could not write compiled component to the cache");
            }
        }
        Ok((component, false))
    }
}

impl Sandbox {
    /// Compile on a worker of the node's bounded pool, within `compile_timeout` (waiting for a
    /// free worker included). A compilation that overruns is abandoned by its caller but keeps
    /// its worker until Cranelift returns, so overruns cannot pile up compilations either.
    fn compile_bounded(&self, bytes: &[u8]) -> Result<Vec<u8>, LoadError> {
        let limit = self.config.compile_timeout;
        let started = Instant::now();
        let permit = self
            .compiling
            .enter(limit)
            .ok_or(LoadError::CompileTimeout(limit))?;
        let (done, outcome) = std::sync::mpsc::channel();
        let engine = self.engine.clone();
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

/// The WASI 0.2 packages the WASI linker implements: `wasmtime_wasi::p2::add_to_linker_sync`,
/// and `wasi:http` from `wasmtime_wasi_http`.
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
