//! From finished trials to a judgement: the winner, the per-fold and per-path tables, a true
//! walk-forward selection, PBO, the deflated Sharpe ratio and the verdict.
//!
//! A caution the report repeats: trials are ranked by their mean out-of-sample score, so the
//! winner's "out-of-sample" score is itself the best of many and flatters it. Three things
//! correct for that: the walk-forward selection (each fold's trial picked on its in-sample
//! window alone, then judged on the next window), PBO (how often an in-sample pick disappoints
//! out of sample) and the DSR (the winner's Sharpe ratio against the best expected from luck
//! among that many trials).

use crate::dsr::{Dsr, deflated_sharpe};
use crate::metrics::bar_sharpe;
use crate::params::{Param, ParamSpec};
use crate::pbo::{Pbo, pbo};
use crate::report::{
    FoldRow, PathRow, Report, TrialCounts, TrialRow, TrialStatus, Verdict, VerdictKind, WalkForward,
};
use crate::study::{StudyConfig, StudyError, TrialEval, TrialRecord};

/// PBO at or above this: the in-sample best disappoints out of sample at least as often as not.
pub const OVERFIT_PBO: f64 = 0.5;
/// DSR below this: the winner is more likely luck than edge, given how many trials were run.
pub const OVERFIT_DSR: f64 = 0.5;
/// PBO below this (and the two conditions after) for "robust".
pub const ROBUST_PBO: f64 = 0.2;
/// DSR at or above this for "robust": 95% confidence the edge beats the luck of the search.
pub const ROBUST_DSR: f64 = 0.95;
/// Rows in the top-trials table.
pub const TOP_TRIALS: usize = 10;

pub(crate) fn analyse(
    space: &[ParamSpec],
    paths: &[String],
    config: &StudyConfig,
    records: &[TrialRecord],
) -> Result<Report, StudyError> {
    let ran: Vec<(&TrialRecord, &TrialEval)> = records
        .iter()
        .filter_map(|r| r.outcome.as_ref().ok().map(|e| (r, e)))
        .collect();
    if ran.is_empty() {
        let first = records.first();
        return Err(StudyError::AllTrialsFailed {
            trial: first.map_or(0, |r| r.index),
            message: first
                .and_then(|r| r.outcome.as_ref().err().cloned())
                .unwrap_or_default(),
        });
    }
    let scored: Vec<(&TrialRecord, &TrialEval, f64)> = ran
        .iter()
        .filter_map(|&(r, e)| e.score.map(|s| (r, e, s)))
        .collect();
    // Best score; the first (lowest index) among equals.
    let Some(&(winner, winner_eval, _)) = scored.iter().fold(
        None,
        |best: Option<&(&TrialRecord, &TrialEval, f64)>, c| match best {
            Some(b) if b.2 >= c.2 => Some(b),
            _ => Some(c),
        },
    ) else {
        return Err(StudyError::AllGuarded {
            min_trades: config.min_trades,
            most: ran.iter().map(|(_, e)| e.oos_trades).max().unwrap_or(0),
        });
    };
    let default = &records[0];

    let fold_table = fold_table(config.folds, winner_eval, &scored);
    let walk_forward = walk_forward(&fold_table);
    let path_table = paths
        .iter()
        .enumerate()
        .map(|(p, name)| PathRow {
            name: name.clone(),
            winner_is: path_mean(winner_eval, p, |f| f.is_score).unwrap_or(0.0),
            winner_oos: path_mean(winner_eval, p, |f| f.oos_score).unwrap_or(0.0),
            default_oos: default
                .outcome
                .as_ref()
                .ok()
                .and_then(|e| path_mean(e, p, |f| f.oos_score)),
        })
        .collect();

    let distinct_ran = distinct(&ran);
    let distinct_scored = distinct(&scored.iter().map(|&(r, e, _)| (r, e)).collect::<Vec<_>>());
    let (pbo_result, pbo_note) = match pbo_matrix(&distinct_scored, paths.len()) {
        rows if rows.len() < 2 => (
            None,
            Some(format!(
                "PBO needs at least 2 distinct scored trials; this study has {}",
                rows.len()
            )),
        ),
        rows => match pbo(&rows, config.pbo_splits) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        },
    };
    let sharpes: Vec<f64> = distinct_ran
        .iter()
        .map(|(_, e)| bar_sharpe(&concatenated(e)))
        .collect();
    let dsr = deflated_sharpe(&concatenated(winner_eval), &sharpes);

    // The best distinct parameter sets (a repeat would only fill the table with copies).
    let mut top: Vec<(&TrialRecord, f64)> = distinct_scored
        .iter()
        .filter_map(|&(r, e)| e.score.map(|s| (r, s)))
        .collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.index.cmp(&b.0.index)));
    let counts = TrialCounts {
        scored: scored.len(),
        guarded: ran.len() - scored.len(),
        failed: records.len() - ran.len(),
        distinct_ran: distinct_ran.len(),
    };
    let beats_default = match default.score() {
        _ if winner.index == default.index => false,
        Some(d) => winner_eval.oos > d,
        None => true,
    };
    let verdict = verdict(
        pbo_result.as_ref(),
        dsr.as_ref(),
        beats_default,
        winner.index == default.index,
    );
    Ok(Report {
        space: space.to_vec(),
        loss: config.loss,
        folds: config.folds,
        scheme: config.scheme,
        paths: paths.to_vec(),
        trials: records.len(),
        seed: config.seed,
        sampler: config.sampler,
        min_trades: config.min_trades,
        counts,
        winner: row(winner),
        default: row(default),
        fold_table,
        walk_forward,
        path_table,
        top: top.iter().take(TOP_TRIALS).map(|t| row(t.0)).collect(),
        pbo: pbo_result,
        pbo_note,
        dsr,
        verdict,
        trial_list: records.iter().map(row).collect(),
    })
}

