//! Demo data for a fresh embedded install, so the README's first command shows something alive:
//! the demo tournaments ([`crate::tournaments::demo`]) and a demo operator whose agents, one
//! per class, trade live on the simnet in the Demo Free-for-All ([`crate::agents::demo`]).
//!
//! Only the embedded default gets it: SQLite with the in-process simnet. A PostgreSQL database
//! or a real cluster is a production deployment and never does, whatever the setting says;
//! `CRUCIBLE_DEMO_DATA=off` turns it off on the embedded default too (docs/operations.md).

use crate::chain::Chain;
use crate::clock::Clock;
use crate::config::Config;
use crate::db::Backend;
use crate::db::Store;
use crate::state::AppState;

/// Whether this deployment takes demo data: asked for (the default on the embedded database),
/// and the embedded default indeed.
fn wanted(store: &Store, chain: &Chain, config: &Config) -> bool {
    config.demo_data && store.backend() == Backend::Sqlite && chain.simnet().is_some()
}

/// Seed the demo tournaments if the database has none, before the node serves.
pub(crate) async fn seed_tournaments(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
) -> anyhow::Result<()> {
    if config.demo_data && !wanted(store, chain, config) {
        tracing::warn!(
            "demo data is only for the embedded default (SQLite and the simnet): not seeded on \
             this deployment"
        );
    }
    if wanted(store, chain, config) {
        crate::tournaments::demo::seed_if_empty(store, clock, chain).await?;
    }
    Ok(())
}

/// Seed what is missing of the demo operator's agents, once the node serves (they are funded
/// and started through its RPC). A demo that cannot be completed (the free tournament ended,
/// say) is reported and left: it never stops the node.
pub(crate) async fn seed_agents(state: AppState) {
    if !wanted(&state.store, &state.chain, &state.config) {
        return;
    }
    let free_for_all =
        match crate::tournaments::demo::live_free_for_all(&state.store, &*state.clock).await {
            Ok(Some(id)) => id,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "the demo tournament could not be read");
                return;
            }
        };
    if let Err(error) = crate::agents::demo::seed(
        &state.store,
        &*state.clock,
        &state.events,
        &state.chain,
        &state.sealer,
        &state.config,
        &state.agents,
        &free_for_all,
    )
    .await
    {
        tracing::warn!(%error, "the demo agents could not be seeded");
    }
}
