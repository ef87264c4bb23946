//! Stylized facts of a candle series and information coefficients of signals: what
//! `crucible market stats` prints and what the generator's calibration tests check.
//!
//! Every statistic is of log returns `r_i = ln(close_i / close_{i-1})`:
//! - volatility: their population standard deviation;
//! - excess kurtosis: `m4 / m2² - 3` (0 for a normal distribution; heavy tails are > 0);
//! - autocorrelation at lag k: `Σ (x_i - x̄)(x_{i+k} - x̄) / Σ (x_i - x̄)²`, of `r` (near 0 on a
//!   real market) and of `|r|` (positive and slowly decaying: volatility clustering);
//! - volume/|return|: Spearman rank correlation of each candle's volume with its `|r|`.
//!
//! The information coefficient of a signal is the Spearman rank correlation between its value
//! at a close and the log return over the following horizon, sampled every horizon so the
//! windows do not overlap.

use serde::Serialize;

use super::{Candle, Signals, merge};

/// The stylized facts of one series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StylizedFacts {
    /// Log returns measured (candles - 1).
    pub returns: usize,
    /// Standard deviation of the log returns.
    pub volatility: f64,
    /// Excess kurtosis of the log returns (heavy tails > 0).
    pub excess_kurtosis: f64,
    /// Autocorrelation of the returns at lag 1.
    pub acf_return_1: f64,
    /// Autocorrelation of the absolute returns at lag 1.
    pub acf_abs_1: f64,
    /// … at lag 5.
    pub acf_abs_5: f64,
    /// … at lag 20.
    pub acf_abs_20: f64,
    /// Spearman correlation of volume with the absolute return.
    pub volume_abs_return: f64,
}

impl StylizedFacts {
    /// The facts of `candles` (oldest first); `None` with fewer than 30 candles.
    pub fn of(candles: &[Candle]) -> Option<StylizedFacts> {
        if candles.len() < 30 {
            return None;
        }
        let r: Vec<f64> = candles
            .windows(2)
            .map(|w| (w[1].close / w[0].close).ln())
            .collect();
        let abs: Vec<f64> = r.iter().map(|x| x.abs()).collect();
        let volume: Vec<f64> = candles[1..].iter().map(|c| c.volume).collect();
        let n = r.len() as f64;
        let mean = r.iter().sum::<f64>() / n;
        let m2 = r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let m4 = r.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n;
        Some(StylizedFacts {
            returns: r.len(),
            volatility: m2.sqrt(),
            excess_kurtosis: if m2 > 0.0 { m4 / (m2 * m2) - 3.0 } else { 0.0 },
            acf_return_1: autocorrelation(&r, 1),
            acf_abs_1: autocorrelation(&abs, 1),
            acf_abs_5: autocorrelation(&abs, 5),
            acf_abs_20: autocorrelation(&abs, 20),
            volume_abs_return: spearman(&volume, &abs),
        })
    }
}

/// Combine consecutive groups of `per` candles (a trailing partial group is dropped).
pub fn aggregate(candles: &[Candle], per: usize) -> Vec<Candle> {
    candles
        .chunks_exact(per.max(1))
        .filter_map(|chunk| merge(chunk[0].ts, chunk))
        .collect()
}

/// Autocorrelation of `x` at `lag` (0 when undefined).
pub(crate) fn autocorrelation(x: &[f64], lag: usize) -> f64 {
    if x.len() <= lag + 1 {
        return 0.0;
    }
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let var: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    if var == 0.0 {
        return 0.0;
    }
    let cov: f64 = x
        .iter()
        .zip(&x[lag..])
        .map(|(a, b)| (a - mean) * (b - mean))
        .sum();
    cov / var
}

/// Pearson correlation (0 when undefined).
pub(crate) fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len());
    if n < 2 {
        return 0.0;
    }
    let (x, y) = (&x[..n], &y[..n]);
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    if vx == 0.0 || vy == 0.0 {
        return 0.0;
    }
    cov / (vx * vy).sqrt()
}

