//! The backtest summary: risk and return statistics of an equity curve, trade statistics of its
//! fills, a buy-and-hold benchmark over the same window and an optional per-period table.
//!
//! Pure functions of the backtest's recorded series, so the same backtest gives the same
//! summary to the byte. Every formula is written next to its function; a statistic that is not
//! defined for the data (too few points, no losing period, no drawdown) is `None`, printed
//! `n/a` and serialised as `null`, never a made-up 0 or infinity.
//!
//! Conventions: equity `E_0..E_n` is marked once per tick (`E_0` = the starting capital just
//! before the first tick); per-tick returns `r_i = E_i / E_{i-1} - 1`; a year is 365 days
//! (markets here trade every day), so `P` = ticks per year = 365 d / interval.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike as _};
use crucible_paper::{Side, UNIT};
use serde::Serialize;

use super::backtest::{FaultRecord, TradeRecord};

const YEAR_MS: f64 = 365.0 * 86_400_000.0;

/// One mark of a curve: time (Unix ms) and value (whole quote, or a price for the benchmark).
pub(crate) type Point = (i64, f64);

/// Compound annual growth rate, fraction: `(E_n / E_0)^(1 / years) - 1`, `years` = elapsed time
/// between the first and last point / 365 days. `None` with fewer than two points, no elapsed
/// time or a non-positive start; `-1` (everything lost) when the end is not positive.
pub(crate) fn cagr(curve: &[Point]) -> Option<f64> {
    let (&(t0, e0), &(tn, en)) = (curve.first()?, curve.last()?);
    let years = (tn - t0) as f64 / YEAR_MS;
    if curve.len() < 2 || years <= 0.0 || e0 <= 0.0 {
        return None;
    }
    if en <= 0.0 {
        return Some(-1.0);
    }
    Some((en / e0).powf(1.0 / years) - 1.0)
}

/// Per-point simple returns `r_i = E_i / E_{i-1} - 1` (a step from a non-positive value is skipped).
pub(crate) fn returns(curve: &[Point]) -> Vec<f64> {
    curve
        .windows(2)
        .filter(|w| w[0].1 > 0.0)
        .map(|w| w[1].1 / w[0].1 - 1.0)
        .collect()
}

/// Annualised Sharpe ratio, risk-free rate 0: `mean(r) / sd(r) * sqrt(P)`, `sd` the sample
/// standard deviation (divisor n - 1). `None` with fewer than two returns or `sd = 0` (a flat
/// curve has no risk to divide by).
pub(crate) fn sharpe(returns: &[f64], periods_per_year: f64) -> Option<f64> {
    if returns.len() < 2 {
        return None;
    }
    let n = returns.len() as f64;
    let mean = returns.iter().sum::<f64>() / n;
    let var = returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let sd = var.sqrt();
    (sd > 0.0).then(|| mean / sd * periods_per_year.sqrt())
}

/// Annualised Sortino ratio, target 0: `mean(r) / DD * sqrt(P)`, downside deviation
/// `DD = sqrt(sum(min(r_i, 0)^2) / n)` over all n returns. `None` with fewer than two returns
/// or no negative return (`DD = 0`).
pub(crate) fn sortino(returns: &[f64], periods_per_year: f64) -> Option<f64> {
    if returns.len() < 2 {
        return None;
    }
    let n = returns.len() as f64;
    let mean = returns.iter().sum::<f64>() / n;
    let dd = (returns.iter().map(|r| r.min(0.0).powi(2)).sum::<f64>() / n).sqrt();
    (dd > 0.0).then(|| mean / dd * periods_per_year.sqrt())
}

/// The largest peak-to-trough fall of a curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Drawdown {
    /// `max_i (peak_i - E_i) / peak_i`, `peak_i` the highest value up to `i`; fraction 0..=1.
    /// 0 for a curve that never falls below an earlier high (then no start or end).
    pub fraction: f64,
    /// When the peak was marked (the drawdown's start), Unix ms.
    pub start: Option<i64>,
    /// When the trough was marked (its end), Unix ms.
    pub end: Option<i64>,
    /// The value at the peak.
    pub peak: Option<f64>,
    /// The value at the trough.
    pub trough: Option<f64>,
}

