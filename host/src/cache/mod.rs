//! Read caches: answers kept in memory until the data behind them changes, so the hot read
//! paths (a key check, `GET /api/account`, public tournament lists and boards) cost no database
//! round trip in the common case (docs/architecture.md, "Read caches").
//!
//! A cache never decides on its own when data changed. Writers announce changes on the event
//! bus ([`crate::events::Event`]); on PostgreSQL the relay carries them to every node within
//! milliseconds. [`Caches::on_event`] runs synchronously for every event this node publishes
//! or hears, so a node never answers from a cache after it announced the change. Two limits
//! back the events up: each entry has a maximum age (the bound on staleness if a notification
//! were lost without the relay noticing), and an entry may carry an instant after which it is
//! stale anyway (a tournament whose status turns with the clock).

mod public;
mod read_cache;

use std::sync::Arc;
use std::time::Duration;

use crate::auth::keys::CachedKey;
use crate::events::Event;

pub use public::public_json;
pub use read_cache::ReadCache;

/// Longest an entry is served without any event saying it changed.
const MAX_AGE: Duration = Duration::from_secs(5);
/// Entries per cache before the whole cache is dropped and refilled (no LRU bookkeeping on
/// the read path; a full cache is rare and refills in one round of requests).
const CAPACITY: usize = 10_000;

/// The node's read caches.
pub struct Caches {
    /// Verified API keys by the SHA-256 of the secret (and family).
    pub keys: ReadCache<CachedKey>,
    /// `GET /api/account` answers by account id.
    pub accounts: ReadCache<crate::account::AccountView>,
    /// Serialized public tournament answers (lists, details, leaderboard pages) by path and
    /// query, for callers without credentials.
    pub public: ReadCache<crate::http::compression::Compressible>,
    /// Tournaments as a registration reads them, by id: only what never changes after a
    /// tournament is created is trusted from here (its registering write checks status and
    /// seats again), so a stale entry costs a refusal's re-read, never a wrong seat.
    pub(crate) tournaments: ReadCache<crate::tournaments::model::Tournament>,
    /// Dungeon runs this node played last, parsed, each at the version it was written at (it
    /// needs no events: a turn checks the version it reads).
    pub(crate) dungeon_runs: crate::dungeon::run_cache::RunCache,
}

impl Caches {
    pub fn new(clock: Arc<dyn crate::clock::Clock>, enabled: bool) -> Self {
        Caches {
            keys: ReadCache::new(clock.clone(), enabled, MAX_AGE, CAPACITY),
            accounts: ReadCache::new(clock.clone(), enabled, MAX_AGE, CAPACITY),
            public: ReadCache::new(clock.clone(), enabled, MAX_AGE, CAPACITY),
            tournaments: ReadCache::new(clock, enabled, MAX_AGE, CAPACITY),
            dungeon_runs: Default::default(),
        }
    }

    /// Forget whatever `event` says may have changed.
    pub fn on_event(&self, event: &Event) {
        match event {
            Event::KeysChanged { .. } => {
                self.keys.invalidate_all();
                self.accounts.invalidate_all();
            }
            Event::AccountChanged { .. } => self.accounts.invalidate_all(),
            // Every registration announces a board change: the tournaments' own entries stay.
            Event::LeaderboardChanged { .. } => self.public.invalidate_all(),
            Event::TournamentEnded { .. } | Event::TournamentsChanged => {
                self.public.invalidate_all();
                self.tournaments.invalidate_all();
            }
            Event::DungeonRunEvent { .. } => {}
            // Events of other nodes may have been missed: nothing cached can be trusted.
            Event::Resync => self.invalidate_all(),
        }
    }

    /// Hits and misses per cache, by name (`GET /metrics`).
    pub fn stats(&self) -> [(&'static str, (u64, u64)); 5] {
        [
            ("keys", self.keys.hits_and_misses()),
            ("accounts", self.accounts.hits_and_misses()),
            ("public", self.public.hits_and_misses()),
            ("tournaments", self.tournaments.hits_and_misses()),
            ("dungeon_runs", self.dungeon_runs.hits_and_misses()),
        ]
    }

    pub fn invalidate_all(&self) {
        self.keys.invalidate_all();
        self.accounts.invalidate_all();
        self.public.invalidate_all();
        self.tournaments.invalidate_all();
    }
}
