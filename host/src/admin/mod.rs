//! Host operations for the people who run the service (`docs/admin.md`): the admin role
//! (`crucible admin grant|revoke`), and behind `/api/admin/*` account search and suspension,
//! agents across accounts, banned strategy components, manual disqualification, the payout and
//! refund queue, and the audit log. Every action is audited in the transaction that makes it.
//!
//! Admins act with their browser session only (never with an API key), and every route refuses
//! anyone else with 403.

pub(crate) mod cli;
mod error;
mod extract;
mod routes;
pub mod service;

pub(crate) use error::AdminError;
use extract::AdminAuth;
pub(crate) use routes::router;
