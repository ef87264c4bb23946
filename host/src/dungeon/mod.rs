//! The daily dungeon: the pure game engine in [`game`] (the `crucible-dungeon` crate), and around
//! it everything
//! that touches the world — the day's dungeon and its price ([`day`]), paid entry with signed quotes ([`quote`]) and
//! on-chain verification ([`entry`]), per-run keys ([`run_key`]), turns and broadcasts stored as
//! ordered events ([`play`], [`store`], the turn body in `turn_request`), the watch stream ([`watch`]), public reads ([`views`]),
//! and the scheduled work: idle abandonment and the daily prize ([`maintenance`]).
//!
//! I/O, clocks and randomness stay out of [`game`]: this layer stores the actions and the
//! serialized run, and the engine can always rebuild a run from them.

pub(crate) mod day;
pub(crate) mod embedded_entry;
pub(crate) mod entry;
mod error;
pub(crate) mod maintenance;
pub(crate) mod play;
pub(crate) mod quote;
mod routes;
pub(crate) mod run_cache;
pub(crate) mod run_key;
pub(crate) mod store;
mod turn_request;
pub(crate) mod views;
mod watch;

/// The pure game engine, its own crate so nothing of HTTP or storage can reach it.
pub use crucible_dungeon as game;
pub(crate) use error::DungeonError;
pub(crate) use routes::router;
pub use store::snapshot_due;
