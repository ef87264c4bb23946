//! Trading agents of the `v1/public` family.
//!
//! Owns the agent records and their lifecycle (`unfunded` → `idle` ⇄ `active`, `error` after
//! repeated faults), the uploaded strategy components, the ticker that runs each active agent's
//! strategy in the sandbox and fills its orders on paper or, for live agents ([`live`]), as real
//! swaps from the agent's wallet, the agent's model deciding each tick ([`thinking`]),
//! performance over periods, and the daily report. HTTP lives in
//! [`crate::v1`]; this module never shapes responses.

pub mod daily_report;
pub(crate) mod demo;
pub(crate) mod entry;
mod error;
pub mod funding;
pub(crate) mod history;
pub mod live;
mod model;
pub(crate) mod new_agent;
pub(crate) mod params;
pub(crate) mod performance;
mod runtime;
pub(crate) mod service;
pub(crate) mod strategies;
pub(crate) mod thinking;
pub(crate) mod tick;
pub mod ticker;
pub(crate) mod trades;

pub(crate) use error::AgentError;
pub(crate) use model::{Agent, AgentStatus, AgentView, PAPER_CAPITAL};
pub(crate) use runtime::{IDLE_EVICTION, Runtime};