/// See [`Drawdown`]. Ties keep the first (earliest) largest drawdown.
pub(crate) fn max_drawdown(curve: &[Point]) -> Drawdown {
    let mut best = Drawdown {
        fraction: 0.0,
        start: None,
        end: None,
        peak: None,
        trough: None,
    };
    let Some(&first) = curve.first() else {
        return best;
    };
    let mut peak = first;
    for &(ts, value) in curve {
        if value > peak.1 {
            peak = (ts, value);
        }
        if peak.1 > 0.0 {
            let fall = (peak.1 - value) / peak.1;
            if fall > best.fraction {
                best = Drawdown {
                    fraction: fall,
                    start: Some(peak.0),
                    end: Some(ts),
                    peak: Some(peak.1),
                    trough: Some(value),
                };
            }
        }
    }
    best
}

/// Calmar ratio: `CAGR / max drawdown`. `None` when either is undefined or the drawdown is 0.
pub(crate) fn calmar(cagr: Option<f64>, drawdown: f64) -> Option<f64> {
    cagr.filter(|_| drawdown > 0.0).map(|c| c / drawdown)
}

/// Statistics of the closed trades: every sell fill closes (part of) a position and carries its
/// realised profit after fees (buys realise nothing).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TradeStats {
    /// Fills, buys and sells.
    pub fills: usize,
    /// Buy fills.
    pub buys: usize,
    /// Sell fills.
    pub sells: usize,
    /// Sells with a profit > 0.
    pub wins: usize,
    /// Sells with a profit ≤ 0.
    pub losses: usize,
    /// `wins / sells`; `None` with no sell.
    pub win_rate: Option<f64>,
    /// Sum of profits of winning sells, quote.
    pub gross_profit: f64,
    /// Sum of (absolute) losses of losing sells, quote.
    pub gross_loss: f64,
    /// `gross_profit / gross_loss`; `None` with no sell or no loss (nothing to divide by).
    pub profit_factor: Option<f64>,
    /// Mean realised profit per sell, quote: `(gross_profit - gross_loss) / sells`; `None`
    /// with no sell.
    pub expectancy: Option<f64>,
    /// Most losing sells in a row.
    pub longest_losing_streak: usize,
    /// Fees paid on every fill, quote.
    pub fees_paid: f64,
}

/// See [`TradeStats`].
pub(crate) fn trade_stats(trades: &[TradeRecord]) -> TradeStats {
    let mut s = TradeStats {
        fills: trades.len(),
        buys: 0,
        sells: 0,
        wins: 0,
        losses: 0,
        win_rate: None,
        gross_profit: 0.0,
        gross_loss: 0.0,
        profit_factor: None,
        expectancy: None,
        longest_losing_streak: 0,
        fees_paid: 0.0,
    };
    let mut streak = 0;
    for t in trades {
        s.fees_paid += t.fill.fee as f64 / UNIT;
        if t.fill.side == Side::Buy {
            s.buys += 1;
            continue;
        }
        s.sells += 1;
        let pnl = t.fill.realized_pnl.unwrap_or(0) as f64 / UNIT;
        if pnl > 0.0 {
            s.wins += 1;
            s.gross_profit += pnl;
            streak = 0;
        } else {
            s.losses += 1;
            s.gross_loss -= pnl;
            streak += 1;
            s.longest_losing_streak = s.longest_losing_streak.max(streak);
        }
    }
    if s.sells > 0 {
        let n = s.sells as f64;
        s.win_rate = Some(s.wins as f64 / n);
        s.expectancy = Some((s.gross_profit - s.gross_loss) / n);
        s.profit_factor = (s.gross_loss > 0.0).then(|| s.gross_profit / s.gross_loss);
    }
    s
}

/// How the per-period table groups time (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breakdown {
    /// UTC days (`2026-01-05`).
    Day,
    /// ISO weeks (`2026-W02`).
    Week,
    /// Months (`2026-01`).
    Month,
}

impl Breakdown {
    /// The period a time falls in: `2026-01-05`, ISO week `2026-W02`, or `2026-01`.
    pub(crate) fn key(self, ts: i64) -> String {
        let Some(t) = DateTime::from_timestamp_millis(ts) else {
            return ts.to_string();
        };
        match self {
            Breakdown::Day => t.format("%Y-%m-%d").to_string(),
            Breakdown::Week => {
                let week = t.iso_week();
                format!("{}-W{:02}", week.year(), week.week())
            }
            Breakdown::Month => t.format("%Y-%m").to_string(),
        }
    }
}

