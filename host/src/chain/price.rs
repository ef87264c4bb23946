//! Where the server learns what SOL is worth in USD when it values wallets. [`PriceSource`] is
//! asynchronous and fallible because a real source is a network call (a later real-cluster
//! source reads a price over HTTP); on simnet the source is the pool ([`PoolPrice`]): USDC
//! reserve / SOL reserve read from the ledger, so swaps move valuations. On a real cluster it is
//! Pyth's feed through Hermes ([`HermesPrice`]): the simulated market never values a real wallet.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;

use super::hermes::HermesPrices;
use super::pool;
use super::simnet::Simnet;
use crate::clock::Clock;

#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error("the simnet pool does not exist yet")]
    NoPool,
    #[error("the simnet pool is empty: it has no price")]
    EmptyPool,
    #[error("cannot read the price: {0}")]
    Unavailable(String),
}

/// "What is SOL worth in USD now?", and "what was it worth when the transaction at this slot
/// and time executed?" (a deposit is valued at the price of its time).
pub trait PriceSource: Send + Sync + std::fmt::Debug {
    fn sol_usd(&self) -> BoxFuture<'_, Result<f64, PriceError>>;

    fn sol_usd_at(&self, slot: u64, at: DateTime<Utc>) -> BoxFuture<'_, Result<f64, PriceError>>;
}

/// SOL's price in the simnet pool.
#[derive(Debug)]
pub(crate) struct PoolPrice {
    simnet: Arc<Simnet>,
}

impl PoolPrice {
    pub(crate) fn new(simnet: Arc<Simnet>) -> Self {
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

    /// The pool's price after the last pool transaction before `slot` (slots order every
    /// simnet transaction exactly).
    fn sol_usd_at(&self, slot: u64, _at: DateTime<Utc>) -> BoxFuture<'_, Result<f64, PriceError>> {
        Box::pin(async move {
            let (lamports, usdc_raw, decimals) = self
                .simnet
                .pool_reserves_before(slot)
                .await
                .map_err(|e| PriceError::Unavailable(e.to_string()))?
                .ok_or(PriceError::NoPool)?;
            pool::price(lamports, usdc_raw, decimals).ok_or(PriceError::EmptyPool)
        })
    }
}

/// SOL's price on a real cluster: Pyth's SOL/USD feed through Hermes, at the clock's now.
pub(crate) struct HermesPrice {
    hermes: HermesPrices,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for HermesPrice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HermesPrice")
            .field("hermes", &self.hermes)
            .finish_non_exhaustive()
    }
}

impl HermesPrice {
    pub(crate) fn new(hermes: HermesPrices, clock: Arc<dyn Clock>) -> Self {
        HermesPrice { hermes, clock }
    }
}

impl PriceSource for HermesPrice {
    fn sol_usd(&self) -> BoxFuture<'_, Result<f64, PriceError>> {
        Box::pin(async move {
            self.hermes
                .usd_price("SOL", self.clock.now())
                .await
                .map(|price| price.price)
                .map_err(|error| PriceError::Unavailable(error.to_string()))
        })
    }

    /// Pyth's price published at the transaction's block time.
    fn sol_usd_at(&self, _slot: u64, at: DateTime<Utc>) -> BoxFuture<'_, Result<f64, PriceError>> {
        Box::pin(async move {
            self.hermes
                .usd_price_at("SOL", at)
                .await
                .map(|price| price.price)
                .map_err(|error| PriceError::Unavailable(error.to_string()))
        })
    }
}
