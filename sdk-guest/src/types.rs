//! Idiomatic mirrors of the WIT types, so strategies never touch generated bindings.

use alloc::string::String;
use alloc::vec::Vec;

use crate::__bindings::crucible::strategy::{host, types as wit};

/// The agent this tick is for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentConfig {
    pub class: String,
    pub base: String,
    pub quote: String,
    pub interval: String,
    /// Largest share of equity held in the base token, percent (1..=100); enforced by the host.
    pub max_allocation: f64,
    pub personality: String,
    pub model_id: String,
}

/// Recent candles, oldest first, as parallel columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Candles {
    pub ts: Vec<i64>,
    pub open: Vec<f64>,
    pub high: Vec<f64>,
    pub low: Vec<f64>,
    pub close: Vec<f64>,
    pub volume: Vec<f64>,
}

impl Candles {
    /// Number of candles.
    pub fn len(&self) -> usize {
        self.close.len()
    }

    pub fn is_empty(&self) -> bool {
        self.close.is_empty()
    }

    /// Last close, the price orders fill near.
    pub fn last_close(&self) -> Option<f64> {
        self.close.last().copied()
    }
}

/// Market signals for the base token at the last candle (see `wit/strategy.wit`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    pub sentiment: f64,
    pub mention_volume: f64,
    pub exchange_net_flow: f64,
    pub whale_net_buy: f64,
    pub active_wallets_change: f64,
}

/// The agent's paper portfolio before this tick's orders.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Portfolio {
    pub base: f64,
    pub quote: f64,
    pub avg_entry_price: Option<f64>,
    pub equity: f64,
}

/// Everything a strategy may know on one tick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    pub config: AgentConfig,
    /// Unix milliseconds UTC.
    pub now: i64,
    pub candles: Candles,
    pub signals: Signals,
    pub portfolio: Portfolio,
    /// The tunable parameters' values this tick (read them with
    /// [`IntParam::get`](crate::IntParam::get) and friends).
    pub params: crate::Params,
}

impl Context {
    /// Split the WIT context into the SDK context and the state blob (moves, no copies).
    pub(crate) fn from_wit(ctx: wit::TickContext) -> (Self, Vec<u8>) {
        let c = ctx.config;
        let k = ctx.candles;
        let s = ctx.signals;
        let p = ctx.portfolio;
        let context = Context {
            config: AgentConfig {
                class: c.class,
                base: c.base,
                quote: c.quote,
                interval: c.interval,
                max_allocation: c.max_allocation,
                personality: c.personality,
                model_id: c.model_id,
            },
            now: ctx.now,
            candles: Candles {
                ts: k.ts,
                open: k.open,
                high: k.high,
                low: k.low,
                close: k.close,
                volume: k.volume,
            },
            signals: Signals {
                sentiment: s.sentiment,
                mention_volume: s.mention_volume,
                exchange_net_flow: s.exchange_net_flow,
                whale_net_buy: s.whale_net_buy,
                active_wallets_change: s.active_wallets_change,
            },
            portfolio: Portfolio {
                base: p.base,
                quote: p.quote,
                avg_entry_price: p.avg_entry_price,
                equity: p.equity,
            },
            params: crate::params::from_wit(ctx.params),
        };
        (context, ctx.state)
    }

    /// Whether the portfolio holds any base token.
    pub fn in_position(&self) -> bool {
        self.portfolio.base > 0.0
    }

    /// Current value of the base held as a fraction of equity (0..=1).
    pub fn exposure(&self) -> f64 {
        let price = self.candles.last_close().unwrap_or(0.0);
        if self.portfolio.equity <= 0.0 {
            return 0.0;
        }
        (self.portfolio.base * price / self.portfolio.equity).clamp(0.0, 1.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Buy,
    Sell,
}

/// How much to trade.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    /// A fraction (0, 1] of equity at the last close.
    FractionOfEquity(f64),
    /// An absolute amount of base token.
    BaseAmount(f64),
    /// Everything held (sells only).
    All,
}

/// A market order.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub side: Side,
    pub size: Size,
    pub reason: Option<String>,
}

impl Order {
    /// Buy `fraction` of equity worth of base (the host caps it at maxAllocation).
    pub fn buy(fraction: f64) -> Self {
        Order {
            side: Side::Buy,
            size: Size::FractionOfEquity(fraction),
            reason: None,
        }
    }

    /// Sell `fraction` of equity worth of base (capped at what is held).
    pub fn sell(fraction: f64) -> Self {
        Order {
            side: Side::Sell,
            size: Size::FractionOfEquity(fraction),
            reason: None,
        }
    }

    /// Sell the whole position.
    pub fn sell_all() -> Self {
        Order {
            side: Side::Sell,
            size: Size::All,
            reason: None,
        }
    }

    /// Attach the reason shown in trade history.
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub(crate) fn into_wit(self) -> wit::Order {
        wit::Order {
            side: match self.side {
                Side::Buy => wit::Side::Buy,
                Side::Sell => wit::Side::Sell,
            },
            size: match self.size {
                Size::FractionOfEquity(f) => wit::Size::FractionOfEquity(f),
                Size::BaseAmount(a) => wit::Size::BaseAmount(a),
                Size::All => wit::Size::All,
            },
            reason: self.reason,
        }
    }
}

/// Log levels of `host.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl From<Level> for host::Level {
    fn from(level: Level) -> Self {
        match level {
            Level::Debug => host::Level::Debug,
            Level::Info => host::Level::Info,
            Level::Warn => host::Level::Warn,
            Level::Error => host::Level::Error,
        }
    }
}
