//! What every handler can reach: configuration, storage, the clock, secrets and limits.

use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Config;
use crate::crypto::Sealer;
use crate::db::Store;
use crate::http::rate_limit::RateLimits;

/// Shared server state: one pointer to the node's [`Services`], so the clones axum's
/// extractors make on every request cost one reference count. (Cloning the ~18 handles one by
/// one, and dropping them, was about 5 % of a cached read's CPU under `perf`.)
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    pub fn new(services: Services) -> Self {
        AppState(Arc::new(services))
    }

    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// The handles ticking agents touches (`agents::ticker`).
    pub fn ticking(&self) -> crate::agents::ticker::Ticking {
        crate::agents::ticker::Ticking {
            store: self.store.clone(),
            clock: self.clock.clone(),
            chain: self.chain.clone(),
            sealer: self.sealer.clone(),
            config: self.config.clone(),
            agents: self.agents.clone(),
            market: self.market.clone(),
            models: self.models.clone(),
            metrics: self.metrics.clone(),
        }
    }

    /// The handles delivering webhooks touches (`webhooks::deliver_due`).
    pub fn delivering(&self) -> crate::webhooks::Delivering {
        crate::webhooks::Delivering {
            store: self.store.clone(),
            clock: self.clock.clone(),
            sealer: self.sealer.clone(),
            config: self.config.clone(),
            metrics: self.metrics.clone(),
            node_id: self.node_id.clone(),
        }
    }

    /// The handles sending a payout touches (`tournaments::payouts::send`).
    pub fn payer(&self) -> crate::tournaments::payouts::Payer<'_> {
        crate::tournaments::payouts::Payer {
            store: &self.store,
            clock: &*self.clock,
            chain: &self.chain,
            events: &self.events,
            node_id: &self.node_id,
            lease: self.config.leases.payouts,
        }
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// What every handler can reach (through [`AppState`]).
pub struct Services {
    pub config: Arc<Config>,
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    /// Encrypts secrets at rest (custodial wallet keys, webhook secrets).
    pub sealer: Arc<Sealer>,
    pub limits: Arc<RateLimits>,
    /// Solana: payment verification, portfolios, transfers, and the embedded simnet.
    pub chain: Arc<crate::chain::Chain>,
    /// Prices, candles and signals (the seeded simulated market by default).
    pub market: Arc<dyn crate::market::MarketFeed>,
    /// Announces changes to streams.
    pub events: crate::events::Bus,
    /// The host's model provider endpoints and the client that calls them.
    pub models: Arc<crate::models::Models>,
    /// The sandbox and loaded strategy components of the agents.
    pub agents: Arc<crate::agents::Runtime>,
    /// Open server-sent event streams, capped per client and per node.
    pub streams: Arc<crate::http::streams::Streams>,
    /// The live boards watched on this node, each rendered once for all its watchers.
    pub board_feeds: Arc<crate::tournaments::board_feed::BoardFeeds>,
    /// Serialized leaderboards, rebuilt only when their tournament changed.
    pub leaderboards: Arc<crate::tournaments::leaderboard::Cache>,
    /// Key checks, accounts and public tournament answers kept until their data changes.
    pub caches: Arc<crate::cache::Caches>,
    /// This node's name among the nodes sharing the database (`node_…`, new at each start).
    pub node_id: Arc<str>,
    /// This node's request, tick and delivery counters (`GET /metrics`).
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
}
