//! The tree-structured Parzen estimator (Bergstra et al. 2011; Optuna's default sampler): per
//! dimension, one density `l` fitted to the good trials and one `g` to the rest; candidates are
//! drawn from `l` and the one with the largest `l(x)/g(x)` is proposed.

use super::{MAX_GOOD, SMALL_INT_RANGE, TPE_CANDIDATES, params_at, unit_of};
use crate::normal;
use crate::params::{Param, ParamKind, ParamSpec, ParamValue};
use crate::rng::{Rng, derive};

/// Salt so TPE's streams never coincide with Halton's.
const TPE_SALT: u64 = 0x0054_5045; // "TPE"

/// The two densities of one dimension: `l` fitted to the good trials, `g` to the rest.
enum DimModel {
    Numeric { good: Parzen, bad: Parzen },
    Categorical { good: Vec<f64>, bad: Vec<f64> },
}

/// TPE fitted to a history: one pair of densities per dimension (dimensions are independent,
/// as in Optuna's default).
///
/// Split: trials are ranked by score, best first, failed and guarded trials last; the good group
/// is the best `min(ceil(γ·n), 25)` scored trials with γ = 0.25 (hyperopt's γ, with Optuna's cap
/// of 25 so that a long study keeps `l` sharp), at least one. Everything else is bad.
pub(super) struct Tpe {
    dims: Vec<DimModel>,
}

impl Tpe {
    pub(super) fn fit(space: &[ParamSpec], history: &[(Vec<Param>, Option<f64>)]) -> Tpe {
        let mut scored: Vec<(usize, f64)> = history
            .iter()
            .enumerate()
            .filter_map(|(i, (_, s))| s.filter(|s| s.is_finite()).map(|s| (i, s)))
            .collect();
        // Best first; equal scores keep trial order.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let n_good = history
            .len()
            .div_ceil(4)
            .min(MAX_GOOD)
            .min(scored.len())
            .max(1);
        let mut is_good = vec![false; history.len()];
        for &(i, _) in scored.iter().take(n_good) {
            is_good[i] = true;
        }
        let dims = space
            .iter()
            .enumerate()
            .map(|(d, spec)| {
                let mut good = Vec::new();
                let mut bad = Vec::new();
                for (i, (params, _)) in history.iter().enumerate() {
                    if let Some(u) = value_in(params, d, &spec.name).and_then(|v| unit_of(spec, v))
                    {
                        if is_good[i] {
                            good.push(u)
                        } else {
                            bad.push(u)
                        }
                    }
                }
                match categories(spec) {
                    Some(k) => DimModel::Categorical {
                        good: category_weights(&good, k),
                        bad: category_weights(&bad, k),
                    },
                    None => DimModel::Numeric {
                        good: Parzen::fit(&good),
                        bad: Parzen::fit(&bad),
                    },
                }
            })
            .collect();
        Tpe { dims }
    }

    pub(super) fn suggest(&self, space: &[ParamSpec], seed: u64, index: u64) -> Vec<Param> {
        let mut rng = Rng::new(derive(seed ^ TPE_SALT, index));
        let units: Vec<f64> = self
            .dims
            .iter()
            .map(|model| {
                let mut best = (f64::NEG_INFINITY, 0.5);
                for _ in 0..TPE_CANDIDATES {
                    let (u, score) = match model {
                        DimModel::Numeric { good, bad } => {
                            let u = good.sample(&mut rng);
                            (u, good.log_pdf(u) - bad.log_pdf(u))
                        }
                        DimModel::Categorical { good, bad } => {
                            let c = sample_category(good, &mut rng);
                            let k = good.len() as f64;
                            ((c as f64 + 0.5) / k, good[c].ln() - bad[c].ln())
                        }
                    };
                    if score > best.0 {
                        best = (score, u);
                    }
                }
                best.1
            })
            .collect();
        params_at(space, &units)
    }
}

/// The value named `name` in `params`: at `position` when values come in declaration order (as
/// the sampler makes them), else found by name.
fn value_in<'a>(params: &'a [Param], position: usize, name: &str) -> Option<&'a ParamValue> {
    params
        .get(position)
        .filter(|p| p.name == name)
        .or_else(|| params.iter().find(|p| p.name == name))
        .map(|p| &p.value)
}

