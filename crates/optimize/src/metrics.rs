//! What a trial optimises: a loss over a window of an equity curve, higher is better.
//!
//! The statistics match Crucible's backtest summary (`crates/sandbox/src/report.rs`: per-bar
//! simple returns `r_i = E_i / E_{i-1} - 1`, a step from a non-positive value skipped; Sharpe
//! `mean / sample sd · sqrt(P)`; Sortino `mean / downside deviation · sqrt(P)` with the downside
//! deviation over all returns; max drawdown `max (peak - E) / peak`; Calmar `CAGR / max
//! drawdown`) and the paper ledger's live `Metrics` (`crates/paper/src/ledger.rs`, which scores
//! an undefined Sharpe as 0). Where the report prints `n/a` (too few returns, no risk, no
//! drawdown) a score must still be a number: it is 0, the neutral score, as the ledger does.
//! The one difference is time: the report measures CAGR between timestamps; here a window of
//! `m` returns lasts `m / P` years.
//!
//! Every score is finite: an annualised growth that overflows is clamped to ±[`SCORE_LIMIT`].

use serde::Serialize;

/// Largest magnitude a score may take (a CAGR over a few bars can overflow `f64`).
pub const SCORE_LIMIT: f64 = 1e9;

/// The objective of a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Loss {
    /// Annualised Sharpe ratio of per-bar returns (risk-free rate 0).
    Sharpe,
    /// Annualised Sortino ratio (target 0).
    Sortino,
    /// Annualised growth over the window's maximum drawdown.
    Calmar,
    /// Total return over the window, percent.
    PnlPercent,
    /// The window's maximum drawdown, percent, negated (a smaller fall scores higher).
    MaxDrawdown,
}

/// Every loss, in the order error messages list them.
pub const LOSSES: [Loss; 5] = [
    Loss::Sharpe,
    Loss::Sortino,
    Loss::Calmar,
    Loss::PnlPercent,
    Loss::MaxDrawdown,
];

impl Loss {
    pub fn as_str(self) -> &'static str {
        match self {
            Loss::Sharpe => "sharpe",
            Loss::Sortino => "sortino",
            Loss::Calmar => "calmar",
            Loss::PnlPercent => "pnl_percent",
            Loss::MaxDrawdown => "max_drawdown",
        }
    }

    /// The loss of the curve `equity` (one value per bar, the first the window's starting
    /// capital), higher is better; `periods_per_year` annualises Sharpe, Sortino and CAGR.
    pub fn score(self, equity: &[f64], periods_per_year: f64) -> f64 {
        let s = match self {
            Loss::Sharpe => sharpe(&returns(equity), periods_per_year),
            Loss::Sortino => sortino(&returns(equity), periods_per_year),
            Loss::Calmar => calmar(equity, periods_per_year),
            Loss::PnlPercent => pnl_percent(equity),
            Loss::MaxDrawdown => -max_drawdown(equity) * 100.0,
        };
        finite(s)
    }
}

impl std::str::FromStr for Loss {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        LOSSES.into_iter().find(|l| l.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = LOSSES.iter().map(|l| l.as_str()).collect();
            format!("unknown loss `{s}`: use one of {}", names.join(", "))
        })
    }
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// NaN to 0, infinities and huge values to ±[`SCORE_LIMIT`].
fn finite(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(-SCORE_LIMIT, SCORE_LIMIT)
    }
}

/// Per-bar simple returns `E_i / E_{i-1} - 1`; a step from a non-positive value is skipped.
pub fn returns(equity: &[f64]) -> Vec<f64> {
    equity
        .windows(2)
        .filter(|w| w[0] > 0.0)
        .map(|w| w[1] / w[0] - 1.0)
        .collect()
}

/// Mean and sample standard deviation (divisor n - 1); `None` with fewer than two values.
pub fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var.sqrt()))
}

/// Per-bar (not annualised) Sharpe ratio `mean / sample sd`; 0 with fewer than two returns or
/// no variation.
pub fn bar_sharpe(returns: &[f64]) -> f64 {
    // A deviation at or below 1e-12 of the largest return is rounding noise of a constant
    // series, not risk: dividing by it would give an absurd ratio.
    let scale = returns.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    match mean_sd(returns) {
        Some((mean, sd)) if sd > 1e-12 * scale => mean / sd,
        _ => 0.0,
    }
}

/// Annualised Sharpe ratio: `mean / sd · sqrt(P)`; 0 where the report says `n/a`.
pub fn sharpe(returns: &[f64], periods_per_year: f64) -> f64 {
    bar_sharpe(returns) * periods_per_year.max(0.0).sqrt()
}

/// Annualised Sortino ratio: `mean / DD · sqrt(P)`, `DD = sqrt(Σ min(r, 0)² / n)`; 0 with fewer
/// than two returns or no losing bar.
pub fn sortino(returns: &[f64], periods_per_year: f64) -> f64 {
    if returns.len() < 2 {
        return 0.0;
    }
    let n = returns.len() as f64;
    let mean = returns.iter().sum::<f64>() / n;
    let dd = (returns.iter().map(|r| r.min(0.0).powi(2)).sum::<f64>() / n).sqrt();
    if dd > 0.0 {
        mean / dd * periods_per_year.max(0.0).sqrt()
    } else {
        0.0
    }
}

