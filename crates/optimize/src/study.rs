//! The driver of `crucible strategy optimize`: propose trials, run each over every market path,
//! score each out of sample with walk-forward folds, and hand the results to the analysis
//! ([`crate::analysis`]) that picks the winner and judges it.
//!
//! Determinism: trials are proposed in rounds of [`ROUND_SIZE`] (never dependent on `jobs`), each
//! round from every trial completed before it; a round's runs are spread over `jobs` threads,
//! but results are put back in trial order before anything reads them. The same space,
//! objective and config therefore give the same report to the byte whatever `jobs` is. Only the
//! progress callback sees completion order.
//!
//! This module never does I/O itself: the [`Objective`] (the server's backtests) does.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::analysis;
use crate::folds::{FoldError, Scheme, folds, trades_in, window_equity};
use crate::metrics::Loss;
use crate::params::{DeclarationError, Param, ParamSpec, check_declaration, defaults};
use crate::pbo::{DEFAULT_SPLITS, check_splits};
use crate::report::Report;
use crate::sampler::{Sampler, SamplerKind};

/// Trials proposed together. Fixed, so the sampler sees the same history whatever `jobs` is.
pub const ROUND_SIZE: usize = 8;

/// What a study optimises: a strategy run over market paths. Implemented by the server with
/// real backtests; by tests with synthetic curves.
pub trait Objective: Sync {
    /// Names of the market paths, e.g. `["seed 1", "seed 2", "seed 3", "real BTC/USDT"]`.
    fn paths(&self) -> Vec<String>;
    /// Run the strategy with `params` over path `path`: one equity value per bar after warm-up
    /// (the first value is the starting capital), the bar index of every trade, and bars per
    /// year. An `Err` fails this trial (with the message in the report), not the study.
    fn run(&self, params: &[Param], path: usize) -> Result<PathRun, String>;
}

/// One run of one trial over one path.
#[derive(Debug, Clone, PartialEq)]
pub struct PathRun {
    pub equity: Vec<f64>,
    pub trades: Vec<usize>,
    pub periods_per_year: f64,
}

/// How a study runs.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyConfig {
    /// Trials in all, trial 0 (the defaults) included; at least 1.
    pub trials: usize,
    /// Seeds the sampler; the same seed gives the same trials.
    pub seed: u64,
    /// Threads running backtests (0 is read as 1). Never changes the result.
    pub jobs: usize,
    /// Walk-forward folds per path; at least 1.
    pub folds: usize,
    pub scheme: Scheme,
    pub loss: Loss,
    /// A trial with fewer trades than this in its out-of-sample windows (summed over paths) is
    /// guarded: no score, never the winner.
    pub min_trades: u64,
    pub sampler: SamplerKind,
    /// CSCV blocks for PBO: even, 2..=20 (reduced automatically on short histories).
    pub pbo_splits: usize,
}

impl Default for StudyConfig {
    /// 100 trials, seed 0, one job, 4 rolling folds, Sharpe, no trade minimum, TPE, 16 blocks.
    fn default() -> Self {
        StudyConfig {
            trials: 100,
            seed: 0,
            jobs: 1,
            folds: 4,
            scheme: Scheme::Rolling,
            loss: Loss::Sharpe,
            min_trades: 0,
            sampler: SamplerKind::Tpe,
            pbo_splits: DEFAULT_SPLITS,
        }
    }
}

/// Sent after every finished trial, in completion order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    /// Best score among the finished trials.
    pub best: Option<f64>,
}

/// Why a study could not run or produced nothing to report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StudyError {
    #[error("this strategy declares no parameters: there is nothing to optimise")]
    NoParameters,
    #[error("the strategy's parameter declaration is invalid: {0}")]
    Declaration(#[from] DeclarationError),
    #[error("the objective offers no market paths to test on")]
    NoPaths,
    #[error("invalid study configuration: {0}")]
    Config(String),
    #[error("every trial failed; trial {trial} (the defaults): {message}")]
    AllTrialsFailed { trial: usize, message: String },
    #[error(
        "no trial made at least {min_trades} trades in its out-of-sample windows (the most was \
         {most}); lower the minimum or use fewer, longer folds"
    )]
    AllGuarded { min_trades: u64, most: u64 },
}

