//! The signed-in account: its profile, its proven wallets (`allChainWallets`),
//! and the lists of its tournament entries and payouts. Reachable with a session or an account
//! key holding the scope; it never touches another account's rows.

mod error;
mod queries;
mod routes;

pub use error::AccountError;
pub use queries::{
    AccountView, changed, ensure_linked, link_wallet, load, owner_of_wallet, wallets_of,
};
pub use routes::router;
