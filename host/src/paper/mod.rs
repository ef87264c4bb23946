//! Paper trading: each agent's virtual balances, market-order fills and performance metrics
//!. Pure logic, no I/O: callers bring the price and persist the [`Ledger`] (a plain
//! serialisable struct of constant size, whatever the number of trades).
//!
//! Money is integer: balances are raw units with six decimals for both tokens
//! (1 USDC = 1,000,000 units, 1 SOL = 1,000,000 units), so no fill can create or lose value by
//! rounding drift; rounding always favours the house (down on what the agent gets, up on fees).
//! Prices and metrics are `f64`.

mod ledger;

pub use ledger::{Fill, Ledger, Metrics, PaperConfig};

use serde::{Deserialize, Serialize};

/// Raw units per whole token.
pub(crate) const UNIT: f64 = 1_000_000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Buy,
    Sell,
}

/// How much an order trades.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) enum OrderSize {
    /// A fraction (0, 1] of equity at the current price.
    FractionOfEquity(f64),
    /// Whole tokens of base.
    BaseAmount(f64),
    /// The whole position (sells).
    All,
}

/// A market order as a strategy asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderRequest {
    pub side: Side,
    pub(crate) size: OrderSize,
    pub reason: Option<String>,
}

/// The portfolio as a strategy sees it, in whole tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortfolioView {
    pub base: f64,
    pub quote: f64,
    pub avg_entry_price: Option<f64>,
    pub equity: f64,
}
