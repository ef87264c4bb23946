//! The probability of backtest overfitting, by combinatorially symmetric cross-validation
//! (CSCV; Bailey, Borwein, López de Prado & Zhu, "The probability of backtest overfitting",
//! Journal of Computational Finance, 2015).
//!
//! Given the per-bar returns of every trial over the same bars, CSCV asks: if we had picked the
//! trial with the best Sharpe ratio on half the history, how would it have ranked on the other
//! half? The history is cut into `S` contiguous blocks; every choice of `S/2` blocks is one
//! in-sample half (its complement the out-of-sample half), so each block plays both roles
//! equally often. For each split, the in-sample winner `n*` gets its relative out-of-sample rank
//! `ω = rank / (N + 1)` (rank 1 = worst … N = best) and its logit `λ = ln(ω / (1 - ω))`.
//! PBO is the fraction of splits with `λ ≤ 0`: how often the in-sample best is at or below the
//! out-of-sample median. Pure noise gives PBO near ½; a real edge gives PBO near 0.
//!
//! Cost: per-block sums and sums of squares per trial are computed once, so each of the
//! `C(S, S/2)` splits (12,870 for S = 16) costs `O(N·S)`.

use serde::Serialize;

/// The paper's usual number of blocks.
pub const DEFAULT_SPLITS: usize = 16;
/// Most blocks allowed: C(20, 10) = 184,756 splits is already a lot of work.
pub const MAX_SPLITS: usize = 20;
/// Fewest bars per block.
pub const MIN_BLOCK_BARS: usize = 2;

/// What CSCV found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pbo {
    /// Trials compared (rows).
    pub trials: usize,
    /// Bars per trial (columns).
    pub bars: usize,
    /// Blocks the bars were cut into (after clamping to at least [`MIN_BLOCK_BARS`] per block).
    pub splits: usize,
    /// In-sample/out-of-sample splits evaluated: C(splits, splits/2).
    pub combinations: usize,
    /// Fraction of splits whose in-sample best ranked at or below the out-of-sample median.
    pub pbo: f64,
    /// Fraction of splits whose in-sample best lost money out of sample (Sharpe < 0).
    pub prob_oos_loss: f64,
    /// The logits λ over all splits.
    pub logits: LogitSummary,
    /// Mean per-bar (not annualised) in-sample Sharpe of the in-sample best.
    pub mean_is_sharpe: f64,
    /// Mean per-bar out-of-sample Sharpe of the same trial: the gap is the performance decay.
    pub mean_oos_sharpe: f64,
}

/// Quantiles (linear interpolation between order statistics) and mean of the logits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogitSummary {
    pub min: f64,
    pub q10: f64,
    pub q25: f64,
    pub median: f64,
    pub q75: f64,
    pub q90: f64,
    pub max: f64,
    pub mean: f64,
}

/// Why CSCV cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PboError {
    #[error("PBO needs at least 2 trials to compare, got {0}")]
    TooFewTrials(usize),
    #[error("trial {row} has {len} bars where trial 0 has {expected}")]
    RaggedRows {
        row: usize,
        len: usize,
        expected: usize,
    },
    #[error("trial {0} has a non-finite return")]
    NonFinite(usize),
    #[error("the number of blocks must be even and from 2 to {MAX_SPLITS}, got {0}")]
    BadSplits(usize),
    #[error("{0} bars is too few for PBO: it needs at least {min} (2 blocks of {MIN_BLOCK_BARS})", min = 2 * MIN_BLOCK_BARS)]
    TooFewBars(usize),
}

