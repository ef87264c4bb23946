//! The agents' share of the sandbox: one [`Sandbox`] per server, built on first use (tests and
//! CLI tools that never tick pay nothing for its pooled memory), and the loaded components —
//! each class's built-in and every uploaded component an agent uses — compiled once and kept in
//! memory while agents use them (evicted after [`IDLE_EVICTION`] unused, or the least recently
//! used first beyond [`MAX_LOADED`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::chain::trader::SwapRoute;
use crate::config::SandboxArgs;
use crate::sandbox::{LoadError, LoadedStrategy, Sandbox, SandboxConfig, builtin_component};

/// A loaded component unused this long is dropped from memory (its compiled artifact stays in
/// the disk cache, so using it again costs a load, not a compile).
pub(crate) const IDLE_EVICTION: Duration = Duration::from_secs(15 * 60);

/// Loaded components kept in memory at most.
pub(super) const MAX_LOADED: usize = 256;

/// What one account may keep uploaded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UploadQuota {
    pub components: u64,
    pub bytes: u64,
}

pub struct Runtime {
    /// The limits every agent's sandbox runs with: the one place they are decided.
    config: SandboxConfig,
    quota: UploadQuota,
    sandbox: OnceLock<Result<Sandbox, String>>,
    loaded: Mutex<HashMap<String, Loaded>>,
    /// How live agents swap on this server, built on first use.
    live_route: OnceLock<Arc<dyn SwapRoute>>,
}

struct Loaded {
    strategy: LoadedStrategy,
    last_used: Instant,
}

impl Runtime {
    /// The runtime of a server with data in `data_dir`, the deployment's sandbox settings, and
    /// `cache_key` (derived from the master key) authenticating compiled artifacts on disk.
    pub(crate) fn new(data_dir: &Path, settings: &SandboxArgs, cache_key: [u8; 32]) -> Self {
        let mut config = SandboxConfig::with_data_dir(data_dir, cache_key);
        config.max_component_bytes = (settings.max_component_mib << 20) as usize;
        config.runtime_memory_bytes = (settings.max_guest_memory_mib << 20) as usize;
        config.runtime_fuel_per_tick = settings.runtime_fuel_per_tick;
        config.max_model_calls_per_tick = settings.model_calls_per_tick;
        config.compile_workers = settings.compile_workers as usize;
        config.compile_timeout = Duration::from_secs(settings.compile_timeout_secs);
        Runtime {
            config,
            quota: UploadQuota {
                components: settings.strategy_quota_count,
                bytes: settings.strategy_quota_mib << 20,
            },
            sandbox: OnceLock::new(),
            loaded: Mutex::new(HashMap::new()),
            live_route: OnceLock::new(),
        }
    }

    /// What one account may keep uploaded.
    pub(crate) fn quota(&self) -> UploadQuota {
        self.quota
    }

    /// The sandbox, created on first call with the component cache in the data dir.
    pub(crate) fn sandbox(&self) -> Result<&Sandbox, LoadError> {
        self.sandbox
            .get_or_init(|| Sandbox::new(self.config.clone()).map_err(|error| error.to_string()))
            .as_ref()
            .map_err(|message| LoadError::Engine(message.clone()))
    }

    /// The sandbox's limits, readable without building the sandbox (e.g. the upload size cap).
    pub(crate) fn limits(&self) -> &SandboxConfig {
        &self.config
    }

    /// The live swap route, if it was built already.
    pub(crate) fn live_route(&self) -> Option<Arc<dyn SwapRoute>> {
        self.live_route.get().cloned()
    }

    /// Keep `route` for every later tick (or the one another tick kept first).
    pub(crate) fn remember_live_route(&self, route: Arc<dyn SwapRoute>) -> Arc<dyn SwapRoute> {
        self.live_route.get_or_init(|| route).clone()
    }

    /// A loaded component from memory, if it was loaded before (and not evicted since).
    pub(crate) fn cached(&self, key: &str) -> Option<LoadedStrategy> {
        let mut loaded = self.loaded.lock().ok()?;
        let entry = loaded.get_mut(key)?;
        entry.last_used = Instant::now();
        Some(entry.strategy.clone())
    }

    /// Drop the components unused for `idle` (the scheduler's maintenance calls this with
    /// [`IDLE_EVICTION`]). A tick holding one keeps its own clone until it ends.
    pub(crate) fn evict_idle(&self, idle: Duration) -> usize {
        let Ok(mut loaded) = self.loaded.lock() else {
            return 0;
        };
        let before = loaded.len();
        loaded.retain(|_, entry| entry.last_used.elapsed() < idle);
        before - loaded.len()
    }

    /// The class's built-in strategy.
    pub fn builtin(&self, class: &str) -> Result<LoadedStrategy, LoadError> {
        let key = format!("builtin:{class}");
        if let Some(strategy) = self.cached(&key) {
            return Ok(strategy);
        }
        let bytes = builtin_component(class)
            .ok_or_else(|| LoadError::Invalid(format!("no built-in strategy for `{class}`")))?;
        self.remember(key, self.sandbox()?.load(bytes)?)
    }

    /// An uploaded component by id, from its bytes (validated and compiled on first use).
    pub(crate) fn custom(&self, id: &str, bytes: &[u8]) -> Result<LoadedStrategy, LoadError> {
        let key = format!("custom:{id}");
        if let Some(strategy) = self.cached(&key) {
            return Ok(strategy);
        }
        self.remember(key, self.sandbox()?.load(bytes)?)
    }

    fn remember(&self, key: String, strategy: LoadedStrategy) -> Result<LoadedStrategy, LoadError> {
        if let Ok(mut loaded) = self.loaded.lock() {
            if loaded.len() >= MAX_LOADED
                && !loaded.contains_key(&key)
                && let Some(oldest) = loaded
                    .iter()
                    .min_by_key(|(_, entry)| entry.last_used)
                    .map(|(key, _)| key.clone())
            {
                loaded.remove(&oldest);
            }
            loaded.insert(
                key,
                Loaded {
                    strategy: strategy.clone(),
                    last_used: Instant::now(),
                },
            );
        }
        Ok(strategy)
    }
}