/// How many categories TPE sees in a dimension: choices, and ints of at most
/// [`SMALL_INT_RANGE`] values; `None` for numeric dimensions.
fn categories(spec: &ParamSpec) -> Option<usize> {
    match &spec.kind {
        ParamKind::Choice { choices } => Some(choices.len().max(1)),
        ParamKind::Int { min, max } => {
            let span = i128::from(*max) - i128::from(*min) + 1;
            (span <= i128::from(SMALL_INT_RANGE)).then_some(span.max(1) as usize)
        }
        ParamKind::Float { .. } => None,
    }
}

/// Smoothed category probabilities: `(count_c + 1/K) / (n + 1)`, a prior of weight one spread
/// evenly, so an unseen category keeps a chance and the ratio `l/g` is always defined.
fn category_weights(units: &[f64], k: usize) -> Vec<f64> {
    let mut w = vec![1.0 / k as f64; k];
    for u in units {
        let c = ((u * k as f64).floor() as usize).min(k - 1);
        w[c] += 1.0;
    }
    let total = units.len() as f64 + 1.0;
    w.iter().map(|x| x / total).collect()
}

fn sample_category(weights: &[f64], rng: &mut Rng) -> usize {
    let mut u = rng.next_f64() * weights.iter().sum::<f64>();
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len().saturating_sub(1)
}

/// A mixture of Gaussians truncated to `[0, 1]`, one per observation plus a broad prior
/// (mean ½, σ 1) of the same weight, so the density is never zero anywhere. Bandwidths follow
/// hyperopt's neighbour rule: each kernel's σ is the larger gap to its sorted neighbours (the
/// interval's ends counting as neighbours), clipped to `[1 / min(100, n + 1), 1]`, so dense
/// clusters get narrow kernels and lonely points broad ones.
struct Parzen {
    mu: Vec<f64>,
    sigma: Vec<f64>,
    /// `ln(σ·Z)` per kernel, `Z` the kernel's mass inside `[0, 1]`.
    log_norm: Vec<f64>,
}

impl Parzen {
    fn fit(observations: &[f64]) -> Parzen {
        // (mean, is the prior), sorted by mean.
        let mut kernels: Vec<(f64, bool)> = observations.iter().map(|&m| (m, false)).collect();
        kernels.push((0.5, true));
        kernels.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mu: Vec<f64> = kernels.iter().map(|k| k.0).collect();
        let n = mu.len();
        let min_sigma = 1.0 / (n as f64 + 1.0).min(100.0);
        let sigma: Vec<f64> = (0..n)
            .map(|i| {
                if kernels[i].1 {
                    // The prior is broad whatever its neighbours.
                    return 1.0;
                }
                let left = mu[i] - if i == 0 { 0.0 } else { mu[i - 1] };
                let right = if i + 1 == n { 1.0 } else { mu[i + 1] } - mu[i];
                left.max(right).clamp(min_sigma, 1.0)
            })
            .collect();
        let log_norm = mu
            .iter()
            .zip(&sigma)
            .map(|(&m, &s)| {
                let z = normal::cdf((1.0 - m) / s) - normal::cdf(-m / s);
                (s * z.max(1e-300)).ln()
            })
            .collect();
        Parzen {
            mu,
            sigma,
            log_norm,
        }
    }

    fn sample(&self, rng: &mut Rng) -> f64 {
        let k = rng.below(self.mu.len() as u64) as usize;
        let (m, s) = (self.mu[k], self.sigma[k]);
        for _ in 0..100 {
            let x = m + s * rng.normal();
            if (0.0..=1.0).contains(&x) {
                return x;
            }
        }
        m.clamp(0.0, 1.0)
    }

    /// `ln` of the mixture density at `x` (log-sum-exp of the kernels).
    fn log_pdf(&self, x: f64) -> f64 {
        let terms: Vec<f64> = self
            .mu
            .iter()
            .zip(&self.sigma)
            .zip(&self.log_norm)
            .map(|((&m, &s), &ln)| {
                let z = (x - m) / s;
                -0.5 * z * z - ln
            })
            .collect();
        let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = terms.iter().map(|t| (t - max).exp()).sum();
        max + sum.ln() - (self.mu.len() as f64).ln() - 0.5 * std::f64::consts::TAU.ln()
    }
}
