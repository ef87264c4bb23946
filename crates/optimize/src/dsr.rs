//! The probabilistic and the deflated Sharpe ratio (Bailey & López de Prado, "The deflated
//! Sharpe ratio: correcting for selection bias, backtest overfitting and non-normality", Journal
//! of Portfolio Management, 2014).
//!
//! A Sharpe ratio measured over `T` bars is an estimate; its standard error grows with skewed,
//! fat-tailed returns. The probabilistic Sharpe ratio `PSR(SR₀)` is the probability that the
//! true Sharpe ratio exceeds `SR₀` given the estimate, its length and its higher moments:
//!
//! `PSR(SR₀) = Φ((SR̂ − SR₀)·sqrt(T − 1) / sqrt(1 − γ₃·SR̂ + (γ₄ − 1)/4·SR̂²))`
//!
//! (`SR̂` per bar, not annualised; `γ₃` skewness; `γ₄` kurtosis, not excess). The plain PSR uses
//! `SR₀ = 0`. Picking the best of `N` trials inflates `SR̂` even when every trial is worthless:
//! the expected maximum of `N` Sharpe ratios with variance `V` across trials and true value 0 is
//!
//! `SR₀ = sqrt(V)·((1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e)))`, `γ` Euler–Mascheroni,
//!
//! and the deflated Sharpe ratio is `PSR` against that `SR₀`: the probability the winner's edge
//! is more than the luck of having tried `N` times.
//!
//! One departure from the paper, to keep the null hypothesis honest: `V` is the smaller of the
//! variance of the trials' Sharpe ratios and `1/(T − 1)`, the variance of one Sharpe ratio
//! estimate when the true value is 0. Luck cannot spread worthless trials wider than sampling
//! noise does; a wider spread is real differences between trials (a parameter that adds costs
//! every bar makes its trials reliably worse), which the paper's `V` would count as luck, so
//! that any search containing some bad regions would deflate every winner to nothing. When
//! trials are near copies of each other their spread is smaller than `1/(T − 1)` and is used
//! as it is: fewer effective trials, less deflation.
//!
//! Degenerate inputs, documented rather than hidden: fewer than 3 bars gives no result (`None`);
//! a series without variation has `SR̂ = 0`, skewness 0 and kurtosis 3; a single trial or no
//! variance across trials has `SR₀ = 0` (nothing to deflate: DSR = PSR); a non-positive radicand
//! (possible with extreme skewness) falls back to the normal-returns value `1 + SR̂²/2`.

use serde::Serialize;

use crate::metrics::bar_sharpe;
use crate::normal;

/// Euler–Mascheroni constant.
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// The deflated Sharpe ratio of a study's winner, with what went into it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dsr {
    /// `T`: the winner's returns.
    pub bars: usize,
    /// `N`: trials the winner was picked from.
    pub trials: usize,
    /// `SR̂`: the winner's per-bar Sharpe ratio.
    pub sharpe: f64,
    /// `γ₃`.
    pub skewness: f64,
    /// `γ₄` (3 for normal returns).
    pub kurtosis: f64,
    /// Variance of the per-bar Sharpe ratios across the trials.
    pub sharpe_variance: f64,
    /// `1/(T − 1)`: the variance of one Sharpe ratio estimate whose true value is 0.
    pub null_variance: f64,
    /// `SR₀`: the best per-bar Sharpe ratio expected from luck alone among `N` trials.
    pub expected_max_sharpe: f64,
    /// `PSR(0)`: probability the winner's true Sharpe ratio is above 0.
    pub psr: f64,
    /// `PSR(SR₀)`.
    pub dsr: f64,
}

/// `SR₀`, the expected maximum of `n` per-bar Sharpe ratios of variance `variance` whose true
/// value is 0; 0 for `n ≤ 1` or no variance.
pub fn expected_max_sharpe(n: usize, variance: f64) -> f64 {
    if n <= 1 || variance.is_nan() || variance <= 0.0 {
        return 0.0;
    }
    let n = n as f64;
    variance.sqrt()
        * ((1.0 - EULER_GAMMA) * normal::quantile(1.0 - 1.0 / n)
            + EULER_GAMMA * normal::quantile(1.0 - 1.0 / (n * std::f64::consts::E)))
}