/// One fold of one path, scored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FoldEval {
    pub is_score: f64,
    pub oos_score: f64,
    pub oos_trades: usize,
}

/// One path of one trial, evaluated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PathEval {
    pub folds: Vec<FoldEval>,
    /// Per-bar returns over the whole path (bar 1 on), aligned with the bars: a bar after a
    /// non-positive equity returns 0.
    pub returns: Vec<f64>,
}

/// A trial's evaluation: every path succeeded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrialEval {
    pub paths: Vec<PathEval>,
    /// Mean out-of-sample score over all folds of all paths.
    pub oos: f64,
    /// Mean in-sample score.
    pub is: f64,
    pub oos_trades: u64,
    /// `oos` unless the trial is guarded.
    pub score: Option<f64>,
}

/// A finished trial.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrialRecord {
    pub index: usize,
    pub params: Vec<Param>,
    /// The evaluation, or why the trial failed.
    pub outcome: Result<TrialEval, String>,
}

impl TrialRecord {
    pub fn score(&self) -> Option<f64> {
        self.outcome.as_ref().ok().and_then(|e| e.score)
    }
}

/// Run a study: trial 0 with the declared defaults, then `config.trials - 1` sampled trials,
/// each over every path of `objective`; then the analysis and the report. `progress` is called
/// after every trial.
pub fn run_study(
    space: &[ParamSpec],
    objective: &dyn Objective,
    config: &StudyConfig,
    progress: &dyn Fn(Progress),
) -> Result<Report, StudyError> {
    if space.is_empty() {
        return Err(StudyError::NoParameters);
    }
    check_declaration(space)?;
    check_config(config)?;
    let paths = objective.paths();
    if paths.is_empty() {
        return Err(StudyError::NoPaths);
    }
    let total = config.trials;
    let sampler = Sampler::for_budget(config.sampler, config.seed, total);
    let mut records: Vec<TrialRecord> = Vec::with_capacity(total);
    let mut history: Vec<(Vec<Param>, Option<f64>)> = Vec::with_capacity(total);
    let mut tracker = Tracker {
        done: 0,
        total,
        best: None,
        progress,
    };
    while records.len() < total {
        let start = records.len();
        let end = (start + ROUND_SIZE).min(total);
        let mut batch = Vec::with_capacity(end - start);
        if start == 0 {
            batch.push(defaults(space));
        }
        let first = start + batch.len();
        batch.extend(sampler.suggest(space, &history, first, end - first));
        let round = run_round(objective, &paths, config, start, batch, &mut tracker);
        history.extend(round.iter().map(|r| (r.params.clone(), r.score())));
        records.extend(round);
    }
    analysis::analyse(space, &paths, config, &records)
}

fn check_config(config: &StudyConfig) -> Result<(), StudyError> {
    let bad = |m: String| Err(StudyError::Config(m));
    if config.trials == 0 {
        return bad("trials must be at least 1".into());
    }
    if config.folds == 0 {
        return bad(FoldError::NoFolds.to_string());
    }
    check_splits(config.pbo_splits).map_err(|e| StudyError::Config(e.to_string()))
}

/// Progress bookkeeping, on the calling thread only.
struct Tracker<'a> {
    done: usize,
    total: usize,
    best: Option<f64>,
    progress: &'a dyn Fn(Progress),
}

impl Tracker<'_> {
    fn finished(&mut self, score: Option<f64>) {
        self.done += 1;
        if let Some(s) = score {
            self.best = Some(self.best.map_or(s, |b| b.max(s)));
        }
        (self.progress)(Progress {
            done: self.done,
            total: self.total,
            best: self.best,
        });
    }
}

