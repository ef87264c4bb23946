//! Building and running the server: open the database, apply migrations, load secrets, bind
//! the port, serve until a shutdown signal, then drain. Tests build the same [`Application`]
//! on port 0, so they exercise exactly what production runs.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::clock::{Clock, OffsetClock, SystemClock};
use crate::config::Config;
use crate::config::StorageArgs;
use crate::crypto::Sealer;
use crate::db::{Backend, Store};
use crate::http::rate_limit::RateLimits;
use crate::scheduler::Scheduler;
use crate::secret::Secret;
use crate::state::AppState;

pub struct Application {
    listener: TcpListener,
    state: AppState,
    local_addr: SocketAddr,
    /// Held while the server runs, so `crucible restore` and `crucible master-key rotate`
    /// refuse to run beside it.
    _data_dir_lock: Option<crate::data_dir_lock::DataDirLock>,
    /// On PostgreSQL, this node's end of the event relay to the other nodes.
    relay: Option<crate::events::relay::Relay>,
    /// On PostgreSQL, the rate limits shared with the other nodes.
    gossip: Option<crate::http::rate_limit::gossip::Gossip>,
}

impl Application {
    /// Build with the wall clock (moved by `--clock-offset-ms` in fault tests).
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let clock: Arc<dyn Clock> = match config.clock_offset_ms {
            0 => Arc::new(SystemClock),
            offset_ms => {
                tracing::warn!(
                    offset_ms,
                    "this node's clock is offset from the system clock (fault testing)"
                );
                Arc::new(OffsetClock::new(offset_ms))
            }
        };
        Self::build_with_clock(config, clock).await
    }

    /// Build with an injected clock (tests move time instead of sleeping).
    pub async fn build_with_clock(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(config.bind)
            .await
            .with_context(|| format!("cannot listen on {}", config.bind))?;
        let local_addr = listener.local_addr()?;
        let data_dir_lock = crate::data_dir_lock::try_lock(&config.data_dir)
            .with_context(|| format!("cannot lock {}", config.data_dir.display()))?;
        if data_dir_lock.is_none() {
            tracing::warn!(
                data_dir = %config.data_dir.display(),
                "another server is running on this data dir"
            );
        }
        let state = assemble_state(config, clock, local_addr).await?;
        crate::demo::seed_tournaments(&state.store, &*state.clock, &state.chain, &state.config)
            .await?;
        crate::tournaments::series::ensure(
            &state.store,
            &*state.clock,
            &state.events,
            &state.chain,
            &state.config,
        )
        .await?;
        // Several nodes share a PostgreSQL database: what one publishes reaches the others.
        // Started here, so a node that cannot listen fails to build rather than serve stale.
        let (relay, gossip) = match state.store.backend() {
            Backend::Postgres => {
                let relay = crate::events::relay::Relay::start(
                    &state.events,
                    &state.store,
                    &state.config.database_url,
                    &state.node_id,
                )
                .await
                .context("cannot listen for the other nodes' events (LISTEN)")?;
                // The contract's limits hold for the whole service, not per node.
                let gossip = crate::http::rate_limit::gossip::Gossip::start(
                    state.limits.clone(),
                    &state.store,
                    &state.config.database_url,
                    &state.node_id,
                )
                .await
                .context("cannot share the rate limits with the other nodes (LISTEN)")?;
                (Some(relay), Some(gossip))
            }
            Backend::Sqlite => (None, None),
        };
        Ok(Application {
            listener,
            state,
            local_addr,
            _data_dir_lock: data_dir_lock,
            relay,
            gossip,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serve until `shutdown` completes, then finish in-flight requests and close the database.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Application {
            listener,
            state,
            // Kept (not `_`) so the lock is held until serving ends.
            _data_dir_lock: _held,
            relay,
            gossip,
            ..
        } = self;
        let housekeeping = tokio::spawn(node_housekeeping(state.clone()));
        // The demo agents are funded and started through the node's own RPC, so only once it
        // serves; a start that is cut short is finished by the next one.
        let demo_agents = tokio::spawn(crate::demo::seed_agents(state.clone()));
        let scheduler = match state.config.scheduler_interval_ms {
            0 => None,
            ms => {
                let scheduler = Scheduler::standard(&state.chain, &state.config, &state.node_id)?;
                Some(scheduler.spawn(state.clone(), Duration::from_millis(ms)))
            }
        };
        // Webhook deliveries drain the outbox on the scheduler's beat, off the request path.
        let webhooks = match state.config.scheduler_interval_ms {
            0 => None,
            ms => Some(tokio::spawn(crate::webhooks::run_forever(
                state.delivering(),
                Duration::from_millis(ms),
            ))),
        };
        let router = crate::http::router(state.clone());
        let limits = crate::http::serve::ServeLimits {
            header_read_timeout: Duration::from_millis(state.config.header_read_timeout_ms),
            drain_timeout: Duration::from_secs(10),
        };
        let streams = state.streams.clone();
        let shutdown = async move {
            shutdown.await;
            // Streams never end on their own: tell them to, so draining can finish.
            streams.close_all();
        };
        crate::http::serve::serve(listener, router, limits, shutdown).await;
        housekeeping.abort();
        demo_agents.abort();
        if let Some(relay) = relay {
            relay.stop();
        }
        if let Some(gossip) = gossip {
            gossip.stop();
        }
        // Stop the workers, wait until they have, then give their leases back so another node
        // carries on at once rather than when the leases run out.
        if let Some(scheduler) = scheduler {
            scheduler.stop().await;
        }
        if let Some(webhooks) = webhooks {
            webhooks.abort();
            let _ = webhooks.await;
        }
        match crate::scheduler::release_leases(&state.store, &state.node_id).await {
            Ok(0) => {}
            Ok(released) => tracing::info!(released, "leases released for the other nodes"),
            Err(error) => tracing::warn!(%error, "leases not released; they run out on their own"),
        }
        state.store.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// State for CLI tools that work on the database without serving: opens (and migrates) the
/// database and loads the master key from the data dir, as the server would. They reach the
/// simnet of a server on the default address.
pub(crate) async fn offline_state(storage: &StorageArgs) -> anyhow::Result<AppState> {
    let default_server = SocketAddr::from(([127, 0, 0, 1], 8080));
    assemble_state(
        Config::offline(storage),
        Arc::new(SystemClock),
        default_server,
    )
    .await
}

/// Open everything the server (or a CLI tool) works with: data dir, database (migrated),
/// master key, chain (simnet served at `server`), market, limits and the event bus.
async fn assemble_state(
    config: Config,
    clock: Arc<dyn Clock>,
    server: SocketAddr,
) -> anyhow::Result<AppState> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data dir {}", config.data_dir.display()))?;
    let store = Store::connect(&config.database_url).await?;
    store.migrate().await?;
    let sealer = Sealer::load(
        config.master_key.as_ref().map(Secret::expose),
        &config.data_dir,
    )?;
    if config.master_key.is_none() && config.is_production() {
        warn_master_key_from_file(&config);
    }
    let chain = crate::chain::Chain::open(&config, &store, clock.clone(), &sealer, server).await?;
    let market_seed = crate::deployment::market_seed(&store, config.market_seed).await?;
    let market = Arc::new(crate::market::SimulatedMarket::new(market_seed));
    if chain.simnet().is_some() {
        // The simnet pool opens at the simulated market's price of its first start.
        use crate::market::MarketFeed;
        let sol_price = market.price_at("SOL", crate::clock::to_millis(clock.now()))?;
        chain
            .seed_pool(sol_price, config.simnet_pool_depth_usdc)
            .await?;
    }
    let agents = Arc::new(crate::agents::Runtime::new(
        &config.data_dir,
        &config.sandbox,
        sealer.derived_key("component-cache"),
    ));
    let models = crate::models::Models::new(
        crate::models::Endpoints::with_settings(&config.model_endpoints),
        config.model_default_keys.clone(),
        std::time::Duration::from_millis(config.model_timeout_ms),
        clock.clone(),
    )
    .context("cannot build the model providers' HTTP client")?;
    let streams =
        crate::http::streams::Streams::new(config.max_streams, config.max_streams_per_client);
    let caches = Arc::new(crate::cache::Caches::new(clock.clone(), true));
    let events = crate::events::Bus::new();
    let invalidated = caches.clone();
    events.on_every_event(Box::new(move |event| invalidated.on_event(event)));
    Ok(AppState::new(crate::state::Services {
        limits: Arc::new(RateLimits::new(config.rate_limits, clock.clone())),
        market,
        config: Arc::new(config),
        store,
        clock,
        sealer: Arc::new(sealer),
        chain: Arc::new(chain),
        events,
        streams: Arc::new(streams),
        board_feeds: Default::default(),
        leaderboards: Default::default(),
        caches,
        agents,
        models: Arc::new(models),
        node_id: format!("node_{}", crate::crypto::random_base58(8)).into(),
        metrics: Default::default(),
    }))
}

/// A deployment on PostgreSQL (several nodes) or a real cluster (real money) must not run on a
/// key that lives in one node's data dir: other nodes cannot open what it sealed, and a lost
/// disk loses every sealed secret. Loud, on every start, with the fix.
fn warn_master_key_from_file(config: &Config) {
    tracing::error!(
        data_dir = %config.data_dir.display(),
        "CRUCIBLE_MASTER_KEY is not set: secrets are sealed with a key kept in this node's data \
         dir, which other nodes do not share and a lost disk loses. Fix: set the same key on \
         every node, e.g. `export CRUCIBLE_MASTER_KEY=$(openssl rand -hex 32)`, kept in your \
         secret store (move the current data-dir key there to keep existing secrets readable)"
    );
}

/// This node's own upkeep, every minute: rate-limit windows of clients gone quiet (and, on
/// PostgreSQL, their shared rows), and strategy components no agent has ticked for a while.
async fn node_housekeeping(state: AppState) {
    let mut every = tokio::time::interval(Duration::from_secs(60));
    loop {
        every.tick().await;
        for limiter in state.limits.all() {
            limiter.retain_recent();
        }
        if state.store.backend() == Backend::Postgres
            && let Err(error) =
                crate::http::rate_limit::prune_shared(&state.store, state.now()).await
        {
            tracing::warn!(%error, "old shared rate-limit rows not pruned");
        }
        // A board nobody read during the last 10,000 board reads on this node has gone quiet.
        state.leaderboards.drop_unread(10_000);
        let evicted = state.agents.evict_idle(crate::agents::IDLE_EVICTION);
        if evicted > 0 {
            tracing::debug!(evicted, "unused strategy components dropped from memory");
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed when this is called,
/// not when the future is first polled: a server that has said it is listening must already
/// turn a SIGTERM into a drain (a supervisor may send one at once), where a lazily installed
/// handler left the default action, death by the signal, to a SIGTERM that came first.
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait =
                |name: &'static str, listener: std::io::Result<tokio::signal::unix::Signal>| async move {
                    match listener {
                        Ok(mut signal) => {
                            signal.recv().await;
                        }
                        Err(error) => {
                            tracing::error!(%error, "cannot listen for {name}");
                            std::future::pending::<()>().await;
                        }
                    }
                };
            tokio::select! {
                () = wait("SIGINT", interrupt) => {},
                () = wait("SIGTERM", terminate) => {},
            }
        }
        #[cfg(not(unix))]
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        tracing::info!("shutdown signal received, draining");
    }
}
