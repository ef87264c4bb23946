//! The tick of a component that uses the model: the steps of the synchronous tick (`tick`), run
//! as a future on the asynchronous engine, so a tick waiting for the model holds no OS thread.
//!
//! - the guest runs on a fiber and yields to the executor every [`YIELD_FUEL`] of fuel, so a
//!   long tick of a runtime guest does not hold a tokio worker either;
//! - waiting for a runtime slot or an instance slot is an async wait;
//! - the wall-time guard gives back the time spent waiting in `model.complete` (the epoch
//!   callback below): a slow model does not fault the tick, a guest that spins still stops.
//!   Fuel is never spent while waiting: the guest is not running.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::UpdateDeadline;

use super::engine::{LoadedStrategy, Pre, Profile, Sandbox};
use super::model::{ModelPort, ModelSession};
use super::tick::{Failed, GuestOutput, ProfileLimits, Ran, TickInput, TickOutcome, epochs};
use super::wit::{v0_2, v0_3};

/// Fuel a guest burns between two yields to the executor: about half a millisecond of guest
/// time, so other ticks and requests on the same worker wait no longer than that.
const YIELD_FUEL: u64 = 1_000_000;

impl Sandbox {
    /// Run one tick of `strategy` for agent `agent_id` without blocking the thread: the tick of
    /// a component that uses the model ([`LoadedStrategy::uses_model`]) asks `model`; `None`
    /// answers every call `no-endpoint`. At most `max_model_calls_per_tick` calls reach the
    /// port; those beyond answer `budget-exhausted`. [`TickOutcome::model_calls`] counts the
    /// calls that reached it.
    ///
    /// A component that does not use the model just runs the synchronous tick, on this thread
    /// (bounded by its fuel; the scheduler keeps those on blocking threads).
    pub async fn tick_async(
        &self,
        agent_id: &str,
        strategy: &LoadedStrategy,
        input: &TickInput<'_>,
        model: Option<Arc<dyn ModelPort>>,
    ) -> TickOutcome {
        if !strategy.uses_model() {
            return self.tick_as(agent_id, strategy, input);
        }
        let models = match self.models() {
            Ok(models) => models,
            // Unreachable in practice: the component loaded on this engine.
            Err(e) => return TickOutcome::skipped(&e.to_string()),
        };
        let wall = self.config.tick_wall_time;
        let profile = strategy.profile();
        let limits = ProfileLimits::of(&self.config, profile);
        let _place = match profile {
            Profile::Bare => None,
            Profile::Runtime => match self.runtime_ticks.enter_async(wall).await {
                Some(permit) => Some(permit),
                None => {
                    return TickOutcome::skipped(
                        "every runtime slot stayed busy; the tick is skipped",
                    );
                }
            },
        };
        let Some(_slot) = models.slots.enter_async(wall).await else {
            return TickOutcome::skipped("every model tick slot stayed busy; the tick is skipped");
        };
        let session = ModelSession::new(model, self.config.max_model_calls_per_tick);
        let mut store = self.store(
            &models.lane.engine,
            agent_id,
            strategy,
            input,
            &limits,
            session,
        );
        let started = Instant::now();
        store.epoch_deadline_callback(move |store| {
            // Wall time the guest had, less what it spent waiting for the model.
            let running = started.elapsed().saturating_sub(store.data().model.waited);
            Ok(match wall.checked_sub(running) {
                Some(left) if !left.is_zero() => UpdateDeadline::Continue(epochs(left)),
                _ => UpdateDeadline::Interrupt,
            })
        });
        store.set_epoch_deadline(epochs(wall));
        let result = match store
            .set_fuel(limits.fuel)
            .and_then(|()| store.fuel_async_yield_interval(Some(YIELD_FUEL)))
        {
            Err(e) => Err(super::TickFault::Instantiate(e.to_string())),
            Ok(()) => {
                // Instantiate and call `on-tick` with the pre-instance of either version (each
                // with its own generated types; the same code).
                macro_rules! on_tick {
                    ($pre:expr, $v:ident) => {
                        async {
                            let instance = $pre
                                .instantiate_async(&mut store)
                                .await
                                .map_err(Failed::Instantiate)?;
                            let ctx: $v::crucible::strategy::types::TickContext = input.into();
                            let (ran,) = instance
                                .func_on_tick()
                                .call_async(&mut store, (&ctx,))
                                .await
                                .map_err(Failed::Call)?;
                            Ok(ran.map(GuestOutput::from))
                        }
                        .await
                    };
                }
                let ran: Ran = match &strategy.pre {
                    Pre::Model(pre) => on_tick!(pre, v0_2),
                    Pre::Model3(pre) => on_tick!(pre, v0_3),
                    // `uses_model` said it is one of the two.
                    _ => Err(Failed::Instantiate(wasmtime::Error::msg(
                        "not a component of the model engine",
                    ))),
                };
                self.settle(ran, store.data(), &limits)
            }
        };
        self.outcome(store, limits.fuel, result)
    }
}
