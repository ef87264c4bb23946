//! Studies over synthetic objectives (no WebAssembly): pure luck, a real and simple edge,
//! determinism across thread counts, the trade guard and failing runs.

use std::cell::RefCell;

use super::*;
use crate::params::{ParamKind, ParamValue};
use crate::report::{TrialStatus, VerdictKind};
use crate::rng::{Rng, derive};

const BARS: usize = 400;
const HOURLY: f64 = 8760.0;

fn int_spec(name: &str, min: i64, max: i64, default: i64) -> ParamSpec {
    ParamSpec {
        name: name.into(),
        description: String::new(),
        kind: ParamKind::Int { min, max },
        default: ParamValue::Int(default),
    }
}

fn int_param(params: &[Param], name: &str) -> i64 {
    match params.iter().find(|p| p.name == name).map(|p| &p.value) {
        Some(ParamValue::Int(i)) => *i,
        _ => panic!("no int {name} in {params:?}"),
    }
}

/// An equity curve from per-bar returns, starting at 1,000.
fn curve(returns: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut equity = vec![1000.0];
    for r in returns {
        let last = equity[equity.len() - 1];
        equity.push(last * (1.0 + r));
    }
    equity
}

fn paths(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("seed {i}")).collect()
}

/// Performance is pure luck: the parameter only seeds the noise (of one of several worlds).
struct Luck {
    world: u64,
}

const LUCK: Luck = Luck { world: 0 };

impl Objective for Luck {
    fn paths(&self) -> Vec<String> {
        paths(3)
    }
    fn run(&self, params: &[Param], path: usize) -> Result<PathRun, String> {
        let x = int_param(params, "x") as u64;
        let mut rng = Rng::new(derive(derive(self.world, x), path as u64));
        Ok(PathRun {
            equity: curve((0..BARS).map(|_| 0.01 * rng.normal())),
            trades: (0..BARS).step_by(5).collect(),
            periods_per_year: HOURLY,
        })
    }
}

/// A common noisy market per path; each unit of churn costs a fixed amount every bar, plus a
/// little noise of its own.
struct Churn;

impl Objective for Churn {
    fn paths(&self) -> Vec<String> {
        paths(3)
    }
    fn run(&self, params: &[Param], path: usize) -> Result<PathRun, String> {
        let churn = int_param(params, "churn");
        let mut market = Rng::new(derive(99, path as u64));
        let mut own = Rng::new(derive(churn as u64, 1000 + path as u64));
        Ok(PathRun {
            equity: curve((0..BARS).map(|_| {
                0.0015 + 0.01 * market.normal() + 0.001 * own.normal() - churn as f64 * 0.0004
            })),
            trades: (0..BARS).step_by(10).collect(),
            periods_per_year: HOURLY,
        })
    }
}

fn config(trials: usize) -> StudyConfig {
    StudyConfig {
        trials,
        seed: 1,
        jobs: 1,
        folds: 4,
        ..StudyConfig::default()
    }
}

fn study(space: &[ParamSpec], objective: &dyn Objective, config: &StudyConfig) -> Report {
    match run_study(space, objective, config, &|_| {}) {
        Ok(report) => report,
        Err(e) => panic!("study failed: {e}"),
    }
}

#[test]
fn pure_luck_is_not_called_robust() {
    // PBO of pure noise is ½ on average but spreads widely from one data set to the next
    // (0.2 to 0.76 over twelve worlds of this objective), so three worlds are checked.
    let space = [int_spec("x", 0, 1_000_000, 0)];
    for world in 0..3 {
        let report = study(&space, &Luck { world }, &config(100));
        assert_eq!(report.trials, 100);
        assert_eq!(report.counts.scored, 100);
        assert_ne!(
            report.verdict.kind,
            VerdictKind::Robust,
            "{}",
            report.render_text()
        );
        let pbo = report.pbo.as_ref().expect("pbo");
        assert!(pbo.pbo >= 0.3, "world {world}: {pbo:?}");
        // Picked on its in-sample window, a trial does worse on the next one: the walk-forward
        // selection's out-of-sample score is well below its in-sample score, fold by fold.
        let wf = &report.walk_forward;
        assert!(wf.mean_oos < wf.mean_is / 2.0, "world {world}: {wf:?}");
        for f in &report.fold_table {
            assert!(f.selected_oos < f.selected_is, "world {world}: {f:?}");
        }
        // The winner's out-of-sample score is the best of 100 draws; the DSR is not fooled.
        let dsr = report.dsr.as_ref().expect("dsr");
        assert!(dsr.dsr < 0.95, "world {world}: {dsr:?}");
        assert_eq!(dsr.trials, 100);
    }
}

