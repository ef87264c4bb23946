//! The ledger: balances, fills and running metrics.

use serde::{Deserialize, Serialize};

use super::{OrderRequest, OrderSize, PortfolioView, Side, UNIT};

/// Fill parameters of a paper account.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaperConfig {
    /// Fee on the traded notional, basis points (10 = 0.1 %).
    pub fee_bps: u32,
    /// Price slippage against the agent, basis points.
    pub slippage_bps: u32,
    /// Largest share of equity held in base, percent (1 to 100).
    pub max_allocation_pct: f64,
}

impl Default for PaperConfig {
    fn default() -> Self {
        PaperConfig {
            fee_bps: 10,
            slippage_bps: 5,
            max_allocation_pct: 100.0,
        }
    }
}

/// Smallest order notional, raw quote units (0.01 quote): dust is refused, not filled.
const MIN_NOTIONAL: i64 = 10_000;

/// Why an order was not filled (the tick goes on; the refusal is recorded).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Rejection {
    /// The feed's price is zero, negative or not a number.
    #[error("price {0} is not a positive number")]
    BadPrice(f64),
    /// A sell with no base held.
    #[error("nothing to sell")]
    NoPosition,
    /// A buy when base already makes up `maxAllocation` percent of equity.
    #[error("maxAllocation of {0}% already reached")]
    AllocationReached(f64),
    /// A buy with no quote to spend.
    #[error("not enough quote balance")]
    InsufficientQuote,
    /// Below the smallest notional (dust).
    #[error("order below the minimum size")]
    TooSmall,
    /// `all` on a buy.
    #[error("`all` is only valid for a sell")]
    BuyAll,
}

/// One executed fill, in raw units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fill {
    /// Buy or sell.
    pub side: Side,
    /// Base units bought or sold.
    pub base: i64,
    /// Quote notional before fees.
    pub notional: i64,
    /// Fee charged, quote units (rounded up).
    pub fee: i64,
    /// Execution price (feed price with slippage), quote per base.
    pub price: f64,
    /// Realised profit of this sell against its cost basis (sells only).
    pub realized_pnl: Option<i64>,
    /// The strategy's reason for the order.
    pub reason: Option<String>,
}

/// An agent's paper account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// Fee, slippage and allocation limit.
    pub config: PaperConfig,
    /// Quote the account started with.
    pub initial_quote: i64,
    /// Base held.
    pub base: i64,
    /// Quote held.
    pub quote: i64,
    /// Quote paid (with fees) for the base held now.
    pub cost_basis: i64,
    /// Realised profit of the round trip in progress (partial sells so far).
    pub trip_pnl: i64,
    /// Fills so far.
    pub trades: u64,
    /// Sum of the fills' notionals.
    pub traded_notional: i64,
    /// Sum of the fees paid.
    pub fees_paid: i64,
    /// Round trips closed (back to no base).
    pub round_trips: u64,
    /// Of those, the ones in profit.
    pub winning_trips: u64,
    /// Highest equity marked, raw quote.
    pub peak_equity: f64,
    /// Largest peak-to-trough fall of equity so far, fraction 0..=1.
    pub max_drawdown: f64,
    /// Per-mark return statistics (Welford), for Sharpe: marks taken.
    pub marks: u64,
    /// Equity at the last mark, raw quote.
    pub last_equity: f64,
    /// Running mean of the per-mark returns.
    pub return_mean: f64,
    /// Running sum of squared deviations of the per-mark returns.
    pub return_m2: f64,
}

/// Performance metrics. Amounts in whole quote.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Equity minus the starting quote.
    pub total_pnl: f64,
    /// The same, percent of the starting quote.
    pub total_pnl_percent: f64,
    /// Closed round trips in profit, fraction 0..=1 (0 when none closed).
    pub win_rate: f64,
    /// Fills so far.
    pub total_trades: u64,
    /// Mean notional per trade, quote.
    pub avg_trade_size: f64,
    /// Largest peak-to-trough fall of equity, fraction 0..=1.
    pub max_drawdown: f64,
    /// Annualised Sharpe ratio of per-mark returns (risk-free rate 0).
    pub sharpe: f64,
    /// Quote plus base at the price.
    pub equity: f64,
    /// Round trips closed.
    pub round_trips: u64,
    /// Fees paid.
    pub fees_paid: f64,
}

