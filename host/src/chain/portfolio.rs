//! A wallet's holdings as the chain reports them: SOL in lamports and every token balance
//! (both token programs), aggregated per mint. Valuation is the leaderboard's business.

use serde::Serialize;

use super::ChainError;
use super::rpc::{RpcClient, TokenFilter};
use super::tx::{TOKEN_2022_PROGRAM, TOKEN_PROGRAM};
use crate::domain::WalletAddress;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Portfolio {
    pub wallet: String,
    pub lamports: u64,
    /// One entry per mint, sorted by mint.
    pub tokens: Vec<TokenBalance>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenBalance {
    pub mint: String,
    pub amount_raw: u64,
    pub decimals: u8,
    /// The token program holding it (Token or Token-2022).
    pub program: String,
}

impl Portfolio {
    /// Raw balance of `mint` (0 when the wallet holds none).
    pub fn token(&self, mint: &str) -> u64 {
        self.tokens
            .iter()
            .find(|t| t.mint == mint)
            .map_or(0, |t| t.amount_raw)
    }
}

pub(crate) async fn read(rpc: &RpcClient, wallet: &WalletAddress) -> Result<Portfolio, ChainError> {
    let owner = wallet.as_str();
    let (lamports, classic, token_2022) = tokio::try_join!(
        rpc.get_balance(owner),
        rpc.get_token_accounts_by_owner(owner, TokenFilter::Program(TOKEN_PROGRAM)),
        rpc.get_token_accounts_by_owner(owner, TokenFilter::Program(TOKEN_2022_PROGRAM)),
    )?;
    let mut tokens: Vec<TokenBalance> = Vec::new();
    for account in classic.into_iter().chain(token_2022) {
        match tokens.iter_mut().find(|t| t.mint == account.mint) {
            Some(existing) => {
                existing.amount_raw = existing.amount_raw.saturating_add(account.amount);
            }
            None => tokens.push(TokenBalance {
                mint: account.mint,
                amount_raw: account.amount,
                decimals: account.decimals,
                program: account.program,
            }),
        }
    }
    tokens.sort_by(|a, b| a.mint.cmp(&b.mint));
    Ok(Portfolio {
        wallet: owner.to_owned(),
        lamports,
        tokens,
    })
}