/// One row of the per-period table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeriodRow {
    /// The period's key ([`Breakdown`]'s format).
    pub period: String,
    /// Equity at the end of the previous period (the starting capital for the first).
    pub start_equity: f64,
    /// Equity at the last mark of this period.
    pub end_equity: f64,
    /// `end / start - 1`, percent.
    pub return_percent: f64,
    /// Fills in the period.
    pub fills: usize,
    /// Sells in the period.
    pub sells: usize,
    /// Of those, sells in profit.
    pub wins: usize,
    /// Realised profit of this period's sells, quote.
    pub realized_pnl: f64,
}

/// Group `curve[1..]` by period; each period's return is measured from the previous period's
/// last mark (`curve[0]`, the starting capital, for the first period).
pub(crate) fn periods(curve: &[Point], trades: &[TradeRecord], by: Breakdown) -> Vec<PeriodRow> {
    let mut rows: Vec<PeriodRow> = Vec::new();
    let Some(&(_, mut previous)) = curve.first() else {
        return rows;
    };
    for &(ts, equity) in &curve[1..] {
        let key = by.key(ts);
        match rows.last_mut() {
            Some(row) if row.period == key => row.end_equity = equity,
            _ => {
                if let Some(row) = rows.last() {
                    previous = row.end_equity;
                }
                rows.push(PeriodRow {
                    period: key,
                    start_equity: previous,
                    end_equity: equity,
                    return_percent: 0.0,
                    fills: 0,
                    sells: 0,
                    wins: 0,
                    realized_pnl: 0.0,
                });
            }
        }
    }
    for row in &mut rows {
        row.return_percent = if row.start_equity > 0.0 {
            (row.end_equity / row.start_equity - 1.0) * 100.0
        } else {
            0.0
        };
    }
    for t in trades {
        let key = by.key(t.ts);
        if let Some(row) = rows.iter_mut().find(|r| r.period == key) {
            row.fills += 1;
            if t.fill.side == Side::Sell {
                let pnl = t.fill.realized_pnl.unwrap_or(0) as f64 / UNIT;
                row.sells += 1;
                row.wins += usize::from(pnl > 0.0);
                row.realized_pnl += pnl;
            }
        }
    }
    rows
}

/// A day's return (a [`PeriodRow`] of [`Breakdown::Day`]), percent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DayReturn {
    /// The UTC day (`2026-01-05`).
    pub day: String,
    /// Its return, percent.
    pub return_percent: f64,
}

/// Best and worst UTC day by return; `None` without a marked day. Ties keep the earliest day.
pub(crate) fn best_and_worst_day(curve: &[Point]) -> (Option<DayReturn>, Option<DayReturn>) {
    let days = periods(curve, &[], Breakdown::Day);
    let pick = |better: fn(f64, f64) -> bool| {
        days.iter()
            .fold(None::<&PeriodRow>, |best, row| match best {
                Some(b) if !better(row.return_percent, b.return_percent) => Some(b),
                _ => Some(row),
            })
            .map(|row| DayReturn {
                day: row.period.clone(),
                return_percent: row.return_percent,
            })
    };
    (pick(|a, b| a > b), pick(|a, b| a < b))
}

/// Fills, sells and realised profit per order reason (`(none)` when the strategy gave none).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasonRow {
    /// The reason the strategy gave.
    pub reason: String,
    /// Buy fills with it.
    pub buys: usize,
    /// Sell fills with it.
    pub sells: usize,
    /// Realised profit of those sells, quote.
    pub realized_pnl: f64,
}

/// See [`ReasonRow`]; sorted by reason so the table is stable.
pub(crate) fn by_reason(trades: &[TradeRecord]) -> Vec<ReasonRow> {
    let mut rows: BTreeMap<&str, ReasonRow> = BTreeMap::new();
    for t in trades {
        let reason = t.fill.reason.as_deref().unwrap_or("(none)");
        let row = rows.entry(reason).or_insert_with(|| ReasonRow {
            reason: reason.to_string(),
            buys: 0,
            sells: 0,
            realized_pnl: 0.0,
        });
        match t.fill.side {
            Side::Buy => row.buys += 1,
            Side::Sell => {
                row.sells += 1;
                row.realized_pnl += t.fill.realized_pnl.unwrap_or(0) as f64 / UNIT;
            }
        }
    }
    rows.into_values().collect()
}

