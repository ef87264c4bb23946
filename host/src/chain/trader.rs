//! One small interface for the swaps live agents make, with two implementations: [`PoolRoute`]
//! through the embedded simnet's SOL/USDC pool, and [`JupiterRoute`] through Jupiter's quote
//! and swap API on a real cluster (valued with Pyth prices from Hermes). Both only build and
//! sign: the caller records the signed transaction, then sends it through our own RPC, so a
//! route never sends anything and no key leaves the server.
//!
//! The Jupiter route is built on the adapters' documented formats and has never been run
//! against the live services from this repository.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::ChainError;
use super::hermes::{HermesConfig, HermesPrices};
use super::jupiter::{self, JupiterConfig, JupiterSwaps, SwapApiError};
use super::keypair::Keypair;
use super::pool::{self, Direction};
use super::rpc::RpcClient;
use super::swap::{self, SwapError};
use super::tx::Pubkey;
use crate::clock::Clock;

/// Slippage a Jupiter swap accepts (the pool route uses [`swap::DEFAULT_SLIPPAGE_BPS`]).
const JUPITER_SLIPPAGE_BPS: u16 = 100;
/// Decimals of USDC on real clusters.
const USDC_DECIMALS: u8 = 6;

#[derive(Debug, thiserror::Error)]
pub enum TradeError {
    #[error(transparent)]
    Swap(#[from] SwapError),
    #[error(transparent)]
    Jupiter(#[from] SwapApiError),
    #[error(transparent)]
    Chain(#[from] ChainError),
    #[error("no price: {0}")]
    Price(String),
}

/// What values a wallet: SOL's price in USDC and the USDC mint and decimals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Market {
    pub sol_usdc: f64,
    pub usdc_mint: Pubkey,
    pub usdc_decimals: u8,
}

/// A swap signed and not sent: what must be recorded before sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignedTrade {
    pub signature: String,
    pub wire: Vec<u8>,
    pub minimum_out: u64,
    pub last_valid_block_height: u64,
}

pub(crate) trait SwapRoute: Send + Sync {
    /// The price and stablecoin wallets are valued in, now.
    fn market<'a>(&'a self, rpc: &'a RpcClient) -> BoxFuture<'a, Result<Market, TradeError>>;

    /// Build and sign a swap of `amount_in` from `keypair`'s wallet; `minimum_out` overrides
    /// the route's slippage bound.
    fn sign<'a>(
        &'a self,
        rpc: &'a RpcClient,
        keypair: &'a Keypair,
        direction: Direction,
        amount_in: u64,
        minimum_out: Option<u64>,
    ) -> BoxFuture<'a, Result<SignedTrade, TradeError>>;

    /// `(amount_in, amount_out)` raw, as the confirmed jsonParsed transaction of `wallet` says.
    fn amounts(
        &self,
        transaction: &Value,
        wallet: &str,
        direction: Direction,
    ) -> Option<(u64, u64)>;
}

/// Swaps through the simnet pool (see [`swap`]).
pub(crate) struct PoolRoute;

impl SwapRoute for PoolRoute {
    fn market<'a>(&'a self, rpc: &'a RpcClient) -> BoxFuture<'a, Result<Market, TradeError>> {
        Box::pin(async move {
            let view = swap::read_pool(rpc).await?;
            let sol_usdc = pool::price(view.lamports, view.usdc_raw, view.usdc_decimals)
                .filter(|p| p.is_finite() && *p > 0.0)
                .ok_or_else(|| TradeError::Price("the simnet pool is empty".to_owned()))?;
            Ok(Market {
                sol_usdc,
                usdc_mint: view.state.usdc_mint,
                usdc_decimals: view.usdc_decimals,
            })
        })
    }

    fn sign<'a>(
        &'a self,
        rpc: &'a RpcClient,
        keypair: &'a Keypair,
        direction: Direction,
        amount_in: u64,
        minimum_out: Option<u64>,
    ) -> BoxFuture<'a, Result<SignedTrade, TradeError>> {
        Box::pin(async move {
            let view = swap::read_pool(rpc).await?;
            let quote = swap::quote(&view, direction, amount_in, minimum_out)?;
            let latest = rpc.get_recent_blockhash().await?;
            let (signature, wire) = swap::sign_swap(
                keypair,
                &view,
                direction,
                amount_in,
                quote.minimum_out,
                latest.hash,
            )?;
            Ok(SignedTrade {
                signature,
                wire,
                minimum_out: quote.minimum_out,
                last_valid_block_height: latest.last_valid_block_height,
            })
        })
    }

    fn amounts(
        &self,
        transaction: &Value,
        _wallet: &str,
        _direction: Direction,
    ) -> Option<(u64, u64)> {
        // The pool program's parsed instruction says exactly what it took and paid.
        Some((
            swap::swap_amount(transaction, "amountIn")?,
            swap::swap_amount(transaction, "amountOut")?,
        ))
    }
}

