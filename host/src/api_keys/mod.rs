//! Account API keys: minted, listed and revoked with a browser session
//! only. A key's secret and webhook secret are shown once, at creation; the database keeps the
//! key's SHA-256 and the webhook secret sealed under the master key.

mod routes;
mod service;

pub use routes::router;
pub use service::{
    CreateKey, CreatedKey, KeyError, KeyView, MAX_ACTIVE_KEYS, create, list, revoke,
};