/// Run every (trial, path) of one round over `config.jobs` threads, take results back in order.
fn run_round(
    objective: &dyn Objective,
    paths: &[String],
    config: &StudyConfig,
    first_index: usize,
    batch: Vec<Vec<Param>>,
    tracker: &mut Tracker<'_>,
) -> Vec<TrialRecord> {
    let n_paths = paths.len();
    let items = batch.len() * n_paths;
    let workers = config.jobs.clamp(1, items.max(1));
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<Result<PathEval, String>>> = vec![None; items];
    let mut records: Vec<Option<TrialRecord>> = vec![None; batch.len()];
    let mut pending: Vec<usize> = vec![n_paths; batch.len()];
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, batch) = (&next, &batch);
            scope.spawn(move || {
                loop {
                    let item = next.fetch_add(1, Ordering::Relaxed);
                    if item >= items {
                        break;
                    }
                    let (trial, path) = (item / n_paths, item % n_paths);
                    let result = run_path(objective, &batch[trial], path, config);
                    if tx.send((item, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (item, result) in rx {
            slots[item] = Some(result);
            let trial = item / n_paths;
            pending[trial] -= 1;
            if pending[trial] == 0 {
                let results = slots[trial * n_paths..(trial + 1) * n_paths]
                    .iter_mut()
                    .map(|s| s.take().unwrap_or_else(|| Err("no result".into())));
                let record = finish_trial(
                    first_index + trial,
                    batch[trial].clone(),
                    results.collect(),
                    paths,
                    config,
                );
                tracker.finished(record.score());
                records[trial] = Some(record);
            }
        }
    });
    records
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|| TrialRecord {
                index: first_index + i,
                params: batch[i].clone(),
                outcome: Err("the trial's runs did not finish".into()),
            })
        })
        .collect()
}

/// One backtest, evaluated; a panic in the objective fails the run like an error.
fn run_path(
    objective: &dyn Objective,
    params: &[Param],
    path: usize,
    config: &StudyConfig,
) -> Result<PathEval, String> {
    let run = match catch_unwind(AssertUnwindSafe(|| objective.run(params, path))) {
        Ok(run) => run?,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            return Err(format!("the backtest panicked: {what}"));
        }
    };
    evaluate_path(&run, config)
}

/// Fold a path's curve and score each window.
pub(crate) fn evaluate_path(run: &PathRun, config: &StudyConfig) -> Result<PathEval, String> {
    let eq = &run.equity;
    if let Some(bar) = eq.iter().position(|e| !e.is_finite()) {
        return Err(format!("equity at bar {bar} is not a finite number"));
    }
    let ppy = run.periods_per_year;
    if !ppy.is_finite() || ppy <= 0.0 {
        return Err(format!("bars per year must be positive, got {ppy}"));
    }
    let windows = folds(eq.len(), config.folds, config.scheme).map_err(|e| e.to_string())?;
    let folds = windows
        .iter()
        .map(|f| FoldEval {
            is_score: config.loss.score(window_equity(eq, &f.in_sample), ppy),
            oos_score: config.loss.score(window_equity(eq, &f.out_of_sample), ppy),
            oos_trades: trades_in(&run.trades, &f.out_of_sample),
        })
        .collect();
    let returns = eq
        .windows(2)
        .map(|w| if w[0] > 0.0 { w[1] / w[0] - 1.0 } else { 0.0 })
        .collect();
    Ok(PathEval { folds, returns })
}

/// A trial's record from its paths' results: failed if any path failed (naming it), else scored
/// (or guarded by `min_trades`).
fn finish_trial(
    index: usize,
    params: Vec<Param>,
    results: Vec<Result<PathEval, String>>,
    paths: &[String],
    config: &StudyConfig,
) -> TrialRecord {
    let mut evals = Vec::with_capacity(results.len());
    for (p, result) in results.into_iter().enumerate() {
        match result {
            Ok(e) => evals.push(e),
            Err(message) => {
                let name = paths.get(p).map_or("?", String::as_str);
                return TrialRecord {
                    index,
                    params,
                    outcome: Err(format!("path `{name}`: {message}")),
                };
            }
        }
    }
    let all = || evals.iter().flat_map(|p| &p.folds);
    let n = all().count().max(1) as f64;
    let oos = all().map(|f| f.oos_score).sum::<f64>() / n;
    let is = all().map(|f| f.is_score).sum::<f64>() / n;
    let oos_trades = all().map(|f| f.oos_trades as u64).sum::<u64>();
    TrialRecord {
        index,
        params,
        outcome: Ok(TrialEval {
            score: (oos_trades >= config.min_trades).then_some(oos),
            paths: evals,
            oos,
            is,
            oos_trades,
        }),
    }
}

#[cfg(test)]
mod tests;