/// Failed ticks by fault kind (`timeout`, `trap`, ...), sorted by kind.
pub(crate) fn faults_by_kind(faults: &[FaultRecord]) -> BTreeMap<String, usize> {
    let mut kinds = BTreeMap::new();
    for f in faults {
        *kinds.entry(f.kind.to_string()).or_insert(0) += 1;
    }
    kinds
}

/// The whole summary of one backtest, as printed and as `--json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Equity before the first tick (`E_0`), whole quote.
    pub start_equity: f64,
    /// Equity after the last tick (`E_n`), whole quote.
    pub final_equity: f64,
    /// `E_n / E_0 - 1`, percent.
    pub total_return_percent: f64,
    /// Compound annual growth rate (`cagr`), percent.
    pub cagr_percent: Option<f64>,
    /// Annualised Sharpe ratio of the per-tick returns.
    pub sharpe: Option<f64>,
    /// Annualised Sortino ratio of the per-tick returns.
    pub sortino: Option<f64>,
    /// CAGR / max drawdown.
    pub calmar: Option<f64>,
    /// The largest fall of equity.
    pub max_drawdown: Drawdown,
    /// Statistics of the fills.
    pub trades: TradeStats,
    /// Orders the fill model refused (allocation reached, nothing to sell, ...).
    pub refused_orders: usize,
    /// The best UTC day by return.
    pub best_day: Option<DayReturn>,
    /// The worst UTC day by return.
    pub worst_day: Option<DayReturn>,
    /// Buy and hold over the same window.
    pub benchmark: Benchmark,
    /// Fills and profit per order reason.
    pub by_reason: Vec<ReasonRow>,
    /// Ticks, failures and fuel.
    pub ticks: TickStats,
    /// The per-period table, when asked for.
    pub breakdown: Option<Vec<PeriodRow>>,
}

/// Buy and hold over the same window: the starting capital in the base token at the close
/// before the first tick, no fee, valued at each tick's close.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Benchmark {
    /// Total return, percent.
    pub total_return_percent: f64,
    /// CAGR, percent.
    pub cagr_percent: Option<f64>,
    /// Annualised Sharpe ratio.
    pub sharpe: Option<f64>,
    /// The largest fall.
    pub max_drawdown: Drawdown,
}

/// Ticks run, failed ticks by kind and fuel.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TickStats {
    /// Ticks run.
    pub ticks: usize,
    /// Ticks that failed.
    pub failed: usize,
    /// Failed ticks by fault kind (`timeout`, `trap`, ...).
    pub failed_by_kind: BTreeMap<String, usize>,
    /// Total fuel / ticks (0 with no tick).
    pub fuel_per_tick: u64,
    /// The most fuel one tick used.
    pub fuel_max: u64,
    /// The per-tick fuel budget (the server's).
    pub fuel_limit: u64,
}

/// What [`summarize`] reads: the recorded series of a backtest.
pub(crate) struct SummaryInput<'a> {
    /// Equity marks, whole quote, `E_0` first.
    pub equity: &'a [Point],
    /// Close prices at the same times (the benchmark).
    pub prices: &'a [Point],
    pub trades: &'a [TradeRecord],
    pub faults: &'a [FaultRecord],
    pub refused_orders: usize,
    pub ticks: usize,
    pub fuel_used: u64,
    pub fuel_max: u64,
    pub fuel_limit: u64,
    /// Ticks per year (`P`).
    pub periods_per_year: f64,
}

