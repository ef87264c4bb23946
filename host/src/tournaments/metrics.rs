//! Ranking metrics over a wallet's flow-adjusted snapshot series. Pure functions; the formulas
//! (and what happens with too few snapshots or a zero denominator) are in docs/tournaments.md.
//!
//! A period is the time between two consecutive snapshots. Its return takes out the external
//! flows seen in it, weighted at mid-period (Dietz): `r = (V1 − V0 − F) / (V0 + F/2)`, so a
//! deposit is never a gain and a withdrawal never a loss. Chaining the periods gives the
//! time-weighted return and the equity curve the drawdown is read from.

use super::rules::EvaluationMetric;

/// A denominator (deviation, drawdown) below this is taken as this: a wallet that never moved
/// against itself gets a large, finite score instead of a division by zero.
pub(crate) const FLOOR: f64 = 1e-6;

/// One snapshot: the wallet's value and the net external flows since its baseline, in USD.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    pub value: f64,
    pub net_flows: f64,
}

/// Flow-adjusted return of each period between consecutive snapshots (a period whose
/// denominator is not positive, e.g. from an empty wallet, returns 0).
pub(crate) fn period_returns(series: &[Point]) -> Vec<f64> {
    series
        .windows(2)
        .map(|pair| {
            let (before, after) = (pair[0], pair[1]);
            let flow = after.net_flows - before.net_flows;
            let base = before.value + flow / 2.0;
            if base > 0.0 {
                (after.value - before.value - flow) / base
            } else {
                0.0
            }
        })
        .collect()
}

/// Largest peak-to-trough fall of the chained returns, as a fraction (0 when it never fell).
pub(crate) fn max_drawdown(returns: &[f64]) -> f64 {
    let (mut equity, mut peak, mut worst) = (1.0_f64, 1.0_f64, 0.0_f64);
    for r in returns {
        equity *= 1.0 + r;
        peak = peak.max(equity);
        if peak > 0.0 {
            worst = worst.max((peak - equity) / peak);
        }
    }
    worst
}

fn mean(returns: &[f64]) -> f64 {
    returns.iter().sum::<f64>() / returns.len() as f64
}

/// Mean period return over its sample standard deviation; needs two periods.
pub(crate) fn sharpe(returns: &[f64]) -> Option<f64> {
    if returns.len() < 2 {
        return None;
    }
    let m = mean(returns);
    let variance =
        returns.iter().map(|r| (r - m).powi(2)).sum::<f64>() / (returns.len() - 1) as f64;
    Some(m / variance.sqrt().max(FLOOR))
}

/// Mean period return over the downside deviation (root mean square of the negative returns,
/// over all periods); needs two periods.
pub(crate) fn sortino(returns: &[f64]) -> Option<f64> {
    if returns.len() < 2 {
        return None;
    }
    let downside = returns.iter().map(|r| r.min(0.0).powi(2)).sum::<f64>() / returns.len() as f64;
    Some(mean(returns) / downside.sqrt().max(FLOOR))
}

/// Time-weighted return over the maximum drawdown (both fractions); needs one period.
pub(crate) fn calmar(returns: &[f64]) -> Option<f64> {
    if returns.is_empty() {
        return None;
    }
    let total = returns.iter().fold(1.0, |acc, r| acc * (1.0 + r)) - 1.0;
    Some(total / max_drawdown(returns).max(FLOOR))
}

/// Modified Dietz return in percent: `(end − start − F) / (start + Σ wᵢ·Fᵢ) × 100`, where
/// `wᵢ` is the share of the period left after flow `i`. `flow_time` is `Σ Fᵢ·(tᵢ − t₀)` and
/// `elapsed` is `t − t₀` (same unit), so `Σ wᵢ·Fᵢ = F − flow_time / elapsed`. A non-positive
/// denominator (nothing was ever at stake) gives 0.
pub(crate) fn modified_dietz(
    start: f64,
    end: f64,
    net_flows: f64,
    flow_time: f64,
    elapsed: f64,
) -> f64 {
    let weighted = if elapsed > 0.0 {
        net_flows - flow_time / elapsed
    } else {
        0.0
    };
    let base = start + weighted;
    if base > 0.0 {
        (end - start - net_flows) / base * 100.0
    } else {
        0.0
    }
}

