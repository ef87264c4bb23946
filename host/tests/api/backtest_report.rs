//! `crucible strategy backtest`'s report, run as the binary: the same seed gives the same bytes,
//! `--json` carries every statistic, `--breakdown` adds the per-period table, and a std (WASI)
//! guest backtests through the same deterministic sandbox.

use std::process::Command;

fn backtest(data_dir: &std::path::Path, strategy: &str, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_crucible"))
        .env_remove("CRUCIBLE_DATA_DIR")
        .args([
            "strategy", "backtest", strategy, "--days", "20", "--seed", "4",
        ])
        .args(extra)
        .arg("--data-dir")
        .arg(data_dir)
        .output()
        .expect("run crucible");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn the_same_seed_gives_a_byte_identical_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The first run compiles the component, the second loads it from the cache: same bytes.
    let first = backtest(dir.path(), "fighter", &["--breakdown", "day"]);
    let second = backtest(dir.path(), "fighter", &["--breakdown", "day"]);
    assert_eq!(first, second);
    for needle in [
        "CAGR",
        "Sharpe",
        "Sortino",
        "Calmar",
        "max drawdown",
        "drawdown peak → trough",
        "profit factor",
        "expectancy / sell",
        "win rate",
        "best day",
        "worst day",
        "longest losing streak",
        "buy & hold",
        "fuel / tick",
        "failed ticks",
        "the server's sandbox",
        "paper fill model",
        "by day:",
    ] {
        assert!(first.contains(needle), "missing {needle:?} in:\n{first}");
    }
    let json = backtest(dir.path(), "fighter", &["--json"]);
    assert_eq!(json, backtest(dir.path(), "fighter", &["--json"]));
}

#[test]
fn json_has_every_statistic_and_the_breakdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = backtest(dir.path(), "gambler", &["--json", "--breakdown", "week"]);
    let report: serde_json::Value = serde_json::from_str(&text).expect("--json is JSON");
    let s = &report["summary"];
    for member in [
        "startEquity",
        "finalEquity",
        "totalReturnPercent",
        "cagrPercent",
        "sharpe",
        "sortino",
        "calmar",
        "maxDrawdown",
        "trades",
        "refusedOrders",
        "bestDay",
        "worstDay",
        "benchmark",
        "byReason",
        "ticks",
        "breakdown",
    ] {
        assert!(s.get(member).is_some(), "summary.{member} missing: {s}");
    }
    assert_eq!(s["startEquity"], 10_000.0);
    assert_eq!(s["ticks"]["ticks"], 20 * 24);
    assert_eq!(s["ticks"]["failed"], 0);
    assert!(s["ticks"]["fuelPerTick"].as_u64().expect("fuel") > 0);
    assert_eq!(s["ticks"]["fuelLimit"], 20_000_000);
    for member in [
        "winRate",
        "profitFactor",
        "expectancy",
        "longestLosingStreak",
        "grossProfit",
        "grossLoss",
    ] {
        assert!(s["trades"].get(member).is_some(), "trades.{member}");
    }
    let dd = &s["maxDrawdown"];
    assert!(dd["fraction"].as_f64().expect("fraction") > 0.0);
    assert!(dd["start"].as_i64().expect("start") < dd["end"].as_i64().expect("end"));
    assert!(s["benchmark"]["totalReturnPercent"].is_f64());
    // Gambler trades: the by-reason table adds up to the fills.
    let fills: u64 = s["byReason"]
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["buys"].as_u64().expect("buys") + r["sells"].as_u64().expect("sells"))
        .sum();
    assert_eq!(fills, s["trades"]["fills"].as_u64().expect("fills"));
    assert_eq!(
        report["trades"].as_array().expect("trades").len() as u64,
        fills
    );
    for trade in report["trades"].as_array().expect("trades") {
        crate::helpers::trades::assert_json_adds_up("the backtest report", trade, "base");
    }
    // 20 days of 1h ticks span 3 or 4 ISO weeks; the weekly returns chain to the final equity.
    let weeks = s["breakdown"].as_array().expect("breakdown");
    assert!((3..=4).contains(&weeks.len()), "{weeks:?}");
    assert_eq!(weeks[0]["startEquity"], s["startEquity"]);
    assert_eq!(weeks[weeks.len() - 1]["endEquity"], s["finalEquity"]);
    assert!(
        report["engine"]["fillModel"]
            .as_str()
            .expect("fill model")
            .contains("paper ledger")
    );
    assert_eq!(report["engine"]["feeBps"], 10);
}

#[test]
fn a_std_guest_backtests_deterministically_through_wasi() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = dir.path().join("std_guest.wasm");
    std::fs::write(
        &wasm,
        crucible::sandbox::test_guest("hostile-std").expect("std guest"),
    )
    .expect("write");
    let path = wasm.to_str().expect("utf-8 path");
    let text = backtest(dir.path(), path, &["--json"]);
    assert_eq!(text, backtest(dir.path(), path, &["--json"]));
    let report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(report["summary"]["ticks"]["failed"], 0, "{text}");
    assert_eq!(report["summary"]["byReason"][0]["reason"], "well behaved");
}
