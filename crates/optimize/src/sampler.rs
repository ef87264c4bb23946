//! Where the next trials go: a scrambled Halton sequence that covers the space evenly, and a
//! tree-structured Parzen estimator (TPE) that, once it has seen enough trials, proposes values
//! that look like the best ones so far and unlike the rest.
//!
//! Both are deterministic functions of the seed, the trial index and the history, so a study
//! replays exactly. Every value returned passes [`ParamSpec::check`]. Floats are rounded to six
//! significant digits (a resolution of a millionth of their range or finer, see
//! [`round_float`]) so that reports read well
//! and stay byte-identical.
//!
//! Each dimension maps to the unit interval: an int `min..=max` as `span = max - min + 1` equal
//! cells (so every value is equally likely), a float linearly, a choice as equal cells.

use serde::Serialize;

use crate::params::{Param, ParamKind, ParamSpec, ParamValue};

mod halton;
mod tpe;

use halton::halton_point;
pub use halton::halton_units;
use tpe::Tpe;

/// Trials drawn from Halton before TPE takes over (Optuna uses 10; a few more suits the several
/// dimensions a strategy usually has).
pub const DEFAULT_STARTUP: usize = 16;
/// Candidates TPE draws from the good-trials density per dimension before keeping the best
/// ratio (Optuna's default).
pub const TPE_CANDIDATES: usize = 24;
/// Largest int range treated as categories by TPE (each value its own weight); wider ranges are
/// numeric, with Gaussian kernels.
pub const SMALL_INT_RANGE: u64 = 16;
/// Most trials in TPE's "good" group.
pub const MAX_GOOD: usize = 25;

/// Which sampler a study uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplerKind {
    /// Tree-structured Parzen estimator, after a Halton start.
    Tpe,
    /// Scrambled Halton only: even coverage, no learning.
    Halton,
}

impl SamplerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SamplerKind::Tpe => "tpe",
            SamplerKind::Halton => "halton",
        }
    }
}

impl std::str::FromStr for SamplerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tpe" => Ok(SamplerKind::Tpe),
            "halton" => Ok(SamplerKind::Halton),
            _ => Err(format!("unknown sampler `{s}`: use tpe or halton")),
        }
    }
}

impl std::fmt::Display for SamplerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sampler: its kind, its seed and how many completed trials TPE waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampler {
    pub kind: SamplerKind,
    pub seed: u64,
    /// TPE proposes only once the history holds this many completed trials (and at least one
    /// scored); before that it proposes Halton points.
    pub startup: usize,
}

impl Sampler {
    /// A sampler with [`DEFAULT_STARTUP`].
    pub fn new(kind: SamplerKind, seed: u64) -> Self {
        Sampler {
            kind,
            seed,
            startup: DEFAULT_STARTUP,
        }
    }

    /// A sampler for a study of `trials` trials: the Halton start is [`DEFAULT_STARTUP`], or half
    /// the budget when that is smaller (at least 2), so a short study still learns.
    pub fn for_budget(kind: SamplerKind, seed: u64, trials: usize) -> Self {
        Sampler {
            startup: DEFAULT_STARTUP.min((trials / 2).max(2)),
            ..Sampler::new(kind, seed)
        }
    }

    /// `n` parameter sets for trials `first_index..first_index + n`, each from `history` (the
    /// trials completed so far: their values and score, higher better, `None` for failed or
    /// guarded trials, which count as worst).
    pub fn suggest(
        &self,
        space: &[ParamSpec],
        history: &[(Vec<Param>, Option<f64>)],
        first_index: usize,
        n: usize,
    ) -> Vec<Vec<Param>> {
        let use_tpe = self.kind == SamplerKind::Tpe
            && history.len() >= self.startup
            && history.iter().any(|(_, s)| s.is_some());
        let tpe = use_tpe.then(|| Tpe::fit(space, history));
        (first_index..first_index.saturating_add(n))
            .map(|index| match &tpe {
                Some(tpe) => tpe.suggest(space, self.seed, index as u64),
                None => halton_point(space, self.seed, index as u64),
            })
            .collect()
    }
}

/// [`Sampler::suggest`] with [`DEFAULT_STARTUP`].
pub fn suggest(
    kind: SamplerKind,
    space: &[ParamSpec],
    seed: u64,
    history: &[(Vec<Param>, Option<f64>)],
    first_index: usize,
    n: usize,
) -> Vec<Vec<Param>> {
    Sampler::new(kind, seed).suggest(space, history, first_index, n)
}

// ---------------------------------------------------------------------------------------------
// Mapping between values and the unit interval.

