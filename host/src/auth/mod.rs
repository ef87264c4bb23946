//! Authentication: who may call what.
//!
//! Owns sign-up and sign-in (e-mail/password and wallet signature), browser sessions, account
//! API key verification, and the extractors handlers use to demand a credential. It never
//! decides what an authenticated caller may see: the resource modules do.

pub(crate) mod extract;
pub(crate) mod keys;
pub mod password;
mod routes;
pub mod session;
pub(crate) mod wallet_proof;
mod web_app;

pub(crate) use extract::{AccountAuth, Caller, MaybeAccountAuth, Read, SessionAuth, Write};
pub(crate) use routes::router;
pub(crate) use web_app::WebAppSession;
