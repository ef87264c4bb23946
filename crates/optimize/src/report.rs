//! A study's report: what was searched, what won, how it did fold by fold and path by path,
//! and how likely it is to be luck. Serialised as JSON for `--json` (snake_case fields in a
//! stable order) and rendered as aligned text for people.
//!
//! Nothing here depends on time or on thread scheduling: the same study gives the same bytes.
//! Numbers print with a fixed precision; an undefined value prints `n/a` (JSON `null`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::dsr::Dsr;
use crate::folds::Scheme;
use crate::metrics::Loss;
use crate::params::{Param, ParamKind, ParamSpec};
use crate::pbo::Pbo;
use crate::sampler::SamplerKind;

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The parameter space searched.
    pub space: Vec<ParamSpec>,
    pub loss: Loss,
    /// Walk-forward folds per path.
    pub folds: usize,
    pub scheme: Scheme,
    /// Market paths every trial ran on.
    pub paths: Vec<String>,
    /// Trials run, trial 0 (the defaults) included.
    pub trials: usize,
    pub seed: u64,
    pub sampler: SamplerKind,
    pub min_trades: u64,
    pub counts: TrialCounts,
    /// The best scored trial (ties: the lowest index).
    pub winner: TrialRow,
    /// Trial 0: the declared defaults.
    pub default: TrialRow,
    /// Per fold, averaged over paths.
    pub fold_table: Vec<FoldRow>,
    /// The walk-forward selection's averages over folds.
    pub walk_forward: WalkForward,
    /// Per path, averaged over folds.
    pub path_table: Vec<PathRow>,
    /// The best scored trials, best first, one per distinct parameter set (its first trial).
    pub top: Vec<TrialRow>,
    pub pbo: Option<Pbo>,
    /// Why `pbo` is missing, if it is.
    pub pbo_note: Option<String>,
    pub dsr: Option<Dsr>,
    pub verdict: Verdict,
    /// Every trial in index order.
    pub trial_list: Vec<TrialRow>,
}

/// How the trials ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialCounts {
    pub scored: usize,
    /// Ran, but made fewer than `min_trades` trades out of sample.
    pub guarded: usize,
    pub failed: usize,
    /// Distinct parameter sets among the trials that ran: `N` for the deflated Sharpe ratio.
    pub distinct_ran: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    Scored,
    Guarded,
    Failed,
}

/// One trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialRow {
    pub index: usize,
    pub status: TrialStatus,
    pub params: Vec<Param>,
    /// Mean out-of-sample score over all folds of all paths (the score, unless guarded).
    pub oos_score: Option<f64>,
    /// Mean in-sample score.
    pub is_score: Option<f64>,
    /// Trades in the out-of-sample windows, all paths.
    pub oos_trades: Option<u64>,
    /// Why the trial failed.
    pub error: Option<String>,
}

/// One walk-forward fold, averaged over paths.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoldRow {
    /// 1-based.
    pub fold: usize,
    pub winner_is: f64,
    pub winner_oos: f64,
    /// The trial with the best in-sample score in this fold.
    pub selected_trial: usize,
    pub selected_is: f64,
    pub selected_oos: f64,
    /// `selected_oos / selected_is` when the in-sample score is positive.
    pub efficiency: Option<f64>,
}

/// What optimising on each fold's in-sample window, then trading the next window, earned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WalkForward {
    pub mean_is: f64,
    pub mean_oos: f64,
    pub efficiency: Option<f64>,
}

/// One market path, averaged over its folds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathRow {
    pub name: String,
    pub winner_is: f64,
    pub winner_oos: f64,
    /// `None` when the defaults failed.
    pub default_oos: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Robust,
    Inconclusive,
    /// The ranking holds out of sample, but the winner earns no more than luck would.
    NoEdge,
    LikelyOverfit,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Robust => "robust",
            VerdictKind::Inconclusive => "inconclusive",
            VerdictKind::NoEdge => "no edge",
            VerdictKind::LikelyOverfit => "likely overfit",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// One line: why.
    pub explanation: String,
}

