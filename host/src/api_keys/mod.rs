//! Account API keys: minted, listed and revoked with a browser session
//! only. A key's secret and webhook secret are shown once, at creation; the database keeps the
//! key's SHA-256 and the webhook secret sealed under the master key.

mod routes;
mod service;
pub(crate) mod spend;

pub(crate) use routes::router;
pub(crate) use service::{CreateKey, CreatedKey, KeyError, KeyView, create, list, revoke};