#[test]
fn a_real_cost_is_found_and_judged_robust() {
    let space = [int_spec("churn", 0, 10, 5)];
    let report = study(&space, &Churn, &config(48));
    let churn = int_param(&report.winner.params, "churn");
    assert!(churn <= 1, "winner churn {churn}\n{}", report.render_text());
    let pbo = report.pbo.as_ref().expect("pbo");
    assert!(pbo.pbo < 0.2, "{pbo:?}");
    // A real edge in a market that rises, and churn only costs: robust.
    assert_eq!(
        report.verdict.kind,
        VerdictKind::Robust,
        "{}",
        report.render_text()
    );
    // Only 11 distinct values exist; repeats are not counted as further trials.
    assert!(report.counts.distinct_ran <= 11, "{:?}", report.counts);
    assert!(
        report
            .path_table
            .iter()
            .all(|p| Some(p.winner_oos) > p.default_oos)
    );
    // TPE learns where the cheap values are: most trials after its start are churn ≤ 2.
    let late_cheap = report.trial_list[16..]
        .iter()
        .filter(|t| int_param(&t.params, "churn") <= 2)
        .count();
    assert!(
        late_cheap * 2 > report.trial_list.len() - 16,
        "{late_cheap}"
    );
}

#[test]
fn reports_are_byte_identical_whatever_the_thread_count() {
    let space = [int_spec("x", 0, 1_000_000, 0), int_spec("y", 0, 10, 3)];
    let run = |jobs| {
        let report = study(&space, &LUCK, &StudyConfig { jobs, ..config(40) });
        let json = serde_json::to_string(&report).expect("json");
        (report.render_text(), json)
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
    // And the seed matters.
    let other = study(
        &space,
        &LUCK,
        &StudyConfig {
            seed: 2,
            ..config(40)
        },
    );
    assert_ne!(one.0, other.render_text());
    // The text has every section.
    for heading in [
        "Winner: trial",
        "Walk-forward folds",
        "Paths",
        "Top 10 trials",
        "probability of backtest overfitting (PBO)",
        "deflated Sharpe ratio (DSR)",
        "probabilistic Sharpe ratio (PSR)",
        "Verdict:",
    ] {
        assert!(one.0.contains(heading), "{heading}\n{}", one.0);
    }
    assert!(
        one.1.starts_with("{\"space\":[{\"name\":\"x\""),
        "{}",
        &one.1[..80]
    );
}

/// More trading costs more, and trades are spread evenly: few trades win unless guarded.
struct Trades;

impl Objective for Trades {
    fn paths(&self) -> Vec<String> {
        paths(2)
    }
    fn run(&self, params: &[Param], path: usize) -> Result<PathRun, String> {
        let n = int_param(params, "n") as usize;
        let mut market = Rng::new(derive(5, path as u64));
        let count = n * 4;
        Ok(PathRun {
            equity: curve((0..BARS).map(|_| 0.0005 + 0.005 * market.normal() - n as f64 * 0.0001)),
            trades: (0..count).map(|i| i * BARS / count.max(1)).collect(),
            periods_per_year: HOURLY,
        })
    }
}

#[test]
fn the_trade_guard_keeps_idle_trials_from_winning() {
    let space = [int_spec("n", 0, 20, 10)];
    let free = study(
        &space,
        &Trades,
        &StudyConfig {
            sampler: SamplerKind::Halton,
            ..config(32)
        },
    );
    assert!(
        int_param(&free.winner.params, "n") < 5,
        "{}",
        free.render_text()
    );
    assert_eq!(free.counts.guarded, 0);
    let guarded = study(
        &space,
        &Trades,
        &StudyConfig {
            sampler: SamplerKind::Halton,
            min_trades: 30,
            ..config(32)
        },
    );
    assert_eq!(
        int_param(&guarded.winner.params, "n"),
        5,
        "{}",
        guarded.render_text()
    );
    assert!(guarded.counts.guarded > 0);
    for t in &guarded.trial_list {
        let few = t.oos_trades.is_some_and(|n| n < 30);
        assert_eq!(t.status == TrialStatus::Guarded, few, "{t:?}");
    }
    assert!(guarded.top.iter().all(|t| t.status == TrialStatus::Scored));
    // Nobody trades enough: the study says so.
    let err = run_study(
        &space,
        &Trades,
        &StudyConfig {
            min_trades: 10_000,
            ..config(8)
        },
        &|_| {},
    )
    .expect_err("all guarded");
    assert!(
        matches!(err, StudyError::AllGuarded { min_trades: 10_000, most } if most > 0),
        "{err}"
    );
}

/// Fails (or panics) on some parameter values.
struct Flaky;

impl Objective for Flaky {
    fn paths(&self) -> Vec<String> {
        paths(2)
    }
    fn run(&self, params: &[Param], path: usize) -> Result<PathRun, String> {
        let x = int_param(params, "x");
        if x % 4 == 1 && path == 1 {
            return Err("guest trapped: out of fuel".into());
        }
        if x % 4 == 2 && path == 0 {
            panic!("boom");
        }
        LUCK.run(params, path)
    }
}

#[test]
fn a_failing_run_fails_its_trial_not_the_study() {
    let space = [int_spec("x", 0, 1_000_000, 0)];
    let seen = RefCell::new(Vec::new());
    let report = run_study(
        &space,
        &Flaky,
        &StudyConfig {
            jobs: 2,
            ..config(24)
        },
        &|p| seen.borrow_mut().push(p),
    )
    .expect("study");
    let failed: Vec<_> = report
        .trial_list
        .iter()
        .filter(|t| t.status == TrialStatus::Failed)
        .collect();
    assert!(!failed.is_empty());
    assert_eq!(report.counts.failed, failed.len());
    for t in &failed {
        let x = int_param(&t.params, "x");
        let error = t.error.as_deref().unwrap_or_default();
        match x % 4 {
            1 => assert_eq!(error, "path `seed 2`: guest trapped: out of fuel"),
            2 => assert_eq!(error, "path `seed 1`: the backtest panicked: boom"),
            _ => panic!("trial {t:?} should not fail"),
        }
        assert_eq!(t.oos_score, None);
        assert_ne!(report.winner.index, t.index);
    }
    // Progress after every trial, done counting up to the total.
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 24);
    assert!(
        seen.iter()
            .enumerate()
            .all(|(i, p)| p.done == i + 1 && p.total == 24)
    );
    assert!(seen.last().is_some_and(|p| p.best.is_some()));
}