/// Cells of an int range (`max - min + 1`, at least 1), as a float.
fn int_span(min: i64, max: i64) -> f64 {
    (i128::from(max) - i128::from(min) + 1).max(1) as f64
}

/// The value of `spec` at unit coordinate `u` (clamped to `[0, 1]`).
pub fn value_at(spec: &ParamSpec, u: f64) -> ParamValue {
    let u = if u.is_nan() { 0.5 } else { u.clamp(0.0, 1.0) };
    match &spec.kind {
        ParamKind::Int { min, max } => {
            let span = int_span(*min, *max);
            let cell = ((u * span).floor() as i128).clamp(0, i128::from(*max) - i128::from(*min));
            let v = (i128::from(*min) + cell).clamp(i128::from(*min), i128::from(*max));
            ParamValue::Int(i64::try_from(v).unwrap_or(*min))
        }
        ParamKind::Float { min, max } => {
            // min·(1-u) + max·u cannot overflow where min + u·(max - min) could.
            let x = min * (1.0 - u) + max * u;
            ParamValue::Float(round_float(x, *min, *max))
        }
        ParamKind::Choice { choices } => {
            let k = choices.len().max(1);
            let i = ((u * k as f64).floor() as usize).min(k - 1);
            ParamValue::Choice(choices.get(i).cloned().unwrap_or_default())
        }
    }
}

/// The unit coordinate of `value` under `spec` (the middle of its cell for ints and choices);
/// `None` when the value does not fit the declaration.
pub fn unit_of(spec: &ParamSpec, value: &ParamValue) -> Option<f64> {
    spec.check(value).ok()?;
    match (&spec.kind, value) {
        (ParamKind::Int { min, max }, ParamValue::Int(v)) => {
            Some(((i128::from(*v) - i128::from(*min)) as f64 + 0.5) / int_span(*min, *max))
        }
        (ParamKind::Float { min, max }, ParamValue::Float(v)) => {
            let width = max - min;
            Some(if width > 0.0 && width.is_finite() {
                ((v - min) / width).clamp(0.0, 1.0)
            } else {
                0.5
            })
        }
        (ParamKind::Choice { choices }, ParamValue::Choice(v)) => {
            let i = choices.iter().position(|c| c == v)?;
            Some((i as f64 + 0.5) / choices.len() as f64)
        }
        _ => None,
    }
}

/// `x` rounded to a resolution of `10^(⌊log₁₀ width⌋ - 6)`, between a millionth and a ten
/// millionth of the range's width (six significant digits of a value the size of the range),
/// then clamped into `[min, max]`. Decimal resolutions round through
/// decimal text, so `0.1 + 0.2`-style binary noise never reaches a report.
pub fn round_float(x: f64, min: f64, max: f64) -> f64 {
    let width = max - min;
    if !(x.is_finite() && width.is_finite()) || width <= 0.0 {
        return if x.is_finite() {
            x.clamp(min, max)
        } else {
            min
        };
    }
    // Decimal places of the resolution.
    let places = 6 - width.log10().floor() as i32;
    let rounded = if places >= 0 {
        let text = format!("{:.*}", places.min(300) as usize, x);
        text.parse::<f64>().unwrap_or(x)
    } else {
        let quantum = 10f64.powi(-places);
        (x / quantum).round() * quantum
    };
    let rounded = if rounded == 0.0 { 0.0 } else { rounded }; // no "-0"
    if rounded.is_finite() {
        rounded.clamp(min, max)
    } else {
        x.clamp(min, max)
    }
}

