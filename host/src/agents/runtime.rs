//! The agents' share of the sandbox: one [`Sandbox`] per server, built on first use (tests and
//! CLI tools that never tick pay nothing for its pooled memory), and the loaded components —
//! each class's built-in and every uploaded component an agent uses — compiled once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::chain::trader::SwapRoute;
use crate::sandbox::{LoadError, LoadedStrategy, Sandbox, SandboxConfig, builtin_component};

pub struct Runtime {
    /// The limits every agent's sandbox runs with: the one place they are decided.
    config: SandboxConfig,
    sandbox: OnceLock<Result<Sandbox, String>>,
    loaded: Mutex<HashMap<String, LoadedStrategy>>,
    /// How live agents swap on this server, built on first use.
    live_route: OnceLock<Arc<dyn SwapRoute>>,
}

impl Runtime {
    pub fn new(data_dir: PathBuf) -> Self {
        Runtime {
            config: SandboxConfig::with_data_dir(data_dir),
            sandbox: OnceLock::new(),
            loaded: Mutex::new(HashMap::new()),
            live_route: OnceLock::new(),
        }
    }

    /// The sandbox, created on first call with the component cache in the data dir.
    pub fn sandbox(&self) -> Result<&Sandbox, LoadError> {
        self.sandbox
            .get_or_init(|| Sandbox::new(self.config.clone()).map_err(|error| error.to_string()))
            .as_ref()
            .map_err(|message| LoadError::Engine(message.clone()))
    }

    /// The sandbox's limits, readable without building the sandbox (e.g. the upload size cap).
    pub fn limits(&self) -> &SandboxConfig {
        &self.config
    }

    /// The live swap route, if it was built already.
    pub fn live_route(&self) -> Option<Arc<dyn SwapRoute>> {
        self.live_route.get().cloned()
    }

    /// Keep `route` for every later tick (or the one another tick kept first).
    pub fn remember_live_route(&self, route: Arc<dyn SwapRoute>) -> Arc<dyn SwapRoute> {
        self.live_route.get_or_init(|| route).clone()
    }

    /// A loaded component from memory, if it was loaded before.
    pub fn cached(&self, key: &str) -> Option<LoadedStrategy> {
        self.loaded
            .lock()
            .ok()
            .and_then(|loaded| loaded.get(key).cloned())
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
    pub fn custom(&self, id: &str, bytes: &[u8]) -> Result<LoadedStrategy, LoadError> {
        let key = format!("custom:{id}");
        if let Some(strategy) = self.cached(&key) {
            return Ok(strategy);
        }
        self.remember(key, self.sandbox()?.load(bytes)?)
    }

    fn remember(&self, key: String, strategy: LoadedStrategy) -> Result<LoadedStrategy, LoadError> {
        if let Ok(mut loaded) = self.loaded.lock() {
            loaded.insert(key, strategy.clone());
        }
        Ok(strategy)
    }
}