/// Run CSCV over `returns` (one row of per-bar returns per trial, all rows as long) with
/// `splits` blocks (even, 2..=[`MAX_SPLITS`]), reduced to the largest even number that leaves
/// every block at least [`MIN_BLOCK_BARS`] bars. Ties for the in-sample best go to the lowest
/// trial index; trials tied out of sample share their mid-rank.
pub fn pbo(returns: &[Vec<f64>], splits: usize) -> Result<Pbo, PboError> {
    let n = returns.len();
    if n < 2 {
        return Err(PboError::TooFewTrials(n));
    }
    check_splits(splits)?;
    let t = returns[0].len();
    for (row, r) in returns.iter().enumerate() {
        if r.len() != t {
            return Err(PboError::RaggedRows {
                row,
                len: r.len(),
                expected: t,
            });
        }
        if r.iter().any(|x| !x.is_finite()) {
            return Err(PboError::NonFinite(row));
        }
    }
    let s = splits.min(t / MIN_BLOCK_BARS) & !1;
    if s < 2 {
        return Err(PboError::TooFewBars(t));
    }
    let blocks = BlockStats::new(returns, s);
    let half = s / 2;
    let mut first = vec![0.0; n];
    let mut second = vec![0.0; n];
    let mut tally = Tally::default();
    // A split and its complement see the same two halves with the roles swapped: enumerate
    // the halves once (every mask of `half` blocks without the last block, by Gosper's hack)
    // and judge both splits from the same Sharpe ratios.
    let mut mask: u32 = (1u32 << half) - 1;
    let limit: u32 = 1u32 << (s - 1);
    let mut chosen = Vec::with_capacity(half);
    while mask < limit {
        chosen.clear();
        chosen.extend((0..s).filter(|b| mask & (1 << b) != 0));
        let count: f64 = chosen.iter().map(|&b| blocks.count[b]).sum();
        for trial in 0..n {
            (first[trial], second[trial]) = blocks.sharpes(trial, &chosen, count);
        }
        tally.judge(&first, &second);
        tally.judge(&second, &first);
        let c = mask & mask.wrapping_neg();
        let r = mask + c;
        mask = (((r ^ mask) >> 2) / c) | r;
    }
    let Tally {
        mut logits,
        at_or_below,
        losses,
        sum_is,
        sum_oos,
    } = tally;
    let combos = logits.len();
    let m = combos as f64;
    Ok(Pbo {
        trials: n,
        bars: t,
        splits: s,
        combinations: combos,
        pbo: at_or_below as f64 / m,
        prob_oos_loss: losses as f64 / m,
        logits: LogitSummary::of(&mut logits),
        mean_is_sharpe: sum_is / m,
        mean_oos_sharpe: sum_oos / m,
    })
}

/// Running counts over the splits judged so far.
#[derive(Default)]
struct Tally {
    logits: Vec<f64>,
    at_or_below: usize,
    losses: usize,
    sum_is: f64,
    sum_oos: f64,
}

impl Tally {
    /// One split: the in-sample best (lowest index on ties), its out-of-sample mid-rank among
    /// all trials, and the logit of its relative rank.
    fn judge(&mut self, is_sharpe: &[f64], oos_sharpe: &[f64]) {
        let best = argmax_first(is_sharpe);
        let target = oos_sharpe[best];
        let (mut below, mut tied) = (0usize, 0usize);
        for &x in oos_sharpe {
            if x < target {
                below += 1;
            } else if x == target {
                tied += 1;
            }
        }
        let rank = below as f64 + (tied as f64 + 1.0) / 2.0;
        let omega = rank / (oos_sharpe.len() as f64 + 1.0);
        let logit = (omega / (1.0 - omega)).ln();
        if logit <= 0.0 {
            self.at_or_below += 1;
        }
        if target < 0.0 {
            self.losses += 1;
        }
        self.sum_is += is_sharpe[best];
        self.sum_oos += target;
        self.logits.push(logit);
    }
}

/// Whether `splits` is a valid number of blocks: even, 2..=[`MAX_SPLITS`].
pub fn check_splits(splits: usize) -> Result<(), PboError> {
    if splits < 2 || !splits.is_multiple_of(2) || splits > MAX_SPLITS {
        return Err(PboError::BadSplits(splits));
    }
    Ok(())
}

fn argmax_first(xs: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        if x > xs[best] {
            best = i;
        }
    }
    best
}