fn params_at(space: &[ParamSpec], units: &[f64]) -> Vec<Param> {
    space
        .iter()
        .zip(units)
        .map(|(spec, &u)| Param {
            name: spec.name.clone(),
            value: value_at(spec, u),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, kind: ParamKind, default: ParamValue) -> ParamSpec {
        ParamSpec {
            name: name.into(),
            description: String::new(),
            kind,
            default,
        }
    }

    fn space() -> Vec<ParamSpec> {
        vec![
            spec(
                "period",
                ParamKind::Int { min: 3, max: 12 },
                ParamValue::Int(5),
            ),
            spec(
                "band",
                ParamKind::Float {
                    min: -1.0,
                    max: 3.0,
                },
                ParamValue::Float(0.5),
            ),
            spec(
                "mode",
                ParamKind::Choice {
                    choices: vec!["trend".into(), "revert".into(), "flat".into()],
                },
                ParamValue::Choice("trend".into()),
            ),
            spec(
                "big",
                ParamKind::Int {
                    min: i64::MIN,
                    max: i64::MAX,
                },
                ParamValue::Int(0),
            ),
        ]
    }

    fn valid(space: &[ParamSpec], params: &[Param]) {
        assert_eq!(params.len(), space.len());
        for (s, p) in space.iter().zip(params) {
            assert_eq!(s.name, p.name);
            assert_eq!(s.check(&p.value), Ok(()), "{} = {}", p.name, p.value);
        }
    }

    fn float(p: &Param) -> f64 {
        match p.value {
            ParamValue::Float(x) => x,
            _ => f64::NAN,
        }
    }

    #[test]
    fn halton_covers_the_space_with_valid_values() {
        let sp = space();
        let points = suggest(SamplerKind::Halton, &sp, 11, &[], 1, 100);
        let mut ints = std::collections::BTreeSet::new();
        let mut choices = std::collections::BTreeSet::new();
        let mut quartiles = [0usize; 4];
        for p in &points {
            valid(&sp, p);
            if let ParamValue::Int(i) = p[0].value {
                ints.insert(i);
            }
            choices.insert(p[2].value.to_string());
            let q = ((float(&p[1]) + 1.0) / 4.0 * 4.0).floor().clamp(0.0, 3.0) as usize;
            quartiles[q] += 1;
        }
        assert_eq!(ints.len(), 10, "every value of 3..=12 appears: {ints:?}");
        assert_eq!(choices.len(), 3);
        assert!(
            quartiles.iter().all(|&q| (20..=30).contains(&q)),
            "{quartiles:?}"
        );
        // The full-range int spreads over both signs.
        let negative = points
            .iter()
            .filter(|p| matches!(p[3].value, ParamValue::Int(i) if i < 0))
            .count();
        assert!((35..=65).contains(&negative), "{negative}");
    }

    #[test]
    fn suggestions_depend_on_the_seed_only() {
        let sp = space();
        for kind in [SamplerKind::Halton, SamplerKind::Tpe] {
            let history: Vec<(Vec<Param>, Option<f64>)> =
                suggest(SamplerKind::Halton, &sp, 1, &[], 0, 20)
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| (p, (i % 3 != 0).then_some(i as f64)))
                    .collect();
            let a = suggest(kind, &sp, 5, &history, 20, 8);
            let b = suggest(kind, &sp, 5, &history, 20, 8);
            let c = suggest(kind, &sp, 6, &history, 20, 8);
            assert_eq!(a, b, "{kind}");
            assert_ne!(a, c, "{kind}");
            for p in a.iter().chain(&c) {
                valid(&sp, p);
            }
        }
    }

    #[test]
    fn floats_are_rounded_to_six_significant_digits_of_the_range() {
        assert_eq!(round_float(0.123_456_789, 0.0, 1.0), 0.123_457);
        assert_eq!(round_float(1_234.567_89, 0.0, 10_000.0), 1_234.57);
        assert_eq!(round_float(1_234.567_89, 0.0, 9_999.0), 1_234.568);
        assert_eq!(round_float(123_456_789.0, 0.0, 1e9), 123_457_000.0);
        assert_eq!(round_float(0.123_456_789, -1.0, 3.0), 0.123_457);
        assert_eq!(round_float(0.1 + 0.2, 0.0, 1.0), 0.3);
        assert_eq!(round_float(0.999_999_9, 0.0, 1.0), 1.0);
        assert_eq!(round_float(-0.000_000_1, -1.0, 1.0), 0.0);
        assert_eq!(round_float(2.5, 2.5, 2.5), 2.5);
        // Rounding never leaves the range.
        assert_eq!(
            round_float(0.100_000_04, 0.100_000_03, 0.100_000_05),
            0.100_000_04
        );
        let wide = value_at(
            &spec(
                "w",
                ParamKind::Float {
                    min: -1e308,
                    max: 1e308,
                },
                ParamValue::Float(0.0),
            ),
            0.75,
        );
        assert!(matches!(wide, ParamValue::Float(x) if x.is_finite() && x > 0.0));
    }

    #[test]
    fn values_and_units_round_trip() {
        let sp = space();
        for v in 3..=12 {
            let u = unit_of(&sp[0], &ParamValue::Int(v)).expect("fits");
            assert_eq!(value_at(&sp[0], u), ParamValue::Int(v));
        }
        for c in ["trend", "revert", "flat"] {
            let u = unit_of(&sp[2], &ParamValue::Choice(c.into())).expect("fits");
            assert_eq!(value_at(&sp[2], u), ParamValue::Choice(c.into()));
        }
        assert_eq!(value_at(&sp[0], 1.0), ParamValue::Int(12));
        assert_eq!(value_at(&sp[3], 0.0), ParamValue::Int(i64::MIN));
        assert_eq!(value_at(&sp[3], 1.0), ParamValue::Int(i64::MAX));
        assert_eq!(unit_of(&sp[0], &ParamValue::Int(13)), None);
        assert_eq!(unit_of(&sp[0], &ParamValue::Float(5.0)), None);
        assert_eq!("tpe".parse(), Ok(SamplerKind::Tpe));
        assert_eq!("halton".parse(), Ok(SamplerKind::Halton));
        assert!("random".parse::<SamplerKind>().is_err());
    }

    /// Run a study the way `study.rs` does (trial 0 the defaults, rounds of 8) against a smooth
    /// objective with its optimum at (0.3, 0.7) and return the last 20 trials' distances to it.
    fn last_distances(kind: SamplerKind, seed: u64) -> Vec<f64> {
        let sp = vec![
            spec(
                "x",
                ParamKind::Float { min: 0.0, max: 1.0 },
                ParamValue::Float(0.5),
            ),
            spec(
                "y",
                ParamKind::Float { min: 0.0, max: 1.0 },
                ParamValue::Float(0.5),
            ),
            spec(
                "side",
                ParamKind::Choice {
                    choices: vec!["a".into(), "b".into()],
                },
                ParamValue::Choice("a".into()),
            ),
        ];
        let sampler = Sampler::for_budget(kind, seed, 64);
        let mut history: Vec<(Vec<Param>, Option<f64>)> = Vec::new();
        let mut trials = vec![crate::params::defaults(&sp)];
        while trials.len() < 64 {
            let start = trials.len();
            let want = if start == 1 { 7 } else { 8 };
            trials.extend(sampler.suggest(&sp, &history, start, want));
            while history.len() < trials.len() {
                let p = &trials[history.len()];
                let (x, y) = (float(&p[0]), float(&p[1]));
                let bonus = if p[2].value == ParamValue::Choice("b".into()) {
                    0.0
                } else {
                    -0.05
                };
                history.push((
                    p.clone(),
                    Some(-(x - 0.3).powi(2) - (y - 0.7).powi(2) + bonus),
                ));
            }
        }
        history[44..]
            .iter()
            .map(|(p, _)| ((float(&p[0]) - 0.3).powi(2) + (float(&p[1]) - 0.7).powi(2)).sqrt())
            .collect()
    }

    fn median(mut xs: Vec<f64>) -> f64 {
        xs.sort_by(f64::total_cmp);
        crate::pbo::quantile_sorted(&xs, 0.5)
    }

    #[test]
    fn tpe_concentrates_near_the_optimum() {
        for seed in [1, 2, 3] {
            let tpe = median(last_distances(SamplerKind::Tpe, seed));
            let halton = median(last_distances(SamplerKind::Halton, seed));
            assert!(tpe < 0.12, "seed {seed}: TPE median distance {tpe}");
            assert!(
                tpe < halton / 2.5,
                "seed {seed}: TPE {tpe} vs Halton {halton}"
            );
        }
    }

    #[test]
    fn tpe_starts_with_halton_and_treats_failures_as_worst() {
        let sp = space();
        let history: Vec<(Vec<Param>, Option<f64>)> =
            suggest(SamplerKind::Halton, &sp, 3, &[], 0, 10)
                .into_iter()
                .map(|p| (p, Some(1.0)))
                .collect();
        // Fewer completed trials than the start: TPE proposes Halton's points.
        assert_eq!(
            suggest(SamplerKind::Tpe, &sp, 3, &history, 10, 4),
            suggest(SamplerKind::Halton, &sp, 3, &history, 10, 4)
        );
        // No scored trial at all: still Halton.
        let failed: Vec<_> = history
            .iter()
            .cycle()
            .take(20)
            .map(|(p, _)| (p.clone(), None))
            .collect();
        assert_eq!(
            suggest(SamplerKind::Tpe, &sp, 3, &failed, 20, 2),
            suggest(SamplerKind::Halton, &sp, 3, &failed, 20, 2)
        );
        // One good trial with mode "flat" among failures: TPE asks for "flat" again.
        let mut mixed = failed.clone();
        mixed[5].1 = Some(0.0);
        mixed[5].0[2].value = ParamValue::Choice("flat".into());
        for p in &mut mixed[6..] {
            p.0[2].value = ParamValue::Choice("trend".into());
        }
        let next = suggest(SamplerKind::Tpe, &sp, 3, &mixed, 20, 8);
        let flat = next
            .iter()
            .filter(|p| p[2].value == ParamValue::Choice("flat".into()))
            .count();
        assert!(flat >= 6, "{flat} of 8");
    }
}