/// Swaps through Jupiter on a real cluster, valued with Hermes (Pyth) prices.
pub(crate) struct JupiterRoute {
    swaps: JupiterSwaps,
    prices: HermesPrices,
    usdc_mint: Pubkey,
    clock: Arc<dyn Clock>,
}

impl JupiterRoute {
    pub(crate) fn new(
        jupiter: JupiterConfig,
        hermes: HermesConfig,
        usdc_mint: Pubkey,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, reqwest::Error> {
        Ok(JupiterRoute {
            swaps: JupiterSwaps::new(jupiter)?,
            prices: HermesPrices::new(hermes)?,
            usdc_mint,
            clock,
        })
    }

    fn mints(&self, direction: Direction) -> (String, String) {
        let usdc = self.usdc_mint.to_string();
        let sol = jupiter::WRAPPED_SOL_MINT.to_owned();
        match direction {
            Direction::SellSol => (sol, usdc),
            Direction::SellUsdc => (usdc, sol),
        }
    }
}

impl SwapRoute for JupiterRoute {
    fn market<'a>(&'a self, _rpc: &'a RpcClient) -> BoxFuture<'a, Result<Market, TradeError>> {
        Box::pin(async move {
            let now = self.clock.now();
            let price = |token: &'static str| async move {
                self.prices
                    .usd_price(token, now)
                    .await
                    .map_err(|e| TradeError::Price(e.to_string()))
            };
            let sol = price("SOL").await?.price;
            let usdc = price("USDC").await?.price;
            if !(sol > 0.0 && usdc > 0.0) {
                return Err(TradeError::Price(format!("SOL {sol} USD, USDC {usdc} USD")));
            }
            Ok(Market {
                sol_usdc: sol / usdc,
                usdc_mint: self.usdc_mint,
                usdc_decimals: USDC_DECIMALS,
            })
        })
    }

