//! Market data: candles at 5m/15m/1h/4h/1d and per-token signals (sentiment, on-chain flows)
//! behind one [`MarketFeed`] trait.
//!
//! Two feeds: [`SimulatedMarket`], a seeded market calibrated on real candles whose signals carry
//! weak information about future returns (the default; deterministic per seed), and [`CsvFeed`],
//! replaying historical candles (real BTC/USDT candles ship with the binary: [`real_feed`]).
//! [`stats`] measures both. The market only serves data; it never trades or stores.

#![warn(unreachable_pub, missing_docs)]

mod csv;
mod real;
mod sim;
pub mod stats;

pub use csv::CsvFeed;
pub use real::{BTC_USDT_1H, BTC_USDT_5M};
pub use real::{real_feed, real_pair};
pub use sim::SimulatedMarket;
pub use sim::{KNOWN_PAIRS, SIGNAL_HORIZONS, STEP_MS};

use std::fmt;
use std::str::FromStr;

/// One candle. Prices in quote units per base unit, volume in base units.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Candle {
    /// Open time, Unix milliseconds UTC.
    pub ts: i64,
    /// First price.
    pub open: f64,
    /// Highest price.
    pub high: f64,
    /// Lowest price.
    pub low: f64,
    /// Last price.
    pub close: f64,
    /// Base traded.
    pub volume: f64,
}

/// Signals for a token at a point in time (meaning of each field: `wit/strategy.wit`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Signals {
    /// Social sentiment in [-1, 1].
    pub sentiment: f64,
    /// Mention volume relative to its recent average (1 = normal).
    pub mention_volume: f64,
    /// Net exchange flow as a fraction of supply (positive = arriving, distribution).
    pub exchange_net_flow: f64,
    /// Net buying by large wallets, in [-1, 1].
    pub whale_net_buy: f64,
    /// Change of active wallets against their recent average, as a fraction.
    pub active_wallets_change: f64,
}

impl Signals {
    /// No information: neutral sentiment, normal volume, no flows.
    pub(crate) const NEUTRAL: Signals = Signals {
        sentiment: 0.0,
        mention_volume: 1.0,
        exchange_net_flow: 0.0,
        whale_net_buy: 0.0,
        active_wallets_change: 0.0,
    };
}

/// Candle interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interval {
    /// 5 minutes.
    M5,
    /// 15 minutes.
    M15,
    /// 1 hour.
    H1,
    /// 4 hours.
    H4,
    /// 1 day.
    D1,
}

impl Interval {
    /// Every interval, shortest first.
    pub const ALL: [Interval; 5] = [
        Interval::M5,
        Interval::M15,
        Interval::H1,
        Interval::H4,
        Interval::D1,
    ];

    /// Length in milliseconds.
    pub const fn millis(self) -> i64 {
        match self {
            Interval::M5 => 5 * 60_000,
            Interval::M15 => 15 * 60_000,
            Interval::H1 => 3_600_000,
            Interval::H4 => 4 * 3_600_000,
            Interval::D1 => 24 * 3_600_000,
        }
    }

    /// The interval's name (`5m`, `15m`, `1h`, `4h`, `1d`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Interval::M5 => "5m",
            Interval::M15 => "15m",
            Interval::H1 => "1h",
            Interval::H4 => "4h",
            Interval::D1 => "1d",
        }
    }

    /// Candles per year (for annualising Sharpe).
    pub fn per_year(self) -> f64 {
        365.0 * 86_400_000.0 / self.millis() as f64
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Interval {
    type Err = MarketError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Interval::ALL
            .into_iter()
            .find(|i| i.as_str() == s)
            .ok_or_else(|| {
                MarketError::BadInput(format!("interval `{s}`: expected 5m, 15m, 1h, 4h or 1d"))
            })
    }
}

/// A token pair such as `SOL/USDC`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pair {
    /// The token traded, upper case (`SOL`).
    pub base: String,
    /// The token it is priced in, upper case (`USDC`).
    pub quote: String,
}

impl Pair {
    /// The pair `base`/`quote`, upper-cased.
    pub fn new(base: &str, quote: &str) -> Self {
        Pair {
            base: base.to_ascii_uppercase(),
            quote: quote.to_ascii_uppercase(),
        }
    }
}

impl fmt::Display for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.base, self.quote)
    }
}

impl FromStr for Pair {
    type Err = MarketError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok = |t: &str| {
            !t.is_empty() && t.len() <= 16 && t.chars().all(|c| c.is_ascii_alphanumeric())
        };
        match s.split_once('/') {
            Some((b, q)) if ok(b) && ok(q) => Ok(Pair::new(b, q)),
            _ => Err(MarketError::BadInput(format!(
                "pair `{s}`: expected BASE/QUOTE, e.g. SOL/USDC"
            ))),
        }
    }
}

/// What a feed could not serve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MarketError {
    /// The feed does not quote this pair or token.
    #[error("unknown pair or token {0}")]
    UnknownPair(String),
    /// A time (Unix ms) outside the feed's history.
    #[error("no market data at {0} (outside the feed's range)")]
    OutOfRange(i64),
    /// A malformed pair, interval or file.
    #[error("{0}")]
    BadInput(String),
    /// A CSV line that does not parse.
    #[error("CSV line {line}: {message}")]
    Csv {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// A source of candles, signals and prices.
pub trait MarketFeed: Send + Sync {
    /// The last `count` complete candles of `interval` that closed at or before `end` (Unix
    /// ms), oldest first. Fewer when the feed's history is shorter.
    fn candles(
        &self,
        pair: &Pair,
        interval: Interval,
        end: i64,
        count: usize,
    ) -> Result<Vec<Candle>, MarketError>;

    /// Signals for `pair`'s base token at time `at`.
    fn signals(&self, pair: &Pair, at: i64) -> Result<Signals, MarketError>;

    /// Spot price of `token` in USD at time `at` (stablecoins are 1).
    fn price_at(&self, token: &str, at: i64) -> Result<f64, MarketError>;
}

/// Whether a token is a USD stablecoin, priced at 1.
pub(crate) fn is_usd_stable(token: &str) -> bool {
    matches!(token.to_ascii_uppercase().as_str(), "USDC" | "USDT" | "USD")
}

/// Combine consecutive candles into one (first open, max high, min low, last close, sum volume).
pub(crate) fn merge(ts: i64, parts: &[Candle]) -> Option<Candle> {
    let first = parts.first()?;
    let last = parts.last()?;
    Some(Candle {
        ts,
        open: first.open,
        high: parts.iter().map(|c| c.high).fold(f64::MIN, f64::max),
        low: parts.iter().map(|c| c.low).fold(f64::MAX, f64::min),
        close: last.close,
        volume: parts.iter().map(|c| c.volume).sum(),
    })
}
