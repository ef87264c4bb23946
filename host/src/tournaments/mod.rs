//! Tournaments: the records, their lifecycle driven by the scheduler,
//! recurring series, demo data, and the public read endpoints. Owns the `tournaments` table;
//! never moves money itself (the chain module does).

pub mod cli;
pub mod demo;
pub mod flows;
pub mod leaderboard;
pub mod lifecycle;
mod live;
pub mod metrics;
pub mod model;
pub mod payouts;
pub mod performance;
pub mod privacy;
pub mod queries;
pub mod refunds;
pub mod registration;
mod routes;
pub mod rules;
pub mod series;
pub mod tracking;

pub use model::{Status, Tournament, TournamentView, registration_memo};
pub use routes::router;
