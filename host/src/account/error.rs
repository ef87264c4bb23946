//! What can go wrong with an account and its wallets. The account's queries return
//! [`AccountError`]; the platform API maps it at its edge (`account::routes`), and the services
//! that act for an account's wallets (tournament registration, dungeon entry) wrap it in their own
//! errors.

use crate::db::StoreError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum AccountError {
    /// The account does not exist (a session of a deleted account).
    #[error("account not found")]
    NotFound,
    /// The wallet is proven by another account already.
    #[error("this wallet is linked to another account")]
    WalletTaken,
    /// The caller acts for a wallet its account has not proven.
    #[error("wallet {0} is not linked to this account (see allChainWallets in GET /api/account)")]
    WalletNotLinked(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(AccountError);
