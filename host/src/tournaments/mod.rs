//! Tournaments: the records, their lifecycle driven by the scheduler,
//! recurring series, demo data, and the public read endpoints. Owns the `tournaments` table;
//! never moves money itself (the chain module does).

pub mod board_feed;
pub(crate) mod cli;
pub(crate) mod custodial_entry;
pub(crate) mod demo;
pub(crate) mod flows;
pub mod leaderboard;
pub mod lifecycle;
mod live;
pub(crate) mod metrics;
pub(crate) mod model;
pub mod payouts;
pub(crate) mod performance;
pub mod privacy;
pub mod queries;
pub(crate) mod refunds;
pub(crate) mod registration;
mod routes;
pub mod rules;
pub mod series;
pub mod tracking;
mod trades_feed;

pub use model::{Status, Tournament, TournamentView, registration_memo};
pub(crate) use routes::router;