fn row(r: &TrialRecord) -> TrialRow {
    let (status, eval, error) = match &r.outcome {
        Ok(e) if e.score.is_some() => (TrialStatus::Scored, Some(e), None),
        Ok(e) => (TrialStatus::Guarded, Some(e), None),
        Err(m) => (TrialStatus::Failed, None, Some(m.clone())),
    };
    TrialRow {
        index: r.index,
        status,
        params: r.params.clone(),
        oos_score: eval.map(|e| e.oos),
        is_score: eval.map(|e| e.is),
        oos_trades: eval.map(|e| e.oos_trades),
        error,
    }
}

/// Mean over paths of one fold's statistic.
fn fold_mean(e: &TrialEval, fold: usize, stat: impl Fn(&crate::study::FoldEval) -> f64) -> f64 {
    let xs: Vec<f64> = e
        .paths
        .iter()
        .filter_map(|p| p.folds.get(fold).map(&stat))
        .collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// Mean over one path's folds.
fn path_mean(
    e: &TrialEval,
    path: usize,
    stat: impl Fn(&crate::study::FoldEval) -> f64,
) -> Option<f64> {
    let p = e.paths.get(path)?;
    Some(p.folds.iter().map(stat).sum::<f64>() / p.folds.len().max(1) as f64)
}

/// Per fold: the winner's scores, and the trial a walk-forward optimiser would have picked on
/// that fold's in-sample window (best in-sample score among the scored trials, lowest index on
/// ties) with its score on the out-of-sample window that follows.
fn fold_table(
    folds: usize,
    winner: &TrialEval,
    scored: &[(&TrialRecord, &TrialEval, f64)],
) -> Vec<FoldRow> {
    (0..folds)
        .map(|i| {
            let mut pick: Option<(usize, f64, f64)> = None;
            for &(r, e, _) in scored {
                let is = fold_mean(e, i, |f| f.is_score);
                if pick.is_none_or(|(_, best, _)| is > best) {
                    pick = Some((r.index, is, fold_mean(e, i, |f| f.oos_score)));
                }
            }
            let (selected_trial, selected_is, selected_oos) = pick.unwrap_or((0, 0.0, 0.0));
            FoldRow {
                fold: i + 1,
                winner_is: fold_mean(winner, i, |f| f.is_score),
                winner_oos: fold_mean(winner, i, |f| f.oos_score),
                selected_trial,
                selected_is,
                selected_oos,
                efficiency: efficiency(selected_is, selected_oos),
            }
        })
        .collect()
}

/// Walk-forward efficiency `OOS / IS`, meaningful only when the in-sample score is positive.
fn efficiency(is: f64, oos: f64) -> Option<f64> {
    (is > 0.0 && is.is_finite() && oos.is_finite()).then(|| oos / is)
}

fn walk_forward(rows: &[FoldRow]) -> WalkForward {
    let n = rows.len().max(1) as f64;
    let mean_is = rows.iter().map(|r| r.selected_is).sum::<f64>() / n;
    let mean_oos = rows.iter().map(|r| r.selected_oos).sum::<f64>() / n;
    WalkForward {
        mean_is,
        mean_oos,
        efficiency: efficiency(mean_is, mean_oos),
    }
}

/// The first trial of every distinct parameter set: a repeated configuration is not another
/// trial (the backtests are deterministic, so it would only repeat its returns).
fn distinct<'a>(
    trials: &[(&'a TrialRecord, &'a TrialEval)],
) -> Vec<(&'a TrialRecord, &'a TrialEval)> {
    let mut seen: Vec<&[Param]> = Vec::new();
    let mut out = Vec::new();
    for &(r, e) in trials {
        if !seen.contains(&r.params.as_slice()) {
            seen.push(&r.params);
            out.push((r, e));
        }
    }
    out
}