/// Compute the summary; `breakdown` adds the per-period table.
pub(crate) fn summarize(input: &SummaryInput<'_>, breakdown: Option<Breakdown>) -> Summary {
    let equity = input.equity;
    let start = equity.first().map_or(0.0, |p| p.1);
    let end = equity.last().map_or(0.0, |p| p.1);
    let growth = cagr(equity);
    let drawdown = max_drawdown(equity);
    let r = returns(equity);
    let (best_day, worst_day) = best_and_worst_day(equity);
    let percent = |a: f64, b: f64| if a > 0.0 { (b / a - 1.0) * 100.0 } else { 0.0 };
    let hold_start = input.prices.first().map_or(0.0, |p| p.1);
    let hold_end = input.prices.last().map_or(0.0, |p| p.1);
    Summary {
        start_equity: start,
        final_equity: end,
        total_return_percent: percent(start, end),
        cagr_percent: growth.map(|c| c * 100.0),
        sharpe: sharpe(&r, input.periods_per_year),
        sortino: sortino(&r, input.periods_per_year),
        calmar: calmar(growth, drawdown.fraction),
        max_drawdown: drawdown,
        trades: trade_stats(input.trades),
        refused_orders: input.refused_orders,
        best_day,
        worst_day,
        benchmark: Benchmark {
            total_return_percent: percent(hold_start, hold_end),
            cagr_percent: cagr(input.prices).map(|c| c * 100.0),
            sharpe: sharpe(&returns(input.prices), input.periods_per_year),
            max_drawdown: max_drawdown(input.prices),
        },
        by_reason: by_reason(input.trades),
        ticks: TickStats {
            ticks: input.ticks,
            failed: input.faults.len(),
            failed_by_kind: faults_by_kind(input.faults),
            fuel_per_tick: input.fuel_used / input.ticks.max(1) as u64,
            fuel_max: input.fuel_max,
            fuel_limit: input.fuel_limit,
        },
        breakdown: breakdown.map(|by| periods(equity, input.trades, by)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crucible_paper::Fill;

    const DAY: i64 = 86_400_000;

    fn curve(values: &[f64]) -> Vec<Point> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as i64 * DAY, *v))
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * a.abs().max(1.0)
    }

    #[test]
    fn cagr_compounds_over_365_days() {
        // Doubling in exactly one year is 100 %; in two years sqrt(2) - 1.
        let year = 365 * DAY;
        assert!(close(
            cagr(&[(0, 100.0), (year, 200.0)]).expect("defined"),
            1.0
        ));
        assert!(close(
            cagr(&[(0, 100.0), (2 * year, 200.0)]).expect("defined"),
            2f64.sqrt() - 1.0
        ));
        assert_eq!(cagr(&[(0, 100.0), (year, 0.0)]), Some(-1.0));
        assert_eq!(cagr(&[(0, 100.0)]), None, "one point");
        assert_eq!(cagr(&[(5, 100.0), (5, 120.0)]), None, "no time elapsed");
        assert_eq!(cagr(&[]), None);
    }

    #[test]
    fn sharpe_and_sortino_on_known_returns() {
        // Returns +10 %, -5 %, +10 %, -5 %: mean 0.025, sample sd sqrt(4 * 0.075^2 / 3).
        let c = curve(&[100.0, 110.0, 104.5, 114.95, 109.2025]);
        let r = returns(&c);
        assert_eq!(r.len(), 4);
        let sd = (4.0 * 0.075f64.powi(2) / 3.0).sqrt();
        assert!(close(
            sharpe(&r, 365.0).expect("defined"),
            0.025 / sd * 365f64.sqrt()
        ));
        // Downside deviation: sqrt((0.05^2 + 0.05^2) / 4) = 0.035355...
        let dd = (2.0 * 0.05f64.powi(2) / 4.0).sqrt();
        assert!(close(
            sortino(&r, 365.0).expect("defined"),
            0.025 / dd * 365f64.sqrt()
        ));

        // Too few points, a flat curve, or no losing period: undefined, not 0 or infinite.
        assert_eq!(sharpe(&[0.01], 365.0), None);
        assert_eq!(sharpe(&returns(&curve(&[5.0, 5.0, 5.0])), 365.0), None);
        assert_eq!(sortino(&returns(&curve(&[1.0, 2.0, 3.0])), 365.0), None);
        assert!(sharpe(&returns(&curve(&[1.0, 2.0, 3.0])), 365.0).is_some());
    }

    #[test]
    fn drawdown_has_its_start_and_end_and_calmar_divides_by_it() {
        // Peak 120 on day 1, trough 90 on day 3 (25 %); the later 130 -> 110 is only 15.4 %.
        let c = curve(&[100.0, 120.0, 100.0, 90.0, 130.0, 110.0]);
        let d = max_drawdown(&c);
        assert!(close(d.fraction, 0.25));
        assert_eq!((d.start, d.end), (Some(DAY), Some(3 * DAY)));
        assert_eq!((d.peak, d.trough), (Some(120.0), Some(90.0)));
        assert!(close(calmar(Some(0.5), d.fraction).expect("defined"), 2.0));

        // Never below an earlier high: zero drawdown, no dates, Calmar undefined.
        let up = max_drawdown(&curve(&[100.0, 100.0, 101.0]));
        assert_eq!(up.fraction, 0.0);
        assert_eq!((up.start, up.end), (None, None));
        assert_eq!(calmar(Some(0.5), up.fraction), None);
        assert_eq!(calmar(None, 0.2), None);
        assert_eq!(max_drawdown(&[]).fraction, 0.0);
    }

    fn fill(side: Side, pnl: Option<f64>, reason: &str) -> TradeRecord {
        TradeRecord {
            ts: 0,
            fill: Fill {
                side,
                base: 1,
                notional: 1_000_000,
                fee: 1_000,
                price: 1.0,
                realized_pnl: pnl.map(|p| (p * UNIT) as i64),
                reason: (!reason.is_empty()).then(|| reason.to_string()),
            },
        }
    }

    #[test]
    fn trade_statistics_of_closed_trades() {
        let trades = [
            fill(Side::Buy, None, "entry"),
            fill(Side::Sell, Some(30.0), "take profit"),
            fill(Side::Buy, None, "entry"),
            fill(Side::Sell, Some(-10.0), "stop"),
            fill(Side::Sell, Some(-5.0), "stop"),
            fill(Side::Sell, Some(0.0), ""),
            fill(Side::Sell, Some(20.0), "take profit"),
        ];
        let s = trade_stats(&trades);
        assert_eq!(
            (s.fills, s.buys, s.sells, s.wins, s.losses),
            (7, 2, 5, 2, 3)
        );
        assert_eq!(s.win_rate, Some(0.4));
        assert!(close(s.gross_profit, 50.0) && close(s.gross_loss, 15.0));
        assert!(close(s.profit_factor.expect("defined"), 50.0 / 15.0));
        assert!(close(s.expectancy.expect("defined"), 35.0 / 5.0));
        assert_eq!(s.longest_losing_streak, 3, "a break-even sell is not a win");
        assert!(close(s.fees_paid, 0.007));

        let only_wins = trade_stats(&[fill(Side::Sell, Some(1.0), "")]);
        assert_eq!(only_wins.profit_factor, None, "no loss to divide by");
        let none = trade_stats(&[fill(Side::Buy, None, "")]);
        assert_eq!((none.win_rate, none.expectancy), (None, None));

        let reasons = by_reason(&trades);
        let names: Vec<&str> = reasons.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(names, ["(none)", "entry", "stop", "take profit"]);
        assert_eq!((reasons[3].sells, reasons[3].realized_pnl), (2, 50.0));
        assert_eq!((reasons[1].buys, reasons[1].sells), (2, 0));
    }

    #[test]
    fn periods_measure_from_the_previous_period_end() {
        // 6-hourly marks over two days starting 2026-01-05 00:00 UTC (a Monday).
        let start = 1_767_571_200_000;
        let h6 = DAY / 4;
        let values = [100.0, 101.0, 102.0, 103.0, 110.0, 99.0, 98.0, 97.0, 88.0];
        let c: Vec<Point> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (start + i as i64 * h6, *v))
            .collect();
        let days = periods(&c, &[], Breakdown::Day);
        assert_eq!(days.len(), 3);
        assert_eq!(days[0].period, "2026-01-05");
        assert_eq!((days[0].start_equity, days[0].end_equity), (100.0, 103.0));
        assert_eq!((days[1].start_equity, days[1].end_equity), (103.0, 97.0));
        assert_eq!((days[2].start_equity, days[2].end_equity), (97.0, 88.0));
        let (best, worst) = best_and_worst_day(&c);
        assert_eq!(best.expect("a day").day, "2026-01-05");
        assert_eq!(worst.expect("a day").day, "2026-01-07");
        assert_eq!(Breakdown::Week.key(start), "2026-W02");
        assert_eq!(Breakdown::Month.key(start), "2026-01");
        assert_eq!(periods(&c, &[], Breakdown::Week).len(), 1);
        assert_eq!(best_and_worst_day(&c[..1]), (None, None));
    }
}