impl Ledger {
    /// A fresh account holding `initial_quote` whole quote tokens (agents start with 10,000).
    pub fn new(initial_quote: f64, config: PaperConfig) -> Self {
        let initial = (initial_quote * UNIT).round() as i64;
        Ledger {
            config,
            initial_quote: initial,
            base: 0,
            quote: initial,
            cost_basis: 0,
            trip_pnl: 0,
            trades: 0,
            traded_notional: 0,
            fees_paid: 0,
            round_trips: 0,
            winning_trips: 0,
            peak_equity: initial as f64,
            max_drawdown: 0.0,
            marks: 0,
            last_equity: initial as f64,
            return_mean: 0.0,
            return_m2: 0.0,
        }
    }

    /// Equity at `price`, raw quote units.
    fn equity_raw(&self, price: f64) -> f64 {
        self.quote as f64 + self.base as f64 * price
    }

    /// The portfolio in whole tokens, as a strategy sees it.
    pub fn view(&self, price: f64) -> PortfolioView {
        PortfolioView {
            base: self.base as f64 / UNIT,
            quote: self.quote as f64 / UNIT,
            avg_entry_price: (self.base > 0).then(|| self.cost_basis as f64 / self.base as f64),
            equity: self.equity_raw(price) / UNIT,
        }
    }

    /// Fill a market order at `price` (quote per base) with the account's fee, slippage and
    /// maxAllocation. Balances never go negative; a refused order changes nothing.
    pub fn execute(&mut self, order: &OrderRequest, price: f64) -> Result<Fill, Rejection> {
        if !(price.is_finite() && price > 0.0) {
            return Err(Rejection::BadPrice(price));
        }
        match order.side {
            Side::Buy => self.buy(order, price),
            Side::Sell => self.sell(order, price),
        }
    }

    fn buy(&mut self, order: &OrderRequest, price: f64) -> Result<Fill, Rejection> {
        let equity = self.equity_raw(price);
        let desired = match order.size {
            OrderSize::FractionOfEquity(f) => f * equity,
            OrderSize::BaseAmount(a) => a * UNIT * price,
            OrderSize::All => return Err(Rejection::BuyAll),
        };
        let cap = self.config.max_allocation_pct.clamp(0.0, 100.0) / 100.0 * equity
            - self.base as f64 * price;
        if cap < MIN_NOTIONAL as f64 {
            return Err(Rejection::AllocationReached(self.config.max_allocation_pct));
        }
        let fee_rate = f64::from(self.config.fee_bps) / 10_000.0;
        let affordable = self.quote as f64 / (1.0 + fee_rate);
        let notional = desired.min(cap).min(affordable).floor() as i64;
        if notional < MIN_NOTIONAL {
            return Err(if affordable < MIN_NOTIONAL as f64 {
                Rejection::InsufficientQuote
            } else {
                Rejection::TooSmall
            });
        }
        let fill_price = price * (1.0 + f64::from(self.config.slippage_bps) / 10_000.0);
        let fee = fee_of(notional, self.config.fee_bps);
        let cost = notional + fee;
        if cost > self.quote {
            return Err(Rejection::InsufficientQuote);
        }
        let base = (notional as f64 / fill_price).floor() as i64;
        if base <= 0 {
            return Err(Rejection::TooSmall);
        }
        self.quote -= cost;
        self.base += base;
        self.cost_basis += cost;
        self.record(notional, fee);
        Ok(Fill {
            side: Side::Buy,
            base,
            notional,
            fee,
            price: fill_price,
            realized_pnl: None,
            reason: order.reason.clone(),
        })
    }

