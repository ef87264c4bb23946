//! Walk-forward windows: where each fold learns (in sample) and where it is judged (out of
//! sample, always later in time than what it learnt from).
//!
//! `n` bars are cut into `k + 1` consecutive, nearly equal segments. Fold `i` (0-based, `i < k`)
//! is judged on segment `i + 1`; it learns on segment `i` alone (rolling: the market's recent
//! past) or on segments `0..=i` (anchored: all the past). Every segment but the first is judged
//! exactly once, so the out-of-sample windows tile the series after the first segment.
//!
//! A bar is an index into a path's equity series (bar 0 is the starting capital); the return of
//! bar `b` is `E_b / E_{b-1} - 1`. [`window_equity`] takes the equity a window needs so that the
//! returns it yields are exactly those of the window's bars: adjacent windows share no return.

use std::ops::Range;

use serde::Serialize;

/// Fewest bars a segment may hold: fewer and a window's Sharpe ratio is noise.
pub const MIN_SEGMENT_BARS: usize = 10;

/// How the in-sample window grows from fold to fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// In sample is the one segment just before the out-of-sample one.
    Rolling,
    /// In sample is everything from the first bar up to the out-of-sample window.
    Anchored,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Rolling => "rolling",
            Scheme::Anchored => "anchored",
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rolling" => Ok(Scheme::Rolling),
            "anchored" => Ok(Scheme::Anchored),
            _ => Err(format!("unknown scheme `{s}`: use rolling or anchored")),
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One walk-forward fold: bar ranges, in-sample strictly before out-of-sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    pub in_sample: Range<usize>,
    pub out_of_sample: Range<usize>,
}

/// Why a series cannot be folded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error("walk-forward needs at least one fold")]
    NoFolds,
    #[error(
        "{bars} bars is too few for {folds} folds: {segments} segments of at least \
         {MIN_SEGMENT_BARS} bars need {needed} bars (use fewer folds or a longer history)"
    )]
    TooFewBars {
        bars: usize,
        folds: usize,
        segments: usize,
        needed: usize,
    },
}

/// The `k` walk-forward folds over `n` bars (see the module docs). Segment `j` is bars
/// `j·n/(k+1) .. (j+1)·n/(k+1)`, so segment lengths differ by at most one bar.
pub fn folds(n: usize, k: usize, scheme: Scheme) -> Result<Vec<Fold>, FoldError> {
    if k == 0 {
        return Err(FoldError::NoFolds);
    }
    let segments = k.saturating_add(1);
    let needed = segments.saturating_mul(MIN_SEGMENT_BARS);
    // The shortest segment is floor(n / segments) long.
    if n / segments < MIN_SEGMENT_BARS {
        return Err(FoldError::TooFewBars {
            bars: n,
            folds: k,
            segments,
            needed,
        });
    }
    let edge = |j: usize| -> usize {
        // j·n/(k+1) without overflow for any realistic n.
        (j as u128 * n as u128 / segments as u128) as usize
    };
    Ok((0..k)
        .map(|i| Fold {
            in_sample: match scheme {
                Scheme::Rolling => edge(i)..edge(i + 1),
                Scheme::Anchored => 0..edge(i + 1),
            },
            out_of_sample: edge(i + 1)..edge(i + 2),
        })
        .collect())
}

/// The equity a window's score is computed from: the value just before its first bar (the
/// capital the window starts with) through its last bar, so the returns are exactly the bars'
/// own. A window starting at bar 0 starts at the starting capital. Clamped to the series.
pub fn window_equity<'a>(equity: &'a [f64], window: &Range<usize>) -> &'a [f64] {
    let end = window.end.min(equity.len());
    let start = window.start.saturating_sub(1).min(end);
    &equity[start..end]
}

/// How many of `trades` (bar indices) fall inside `window`.
pub fn trades_in(trades: &[usize], window: &Range<usize>) -> usize {
    trades.iter().filter(|t| window.contains(t)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_and_anchored_windows_are_exact() {
        let rolling = folds(50, 4, Scheme::Rolling).expect("folds");
        let want: Vec<(Range<usize>, Range<usize>)> = vec![
            (0..10, 10..20),
            (10..20, 20..30),
            (20..30, 30..40),
            (30..40, 40..50),
        ];
        let got: Vec<_> = rolling
            .iter()
            .map(|f| (f.in_sample.clone(), f.out_of_sample.clone()))
            .collect();
        assert_eq!(got, want);
        let anchored = folds(50, 4, Scheme::Anchored).expect("folds");
        let got: Vec<_> = anchored
            .iter()
            .map(|f| (f.in_sample.clone(), f.out_of_sample.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0..10, 10..20),
                (0..20, 20..30),
                (0..30, 30..40),
                (0..40, 40..50)
            ]
        );
    }

    #[test]
    fn uneven_lengths_differ_by_at_most_one_bar_and_cover_everything() {
        let f = folds(65, 3, Scheme::Rolling).expect("folds");
        // 65 / 4 = 16.25: edges 0, 16, 32, 48, 65.
        assert_eq!(f[0].in_sample, 0..16);
        assert_eq!(f[0].out_of_sample, 16..32);
        assert_eq!(f[2].out_of_sample, 48..65);
        for w in f.windows(2) {
            assert_eq!(w[0].out_of_sample.end, w[1].out_of_sample.start);
        }
    }

    #[test]
    fn too_few_bars_or_no_folds_are_refused() {
        assert_eq!(folds(100, 0, Scheme::Rolling), Err(FoldError::NoFolds));
        let err = folds(49, 4, Scheme::Anchored).expect_err("too short");
        assert_eq!(
            err,
            FoldError::TooFewBars {
                bars: 49,
                folds: 4,
                segments: 5,
                needed: 50
            }
        );
        assert!(
            err.to_string().contains("49 bars is too few for 4 folds"),
            "{err}"
        );
        assert!(folds(50, 4, Scheme::Anchored).is_ok());
        assert!(folds(usize::MAX, usize::MAX, Scheme::Rolling).is_err());
    }

    #[test]
    fn window_equity_yields_exactly_the_windows_returns() {
        let equity: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i)).collect();
        assert_eq!(window_equity(&equity, &(0..3)), &[100.0, 101.0, 102.0]);
        // Bars 3..6 have returns from E_2→E_3 … E_4→E_5.
        assert_eq!(
            window_equity(&equity, &(3..6)),
            &[102.0, 103.0, 104.0, 105.0]
        );
        assert_eq!(window_equity(&equity, &(8..20)), &[107.0, 108.0, 109.0]);
        assert_eq!(trades_in(&[0, 3, 5, 6, 9], &(3..6)), 2);
    }
}
