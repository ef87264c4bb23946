//! What the account's wallets hold now, read from the chain: SOL and the stablecoin (USDC),
//! next to each wallet as the account lists it. An agent deciding whether it can pay an entry
//! reads this rather than asking the RPC node itself.

use futures_util::future::join_all;
use serde::Serialize;
use utoipa::ToSchema;

use super::AccountError;
use crate::chain::Chain;
use crate::chain::ChainError;
use crate::clock::Clock;
use crate::clock::rfc3339;
use crate::db::Store;
use crate::domain::WalletAddress;
use crate::usdc::Usdc;

/// Lamports per SOL.
const LAMPORTS_PER_SOL: f64 = 1_000_000_000.0;

/// Why the balances could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BalanceError {
    #[error(transparent)]
    Account(#[from] AccountError),
    #[error("the Solana RPC node is unavailable: {0}")]
    Chain(#[from] ChainError),
}

/// `GET /api/account/wallets`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WalletBalances {
    pub wallets: Vec<WalletBalance>,
    /// When the chain was read (RFC 3339).
    pub read_at: String,
}

/// One wallet and what it holds.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WalletBalance {
    pub address: String,
    /// `custodial` (the embedded wallet the server holds) or `linked` (proven by signature).
    pub kind: String,
    /// SOL, in SOL.
    pub sol: f64,
    /// SOL in lamports, as a decimal string.
    pub lamports: String,
    /// The stablecoin (USDC), in USDC.
    pub usdc: f64,
    /// The stablecoin in raw units (6 decimals), as a decimal string.
    pub usdc_raw: String,
}

/// Every wallet of `account_id` with its balances, read concurrently.
pub(crate) async fn balances(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    account_id: &str,
) -> Result<WalletBalances, BalanceError> {
    let account = super::load(store, account_id).await?;
    let read_at = rfc3339(clock.now());
    let mint = chain.stablecoin_mint().to_owned();
    let reads = account.wallets.iter().map(|wallet| async {
        let address = WalletAddress::parse(&wallet.address)
            .map_err(|why| ChainError::Config(format!("stored wallet {why}")))?;
        let portfolio = chain.portfolio(&address).await?;
        let usdc = portfolio.token(&mint);
        Ok::<_, ChainError>(WalletBalance {
            address: wallet.address.clone(),
            kind: wallet.kind.clone(),
            sol: portfolio.lamports as f64 / LAMPORTS_PER_SOL,
            lamports: portfolio.lamports.to_string(),
            usdc: Usdc::from_raw(i64::try_from(usdc).unwrap_or(i64::MAX)).ui(),
            usdc_raw: usdc.to_string(),
        })
    });
    let wallets = join_all(reads)
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    Ok(WalletBalances { wallets, read_at })
}