    fn sign<'a>(
        &'a self,
        _rpc: &'a RpcClient,
        keypair: &'a Keypair,
        direction: Direction,
        amount_in: u64,
        minimum_out: Option<u64>,
    ) -> BoxFuture<'a, Result<SignedTrade, TradeError>> {
        Box::pin(async move {
            let (input, output) = self.mints(direction);
            let quote = self
                .swaps
                .quote(&input, &output, amount_in, JUPITER_SLIPPAGE_BPS)
                .await?;
            if let Some(minimum) = minimum_out
                && minimum > quote.min_out
            {
                // The transaction Jupiter builds enforces its own bound; a stricter one
                // cannot be added to it, so a route below ours is refused here.
                return Err(TradeError::Jupiter(SwapApiError::Refused(format!(
                    "the route pays at least {}, less than the {minimum} asked",
                    quote.min_out
                ))));
            }
            let prepared = self.swaps.prepare(&quote, &keypair.pubkey()).await?;
            let signed = prepared.sign(keypair)?;
            Ok(SignedTrade {
                signature: signed.signature,
                wire: signed.wire,
                minimum_out: quote.min_out,
                last_valid_block_height: prepared.last_valid_block_height,
            })
        })
    }

    fn amounts(
        &self,
        transaction: &Value,
        wallet: &str,
        direction: Direction,
    ) -> Option<(u64, u64)> {
        // A routed swap has no single instruction to read: the wallet's balance changes say
        // what it paid and got (SOL net of the transaction fee; wrapped SOL is unwrapped).
        let meta = &transaction["meta"];
        let keys = transaction["transaction"]["message"]["accountKeys"].as_array()?;
        let index = keys.iter().position(|key| key["pubkey"] == wallet)?;
        let lamports = |field: &str| meta[field][index].as_u64();
        let fee = meta["fee"].as_u64().unwrap_or(0);
        let (pre, post) = (lamports("preBalances")?, lamports("postBalances")?);
        let usdc = |field: &str| -> u64 {
            meta[field]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| {
                    b["owner"] == wallet && b["mint"] == self.usdc_mint.to_string().as_str()
                })
                .filter_map(|b| b["uiTokenAmount"]["amount"].as_str()?.parse::<u64>().ok())
                .sum()
        };
        let (usdc_pre, usdc_post) = (usdc("preTokenBalances"), usdc("postTokenBalances"));
        match direction {
            Direction::SellSol => Some((
                pre.checked_sub(fee)?.checked_sub(post)?,
                usdc_post.checked_sub(usdc_pre)?,
            )),
            Direction::SellUsdc => Some((
                usdc_pre.checked_sub(usdc_post)?,
                post.checked_add(fee)?.checked_sub(pre)?,
            )),
        }
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use axum::routing::{get, post};
    use base64::Engine;
    use serde_json::json;

    use super::*;
    use crate::chain::tx::{self, encode_shortvec};

    /// A fake Jupiter answering one quote and one swap transaction; its base URL.
    async fn fake_jupiter(quote: Value, swap: Value) -> String {
        let app = axum::Router::new()
            .route("/quote", get(move || async move { axum::Json(quote) }))
            .route("/swap", post(move || async move { axum::Json(swap) }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{address}")
    }

    /// A v0 transaction paid and signed by `payer` alone, calling Jupiter's router.
    fn v0_swap(payer: &Pubkey) -> Vec<u8> {
        let program: Pubkey = jupiter::JUPITER_PROGRAM.parse().unwrap();
        let keys = [payer.0, [7u8; 32], program.0];
        let mut message = vec![0x80, 1, 0, 1];
        encode_shortvec(keys.len(), &mut message).unwrap();
        for key in &keys {
            message.extend(key);
        }
        message.extend([9u8; 32]);
        encode_shortvec(1, &mut message).unwrap();
        message.push(2);
        encode_shortvec(2, &mut message).unwrap();
        message.extend([0, 1]);
        encode_shortvec(1, &mut message).unwrap();
        message.push(42);
        encode_shortvec(0, &mut message).unwrap();
        let mut wire = vec![1];
        wire.extend([0u8; 64]);
        wire.extend(message);
        wire
    }

    #[tokio::test]
    async fn the_jupiter_route_signs_the_quoted_swap_and_keeps_a_stricter_minimum() {
        let wallet = Keypair::generate();
        let usdc: Pubkey = tx::MAINNET_USDC_MINT.parse().unwrap();
        let quote = json!({
            "inputMint": jupiter::WRAPPED_SOL_MINT, "inAmount": "1000000000",
            "outputMint": tx::MAINNET_USDC_MINT, "outAmount": "150000000",
            "otherAmountThreshold": "148500000", "swapMode": "ExactIn", "priceImpactPct": "0.001"
        });
        let wire = v0_swap(&wallet.pubkey());
        let swap = json!({
            "swapTransaction": base64::engine::general_purpose::STANDARD.encode(&wire),
            "lastValidBlockHeight": 279632475
        });
        let base_url = fake_jupiter(quote, swap).await;
        let route = JupiterRoute::new(
            JupiterConfig {
                base_url,
                api_key: None,
            },
            HermesConfig::default(),
            usdc,
            Arc::new(crate::clock::SystemClock),
        )
        .unwrap();
        let rpc = RpcClient::new("http://127.0.0.1:9").unwrap();

        let signed = route
            .sign(&rpc, &wallet, Direction::SellSol, 1_000_000_000, None)
            .await
            .unwrap();
        assert_eq!(signed.minimum_out, 148_500_000);
        assert_eq!(signed.last_valid_block_height, 279_632_475);
        crate::chain::jupiter::assert_signed_in_place(
            &wire,
            &signed.wire,
            &signed.signature,
            &wallet,
        );

        // A caller's minimum above the route's bound cannot be honoured: refused, unsigned.
        let stricter = route
            .sign(
                &rpc,
                &wallet,
                Direction::SellSol,
                1_000_000_000,
                Some(149_000_000),
            )
            .await;
        assert!(
            matches!(stricter, Err(TradeError::Jupiter(SwapApiError::Refused(_)))),
            "{stricter:?}"
        );
    }

    #[test]
    fn jupiter_amounts_come_from_the_wallets_balance_changes() {
        let usdc: Pubkey = super::super::tx::MAINNET_USDC_MINT.parse().expect("mint");
        let route = JupiterRoute::new(
            JupiterConfig::default(),
            HermesConfig::default(),
            usdc,
            Arc::new(crate::clock::SystemClock),
        )
        .expect("route");
        let wallet = "Wa11et1111111111111111111111111111111111111";
        let balance = |amount: u64| {
            json!([{"owner": wallet, "mint": usdc.to_string(),
                    "uiTokenAmount": {"amount": amount.to_string()}}])
        };
        let tx = |pre: u64, post: u64, usdc_pre: u64, usdc_post: u64| {
            json!({"transaction": {"message": {"accountKeys": [{"pubkey": wallet, "signer": true}]}},
                   "meta": {"fee": 5000, "preBalances": [pre], "postBalances": [post],
                            "preTokenBalances": balance(usdc_pre),
                            "postTokenBalances": balance(usdc_post)}})
        };
        // Sold 1 SOL (and paid the fee) for 150 USDC.
        assert_eq!(
            route.amounts(
                &tx(2_000_005_000, 1_000_000_000, 0, 150_000_000),
                wallet,
                Direction::SellSol
            ),
            Some((1_000_000_000, 150_000_000))
        );
        // Paid 150 USDC for 0.99 SOL.
        assert_eq!(
            route.amounts(
                &tx(1_000_000_000, 1_989_995_000, 150_000_000, 0),
                wallet,
                Direction::SellUsdc
            ),
            Some((150_000_000, 990_000_000))
        );
        // Balances that moved the wrong way are not a swap.
        assert_eq!(
            route.amounts(&tx(1, 2, 5, 5), wallet, Direction::SellSol),
            None
        );
    }
}