    fn sell(&mut self, order: &OrderRequest, price: f64) -> Result<Fill, Rejection> {
        if self.base <= 0 {
            return Err(Rejection::NoPosition);
        }
        let desired = match order.size {
            OrderSize::FractionOfEquity(f) => (f * self.equity_raw(price) / price).floor() as i64,
            OrderSize::BaseAmount(a) => (a * UNIT).floor() as i64,
            OrderSize::All => self.base,
        };
        let sold = desired.min(self.base);
        let fill_price = price * (1.0 - f64::from(self.config.slippage_bps) / 10_000.0);
        let notional = (sold as f64 * fill_price).floor() as i64;
        if sold <= 0 || (notional < MIN_NOTIONAL && sold < self.base) {
            return Err(Rejection::TooSmall);
        }
        let fee = fee_of(notional, self.config.fee_bps).min(notional);
        let proceeds = notional - fee;
        // Cost of the part sold, pro rata (i128: cost × base can exceed i64).
        let cost = (i128::from(self.cost_basis) * i128::from(sold) / i128::from(self.base)) as i64;
        let realized = proceeds - cost;
        self.base -= sold;
        self.cost_basis -= cost;
        self.quote += proceeds;
        self.trip_pnl += realized;
        if self.base == 0 {
            self.round_trips += 1;
            if self.trip_pnl > 0 {
                self.winning_trips += 1;
            }
            self.trip_pnl = 0;
            self.cost_basis = 0;
        }
        self.record(notional, fee);
        Ok(Fill {
            side: Side::Sell,
            base: sold,
            notional,
            fee,
            price: fill_price,
            realized_pnl: Some(realized),
            reason: order.reason.clone(),
        })
    }

    fn record(&mut self, notional: i64, fee: i64) {
        self.trades += 1;
        self.traded_notional += notional;
        self.fees_paid += fee;
    }

    /// Mark the account to `price` once per tick: updates drawdown and return statistics.
    pub fn mark(&mut self, price: f64) {
        let equity = self.equity_raw(price);
        self.peak_equity = self.peak_equity.max(equity);
        if self.peak_equity > 0.0 {
            self.max_drawdown = self
                .max_drawdown
                .max((self.peak_equity - equity) / self.peak_equity);
        }
        if self.last_equity > 0.0 {
            let r = equity / self.last_equity - 1.0;
            self.marks += 1;
            let delta = r - self.return_mean;
            self.return_mean += delta / self.marks as f64;
            self.return_m2 += delta * (r - self.return_mean);
        }
        self.last_equity = equity;
    }

    /// Metrics at `price`; `periods_per_year` annualises Sharpe (marks per year).
    pub fn metrics(&self, price: f64, periods_per_year: f64) -> Metrics {
        let equity = self.equity_raw(price);
        let pnl = equity - self.initial_quote as f64;
        let sd = if self.marks > 1 {
            (self.return_m2 / (self.marks - 1) as f64).sqrt()
        } else {
            0.0
        };
        Metrics {
            total_pnl: pnl / UNIT,
            total_pnl_percent: if self.initial_quote > 0 {
                pnl / self.initial_quote as f64 * 100.0
            } else {
                0.0
            },
            win_rate: if self.round_trips > 0 {
                self.winning_trips as f64 / self.round_trips as f64
            } else {
                0.0
            },
            total_trades: self.trades,
            avg_trade_size: if self.trades > 0 {
                self.traded_notional as f64 / self.trades as f64 / UNIT
            } else {
                0.0
            },
            max_drawdown: self.max_drawdown,
            sharpe: if sd > 0.0 {
                self.return_mean / sd * periods_per_year.sqrt()
            } else {
                0.0
            },
            equity: equity / UNIT,
            round_trips: self.round_trips,
            fees_paid: self.fees_paid as f64 / UNIT,
        }
    }
}

