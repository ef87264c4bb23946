//! The signed-in account: its profile, its proven wallets (`allChainWallets`),
//! and the lists of its tournament entries and payouts. Reachable with a session or an account
//! key holding the scope; it never touches another account's rows.

pub(crate) mod balances;
mod error;
mod queries;
mod routes;

pub(crate) use error::AccountError;
pub use queries::link_wallet;
pub(crate) use queries::{AccountView, changed, ensure_linked, load, owner_of_wallet};
pub(crate) use routes::router;