/// What ranks a wallet under `metric`: for `pnl_percent` the given flow-adjusted percentage,
/// otherwise the ratio from its series (`None` with too few snapshots).
pub(crate) fn score(
    metric: EvaluationMetric,
    series: &[Point],
    pnl_percent: Option<f64>,
) -> Option<f64> {
    let returns = period_returns(series);
    match metric {
        EvaluationMetric::PnlPercent => pnl_percent,
        EvaluationMetric::Sharpe => sharpe(&returns),
        EvaluationMetric::Sortino => sortino(&returns),
        EvaluationMetric::Calmar => calmar(&returns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[f64]) -> Vec<Point> {
        values
            .iter()
            .map(|&value| Point {
                value,
                net_flows: 0.0,
            })
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_deposit_is_not_a_return() {
        let with_deposit = [
            Point {
                value: 100.0,
                net_flows: 0.0,
            },
            Point {
                value: 160.0,
                net_flows: 50.0,
            },
        ];
        let r = period_returns(&with_deposit);
        assert!(close(r[0], 10.0 / 125.0), "{r:?}");
        // Deposit 50 halfway through a 10-hour window, end at 160: (160-100-50)/(100+25).
        assert!(close(modified_dietz(100.0, 160.0, 50.0, 250.0, 10.0), 8.0));
        assert!(close(modified_dietz(100.0, 110.0, 0.0, 0.0, 0.0), 10.0));
        assert_eq!(modified_dietz(0.0, 0.0, 0.0, 0.0, 1.0), 0.0);
    }

    #[test]
    fn drawdown_is_the_worst_fall_from_a_peak() {
        let r = period_returns(&series(&[100.0, 120.0, 90.0, 130.0, 117.0]));
        assert!(close(max_drawdown(&r), 0.25));
        assert_eq!(
            max_drawdown(&period_returns(&series(&[1.0, 2.0, 3.0]))),
            0.0
        );
    }

    #[test]
    fn each_metric_ranks_crafted_series_as_its_formula_says() {
        // Steady: +1% each period. Volatile: more in total, large swings. Crash: one big loss.
        let steady = series(&[100.0, 101.0, 102.01, 103.0301]);
        let volatile = series(&[100.0, 120.0, 96.0, 120.0]);
        let crash = series(&[100.0, 150.0, 75.0, 110.0]);
        let score_of = |m, s: &[Point]| score(m, s, None).expect("enough periods");
        // Sharpe: steady's deviation is ~0, so it is far ahead; volatile before crash.
        let sharpe: Vec<f64> = [&steady, &volatile, &crash]
            .iter()
            .map(|s| score_of(EvaluationMetric::Sharpe, s))
            .collect();
        assert!(sharpe[0] > sharpe[1] && sharpe[1] > sharpe[2], "{sharpe:?}");
        // Sortino punishes only losses: volatile (one -20%) beats crash (one -50%).
        let sortino: Vec<f64> = [&steady, &volatile, &crash]
            .iter()
            .map(|s| score_of(EvaluationMetric::Sortino, s))
            .collect();
        assert!(
            sortino[0] > sortino[1] && sortino[1] > sortino[2],
            "{sortino:?}"
        );
        // Calmar: volatile 20% / 20% drawdown = 1; crash 10% / 50% = 0.2.
        assert!(close(score_of(EvaluationMetric::Calmar, &volatile), 1.0));
        assert!(close(score_of(EvaluationMetric::Calmar, &crash), 0.2));
        assert!(score_of(EvaluationMetric::Calmar, &steady) > 1_000.0);
        // pnl_percent is what it is given.
        assert_eq!(
            score(EvaluationMetric::PnlPercent, &crash, Some(10.0)),
            Some(10.0)
        );
    }

    #[test]
    fn too_few_snapshots_give_no_ratio_and_flat_gives_zero() {
        let one_period = series(&[100.0, 110.0]);
        assert_eq!(score(EvaluationMetric::Sharpe, &one_period, None), None);
        assert_eq!(score(EvaluationMetric::Sortino, &one_period, None), None);
        assert!(score(EvaluationMetric::Calmar, &one_period, None).is_some());
        assert_eq!(
            score(EvaluationMetric::Calmar, &series(&[100.0]), None),
            None
        );
        let flat = series(&[100.0, 100.0, 100.0]);
        assert_eq!(score(EvaluationMetric::Sharpe, &flat, None), Some(0.0));
        assert_eq!(score(EvaluationMetric::Sortino, &flat, None), Some(0.0));
        assert_eq!(score(EvaluationMetric::Calmar, &flat, None), Some(0.0));
    }
}
