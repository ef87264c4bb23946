//! The simnet market maker: a scheduler job that keeps the pool near the simulated market's SOL
//! price by trading against it through real signed swaps from its own server wallet (role
//! `market_maker`, funded once at first start). Each run makes at most one swap, sized to move
//! the pool's price to the target but never more than a tenth of what the wallet holds of the
//! token it sells (nor a tenth of the pool's reserve), so it can never drain itself; inside a
//! small band around the target it does nothing rather than pay fees for noise.

use super::pool::{self, Direction};
use super::simnet::PoolReserves;
use super::swap::{self, SwapError, SwapReceipt};
use super::{Chain, ServerWallet};

/// No trade while the pool is within this fraction of the target price (0.5 %).
pub(crate) const DEADBAND: f64 = 0.005;
/// At most this fraction of the wallet's holding of the sold token per run (and of the
/// pool's reserve of it).
pub(crate) const MAX_SHARE_DIVISOR: u64 = 10;
/// Lamports the wallet keeps for fees and never sells.
pub(crate) const FEE_RESERVE_LAMPORTS: u64 = 50_000_000;

/// What the market maker holds: `(lamports, usdc raw)`.
pub(crate) type Holdings = (u64, u64);

/// The one swap that moves `reserves` toward `target_price` (USD per SOL), bounded by
/// `holdings`; `None` when the pool is close enough or there is nothing to sell.
pub(crate) fn plan(
    reserves: &PoolReserves,
    target_price: f64,
    holdings: Holdings,
) -> Option<(Direction, u64)> {
    let current = pool::price(reserves.lamports, reserves.usdc_raw, reserves.usdc_decimals)?;
    if !target_price.is_finite() || target_price <= 0.0 {
        return None;
    }
    if ((current - target_price) / target_price).abs() < DEADBAND {
        return None;
    }
    // On x·y = k, the reserves at raw ratio r = y/x are x' = sqrt(k/r), y' = sqrt(k·r).
    let (x, y) = (reserves.lamports as f64, reserves.usdc_raw as f64);
    let k = x * y;
    let ratio = target_price * 10f64.powi(i32::from(reserves.usdc_decimals))
        / 10f64.powi(i32::from(pool::SOL_DECIMALS));
    let (direction, wanted, held, reserve) = if current > target_price {
        // SOL is dear in the pool: sell SOL into it.
        let available = holdings.0.saturating_sub(FEE_RESERVE_LAMPORTS);
        (
            Direction::SellSol,
            (k / ratio).sqrt() - x,
            available,
            reserves.lamports,
        )
    } else {
        (
            Direction::SellUsdc,
            (k * ratio).sqrt() - y,
            holdings.1,
            reserves.usdc_raw,
        )
    };
    let cap = (held / MAX_SHARE_DIVISOR).min(reserve / MAX_SHARE_DIVISOR);
    // Float to integer: `as` saturates, and the cap bounds it anyway.
    let amount = (wanted.max(0.0) as u64).min(cap);
    (amount > 0 && pool::quote(amount, reserve, reserve_out(reserves, direction)).is_some())
        .then_some((direction, amount))
}

fn reserve_out(reserves: &PoolReserves, direction: Direction) -> u64 {
    match direction {
        Direction::SellSol => reserves.usdc_raw,
        Direction::SellUsdc => reserves.lamports,
    }
}

/// One run: read the pool and the wallet over RPC, trade once if needed. `None` when no trade
/// was due (or there is no simnet / no market maker).
pub(crate) async fn rebalance(
    chain: &Chain,
    wallet: &ServerWallet,
    target_price: f64,
) -> Result<Option<SwapReceipt>, SwapError> {
    let Some(keypair) = wallet.keypair() else {
        return Ok(None);
    };
    let rpc = chain.rpc();
    let view = swap::read_pool(rpc).await?;
    let reserves = PoolReserves {
        lamports: view.lamports,
        usdc_raw: view.usdc_raw,
        usdc_decimals: view.usdc_decimals,
        lp_supply: view.state.lp_supply,
    };
    let owner = keypair.pubkey().to_string();
    let lamports = rpc.get_balance(&owner).await?;
    let usdc = rpc
        .get_token_accounts_by_owner(
            &owner,
            super::rpc::TokenFilter::Mint(&view.state.usdc_mint.to_string()),
        )
        .await?
        .iter()
        .map(|account| account.amount)
        .fold(0u64, u64::saturating_add);
    let Some((direction, amount_in)) = plan(&reserves, target_price, (lamports, usdc)) else {
        return Ok(None);
    };
    // The trade is sized from the pool just read; 1 % protects against a swap landing first.
    let quote = swap::quote(&view, direction, amount_in, None)?;
    let receipt = swap::swap(rpc, keypair, &view, direction, amount_in, &quote).await?;
    tracing::info!(
        signature = %receipt.signature,
        direction = direction.name(),
        amount_in,
        amount_out = receipt.amount_out,
        target_price,
        "market maker swap"
    );
    Ok(Some(receipt))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOL: u64 = 1_000_000_000;
    const USDC: u64 = 1_000_000;

    fn pool_at(sol: u64, usdc: u64) -> PoolReserves {
        PoolReserves {
            lamports: sol * SOL,
            usdc_raw: usdc * USDC,
            usdc_decimals: 6,
            lp_supply: 1,
        }
    }

    #[test]
    fn it_sells_the_dear_side_just_enough_and_rests_inside_the_band() {
        let holdings = (1_000 * SOL, 1_000_000 * USDC);
        // 100 SOL / 16,000 USDC = 160; target 150 → sell SOL: x' = sqrt(1.6e6 / 150) ≈ 103.28.
        let (direction, amount) = plan(&pool_at(100, 16_000), 150.0, holdings).expect("trade");
        assert_eq!(direction, Direction::SellSol);
        assert!((3_200_000_000..3_300_000_000).contains(&amount), "{amount}");
        // 140 < 150 → buy SOL with USDC.
        let (direction, _) = plan(&pool_at(100, 14_000), 150.0, holdings).expect("trade");
        assert_eq!(direction, Direction::SellUsdc);
        assert_eq!(plan(&pool_at(100, 15_050), 150.0, holdings), None);
        assert_eq!(plan(&pool_at(100, 16_000), f64::NAN, holdings), None);
    }

    #[test]
    fn a_run_never_sells_more_than_a_tenth_of_the_wallet_and_keeps_the_fee_reserve() {
        let (_, amount) = plan(&pool_at(100, 30_000), 150.0, (3 * SOL, 0)).expect("trade");
        assert_eq!(amount, (3 * SOL - FEE_RESERVE_LAMPORTS) / 10);
        let (_, amount) = plan(&pool_at(100, 1_000), 150.0, (0, 500 * USDC)).expect("trade");
        assert_eq!(amount, 50 * USDC);
        assert_eq!(
            plan(&pool_at(100, 30_000), 150.0, (FEE_RESERVE_LAMPORTS, 0)),
            None
        );
        assert_eq!(plan(&pool_at(100, 1_000), 150.0, (10 * SOL, 0)), None);
    }
}