/// Spearman rank correlation: Pearson of the ranks (ties get their mean rank).
pub(crate) fn spearman(x: &[f64], y: &[f64]) -> f64 {
    pearson(&ranks(x), &ranks(y))
}

fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut out = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

/// A signal's value in the direction it means: higher = more bullish (exchange inflow is
/// bearish, so its sign is flipped), or for mention volume, a larger move to come.
pub(crate) fn signal_value(signals: &Signals, name: &str) -> Option<f64> {
    Some(match name {
        "sentiment" => signals.sentiment,
        "mention_volume" => signals.mention_volume,
        "exchange_net_flow" => -signals.exchange_net_flow,
        "whale_net_buy" => signals.whale_net_buy,
        "active_wallets_change" => signals.active_wallets_change,
        _ => return None,
    })
}

/// The (signal, forward return) samples of signal `name` over `history` (5-minute candles with
/// the signals known at their close) at `horizon` steps, one per non-overlapping window: the
/// signal in the direction it means, the forward log return (absolute for mention volume).
/// `None` for an unknown signal.
pub(crate) fn ic_samples(
    history: &[(Candle, Signals)],
    name: &str,
    horizon: usize,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let horizon = horizon.max(1);
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let mut i = 0;
    while i + horizon < history.len() {
        let (now, signals) = &history[i];
        let forward = (history[i + horizon].0.close / now.close).ln();
        xs.push(signal_value(signals, name)?);
        ys.push(if name == "mention_volume" {
            forward.abs()
        } else {
            forward
        });
        i += horizon;
    }
    Some((xs, ys))
}

/// Information coefficient of signal `name` at `horizon` over one or more histories (their
/// samples pooled): Spearman of `ic_samples`. `None` for an unknown signal or fewer than 30
/// samples.
pub fn information_coefficient(
    histories: &[&[(Candle, Signals)]],
    name: &str,
    horizon: usize,
) -> Option<f64> {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for h in histories {
        let (x, y) = ic_samples(h, name, horizon)?;
        xs.extend(x);
        ys.extend(y);
    }
    (xs.len() >= 30).then(|| spearman(&xs, &ys))
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_ties_and_spearman_sees_monotone_links() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![2.5, 0.0, 2.5, 1.0]);
        let x: Vec<f64> = (0..50).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|v| v.powi(3)).collect();
        assert!((spearman(&x, &y) - 1.0).abs() < 1e-12);
        assert!(pearson(&x, &y) < 0.95);
        let rev: Vec<f64> = x.iter().rev().copied().collect();
        assert!((spearman(&x, &rev) + 1.0).abs() < 1e-12);
    }

    #[test]
    fn autocorrelation_of_an_alternating_series_is_minus_one_at_lag_one() {
        let x: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert!((autocorrelation(&x, 1) + 0.99).abs() < 0.01);
        assert!((autocorrelation(&x, 2) - 0.98).abs() < 0.01);
    }

    #[test]
    fn facts_of_a_constant_ratio_walk() {
        // Closes alternating ×1.01 and ×1/1.01: returns ±ln 1.01, kurtosis of a two-point
        // distribution (-2), lag-1 autocorrelation about -1.
        let mut close = 100.0;
        let candles: Vec<Candle> = (0..101)
            .map(|i| {
                if i > 0 {
                    close *= if i % 2 == 1 { 1.01 } else { 1.0 / 1.01 };
                }
                Candle {
                    ts: i * 300_000,
                    open: close,
                    high: close,
                    low: close,
                    close,
                    volume: 1.0,
                }
            })
            .collect();
        let f = StylizedFacts::of(&candles).unwrap();
        assert_eq!(f.returns, 100);
        assert!((f.volatility - 1.01f64.ln()).abs() < 1e-9);
        assert!((f.excess_kurtosis + 2.0).abs() < 1e-6);
        assert!(f.acf_return_1 < -0.98);
        let hours = aggregate(&candles, 12);
        assert_eq!(hours.len(), 8);
        assert_eq!(hours[1].ts, candles[12].ts);
        assert!(StylizedFacts::of(&hours).is_none());
    }
}