/// `PSR(sr0)` for a per-bar Sharpe ratio `sr` measured over `bars` returns with skewness `skew`
/// and kurtosis `kurt` (see the module docs, including the radicand fallback). `bars < 2` gives
/// ½ (no evidence either way).
pub fn probabilistic_sharpe(sr: f64, sr0: f64, bars: usize, skew: f64, kurt: f64) -> f64 {
    if bars < 2 {
        return 0.5;
    }
    let mut radicand = 1.0 - skew * sr + (kurt - 1.0) / 4.0 * sr * sr;
    if radicand.is_nan() || radicand <= 0.0 || radicand.is_infinite() {
        radicand = 1.0 + sr * sr / 2.0;
    }
    normal::cdf((sr - sr0) * ((bars - 1) as f64).sqrt() / radicand.sqrt())
}

/// Skewness and kurtosis (population moments, kurtosis not excess); `(0, 3)` without variation.
pub fn skew_kurtosis(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 3.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
    for x in xs {
        let d = x - mean;
        let d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
    }
    let (m2, m3, m4) = (m2 / n, m3 / n, m4 / n);
    let scale = xs.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if m2.sqrt() <= 1e-12 * scale || m2 <= 0.0 {
        return (0.0, 3.0);
    }
    (m3 / m2.powf(1.5), m4 / (m2 * m2))
}

/// Sample variance (divisor n - 1); 0 with fewer than two values.
fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
}

