//! Technical indicators over price slices (oldest first). Each returns the value at the last
//! element, or `None` when there is not enough history. Conventions follow the usual references
//! (Wilder for RSI and ATR, population standard deviation for Bollinger and z-score).
//!
//! They run inside every tick, so the single-value forms allocate nothing.

use alloc::vec::Vec;

/// Simple moving average of the last `period` values.
pub fn sma(values: &[f64], period: usize) -> Option<f64> {
    if period == 0 || values.len() < period {
        return None;
    }
    let window = &values[values.len() - period..];
    Some(window.iter().sum::<f64>() / period as f64)
}

/// Exponential moving average series, seeded with the SMA of the first `period` values;
/// element `i` of the result is the EMA at `values[period - 1 + i]`.
pub fn ema_series(values: &[f64], period: usize) -> Vec<f64> {
    if period == 0 || values.len() < period {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(values.len() - period + 1);
    ema_walk(values, period, |ema| out.push(ema));
    out
}

/// Exponential moving average at the last value.
pub fn ema(values: &[f64], period: usize) -> Option<f64> {
    if period == 0 || values.len() < period {
        return None;
    }
    let mut last = 0.0;
    ema_walk(values, period, |ema| last = ema);
    Some(last)
}

/// Hand `each` the EMA at `values[period - 1]`, then at every later value. Needs
/// `0 < period <= values.len()`.
fn ema_walk(values: &[f64], period: usize, mut each: impl FnMut(f64)) {
    let alpha = 2.0 / (period as f64 + 1.0);
    let mut ema = values[..period].iter().sum::<f64>() / period as f64;
    each(ema);
    for v in &values[period..] {
        ema += alpha * (v - ema);
        each(ema);
    }
}

/// Wilder's relative strength index (0..=100) over `period` changes.
pub fn rsi(values: &[f64], period: usize) -> Option<f64> {
    if period == 0 || values.len() < period + 1 {
        return None;
    }
    let (mut gain, mut loss) = (0.0, 0.0);
    for w in values[..=period].windows(2) {
        let change = w[1] - w[0];
        if change > 0.0 {
            gain += change
        } else {
            loss -= change
        }
    }
    let n = period as f64;
    gain /= n;
    loss /= n;
    // Wilder's smoothing, avg = (avg * (n - 1) + x) / n, with the divisions hoisted: they
    // would sit on the loop-carried path of every step.
    let (keep, add) = ((n - 1.0) / n, 1.0 / n);
    for w in values[period..].windows(2) {
        let change = w[1] - w[0];
        // Comparisons rather than `f64::max`, which is a libm call on wasm32.
        let (up, down) = if change > 0.0 {
            (change, 0.0)
        } else {
            (0.0, -change)
        };
        gain = gain * keep + up * add;
        loss = loss * keep + down * add;
    }
    if loss == 0.0 {
        return Some(if gain == 0.0 { 50.0 } else { 100.0 });
    }
    Some(100.0 - 100.0 / (1.0 + gain / loss))
}

/// MACD line, signal line and histogram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Macd {
    pub macd: f64,
    pub signal: f64,
    pub histogram: f64,
}

/// MACD (`fast`/`slow` EMAs of price, `signal` EMA of their difference); usual 12, 26, 9.
pub fn macd(values: &[f64], fast: usize, slow: usize, signal: usize) -> Option<Macd> {
    if fast == 0 || fast >= slow {
        return None;
    }
    let fast_series = ema_series(values, fast);
    let slow_series = ema_series(values, slow);
    if slow_series.is_empty() {
        return None;
    }
    // Align: slow_series[i] is at values[slow - 1 + i], fast_series[j] at values[fast - 1 + j].
    let offset = slow - fast;
    let line: Vec<f64> = slow_series
        .iter()
        .enumerate()
        .map(|(i, s)| fast_series[i + offset] - s)
        .collect();
    let sig = ema(&line, signal)?;
    let macd = *line.last()?;
    Some(Macd {
        macd,
        signal: sig,
        histogram: macd - sig,
    })
}

/// Bollinger bands: middle = SMA, upper/lower = middle ± `k` population standard deviations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bands {
    pub lower: f64,
    pub middle: f64,
    pub upper: f64,
}

/// Bollinger bands over the last `period` values (usual 20, 2.0).
pub fn bollinger(values: &[f64], period: usize, k: f64) -> Option<Bands> {
    let (mean, sd) = mean_sd(values, period)?;
    Some(Bands {
        lower: mean - k * sd,
        middle: mean,
        upper: mean + k * sd,
    })
}

/// Wilder's average true range over `period` candles (needs `period + 1` candles).
pub fn atr(high: &[f64], low: &[f64], close: &[f64], period: usize) -> Option<f64> {
    let n = close.len().min(high.len()).min(low.len());
    if period == 0 || n < period + 1 {
        return None;
    }
    let tr = |i: usize| {
        let prev = close[i - 1];
        (high[i] - low[i])
            .max((high[i] - prev).abs())
            .max((low[i] - prev).abs())
    };
    let mut atr = (1..=period).map(tr).sum::<f64>() / period as f64;
    for i in period + 1..n {
        atr = (atr * (period as f64 - 1.0) + tr(i)) / period as f64;
    }
    Some(atr)
}

/// How many population standard deviations the last value is from the mean of the last
/// `period` values; 0 when the window is flat.
pub fn zscore(values: &[f64], period: usize) -> Option<f64> {
    let (mean, sd) = mean_sd(values, period)?;
    let last = *values.last()?;
    Some(if sd == 0.0 { 0.0 } else { (last - mean) / sd })
}