/// Largest peak-to-trough fall as a fraction of the peak, 0..=1; 0 for an empty curve.
pub fn max_drawdown(equity: &[f64]) -> f64 {
    let mut peak = f64::NEG_INFINITY;
    let mut worst: f64 = 0.0;
    for &e in equity {
        peak = peak.max(e);
        if peak > 0.0 {
            worst = worst.max((peak - e) / peak);
        }
    }
    worst
}

/// Compound annual growth, fraction: `(E_n / E_0)^(P / m) - 1` over `m` returns; -1 when the
/// end is not positive; `None` with fewer than two values or a non-positive start.
pub fn cagr(equity: &[f64], periods_per_year: f64) -> Option<f64> {
    let (&first, &last) = (equity.first()?, equity.last()?);
    let years = (equity.len() - 1) as f64 / periods_per_year;
    if equity.len() < 2 || first <= 0.0 || !years.is_finite() || years <= 0.0 {
        return None;
    }
    if last <= 0.0 {
        return Some(-1.0);
    }
    Some((last / first).powf(1.0 / years) - 1.0)
}

/// `CAGR / max drawdown`; 0 when either is undefined or there is no drawdown.
pub fn calmar(equity: &[f64], periods_per_year: f64) -> f64 {
    let dd = max_drawdown(equity);
    match cagr(equity, periods_per_year) {
        Some(c) if dd > 0.0 => c / dd,
        _ => 0.0,
    }
}

/// Total return, percent: `(E_n / E_0 - 1) · 100`; 0 for an empty curve or a non-positive start.
pub fn pnl_percent(equity: &[f64]) -> f64 {
    match (equity.first(), equity.last()) {
        (Some(&first), Some(&last)) if first > 0.0 => (last / first - 1.0) * 100.0,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * (1.0 + b.abs())
    }

    #[test]
    fn sharpe_and_sortino_by_hand() {
        // Returns +10%, -10%, +10%: mean 1/30, sample sd sqrt(((2/30)²·2 + (4/30)²)/2).
        let eq = [100.0, 110.0, 99.0, 108.9];
        let r = returns(&eq);
        assert!(close(r[0], 0.1) && close(r[1], -0.1) && close(r[2], 0.1));
        let mean: f64 = 0.1 / 3.0;
        let sd = (((0.1 - mean).powi(2) * 2.0 + (-0.1 - mean).powi(2)) / 2.0).sqrt();
        assert!(close(
            Loss::Sharpe.score(&eq, 365.0),
            mean / sd * 365f64.sqrt()
        ));
        // Downside deviation sqrt(0.01 / 3).
        let dd = (0.01f64 / 3.0).sqrt();
        assert!(close(
            Loss::Sortino.score(&eq, 365.0),
            mean / dd * 365f64.sqrt()
        ));
        assert!(close(Loss::Sharpe.score(&eq, 1.0), 0.288_675_134_594_812_9));
    }

    #[test]
    fn drawdown_pnl_and_calmar_by_hand() {
        let eq = [100.0, 120.0, 90.0, 110.0, 80.0, 130.0];
        // Peak 120, trough 80: a third.
        assert!(close(max_drawdown(&eq), 1.0 / 3.0));
        assert!(close(Loss::MaxDrawdown.score(&eq, 1.0), -100.0 / 3.0));
        assert!(close(Loss::PnlPercent.score(&eq, 1.0), 30.0));
        // 5 returns at 5 a year: one year, CAGR 30%, Calmar 0.3 / (1/3).
        assert!(close(Loss::Calmar.score(&eq, 5.0), 0.9));
        // 10 a year: half a year, CAGR 1.3² - 1.
        assert!(close(Loss::Calmar.score(&eq, 10.0), (1.69 - 1.0) * 3.0));
    }

    #[test]
    fn flat_short_and_empty_curves_score_zero() {
        for loss in LOSSES {
            assert_eq!(loss.score(&[], 365.0), 0.0, "{loss}");
            assert_eq!(loss.score(&[100.0], 365.0), 0.0, "{loss}");
            assert_eq!(loss.score(&[100.0, 100.0, 100.0], 365.0), 0.0, "{loss}");
        }
        // Rising without a losing bar: Sortino and Calmar undefined (0), Sharpe defined.
        let up = [100.0, 101.0, 103.0];
        assert_eq!(Loss::Sortino.score(&up, 365.0), 0.0);
        assert_eq!(Loss::Calmar.score(&up, 365.0), 0.0);
        assert!(Loss::Sharpe.score(&up, 365.0) > 0.0);
        // Everything lost: CAGR -1, finite.
        assert!(close(Loss::Calmar.score(&[100.0, 50.0, 0.0], 365.0), -1.0));
        // Overflowing growth is clamped, never infinite.
        let s = Loss::Calmar.score(&[100.0, 90.0, 1e6], 1e6);
        assert_eq!(s, SCORE_LIMIT);
    }

    #[test]
    fn loss_names_parse_and_unknown_names_list_the_valid_ones() {
        for loss in LOSSES {
            assert_eq!(loss.as_str().parse::<Loss>(), Ok(loss));
        }
        assert_eq!("pnl_percent".parse::<Loss>(), Ok(Loss::PnlPercent));
        let err = "Sharpe".parse::<Loss>().expect_err("case matters");
        assert_eq!(
            err,
            "unknown loss `Sharpe`: use one of sharpe, sortino, calmar, pnl_percent, max_drawdown"
        );
        assert!("profit".parse::<Loss>().is_err());
    }
}