/// The deflated Sharpe ratio of the winner's per-bar `returns`, picked among trials whose
/// per-bar Sharpe ratios are `trial_sharpes` (the winner's included; `N` is their count, at
/// least 1), with `V` as the module docs say. `None` with fewer than 3 returns.
pub fn deflated_sharpe(returns: &[f64], trial_sharpes: &[f64]) -> Option<Dsr> {
    if returns.len() < 3 {
        return None;
    }
    let sr = bar_sharpe(returns);
    let (skewness, kurtosis) = skew_kurtosis(returns);
    let trials = trial_sharpes.len().max(1);
    let sharpe_variance = variance(trial_sharpes);
    let null_variance = 1.0 / (returns.len() - 1) as f64;
    let sr0 = expected_max_sharpe(trials, sharpe_variance.min(null_variance));
    Some(Dsr {
        bars: returns.len(),
        trials,
        sharpe: sr,
        skewness,
        kurtosis,
        sharpe_variance,
        null_variance,
        expected_max_sharpe: sr0,
        psr: probabilistic_sharpe(sr, 0.0, returns.len(), skewness, kurtosis),
        dsr: probabilistic_sharpe(sr, sr0, returns.len(), skewness, kurtosis),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn the_papers_worked_example() {
        // Bailey & López de Prado 2014, §4: annualised SR 2.5 over 1,250 daily bars, skewness
        // -3, kurtosis 10, 100 trials whose annualised Sharpe ratios have variance 0.5.
        let sr = 2.5 / 250f64.sqrt();
        let sr0 = expected_max_sharpe(100, 0.5 / 250.0);
        assert!((sr0 - 0.1132).abs() < 1e-4, "{sr0}");
        let dsr = probabilistic_sharpe(sr, sr0, 1250, -3.0, 10.0);
        assert!((dsr - 0.9004).abs() < 1e-3, "{dsr}");
    }

    #[test]
    fn expected_maximum_tracks_the_best_of_n_normals() {
        // E[max of 10 standard normals] = 1.5388; the approximation is within a few percent.
        let e = expected_max_sharpe(10, 1.0);
        assert!(
            (e - 1.5746).abs() < 1e-3 && (e - 1.5388).abs() < 0.05,
            "{e}"
        );
        assert_eq!(expected_max_sharpe(1, 1.0), 0.0);
        assert_eq!(expected_max_sharpe(50, 0.0), 0.0);
        assert!(expected_max_sharpe(1000, 1.0) > expected_max_sharpe(100, 1.0));
    }

    #[test]
    fn more_trials_deflate_the_same_winner_more() {
        let mut rng = Rng::new(5);
        let winner: Vec<f64> = (0..500).map(|_| 0.001 + 0.01 * rng.normal()).collect();
        let others =
            |n: usize, rng: &mut Rng| -> Vec<f64> { (0..n).map(|_| 0.05 * rng.normal()).collect() };
        let d10 = deflated_sharpe(&winner, &others(10, &mut rng)).expect("dsr");
        let d100 = deflated_sharpe(&winner, &others(100, &mut rng)).expect("dsr");
        let d1000 = deflated_sharpe(&winner, &others(1000, &mut rng)).expect("dsr");
        assert!(
            d10.dsr > d100.dsr && d100.dsr > d1000.dsr,
            "{d10:?} {d100:?} {d1000:?}"
        );
        // The plain PSR does not care how many trials there were.
        assert_eq!(d10.psr, d1000.psr);
        assert!(d1000.dsr < d1000.psr);
    }

    #[test]
    fn real_differences_between_trials_are_not_counted_as_luck() {
        let mut rng = Rng::new(11);
        let winner: Vec<f64> = (0..1000).map(|_| 0.0015 + 0.01 * rng.normal()).collect();
        // Ten trials whose Sharpe ratios differ by a lot more than sampling noise (1/√999 ≈
        // 0.032): the null variance caps V.
        let spread: Vec<f64> = (0..10).map(|i| 0.15 - 0.04 * f64::from(i)).collect();
        let d = deflated_sharpe(&winner, &spread).expect("dsr");
        assert!(d.sharpe_variance > d.null_variance);
        let want = expected_max_sharpe(10, 1.0 / 999.0);
        assert!((d.expected_max_sharpe - want).abs() < 1e-15);
        assert!(d.dsr > 0.95, "{d:?}");
        // Near copies: their own small spread is used.
        let copies: Vec<f64> = (0..10).map(|i| 0.15 + 0.001 * f64::from(i)).collect();
        let c = deflated_sharpe(&winner, &copies).expect("dsr");
        assert!(c.sharpe_variance < c.null_variance);
        assert!((c.expected_max_sharpe - expected_max_sharpe(10, c.sharpe_variance)).abs() < 1e-15);
    }

    #[test]
    fn a_strong_series_is_almost_surely_positive() {
        let mut rng = Rng::new(9);
        let r: Vec<f64> = (0..1000).map(|_| 0.002 + 0.01 * rng.normal()).collect();
        let d = deflated_sharpe(&r, &[0.2]).expect("dsr");
        assert!(d.psr > 0.99, "{d:?}");
        // One trial: nothing to deflate.
        assert_eq!(d.expected_max_sharpe, 0.0);
        assert_eq!(d.dsr, d.psr);
        assert!(
            (d.kurtosis - 3.0).abs() < 0.5 && d.skewness.abs() < 0.3,
            "{d:?}"
        );
    }

    #[test]
    fn degenerate_inputs_have_documented_results() {
        assert_eq!(deflated_sharpe(&[0.1, 0.2], &[0.1, 0.2]), None);
        let flat = deflated_sharpe(&[0.0; 10], &[0.0, 0.0]).expect("flat");
        assert_eq!((flat.sharpe, flat.skewness, flat.kurtosis), (0.0, 0.0, 3.0));
        assert_eq!(flat.psr, 0.5);
        // Extreme positive skew with a large Sharpe ratio makes the radicand negative.
        let p = probabilistic_sharpe(1.0, 0.0, 100, 5.0, 3.0);
        assert!((p - normal::cdf(99f64.sqrt() / 1.5f64.sqrt())).abs() < 1e-15);
    }
}