/// `x` with `places` decimals; never `-0.000`.
fn num(x: f64, places: usize) -> String {
    let s = format!("{x:.places$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

fn opt(x: Option<f64>, places: usize) -> String {
    x.map_or_else(|| "n/a".to_string(), |x| num(x, places))
}

fn params_words(params: &[Param]) -> String {
    let words: Vec<String> = params
        .iter()
        .map(|p| format!("{}={}", p.name, p.value))
        .collect();
    words.join(" ")
}

fn spec_words(spec: &ParamSpec) -> String {
    let range = match &spec.kind {
        ParamKind::Int { min, max } => format!("int {min}..={max}"),
        ParamKind::Float { min, max } => format!("float {min}..={max}"),
        ParamKind::Choice { choices } => format!("choice {}", choices.join("|")),
    };
    format!("{} {range} (default {})", spec.name, spec.default)
}

/// An aligned table: two-space indent, two spaces between columns, numbers right-aligned.
fn table(out: &mut String, headers: &[&str], right: &[bool], rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .chain([headers[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::from(" ");
        for (c, cell) in cells.enumerate() {
            let w = widths.get(c).copied().unwrap_or(0);
            let pad = w.saturating_sub(cell.chars().count());
            text.push(' ');
            if right.get(c).copied().unwrap_or(false) {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
            text.push(' ');
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(out, &mut headers.iter().copied());
    for r in rows {
        line(out, &mut r.iter().map(String::as_str));
    }
}

impl Report {
    /// The report as aligned text.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        self.header(&mut out);
        self.winner_section(&mut out);
        self.folds_section(&mut out);
        self.paths_section(&mut out);
        self.top_section(&mut out);
        self.overfitting_section(&mut out);
        let _ = writeln!(
            out,
            "\nVerdict: {} — {}.",
            self.verdict.kind.as_str().to_uppercase(),
            self.verdict.explanation
        );
        out
    }

    fn header(&self, out: &mut String) {
        let c = &self.counts;
        let _ = writeln!(out, "Strategy optimisation");
        let specs: Vec<String> = self.space.iter().map(spec_words).collect();
        let _ = writeln!(out, "  space    {}", specs.join("\n           "));
        let _ = writeln!(
            out,
            "  loss     {} (higher is better; a trial's score is its mean out-of-sample {})",
            self.loss, self.loss
        );
        let _ = writeln!(out, "  folds    {} {}", self.folds, self.scheme);
        let _ = writeln!(
            out,
            "  paths    {}: {}",
            self.paths.len(),
            self.paths.join(", ")
        );
        let _ = writeln!(
            out,
            "  trials   {} ({} scored, {} guarded by min trades {}, {} failed; {} distinct)",
            self.trials, c.scored, c.guarded, self.min_trades, c.failed, c.distinct_ran
        );
        let _ = writeln!(out, "  sampler  {}, seed {}", self.sampler, self.seed);
    }

    fn winner_section(&self, out: &mut String) {
        let (w, d) = (&self.winner, &self.default);
        let _ = writeln!(out, "\nWinner: trial {}", w.index);
        let mut rows: Vec<Vec<String>> = w
            .params
            .iter()
            .zip(&d.params)
            .map(|(wp, dp)| vec![wp.name.clone(), dp.value.to_string(), wp.value.to_string()])
            .collect();
        let status = |t: &TrialRow| match t.status {
            TrialStatus::Scored => "scored".to_string(),
            TrialStatus::Guarded => "guarded".to_string(),
            TrialStatus::Failed => "failed".to_string(),
        };
        rows.push(vec!["(status)".into(), status(d), status(w)]);
        rows.push(vec![
            "(out-of-sample score)".into(),
            opt(d.oos_score, 4),
            opt(w.oos_score, 4),
        ]);
        rows.push(vec![
            "(in-sample score)".into(),
            opt(d.is_score, 4),
            opt(w.is_score, 4),
        ]);
        rows.push(vec![
            "(out-of-sample trades)".into(),
            d.oos_trades.map_or("n/a".into(), |t| t.to_string()),
            w.oos_trades.map_or("n/a".into(), |t| t.to_string()),
        ]);
        table(
            out,
            &["parameter", "default", "winner"],
            &[false, true, true],
            &rows,
        );
        if let Some(e) = &d.error {
            let _ = writeln!(out, "  the defaults failed: {e}");
        }
    }

    fn folds_section(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\nWalk-forward folds (averaged over paths; \"pick\" = best in-sample trial of the fold)"
        );
        let rows: Vec<Vec<String>> = self
            .fold_table
            .iter()
            .map(|f| {
                vec![
                    f.fold.to_string(),
                    num(f.winner_is, 4),
                    num(f.winner_oos, 4),
                    f.selected_trial.to_string(),
                    num(f.selected_is, 4),
                    num(f.selected_oos, 4),
                    opt(f.efficiency, 2),
                ]
            })
            .collect();
        table(
            out,
            &[
                "fold",
                "winner IS",
                "winner OOS",
                "pick",
                "pick IS",
                "pick OOS",
                "efficiency",
            ],
            &[true; 7],
            &rows,
        );
        let wf = &self.walk_forward;
        let _ = writeln!(
            out,
            "  walk-forward (pick per fold): IS {}  OOS {}  efficiency {}",
            num(wf.mean_is, 4),
            num(wf.mean_oos, 4),
            opt(wf.efficiency, 2)
        );
        let _ = writeln!(
            out,
            "  (the winner was ranked on its OOS windows, so its OOS flatters it; the pick's does not)"
        );
    }

    fn paths_section(&self, out: &mut String) {
        let _ = writeln!(out, "\nPaths (averaged over folds)");
        let rows: Vec<Vec<String>> = self
            .path_table
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    num(p.winner_is, 4),
                    num(p.winner_oos, 4),
                    opt(p.default_oos, 4),
                ]
            })
            .collect();
        table(
            out,
            &["path", "winner IS", "winner OOS", "default OOS"],
            &[false, true, true, true],
            &rows,
        );
    }

    fn top_section(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\nTop {} trials (distinct parameter sets, best out-of-sample score first)",
            self.top.len()
        );
        let rows: Vec<Vec<String>> = self
            .top
            .iter()
            .enumerate()
            .map(|(i, t)| {
                vec![
                    (i + 1).to_string(),
                    t.index.to_string(),
                    opt(t.oos_score, 4),
                    opt(t.is_score, 4),
                    t.oos_trades.map_or("n/a".into(), |n| n.to_string()),
                    params_words(&t.params),
                ]
            })
            .collect();
        table(
            out,
            &["rank", "trial", "OOS", "IS", "OOS trades", "parameters"],
            &[true, true, true, true, true, false],
            &rows,
        );
    }

    fn overfitting_section(&self, out: &mut String) {
        let _ = writeln!(out, "\nOverfitting (per-bar returns, all paths)");
        let mut line = |label: &str, value: String| {
            let _ = writeln!(out, "  {label:<42} {value}");
        };
        match (&self.pbo, &self.pbo_note) {
            (Some(p), _) => {
                line(
                    "probability of backtest overfitting (PBO)",
                    format!(
                        "{}  ({} CSCV splits of {} blocks; {} trials x {} bars)",
                        num(p.pbo, 3),
                        p.combinations,
                        p.splits,
                        p.trials,
                        p.bars
                    ),
                );
                let l = &p.logits;
                line(
                    "logit of the IS best's OOS rank",
                    format!(
                        "10% {}  25% {}  50% {}  75% {}  90% {}",
                        num(l.q10, 2),
                        num(l.q25, 2),
                        num(l.median, 2),
                        num(l.q75, 2),
                        num(l.q90, 2)
                    ),
                );
                line("probability of out-of-sample loss", num(p.prob_oos_loss, 3));
                line(
                    "Sharpe of the IS best, per bar",
                    format!(
                        "IS {}  OOS {}",
                        num(p.mean_is_sharpe, 4),
                        num(p.mean_oos_sharpe, 4)
                    ),
                );
            }
            (None, note) => line(
                "probability of backtest overfitting (PBO)",
                format!("n/a ({})", note.as_deref().unwrap_or("not computed")),
            ),
        }
        match &self.dsr {
            Some(d) => {
                line(
                    "deflated Sharpe ratio (DSR)",
                    format!(
                        "{}  (N = {} distinct trials; Sharpe {} per bar vs {} expected from luck)",
                        num(d.dsr, 3),
                        d.trials,
                        num(d.sharpe, 4),
                        num(d.expected_max_sharpe, 4)
                    ),
                );
                line(
                    "probabilistic Sharpe ratio (PSR)",
                    format!(
                        "{}  ({} bars, skewness {}, kurtosis {})",
                        num(d.psr, 3),
                        d.bars,
                        num(d.skewness, 2),
                        num(d.kurtosis, 2)
                    ),
                );
            }
            None => line(
                "deflated Sharpe ratio (DSR)",
                "n/a (fewer than 3 bars)".into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_never_print_negative_zero() {
        assert_eq!(num(-0.00001, 3), "0.000");
        assert_eq!(num(-0.0, 2), "0.00");
        assert_eq!(num(-0.5, 1), "-0.5");
        assert_eq!(opt(None, 2), "n/a");
    }

    #[test]
    fn tables_align_columns() {
        let mut out = String::new();
        table(
            &mut out,
            &["name", "x"],
            &[false, true],
            &[
                vec!["a".into(), "1.5".into()],
                vec!["long".into(), "-10.25".into()],
            ],
        );
        assert_eq!(out, "  name       x\n  a        1.5\n  long  -10.25\n");
    }
}
