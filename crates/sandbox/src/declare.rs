//! Reading a component's parameter declaration (`params` of `crucible:strategy@0.3.0`) once, when
//! it loads: in a fresh instance under the limits of a tick (fuel, memory, wall time), with no
//! tick context, so it depends on nothing but the component. What it returns is checked
//! (`crucible_optimize::params::check_declaration`); a component whose declaration fails, traps
//! or is malformed does not load.

use crucible_market::Signals;
use crucible_optimize::params::{ParamKind, ParamSpec, ParamValue, check_declaration};
use crucible_paper::PortfolioView;
use wasmtime::Store;

use super::engine::{LoadedStrategy, Pre, Sandbox};
use super::model::ModelSession;
use super::tick::{AgentSettings, ProfileLimits, TickInput, TickState, epochs};
use super::wit::v0_3::crucible::strategy::types as w;
use super::{LoadError, TickFault};

impl Sandbox {
    /// The parameters `strategy` declares: none for components built before 0.3.0.
    pub(super) fn declared_params(
        &self,
        strategy: &LoadedStrategy,
    ) -> Result<Vec<ParamSpec>, LoadError> {
        let declared = match &strategy.pre {
            Pre::V1(_) | Pre::V2(_) | Pre::Model(_) => return Ok(Vec::new()),
            Pre::V3(pre) => {
                let mut store = self.declaration_store(&self.fast.engine, strategy)?;
                let instance = pre.instantiate(&mut store).map_err(|e| fault(&store, e))?;
                instance
                    .call_params(&mut store)
                    .map_err(|e| fault(&store, e))?
            }
            Pre::Model3(pre) => {
                let engine = &self.models()?.lane.engine;
                let mut store = self.declaration_store(engine, strategy)?;
                let call = async move {
                    let instance = pre
                        .instantiate_async(&mut store)
                        .await
                        .map_err(|e| fault(&store, e))?;
                    let (declared,) = instance
                        .func_params()
                        .call_async(&mut store, ())
                        .await
                        .map_err(|e| fault(&store, e))?;
                    Ok::<_, LoadError>(declared)
                };
                // On a thread of its own: `load` may be called from inside an async runtime,
                // where blocking on this future would panic; a fresh thread blocks on
                // wasmtime-wasi's own runtime instead.
                std::thread::scope(|scope| {
                    scope
                        .spawn(|| wasmtime_wasi::runtime::in_tokio(call))
                        .join()
                        .unwrap_or_else(|_| {
                            Err(LoadError::Params("`params` panicked the host".into()))
                        })
                })?
            }
        };
        let specs: Vec<ParamSpec> = declared.into_iter().map(from_wit).collect();
        check_declaration(&specs).map_err(|e| LoadError::Params(e.to_string()))?;
        Ok(specs)
    }

    /// A store for the declaration call: a tick's limits, no model, a WASI context seeded from
    /// nothing (a declaration must not depend on the time or on randomness).
    fn declaration_store(
        &self,
        engine: &wasmtime::Engine,
        strategy: &LoadedStrategy,
    ) -> Result<Store<TickState>, LoadError> {
        let limits = ProfileLimits::of(&self.config, strategy.profile());
        let settings = AgentSettings::default();
        let input = TickInput {
            settings: &settings,
            now: 0,
            candles: &[],
            signals: Signals {
                sentiment: 0.0,
                mention_volume: 1.0,
                exchange_net_flow: 0.0,
                whale_net_buy: 0.0,
                active_wallets_change: 0.0,
            },
            portfolio: PortfolioView {
                base: 0.0,
                quote: 0.0,
                avg_entry_price: None,
                equity: 0.0,
            },
            state: &[],
        };
        let mut store = self.store(
            engine,
            "",
            strategy,
            &input,
            &limits,
            ModelSession::new(None, 0),
        );
        store.epoch_deadline_trap();
        store.set_epoch_deadline(epochs(self.config.tick_wall_time));
        store
            .set_fuel(limits.fuel)
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        Ok(store)
    }
}

fn fault(store: &Store<TickState>, error: wasmtime::Error) -> LoadError {
    let why = match store.get_fuel() {
        Ok(0) => TickFault::Timeout.to_string(),
        _ => format!("{error:#}"),
    };
    LoadError::Params(format!("`params` failed: {why}"))
}

fn from_wit(spec: w::ParamSpec) -> ParamSpec {
    ParamSpec {
        name: spec.name,
        description: spec.description,
        kind: match spec.kind {
            w::ParamKind::Int(r) => ParamKind::Int {
                min: r.min,
                max: r.max,
            },
            w::ParamKind::Float(r) => ParamKind::Float {
                min: r.min,
                max: r.max,
            },
            w::ParamKind::Choice(choices) => ParamKind::Choice { choices },
        },
        default: match spec.default {
            w::ParamValue::Int(i) => ParamValue::Int(i),
            w::ParamValue::Float(f) => ParamValue::Float(f),
            w::ParamValue::Choice(c) => ParamValue::Choice(c),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BUILTIN_CLASSES, SandboxConfig, builtin_component, test_guest};
    use super::*;

    #[test]
    fn declarations_are_read_at_load_and_bad_ones_refused() {
        let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
        let robust = sandbox
            .load(test_guest("robust").expect("guest"))
            .expect("load");
        assert_eq!(robust.wit_version(), "0.3.0");
        let declared = robust.params();
        assert_eq!(declared.len(), 1);
        assert_eq!(declared[0].name, "churn");
        assert_eq!(declared[0].kind, ParamKind::Int { min: 0, max: 7 });
        assert_eq!(declared[0].default, ParamValue::Int(3));
        // Every class declares its parameters.
        for class in BUILTIN_CLASSES {
            let loaded = sandbox
                .load(builtin_component(class).expect("class"))
                .expect("load");
            assert!(!loaded.params().is_empty(), "{class}");
        }
        // Before 0.3.0 there are none; the component still loads.
        let old = sandbox
            .load(test_guest("v0.1.0").expect("guest"))
            .expect("load");
        assert!(old.params().is_empty());
        // The model engine reads them too (the probe declares none).
        let probe = sandbox
            .load(test_guest("model-probe").expect("guest"))
            .expect("load");
        assert!(probe.uses_model() && probe.params().is_empty());

        match sandbox.load(test_guest("bad-params").expect("guest")) {
            Err(LoadError::Params(why)) => assert!(why.contains("period"), "{why}"),
            other => panic!("a duplicate parameter must be refused: {other:?}"),
        }
    }
}
