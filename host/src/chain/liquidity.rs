//! The server's own liquidity on simnet: at first start the SOL/USDC pool of the pool program
//! (`chain::pool`) is created and seeded from a server wallet (role `pool`, generated and
//! sealed like the escrow) with real signed transactions through the simnet, at the simulated
//! market's SOL price and a configured depth. Later starts find the pool and leave it alone.

use super::pool::{self, PoolAddresses};
use super::simnet::{self, Simnet, SimnetError};
use super::tx::{self, Message, Transaction};
use super::{ChainError, ServerWallet};

/// Lamports kept on the pool wallet beyond the deposit: rents of the pool's accounts and
/// of its LP account, and fees.
const SEED_OVERHEAD_LAMPORTS: u64 = 100_000_000;

/// Raw amounts of the first deposit: `depth_usdc` UI units of USDC and as much SOL at
/// `sol_price` (USD per SOL).
pub(crate) fn seed_amounts(
    sol_price: f64,
    depth_usdc: u64,
    usdc_decimals: u8,
) -> Result<(u64, u64), ChainError> {
    if !sol_price.is_finite() || sol_price <= 0.0 {
        return Err(ChainError::Config(format!(
            "cannot seed the pool at a SOL price of {sol_price}"
        )));
    }
    let usdc_raw = depth_usdc
        .checked_mul(10u64.pow(u32::from(usdc_decimals)))
        .ok_or_else(|| ChainError::Config("the pool depth is too large".into()))?;
    let lamports = (depth_usdc as f64 / sol_price * 1e9).round();
    if lamports < 1.0 || lamports >= u64::MAX as f64 {
        return Err(ChainError::Config(format!(
            "a depth of {depth_usdc} USDC at {sol_price} is not a seedable amount of SOL"
        )));
    }
    Ok((lamports as u64, usdc_raw))
}

/// Create and seed the pool unless it exists. Returns true when this call seeded it.
pub(crate) async fn ensure_pool(
    simnet: &Simnet,
    wallet: &ServerWallet,
    sol_price: f64,
    depth_usdc: u64,
) -> Result<bool, ChainError> {
    if simnet.pool_reserves().await?.is_some() {
        return Ok(false);
    }
    let keypair = wallet.keypair().ok_or_else(|| {
        ChainError::Config("the pool wallet's key is not held by the server".into())
    })?;
    let payer = keypair.pubkey();
    let mint = simnet.stablecoin_mint();
    let (lamports, usdc_raw) = seed_amounts(sol_price, depth_usdc, simnet::STABLECOIN_DECIMALS)?;

    // Fund the wallet with what it lacks (a start interrupted after funding resumes here).
    let usdc_account = tx::associated_token_address(&payer, &mint, &tx::token_program());
    let mut need_sol =
        (lamports + SEED_OVERHEAD_LAMPORTS).saturating_sub(simnet.balance(&payer).await?);
    let held_usdc = simnet
        .token_accounts(&payer, Some(&mint), None)
        .await?
        .iter()
        .filter(|(key, _)| *key == usdc_account)
        .map(|(_, account)| match account.kind {
            simnet::executor::Kind::Token { amount, .. } => amount,
            _ => 0,
        })
        .sum::<u64>();
    let mut need_usdc = usdc_raw.saturating_sub(held_usdc);
    while need_sol > 0 || need_usdc > 0 {
        let sol = need_sol.min(simnet::MAX_AIRDROP_LAMPORTS);
        let usdc = need_usdc.min(simnet::MAX_AIRDROP_STABLECOIN);
        simnet.airdrop(&payer, sol, usdc).await?;
        need_sol -= sol;
        need_usdc -= usdc;
    }

    let a = PoolAddresses::sol_usdc();
    let lp_account = tx::associated_token_address(&payer, &a.lp_mint, &tx::token_program());
    let instructions = [
        pool::initialize(&payer, &mint),
        tx::instructions::create_associated_token_account_idempotent(
            &payer,
            &payer,
            &a.lp_mint,
            &tx::token_program(),
        ),
        pool::add_liquidity(&payer, &usdc_account, &lp_account, lamports, usdc_raw),
    ];
    let (blockhash, _, _) = simnet.latest_blockhash().await?;
    let blockhash = crucible_solana::base58::decode_32(&blockhash)
        .ok_or_else(|| ChainError::Config("the simnet blockhash is not 32 bytes".into()))?;
    let message = Message::new_legacy(&instructions, &payer, blockhash);
    let wire = Transaction::sign(message, &[keypair.signing_key()])?.serialize()?;
    match simnet.send(&wire, false).await {
        Ok(signature) => {
            tracing::info!(%signature, lamports, usdc_raw, sol_price, "simnet pool seeded");
            Ok(true)
        }
        // Another node on the same database seeded it first.
        Err(SimnetError::Rpc { .. }) if simnet.pool_reserves().await?.is_some() => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// Give the market maker's wallet its float once: a tenth of the pool's depth on each side,
/// plus SOL for fees. A wallet that already holds SOL was funded before and is left alone (its
/// trades, not top-ups, decide its balance from then on).
pub(crate) async fn fund_market_maker(
    simnet: &Simnet,
    wallet: &ServerWallet,
    sol_price: f64,
    depth_usdc: u64,
) -> Result<bool, ChainError> {
    let key = tx::Pubkey::from(&wallet.address);
    if simnet.balance(&key).await? > 0 {
        return Ok(false);
    }
    let (lamports, usdc_raw) = seed_amounts(
        sol_price,
        (depth_usdc / 10).max(1),
        simnet::STABLECOIN_DECIMALS,
    )?;
    let mut need_sol = lamports + super::market_maker::FEE_RESERVE_LAMPORTS;
    let mut need_usdc = usdc_raw;
    while need_sol > 0 || need_usdc > 0 {
        let sol = need_sol.min(simnet::MAX_AIRDROP_LAMPORTS);
        let usdc = need_usdc.min(simnet::MAX_AIRDROP_STABLECOIN);
        simnet.airdrop(&key, sol, usdc).await?;
        need_sol -= sol;
        need_usdc -= usdc;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_amounts_put_equal_value_on_both_sides() {
        assert_eq!(
            seed_amounts(150.0, 1_500, 6).expect("amounts"),
            (10_000_000_000, 1_500_000_000)
        );
        assert!(seed_amounts(0.0, 1_500, 6).is_err());
        assert!(seed_amounts(f64::NAN, 1_500, 6).is_err());
        assert!(seed_amounts(150.0, u64::MAX, 6).is_err());
    }
}