struct Broken;

impl Objective for Broken {
    fn paths(&self) -> Vec<String> {
        paths(1)
    }
    fn run(&self, _: &[Param], _: usize) -> Result<PathRun, String> {
        Ok(PathRun {
            equity: vec![1000.0; 30],
            trades: vec![],
            periods_per_year: HOURLY,
        })
    }
}

#[test]
fn studies_that_cannot_run_say_why() {
    let space = [int_spec("x", 0, 9, 0)];
    // Every trial fails: the study fails with the defaults' reason.
    let err = run_study(&space, &Broken, &config(4), &|_| {}).expect_err("too short");
    assert!(
        err.to_string()
            .contains("path `seed 1`: 30 bars is too few for 4 folds"),
        "{err}"
    );
    let err = run_study(&[], &LUCK, &config(4), &|_| {}).expect_err("empty");
    assert_eq!(err, StudyError::NoParameters);
    assert!(err.to_string().contains("declares no parameters"));
    for bad in [
        StudyConfig {
            trials: 0,
            ..config(4)
        },
        StudyConfig {
            folds: 0,
            ..config(4)
        },
        StudyConfig {
            pbo_splits: 7,
            ..config(4)
        },
    ] {
        assert!(matches!(
            run_study(&space, &LUCK, &bad, &|_| {}),
            Err(StudyError::Config(_))
        ));
    }
    let bad_space = [int_spec("x", 5, 1, 3)];
    assert!(matches!(
        run_study(&bad_space, &LUCK, &config(4), &|_| {}),
        Err(StudyError::Declaration(_))
    ));
}

#[test]
fn a_single_trial_reports_the_defaults_without_overfitting_statistics() {
    let space = [int_spec("x", 0, 1_000_000, 0)];
    let report = study(&space, &LUCK, &config(1));
    assert_eq!(report.winner.index, 0);
    assert_eq!(report.winner.params, report.default.params);
    assert!(report.pbo.is_none() && report.pbo_note.is_some());
    assert_eq!(report.verdict.kind, VerdictKind::Inconclusive);
    let text = report.render_text();
    assert!(
        text.contains("probability of backtest overfitting (PBO)  n/a (PBO needs at least 2"),
        "{text}"
    );
}

#[test]
fn path_evaluation_scores_each_window() {
    let run = PathRun {
        equity: curve((0..50).map(|i| if i < 25 { 0.01 } else { -0.01 })),
        trades: vec![3, 12, 30, 45, 60],
        periods_per_year: 1.0,
    };
    let cfg = StudyConfig {
        folds: 4,
        loss: Loss::PnlPercent,
        ..StudyConfig::default()
    };
    // 51 equity values: segments 0..10, 10..20, 20..30, 30..40, 40..51.
    let e = evaluate_path(&run, &cfg).expect("eval");
    assert_eq!(e.returns.len(), 50);
    let oos_trades: Vec<usize> = e.folds.iter().map(|f| f.oos_trades).collect();
    assert_eq!(oos_trades, [1, 0, 1, 1]);
    // Fold 1 judges bars 10..20: ten bars of +1%.
    assert!((e.folds[0].oos_score - (1.01f64.powi(10) - 1.0) * 100.0).abs() < 1e-9);
    // Fold 4 judges bars 40..51: eleven bars of -1%.
    assert!((e.folds[3].oos_score - (0.99f64.powi(11) - 1.0) * 100.0).abs() < 1e-9);
    let bad = PathRun {
        equity: vec![f64::NAN; 60],
        ..run.clone()
    };
    assert_eq!(
        evaluate_path(&bad, &cfg),
        Err("equity at bar 0 is not a finite number".into())
    );
}