/// A trial's per-bar returns over all paths, one after another.
fn concatenated(e: &TrialEval) -> Vec<f64> {
    e.paths
        .iter()
        .flat_map(|p| p.returns.iter().copied())
        .collect()
}

/// PBO's matrix: one row per trial, all paths concatenated. A strategy's warm-up may depend on
/// its parameters, so series on one path can differ in length; they end on the same bar, so
/// each path keeps its last `L` returns, `L` the shortest among the trials.
fn pbo_matrix(trials: &[(&TrialRecord, &TrialEval)], n_paths: usize) -> Vec<Vec<f64>> {
    let lengths: Vec<usize> = (0..n_paths)
        .map(|p| {
            trials
                .iter()
                .map(|(_, e)| e.paths.get(p).map_or(0, |x| x.returns.len()))
                .min()
                .unwrap_or(0)
        })
        .collect();
    trials
        .iter()
        .map(|(_, e)| {
            e.paths
                .iter()
                .zip(&lengths)
                .flat_map(|(p, &len)| p.returns[p.returns.len() - len..].iter().copied())
                .collect()
        })
        .collect()
}

/// The verdict and its one-line reason. Thresholds: "likely overfit" when PBO ≥
/// [`OVERFIT_PBO`] or DSR < [`OVERFIT_DSR`] (the latter only when at least two distinct trials
/// ran: with one, nothing was selected), except that a low DSR with PBO < [`ROBUST_PBO`] is "no
/// edge" (the ranking is real, the winner's earnings are not); "robust" when PBO < [`ROBUST_PBO`], DSR ≥
/// [`ROBUST_DSR`] and the winner beats the defaults out of sample (or the defaults have no
/// score); "inconclusive" otherwise, including when PBO or DSR could not be computed.
pub(crate) fn verdict(
    pbo: Option<&Pbo>,
    dsr: Option<&Dsr>,
    beats_default: bool,
    default_won: bool,
) -> Verdict {
    let say = |kind, explanation: String| Verdict { kind, explanation };
    if let Some(p) = pbo.filter(|p| p.pbo >= OVERFIT_PBO) {
        return say(
            VerdictKind::LikelyOverfit,
            format!(
                "in {:.0}% of the CSCV splits the in-sample best ranked at or below the median \
                 out of sample (PBO {:.3} ≥ {OVERFIT_PBO})",
                p.pbo * 100.0,
                p.pbo
            ),
        );
    }
    // With one trial nothing was selected: a low DSR (= PSR) then means no edge, not overfitting.
    if let Some(d) = dsr.filter(|d| d.trials >= 2 && d.dsr < OVERFIT_DSR) {
        // A ranking that holds out of sample is no fluke: the parameter matters, but even its best
        // value earns nothing luck would not.
        if let Some(p) = pbo.filter(|p| p.pbo < ROBUST_PBO) {
            return say(
                VerdictKind::NoEdge,
                format!(
                    "the ranking of the trials holds out of sample (PBO {:.3} < {ROBUST_PBO}),                      but the winner's Sharpe ratio is no better than the best of {} trials would                      be by luck alone (DSR {:.3} < {OVERFIT_DSR}): the parameters matter, the                      strategy does not earn",
                    p.pbo, d.trials, d.dsr
                ),
            );
        }
        return say(
            VerdictKind::LikelyOverfit,
            format!(
                "the winner's Sharpe ratio is no better than the best of {} trials would be by \
                 luck alone (DSR {:.3} < {OVERFIT_DSR})",
                d.trials, d.dsr
            ),
        );
    }
    let (Some(p), Some(d)) = (pbo, dsr) else {
        return say(
            VerdictKind::Inconclusive,
            "too little data to measure overfitting (PBO or DSR unavailable)".into(),
        );
    };
    if p.pbo < ROBUST_PBO && d.dsr >= ROBUST_DSR && beats_default {
        return say(
            VerdictKind::Robust,
            format!(
                "the in-sample best held up out of sample (PBO {:.3} < {ROBUST_PBO}), the edge \
                 survives deflation for {} trials (DSR {:.3} ≥ {ROBUST_DSR}) and it beats the \
                 defaults out of sample",
                p.pbo, d.trials, d.dsr
            ),
        );
    }
    let why = if default_won {
        "the defaults are already the best trial found".to_string()
    } else if !beats_default {
        "the winner does not beat the defaults out of sample".to_string()
    } else if p.pbo >= ROBUST_PBO {
        format!("PBO {:.3} is between {ROBUST_PBO} and {OVERFIT_PBO}", p.pbo)
    } else {
        format!("DSR {:.3} is between {OVERFIT_DSR} and {ROBUST_DSR}", d.dsr)
    };
    say(VerdictKind::Inconclusive, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pbo::LogitSummary;

    fn pbo_of(value: f64) -> Pbo {
        let logits = LogitSummary {
            min: 0.0,
            q10: 0.0,
            q25: 0.0,
            median: 0.0,
            q75: 0.0,
            q90: 0.0,
            max: 0.0,
            mean: 0.0,
        };
        Pbo {
            trials: 8,
            bars: 1_000,
            splits: 16,
            combinations: 12_870,
            pbo: value,
            prob_oos_loss: 0.5,
            logits,
            mean_is_sharpe: 0.0,
            mean_oos_sharpe: 0.0,
        }
    }

    fn dsr_of(value: f64) -> Dsr {
        Dsr {
            bars: 1_000,
            trials: 8,
            sharpe: 0.01,
            skewness: 0.0,
            kurtosis: 3.0,
            sharpe_variance: 0.001,
            null_variance: 0.001,
            expected_max_sharpe: 0.03,
            psr: 0.6,
            dsr: value,
        }
    }

    #[test]
    fn each_verdict_has_its_conditions() {
        let kind = |pbo: f64, dsr: f64, beats: bool| {
            verdict(Some(&pbo_of(pbo)), Some(&dsr_of(dsr)), beats, false).kind
        };
        assert_eq!(kind(0.6, 0.99, true), VerdictKind::LikelyOverfit);
        assert_eq!(kind(0.3, 0.1, true), VerdictKind::LikelyOverfit);
        // A stable ranking whose best earns nothing beyond luck: no edge, not overfitting.
        assert_eq!(kind(0.05, 0.1, true), VerdictKind::NoEdge);
        assert_eq!(kind(0.05, 0.97, true), VerdictKind::Robust);
        assert_eq!(kind(0.05, 0.97, false), VerdictKind::Inconclusive);
        assert_eq!(kind(0.3, 0.97, true), VerdictKind::Inconclusive);
        assert_eq!(
            verdict(None, None, true, false).kind,
            VerdictKind::Inconclusive
        );
    }
}
