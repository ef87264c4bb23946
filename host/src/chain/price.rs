//! Where the server learns what SOL is worth in USD when it values wallets. [`PriceSource`] is
//! asynchronous and fallible because a real source is a network call (a later real-cluster
//! source reads a price over HTTP); on simnet the source is the pool ([`PoolPrice`]): USDC
//! reserve / SOL reserve read from the ledger, so swaps move valuations. With an external RPC
//! and no pool, the simulated market prices SOL ([`MarketPrice`]).

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::pool;
use super::simnet::Simnet;
use crate::clock::{Clock, to_millis};
use crate::market::MarketFeed;

#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error("the simnet pool does not exist yet")]
    NoPool,
    #[error("the simnet pool is empty: it has no price")]
    EmptyPool,
    #[error("cannot read the price: {0}")]
    Unavailable(String),
}

/// "What is SOL worth in USD now?"
pub trait PriceSource: Send + Sync {
    fn sol_usd(&self) -> BoxFuture<'_, Result<f64, PriceError>>;
}

/// SOL's price in the simnet pool.
pub struct PoolPrice {
    simnet: Arc<Simnet>,
}

impl PoolPrice {
    pub fn new(simnet: Arc<Simnet>) -> Self {
        PoolPrice { simnet }
    }
}

impl PriceSource for PoolPrice {
    fn sol_usd(&self) -> BoxFuture<'_, Result<f64, PriceError>> {
        Box::pin(async move {
            let reserves = self
                .simnet
                .pool_reserves()
                .await
                .map_err(|e| PriceError::Unavailable(e.to_string()))?
                .ok_or(PriceError::NoPool)?;
            pool::price(reserves.lamports, reserves.usdc_raw, reserves.usdc_decimals)
                .ok_or(PriceError::EmptyPool)
        })
    }
}

/// SOL's price in the simulated market at the clock's now.
pub struct MarketPrice {
    market: Arc<dyn MarketFeed>,
    clock: Arc<dyn Clock>,
}

impl MarketPrice {
    pub fn new(market: Arc<dyn MarketFeed>, clock: Arc<dyn Clock>) -> Self {
        MarketPrice { market, clock }
    }
}

impl PriceSource for MarketPrice {
    fn sol_usd(&self) -> BoxFuture<'_, Result<f64, PriceError>> {
        Box::pin(async move {
            self.market
                .price_at("SOL", to_millis(self.clock.now()))
                .map_err(|e| PriceError::Unavailable(e.to_string()))
        })
    }
}