/// Fee on `notional`, rounded up.
fn fee_of(notional: i64, bps: u32) -> i64 {
    // Both factors are non-negative, so adding 9,999 rounds up.
    ((i128::from(notional) * i128::from(bps) + 9_999) / 10_000) as i64
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use super::*;

    fn buy(f: f64) -> OrderRequest {
        OrderRequest {
            side: Side::Buy,
            size: OrderSize::FractionOfEquity(f),
            reason: None,
        }
    }

    fn sell_all() -> OrderRequest {
        OrderRequest {
            side: Side::Sell,
            size: OrderSize::All,
            reason: None,
        }
    }

    #[test]
    fn round_trip_with_fees_and_slippage() {
        let mut l = Ledger::new(
            10_000.0,
            PaperConfig {
                fee_bps: 10,
                slippage_bps: 0,
                max_allocation_pct: 100.0,
            },
        );
        let f = l.execute(&buy(0.5), 100.0).unwrap();
        assert_eq!(f.notional, 5_000_000_000);
        assert_eq!(f.fee, 5_000_000);
        assert_eq!(f.base, 50_000_000); // 50 tokens
        assert_eq!(l.quote, 10_000_000_000 - 5_005_000_000);
        let v = l.view(100.0);
        assert!((v.avg_entry_price.unwrap() - 100.1).abs() < 1e-9);
        let s = l.execute(&sell_all(), 110.0).unwrap();
        assert_eq!(s.notional, 5_500_000_000);
        assert_eq!(s.fee, 5_500_000);
        assert_eq!(
            s.realized_pnl,
            Some(5_500_000_000 - 5_500_000 - 5_005_000_000)
        );
        let m = l.metrics(110.0, 8760.0);
        assert_eq!(m.total_trades, 2);
        assert_eq!(m.round_trips, 1);
        assert_eq!(m.win_rate, 1.0);
        assert!((m.total_pnl - 489.5).abs() < 1e-9, "{m:?}");
        assert!((m.total_pnl_percent - 4.895).abs() < 1e-9);
        assert!((m.avg_trade_size - 5_250.0).abs() < 1e-9);
        assert!((m.fees_paid - 10.5).abs() < 1e-9);
    }

    #[test]
    fn max_allocation_caps_buys() {
        let mut l = Ledger::new(
            10_000.0,
            PaperConfig {
                max_allocation_pct: 25.0,
                ..PaperConfig::default()
            },
        );
        let f = l.execute(&buy(1.0), 50.0).unwrap();
        assert_eq!(f.notional, 2_500_000_000);
        // Fee and slippage leave a few cents of room at most; the cap holds whatever follows.
        for _ in 0..3 {
            match l.execute(&buy(0.5), 50.0) {
                Ok(fill) => assert!(fill.notional < 1_000_000, "{fill:?}"),
                Err(rejection) => {
                    assert!(
                        matches!(
                            rejection,
                            Rejection::AllocationReached(_) | Rejection::TooSmall
                        ),
                        "{rejection}"
                    )
                }
            }
        }
        let v = l.view(50.0);
        assert!(v.base * 50.0 <= 0.25 * v.equity + 1e-9, "{v:?}");
        assert_eq!(
            l.execute(&buy(0.5), 50.0).map(|_| ()),
            Err(Rejection::AllocationReached(25.0))
        );
    }

    #[test]
    fn balances_never_go_negative() {
        let mut l = Ledger::new(100.0, PaperConfig::default());
        l.execute(&buy(1.0), 3.0).unwrap();
        assert!(l.quote >= 0 && l.base > 0);
        assert!(matches!(
            l.execute(&buy(1.0), 3.0),
            Err(Rejection::AllocationReached(_) | Rejection::InsufficientQuote)
        ));
        l.execute(&sell_all(), 3.0).unwrap();
        assert_eq!(l.base, 0);
        assert_eq!(l.execute(&sell_all(), 3.0), Err(Rejection::NoPosition));
        assert!(
            l.quote > 0 && l.quote < 100_000_000,
            "fees and slippage cost something"
        );
        let big = OrderRequest {
            side: Side::Sell,
            size: OrderSize::BaseAmount(1e9),
            reason: None,
        };
        assert_eq!(l.execute(&big, 3.0), Err(Rejection::NoPosition));
        assert!(matches!(
            l.execute(&buy(0.5), f64::NAN),
            Err(Rejection::BadPrice(_))
        ));
    }

    #[test]
    fn losing_trip_drawdown_and_sharpe() {
        let mut l = Ledger::new(
            1_000.0,
            PaperConfig {
                fee_bps: 0,
                slippage_bps: 0,
                max_allocation_pct: 100.0,
            },
        );
        l.mark(10.0);
        l.execute(&buy(1.0), 10.0).unwrap();
        l.mark(10.0);
        l.mark(8.0);
        l.mark(9.0);
        l.execute(&sell_all(), 9.0).unwrap();
        let m = l.metrics(9.0, 365.0);
        assert_eq!(m.win_rate, 0.0);
        assert_eq!(m.round_trips, 1);
        assert!((m.max_drawdown - 0.2).abs() < 1e-9, "{m:?}");
        assert!((m.total_pnl + 100.0).abs() < 1e-6);
        assert!(m.sharpe < 0.0);
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(serde_json::from_str::<Ledger>(&json).unwrap(), l);
    }
}
