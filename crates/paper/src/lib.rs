//! Paper trading: each agent's virtual balances, market-order fills and performance metrics.
//! Pure logic, no I/O: callers bring the price and persist the [`Ledger`] (a plain
//! serialisable struct of constant size, whatever the number of trades). The server
//! (`host/`) and the sandbox's backtests both keep their accounts with it.
//!
//! Money is integer: balances are raw units with six decimals for both tokens
//! (1 USDC = 1,000,000 units, 1 SOL = 1,000,000 units), so no fill can create or lose value by
//! rounding drift; rounding always favours the house (down on what the agent gets, up on fees).
//! Prices and metrics are `f64`.

#![warn(unreachable_pub, missing_docs)]

mod ledger;

pub use ledger::{Fill, Ledger, Metrics, PaperConfig, Rejection};

use serde::{Deserialize, Serialize};

/// Raw units per whole token.
pub const UNIT: f64 = 1_000_000.0;

/// Which way an order trades: base bought with quote, or sold for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Buy base with quote.
    Buy,
    /// Sell base for quote.
    Sell,
}

/// How much an order trades.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum OrderSize {
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
    /// Buy or sell.
    pub side: Side,
    /// How much.
    pub size: OrderSize,
    /// The strategy's reason, kept with the fill.
    pub reason: Option<String>,
}

/// The portfolio as a strategy sees it, in whole tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortfolioView {
    /// Base held.
    pub base: f64,
    /// Quote held.
    pub quote: f64,
    /// Average price paid for the base held (fees included); `None` when flat.
    pub avg_entry_price: Option<f64>,
    /// Quote plus base at the current price.
    pub equity: f64,
}