impl LogitSummary {
    fn of(xs: &mut [f64]) -> LogitSummary {
        xs.sort_by(f64::total_cmp);
        let q = |p: f64| quantile_sorted(xs, p);
        LogitSummary {
            min: q(0.0),
            q10: q(0.1),
            q25: q(0.25),
            median: q(0.5),
            q75: q(0.75),
            q90: q(0.9),
            max: q(1.0),
            mean: if xs.is_empty() {
                0.0
            } else {
                xs.iter().sum::<f64>() / xs.len() as f64
            },
        }
    }
}

/// The `p`-quantile of sorted values, interpolating linearly (Hyndman & Fan type 7); 0 if empty.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        len => {
            let h = (len - 1) as f64 * p.clamp(0.0, 1.0);
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(len - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// Per trial and block: bar count, and the sum and sum of squares of the returns centred on the
/// trial's overall mean (centring keeps `Σx² - (Σx)²/n` from cancelling catastrophically).
struct BlockStats {
    splits: usize,
    count: Vec<f64>,
    total_count: f64,
    /// `centre[trial]`: the trial's mean return.
    centre: Vec<f64>,
    /// `sd_floor[trial]`: a standard deviation at or below this is rounding noise (a constant
    /// series), read as no variation at all.
    sd_floor: Vec<f64>,
    /// `sum[trial * splits + block]`.
    sum: Vec<f64>,
    sq: Vec<f64>,
    total_sum: Vec<f64>,
    total_sq: Vec<f64>,
}

impl BlockStats {
    fn new(returns: &[Vec<f64>], splits: usize) -> BlockStats {
        let t = returns.first().map_or(0, Vec::len);
        let edges: Vec<usize> = (0..=splits).map(|j| j * t / splits).collect();
        let count: Vec<f64> = edges.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mut stats = BlockStats {
            splits,
            count,
            total_count: t as f64,
            centre: Vec::with_capacity(returns.len()),
            sd_floor: Vec::with_capacity(returns.len()),
            sum: Vec::with_capacity(returns.len() * splits),
            sq: Vec::with_capacity(returns.len() * splits),
            total_sum: Vec::with_capacity(returns.len()),
            total_sq: Vec::with_capacity(returns.len()),
        };
        for row in returns {
            let centre = row.iter().sum::<f64>() / t.max(1) as f64;
            let scale = row.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            stats.centre.push(centre);
            stats.sd_floor.push(1e-12 * scale);
            let (mut ts, mut tq) = (0.0, 0.0);
            for w in edges.windows(2) {
                let (mut s, mut q) = (0.0, 0.0);
                for x in &row[w[0]..w[1]] {
                    let d = x - centre;
                    s += d;
                    q += d * d;
                }
                stats.sum.push(s);
                stats.sq.push(q);
                ts += s;
                tq += q;
            }
            stats.total_sum.push(ts);
            stats.total_sq.push(tq);
        }
        stats
    }

    /// Per-bar Sharpe of `trial` on the blocks `chosen` (holding `count` bars) and on the others.
    fn sharpes(&self, trial: usize, chosen: &[usize], count: f64) -> (f64, f64) {
        let base = trial * self.splits;
        let (mut s, mut q) = (0.0, 0.0);
        for &block in chosen {
            s += self.sum[base + block];
            q += self.sq[base + block];
        }
        let is = self.sharpe(trial, count, s, q);
        let oos = self.sharpe(
            trial,
            self.total_count - count,
            self.total_sum[trial] - s,
            self.total_sq[trial] - q,
        );
        (is, oos)
    }

    fn sharpe(&self, trial: usize, count: f64, sum: f64, sq: f64) -> f64 {
        if count < 2.0 {
            return 0.0;
        }
        let mean_dev = sum / count;
        let var = ((sq - sum * mean_dev) / (count - 1.0)).max(0.0);
        let sd = var.sqrt();
        if sd <= self.sd_floor[trial] {
            0.0
        } else {
            (self.centre[trial] + mean_dev) / sd
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::bar_sharpe;
    use crate::rng::Rng;

    fn noise(rng: &mut Rng, trials: usize, bars: usize) -> Vec<Vec<f64>> {
        (0..trials)
            .map(|_| (0..bars).map(|_| rng.normal()).collect())
            .collect()
    }

    #[test]
    fn pure_noise_is_a_coin_toss() {
        let m = noise(&mut Rng::new(42), 50, 2000);
        let p = pbo(&m, 16).expect("pbo");
        assert_eq!(p.combinations, 12_870);
        assert_eq!((p.trials, p.bars, p.splits), (50, 2000, 16));
        assert!((0.3..=0.7).contains(&p.pbo), "{p:?}");
        // The in-sample best looks good in sample and decays to nothing out of sample.
        assert!(p.mean_is_sharpe > 0.03, "{p:?}");
        assert!(p.mean_oos_sharpe.abs() < 0.03, "{p:?}");
    }

    #[test]
    fn a_persistent_edge_is_not_overfitting() {
        let mut m = noise(&mut Rng::new(7), 50, 2000);
        for x in &mut m[17] {
            *x += 0.2;
        }
        let p = pbo(&m, 16).expect("pbo");
        assert!(p.pbo < 0.1, "{p:?}");
        assert!(p.prob_oos_loss < 0.05, "{p:?}");
        assert!(p.logits.median > 2.0, "{p:?}");
    }

    #[test]
    fn sharpes_from_block_sums_match_a_direct_computation() {
        let m = noise(&mut Rng::new(3), 3, 40);
        let stats = BlockStats::new(&m, 4);
        // Blocks 0 and 2 (bars 0..10 and 20..30) in sample.
        let (is, oos) = stats.sharpes(1, &[0, 2], 20.0);
        let row = &m[1];
        let is_bars: Vec<f64> = row[0..10].iter().chain(&row[20..30]).copied().collect();
        let oos_bars: Vec<f64> = row[10..20].iter().chain(&row[30..40]).copied().collect();
        assert!((is - bar_sharpe(&is_bars)).abs() < 1e-12);
        assert!((oos - bar_sharpe(&oos_bars)).abs() < 1e-12);
    }

    #[test]
    fn identical_and_constant_trials_are_handled() {
        // Two identical rows and a constant one: the winner ties with its twin (mid-rank).
        let row: Vec<f64> = (0..40)
            .map(|i| if i % 3 == 0 { 0.02 } else { -0.005 })
            .collect();
        let m = vec![row.clone(), row, vec![0.001; 40]];
        let p = pbo(&m, 4).expect("pbo");
        assert_eq!(p.combinations, 6);
        assert!(p.logits.min.is_finite() && p.logits.max.is_finite());
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert_eq!(pbo(&[vec![0.0; 10]], 16), Err(PboError::TooFewTrials(1)));
        assert_eq!(
            pbo(&[vec![0.0; 10], vec![0.0; 9]], 2),
            Err(PboError::RaggedRows {
                row: 1,
                len: 9,
                expected: 10
            })
        );
        assert_eq!(
            pbo(&[vec![0.0; 10], vec![0.0; 10]], 15),
            Err(PboError::BadSplits(15))
        );
        assert_eq!(
            pbo(&[vec![0.0; 10], vec![0.0; 10]], 22),
            Err(PboError::BadSplits(22))
        );
        assert_eq!(
            pbo(&[vec![0.0; 3], vec![0.0; 3]], 16),
            Err(PboError::TooFewBars(3))
        );
        assert_eq!(
            pbo(&[vec![0.0, f64::NAN, 0.0, 0.0], vec![0.0; 4]], 2),
            Err(PboError::NonFinite(0))
        );
        // Ten bars and 16 blocks: clamped to 4 blocks of at least 2 bars.
        let p = pbo(
            &[
                vec![0.01, -0.01, 0.02, 0.0, 0.01, -0.02, 0.0, 0.01, 0.0, 0.01],
                vec![0.0; 10],
            ],
            16,
        )
        .expect("clamped");
        assert_eq!((p.splits, p.combinations), (4, 6));
    }
}
