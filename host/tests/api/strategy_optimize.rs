//! `crucible strategy optimize`, run as the binary on real backtests in the sandbox: a parameter
//! that only memorises its market path is caught (high probability of backtest overfitting, a
//! walk-forward that earns nothing out of sample), one with a real effect is found and judged
//! robust, the same seed gives the same report to the byte whatever the number of jobs, and a
//! strategy without parameters or a bad option is refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A test guest written where the binary can read it.
fn guest_file(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(
        &path,
        crucible::sandbox::test_guest(name).expect("test guest"),
    )
    .expect("write the guest");
    path
}

/// Short paths keep the test quick: two 30-day seeds and the real hourly candles.
const SMALL: &[&str] = &[
    "--interval",
    "1h",
    "--days",
    "30",
    "--market-seeds",
    "2",
    "--folds",
    "3",
    "--min-trades",
    "0",
];

fn optimize(data_dir: &Path, strategy: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crucible"))
        .env_remove("CRUCIBLE_DATA_DIR")
        .args(["strategy", "optimize"])
        .arg(strategy)
        .args(SMALL)
        .args(extra)
        .arg("--data-dir")
        .arg(data_dir)
        .output()
        .expect("run crucible")
}

fn report(data_dir: &Path, strategy: &Path, extra: &[&str]) -> String {
    let output = optimize(data_dir, strategy, extra);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

fn json_report(data_dir: &Path, strategy: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&report(data_dir, strategy, &args)).expect("JSON report")
}

#[test]
fn a_parameter_that_only_memorises_its_path_is_called_overfit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let overfit = guest_file(dir.path(), "overfit");
    let report = json_report(dir.path(), &overfit, &["--trials", "40", "--seed", "7"]);
    let pbo = report["pbo"]["pbo"].as_f64().expect("pbo");
    assert!(
        pbo >= 0.3,
        "luck should rank no better than chance: PBO {pbo}"
    );
    assert_eq!(
        report["verdict"]["kind"], "likely_overfit",
        "{}",
        report["verdict"]
    );
    // Choosing on each fold's in-sample window and trading the next earns nothing like it.
    let walk = &report["walk_forward"];
    let (is, oos) = (
        walk["mean_is"].as_f64().expect("is"),
        walk["mean_oos"].as_f64().expect("oos"),
    );
    assert!(
        oos < is,
        "out of sample {oos} should fall short of in sample {is}"
    );
    // The deflated Sharpe ratio does not believe the winner.
    let dsr = report["dsr"]["dsr"].as_f64().expect("dsr");
    assert!(dsr < 0.95, "DSR {dsr}");
}

#[test]
fn a_parameter_with_a_real_effect_is_found_and_judged_robust() {
    let dir = tempfile::tempdir().expect("tempdir");
    let robust = guest_file(dir.path(), "robust");
    let report = json_report(dir.path(), &robust, &["--trials", "16", "--seed", "7"]);
    assert_eq!(report["winner"]["params"][0]["name"], "churn");
    assert_eq!(
        report["winner"]["params"][0]["value"], 0,
        "no churn is best in every window: {}",
        report["winner"]
    );
    assert_eq!(report["winner_params"]["churn"], 0);
    let pbo = report["pbo"]["pbo"].as_f64().expect("pbo");
    assert!(
        pbo < 0.2,
        "a lasting effect keeps its rank out of sample: PBO {pbo}"
    );
    // Trial 0 is the declared default (churn 3), which the winner beats on every path.
    assert_eq!(report["default"]["params"][0]["value"], 3);
    for path in report["path_table"].as_array().expect("paths") {
        let winner = path["winner_oos"].as_f64().expect("winner");
        let default = path["default_oos"].as_f64().expect("default");
        assert!(winner > default, "{path}");
    }
    assert_eq!(
        report["paths"].as_array().expect("paths").len(),
        3,
        "2 seeds + real"
    );
    // Holding half the market earns what the market does: the ranking is real, whether the
    // winner's earnings beat luck depends on the market; it is never called overfit.
    let verdict = report["verdict"]["kind"].as_str().expect("verdict");
    assert!(
        ["robust", "no_edge"].contains(&verdict),
        "{}",
        report["verdict"]
    );
}

#[test]
fn the_same_seed_gives_the_same_report_to_the_byte_whatever_the_jobs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let robust = guest_file(dir.path(), "robust");
    let args =
        |jobs: &'static str, seed: &'static str| ["--trials", "12", "--jobs", jobs, "--seed", seed];
    let one = report(dir.path(), &robust, &args("1", "3"));
    let two = report(dir.path(), &robust, &args("2", "3"));
    assert_eq!(one, two);
    for needle in [
        "walk-forward",
        "out-of-sample",
        "probability of backtest overfitting",
        "deflated Sharpe",
        "real BTC/USDT",
        "\"params\": {\"churn\":0}",
    ] {
        assert!(one.contains(needle), "missing {needle:?} in:\n{one}");
    }
    let other_seed = report(dir.path(), &robust, &args("2", "4"));
    assert_ne!(one, other_seed);
    let json = |jobs| json_report(dir.path(), &robust, &args(jobs, "3"));
    assert_eq!(json("1"), json("2"));
}

#[test]
fn a_strategy_without_parameters_or_a_bad_option_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = guest_file(dir.path(), "v0.1.0");
    let refused = optimize(dir.path(), &old, &["--trials", "4"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("declares no parameters"), "{stderr}");

    let robust = guest_file(dir.path(), "robust");
    for (bad, words) in [
        (&["--loss", "profit"][..], "sharpe"),
        (&["--folds", "0"][..], "fold"),
        (&["--trials", "0"][..], "trial"),
        (&["--class", "wizard"][..], "--class"),
    ] {
        let refused = optimize(dir.path(), &robust, bad);
        assert!(!refused.status.success(), "{bad:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(words), "{bad:?}: {stderr}");
    }
}
