//! Strategy optimisation for Crucible: the pure, I/O-free core of `crucible strategy optimize`.
//!
//! A strategy declares its tunable parameters ([`params`]). A study searches that space: trial 0
//! is the declared defaults, the author's baseline; the rest come from a [`sampler`] (a
//! scrambled Halton sequence to cover the space, then a tree-structured Parzen estimator that
//! learns where good trials lie). Every trial runs over several market *paths* — several seeds
//! of a simulated market and real candles — through an [`study::Objective`] the server
//! implements with real backtests. This crate never runs WebAssembly, reads files or keeps time.
//!
//! Three checks, each catching a different way an optimiser fools its user:
//!
//! * **Walk-forward folds** ([`folds`]) catch parameters that only describe the data they were
//!   fitted on. Each path is cut into consecutive windows; a trial is scored only on windows
//!   that come after the ones it could have learnt from, and its score is the mean of those
//!   out-of-sample scores over every fold of every path. A parameter set that fits one path or
//!   one period shows it in the per-fold and per-path tables. The report also shows a true
//!   walk-forward selection: in each fold, the trial with the best in-sample score and what it
//!   then earned out of sample.
//! * **The probability of backtest overfitting** ([`pbo`], Bailey, Borwein, López de Prado &
//!   Zhu 2015) catches a search that merely found the luckiest of many equal trials. Cutting the
//!   history into blocks and trying every half as in-sample, it measures how often the in-sample
//!   best ranks below the median out of sample. Near ½ means the ranking is noise.
//! * **The deflated Sharpe ratio** ([`dsr`], Bailey & López de Prado 2014) catches selection
//!   bias in the winner's headline number: the best of N worthless trials still has a positive
//!   Sharpe ratio. It is the probability that the winner's true Sharpe ratio exceeds the best one
//!   expected from luck among that many trials, allowing for skewed, fat-tailed returns.
//!
//! The [`study::run_study`] driver combines them into a [`report::Report`] with a plain-words
//! verdict (thresholds in [`analysis`]): "likely overfit", "no edge", "inconclusive" or
//! "robust". Results
//! are deterministic: the same space, objective and configuration give the same report to the
//! byte, however many threads run the backtests. Freqtrade's hyperopt, the tool to beat, scores
//! trials on the same data it selects them on and reports none of this.
//!
//! ```
//! use crucible_optimize::{Objective, PathRun, StudyConfig, run_study};
//! use crucible_optimize::params::{Param, ParamKind, ParamSpec, ParamValue};
//!
//! /// A market that rises 0.1% a bar with a wobble; each unit of `churn` costs 0.02% a bar.
//! struct Churn;
//! impl Objective for Churn {
//!     fn paths(&self) -> Vec<String> {
//!         vec!["seed 1".into(), "seed 2".into()]
//!     }
//!     fn run(&self, params: &[Param], path: usize) -> Result<PathRun, String> {
//!         let ParamValue::Int(churn) = params[0].value else { return Err("not an int".into()) };
//!         let mut equity = vec![1000.0];
//!         for bar in 0..300 {
//!             let wobble = if (bar + path) % 3 == 0 { -0.004 } else { 0.0035 };
//!             let last = equity[equity.len() - 1];
//!             equity.push(last * (1.0 + 0.001 + wobble - 0.0002 * churn as f64));
//!         }
//!         Ok(PathRun { equity, trades: (0..300).step_by(10).collect(), periods_per_year: 8760.0 })
//!     }
//! }
//!
//! let space = [ParamSpec {
//!     name: "churn".into(),
//!     description: "how often to trade".into(),
//!     kind: ParamKind::Int { min: 0, max: 10 },
//!     default: ParamValue::Int(5),
//! }];
//! let config = StudyConfig { trials: 24, ..StudyConfig::default() };
//! let report = run_study(&space, &Churn, &config, &|_progress| {}).expect("a study");
//! assert_eq!(report.winner.params[0].value, ParamValue::Int(0));
//! println!("{}", report.render_text());
//! ```
//!
//! Module map: [`rng`] (a fixed PRNG, so results never change with a dependency upgrade),
//! [`normal`] (Φ and Φ⁻¹), [`metrics`] (the losses, matching Crucible's backtest summary),
//! [`sampler`], [`folds`], [`pbo`], [`dsr`], [`study`], [`analysis`], [`report`].

pub mod analysis;
pub mod dsr;
pub mod folds;
pub mod metrics;
pub mod normal;
pub mod params;
pub mod pbo;
pub mod report;
pub mod rng;
pub mod sampler;
pub mod study;

pub use dsr::{Dsr, deflated_sharpe, probabilistic_sharpe};
pub use folds::{Fold, FoldError, Scheme, folds};
pub use metrics::Loss;
pub use params::{Param, ParamKind, ParamSpec, ParamValue};
pub use pbo::{Pbo, PboError, pbo};
pub use report::{Report, Verdict, VerdictKind};
pub use sampler::{Sampler, SamplerKind, suggest};
pub use study::{Objective, PathRun, Progress, StudyConfig, StudyError, run_study};