/// Per-candle volatility: population standard deviation of the last `period` log returns
/// (needs `period + 1` positive values).
pub fn volatility(values: &[f64], period: usize) -> Option<f64> {
    let w = window(values, period + 1)?;
    if period == 0 || w.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let r = |i: usize| libm::log(w[i + 1] / w[i]);
    let mean = (0..period).map(r).sum::<f64>() / period as f64;
    let var = (0..period)
        .map(|i| (r(i) - mean) * (r(i) - mean))
        .sum::<f64>()
        / period as f64;
    Some(libm::sqrt(var))
}

/// Highest value of the last `period` values.
pub fn highest(values: &[f64], period: usize) -> Option<f64> {
    window(values, period).map(|w| w.iter().copied().fold(f64::MIN, f64::max))
}

/// Lowest value of the last `period` values.
pub fn lowest(values: &[f64], period: usize) -> Option<f64> {
    window(values, period).map(|w| w.iter().copied().fold(f64::MAX, f64::min))
}

fn window(values: &[f64], period: usize) -> Option<&[f64]> {
    (period > 0 && values.len() >= period).then(|| &values[values.len() - period..])
}

fn mean_sd(values: &[f64], period: usize) -> Option<(f64, f64)> {
    let w = window(values, period)?;
    let mean = w.iter().sum::<f64>() / period as f64;
    let var = w.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / period as f64;
    Some((mean, libm::sqrt(var)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn volatility_of_a_constant_ratio_walk_is_zero_and_of_alternation_its_step() {
        let up: Vec<f64> = (0..10).map(|i| libm::pow(1.01, f64::from(i))).collect();
        assert!(volatility(&up, 9).unwrap() < 1e-9);
        let zigzag = [100.0, 110.0, 100.0, 110.0, 100.0];
        assert!(close(volatility(&zigzag, 4).unwrap(), libm::log(1.1)));
        assert_eq!(volatility(&zigzag, 5), None);
    }

    #[test]
    fn sma_of_known_series() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(sma(&v, 5), Some(8.0));
        assert_eq!(sma(&v, 11), None);
        assert_eq!(sma(&v, 0), None);
    }

    #[test]
    fn ema_seeds_with_sma_then_smooths() {
        // Seed (1+2+3)/3 = 2, alpha 0.5: 4 -> 3, 5 -> 4.
        assert_eq!(
            ema_series(&[1.0, 2.0, 3.0, 4.0, 5.0], 3),
            vec![2.0, 3.0, 4.0]
        );
        assert_eq!(ema(&[1.0, 2.0], 3), None);
    }

    #[test]
    fn rsi_matches_wilders_reference_example() {
        // The classic 14-period example (StockCharts): first RSI ≈ 70.46.
        let p = [
            44.34, 44.09, 44.15, 43.61, 44.33, 44.83, 45.10, 45.42, 45.84, 46.08, 45.89, 46.03,
            45.61, 46.28, 46.28,
        ];
        let r = rsi(&p, 14).unwrap();
        assert!((r - 70.464).abs() < 0.01, "{r}");
        // Next close 46.00: Wilder smoothing gives ≈ 66.25.
        let mut q = p.to_vec();
        q.push(46.00);
        let r2 = rsi(&q, 14).unwrap();
        assert!((r2 - 66.25).abs() < 0.1, "{r2}");
    }

    #[test]
    fn rsi_extremes() {
        let up: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(rsi(&up, 14), Some(100.0));
        let down: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert!(close(rsi(&down, 14).unwrap(), 0.0));
        assert_eq!(rsi(&[1.0; 20], 14), Some(50.0));
    }

    #[test]
    fn macd_of_a_line_is_constant_and_of_flat_is_zero() {
        let flat = [10.0; 60];
        let m = macd(&flat, 12, 26, 9).unwrap();
        assert!(close(m.macd, 0.0) && close(m.signal, 0.0) && close(m.histogram, 0.0));
        // For a straight line the EMA lags by (n-1)/2 steps: macd = slope × (26-12)/2 = 7.
        let line: Vec<f64> = (0..200).map(f64::from).collect();
        let m = macd(&line, 12, 26, 9).unwrap();
        assert!((m.macd - 7.0).abs() < 1e-6, "{m:?}");
        assert!(m.histogram.abs() < 1e-6);
        assert_eq!(macd(&line[..30], 12, 26, 9), None);
    }

    #[test]
    fn bollinger_and_zscore_known_values() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = bollinger(&v, 5, 2.0).unwrap();
        assert!(close(b.middle, 3.0));
        assert!(close(b.upper, 3.0 + 2.0 * 2f64.sqrt()));
        assert!(close(b.lower, 3.0 - 2.0 * 2f64.sqrt()));
        assert!(close(zscore(&v, 5).unwrap(), 2f64.sqrt()));
        assert_eq!(zscore(&[7.0; 5], 5), Some(0.0));
    }

    #[test]
    fn atr_of_constant_ranges_and_gaps() {
        // Every candle spans 2 and closes mid-range: true range 2.
        let high = [11.0; 20];
        let low = [9.0; 20];
        let closes = [10.0; 20];
        assert!(close(atr(&high, &low, &closes, 14).unwrap(), 2.0));
        // A gap up: true range uses the previous close.
        let h = [10.0, 15.0];
        let l = [9.0, 14.0];
        let c = [9.5, 14.5];
        assert!(close(atr(&h, &l, &c, 1).unwrap(), 5.5));
    }

    #[test]
    fn highest_lowest() {
        let v = [3.0, 9.0, 1.0, 4.0];
        assert_eq!(highest(&v, 3), Some(9.0));
        assert_eq!(lowest(&v, 2), Some(1.0));
        assert_eq!(highest(&v, 5), None);
    }
}
