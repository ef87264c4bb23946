//! The seeded simulated market: a regime-switching random walk per pair on a 5-minute grid.
//!
//! Each pair's path is generated from a fixed origin (2026-01-01 UTC) by its own ChaCha stream
//! (seed × pair), so any (seed, pair, time) always gives the same candle, on any machine, in any
//! order of requests. Higher intervals aggregate the 5-minute steps.
//!
//! The return of each step has a hidden drift that wanders around its regime's mean (calm,
//! bull, bear, turbulent). Signals are noisy observations of that drift: sentiment and whale
//! buying rise with it, exchange inflow falls with it. So a strategy that filters the noise from
//! the signals has a real (modest) edge, as on a real market where flows lead price.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Candle, Interval, MarketError, MarketFeed, Pair, Signals, is_usd_stable, merge};

/// 2026-01-01T00:00:00Z.
pub const ORIGIN_MS: i64 = 1_767_225_600_000;
const STEP_MS: i64 = Interval::M5.millis();
const STEPS_PER_YEAR: f64 = 105_120.0;
/// Longest path generated per pair (about three years of 5-minute steps).
const MAX_STEPS: usize = 3 * 105_120;

/// Pairs the simulated market quotes: base, start price (USDC), annual volatility, daily volume.
pub const KNOWN_PAIRS: [(&str, f64, f64, f64); 5] = [
    ("SOL", 150.0, 0.85, 2.0e6),
    ("BTC", 90_000.0, 0.50, 3.0e3),
    ("ETH", 3_200.0, 0.65, 8.0e4),
    ("BONK", 0.000_02, 1.40, 4.0e12),
    ("JUP", 0.80, 1.10, 1.5e8),
];

#[derive(Debug, Clone, Copy)]
struct Step {
    candle: Candle,
    signals: Signals,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Regime {
    Calm,
    Bull,
    Bear,
    Turbulent,
}

impl Regime {
    /// Drift mean (in step sigmas) and volatility multiplier.
    fn params(self) -> (f64, f64) {
        match self {
            Regime::Calm => (0.0, 0.6),
            Regime::Bull => (0.05, 1.0),
            Regime::Bear => (-0.05, 1.3),
            Regime::Turbulent => (0.0, 2.2),
        }
    }
}

/// Generator state of one pair, kept so the path can be extended on demand.
struct PairPath {
    rng: ChaCha8Rng,
    sigma: f64,
    volume: f64,
    regime: Regime,
    drift: f64,
    price: f64,
    steps: Vec<Step>,
}

impl PairPath {
    fn new(seed: u64, base: &str, price: f64, annual_vol: f64, daily_volume: f64) -> Self {
        PairPath {
            rng: ChaCha8Rng::seed_from_u64(seed ^ fnv1a(base)),
            sigma: annual_vol / STEPS_PER_YEAR.sqrt(),
            volume: daily_volume / 288.0,
            regime: Regime::Calm,
            drift: 0.0,
            price,
            steps: Vec::new(),
        }
    }

    fn normal(&mut self) -> f64 {
        // Box–Muller; 1 - u keeps the logarithm finite.
        let u: f64 = 1.0 - self.rng.r#gen::<f64>();
        let v: f64 = self.rng.r#gen::<f64>();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    fn extend_to(&mut self, len: usize) {
        while self.steps.len() < len {
            self.step();
        }
    }

    fn step(&mut self) {
        // Regimes last about two days on average.
        if self.rng.r#gen::<f64>() < 1.0 / 576.0 {
            self.regime = match self.rng.gen_range(0..4) {
                0 => Regime::Calm,
                1 => Regime::Bull,
                2 => Regime::Bear,
                _ => Regime::Turbulent,
            };
        }
        let (mean, vol_mult) = self.regime.params();
        // Hidden drift: Ornstein–Uhlenbeck around the regime mean, in step sigmas.
        let shock = self.normal();
        self.drift += 0.02 * (mean - self.drift) + 0.007 * shock;
        let noise = self.normal();
        let jump = if self.rng.r#gen::<f64>() < 0.001 {
            6.0 * self.normal()
        } else {
            0.0
        };
        let ret = self.sigma * (self.drift + vol_mult * noise + jump);

        let open = self.price;
        let close = open * ret.exp();
        let wick_hi = self.normal().abs() * 0.4 * self.sigma * vol_mult;
        let wick_lo = self.normal().abs() * 0.4 * self.sigma * vol_mult;
        let volume = self.volume * (1.0 + (ret / self.sigma).abs()) * (0.3 * self.normal()).exp();
        self.price = close;

        // Signals observe the drift (normalised so ±1 is a typical bull/bear drift) with noise.
        let z = self.drift / 0.05;
        let (n1, n2, n3, n4, n5) = (
            self.normal(),
            self.normal(),
            self.normal(),
            self.normal(),
            self.normal(),
        );
        let signals = Signals {
            sentiment: (0.6 * z + 0.9 * n1).tanh(),
            mention_volume: (0.3 * z.abs() + 0.2 * n2).exp(),
            exchange_net_flow: 0.002 * (-0.7 * z + n3),
            whale_net_buy: (0.5 * z + n4).tanh(),
            active_wallets_change: 0.05 * (0.7 * z + 1.5 * n5),
        };
        let ts = ORIGIN_MS + self.steps.len() as i64 * STEP_MS;
        let candle = Candle {
            ts,
            open,
            high: open.max(close) * wick_hi.exp(),
            low: open.min(close) * (-wick_lo).exp(),
            close,
            volume,
        };
        self.steps.push(Step { candle, signals });
    }
}

/// The seeded simulated market (thread-safe; paths are generated lazily and kept).
#[derive(Clone)]
pub struct SimulatedMarket {
    seed: u64,
    paths: Arc<Mutex<HashMap<String, PairPath>>>,
}

impl std::fmt::Debug for SimulatedMarket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedMarket")
            .field("seed", &self.seed)
            .finish()
    }
}

impl SimulatedMarket {
    pub fn new(seed: u64) -> Self {
        SimulatedMarket {
            seed,
            paths: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// First time with data.
    pub fn origin() -> i64 {
        ORIGIN_MS
    }

    /// Run `f` over the steps `[from, to)` of `base`'s path, generating them if needed.
    fn with_steps<R>(
        &self,
        base: &str,
        from: usize,
        to: usize,
        f: impl FnOnce(&[Step]) -> R,
    ) -> Result<R, MarketError> {
        let base = base.to_ascii_uppercase();
        let Some(&(_, price, vol, volume)) = KNOWN_PAIRS.iter().find(|p| p.0 == base) else {
            return Err(MarketError::UnknownPair(base));
        };
        if to > MAX_STEPS {
            return Err(MarketError::OutOfRange(ORIGIN_MS + to as i64 * STEP_MS));
        }
        // A poisoned lock only means another thread panicked mid-extension; the path so far is valid.
        let mut paths = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        let path = paths
            .entry(base.clone())
            .or_insert_with(|| PairPath::new(self.seed, &base, price, vol, volume));
        path.extend_to(to);
        Ok(f(&path.steps[from..to]))
    }

    fn check_quote(pair: &Pair) -> Result<(), MarketError> {
        if is_usd_stable(&pair.quote) {
            Ok(())
        } else {
            Err(MarketError::UnknownPair(pair.to_string()))
        }
    }
}

/// Index of the 5-minute step containing `at`.
fn step_index(at: i64) -> Result<usize, MarketError> {
    if at < ORIGIN_MS {
        return Err(MarketError::OutOfRange(at));
    }
    Ok(((at - ORIGIN_MS) / STEP_MS) as usize)
}

impl MarketFeed for SimulatedMarket {
    fn candles(
        &self,
        pair: &Pair,
        interval: Interval,
        end: i64,
        count: usize,
    ) -> Result<Vec<Candle>, MarketError> {
        Self::check_quote(pair)?;
        if end < ORIGIN_MS {
            return Err(MarketError::OutOfRange(end));
        }
        let per = (interval.millis() / STEP_MS) as usize;
        // Candles that closed by `end`: those with index < complete.
        let complete = ((end - ORIGIN_MS) / interval.millis()) as usize;
        let first = complete.saturating_sub(count);
        self.with_steps(&pair.base, first * per, complete * per, |steps| {
            steps
                .chunks_exact(per)
                .filter_map(|chunk| {
                    let parts: Vec<Candle> = chunk.iter().map(|s| s.candle).collect();
                    merge(chunk[0].candle.ts, &parts)
                })
                .collect()
        })
    }

    fn signals(&self, pair: &Pair, at: i64) -> Result<Signals, MarketError> {
        Self::check_quote(pair)?;
        let i = step_index(at)?;
        // The step that ended most recently before `at` (signals are known at the close).
        let i = i.saturating_sub(1);
        self.with_steps(&pair.base, i, i + 1, |s| s[0].signals)
    }

    fn price_at(&self, token: &str, at: i64) -> Result<f64, MarketError> {
        if is_usd_stable(token) {
            return Ok(1.0);
        }
        let i = step_index(at)?;
        self.with_steps(token, i, i + 1, |s| s[0].candle.close)
    }
}

/// FNV-1a: a stable per-pair seed offset (std's hasher may change between releases).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use super::*;

    fn sol() -> Pair {
        Pair::new("SOL", "USDC")
    }

    #[test]
    fn same_seed_same_market_other_seed_other_market() {
        let end = ORIGIN_MS + 30 * 86_400_000;
        let a = SimulatedMarket::new(7)
            .candles(&sol(), Interval::H1, end, 200)
            .unwrap();
        let b = SimulatedMarket::new(7)
            .candles(&sol(), Interval::H1, end, 200)
            .unwrap();
        let c = SimulatedMarket::new(8)
            .candles(&sol(), Interval::H1, end, 200)
            .unwrap();
        assert_eq!(a.len(), 200);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn intervals_aggregate_the_same_path() {
        let m = SimulatedMarket::new(1);
        let end = ORIGIN_MS + 10 * 86_400_000;
        let hours = m.candles(&sol(), Interval::H1, end, 24).unwrap();
        let day = m.candles(&sol(), Interval::D1, end, 1).unwrap();
        assert_eq!(day[0].ts, hours[0].ts);
        assert_eq!(day[0].open, hours[0].open);
        assert_eq!(day[0].close, hours[23].close);
        assert!(day[0].high >= hours.iter().map(|c| c.high).fold(0.0, f64::max));
        for c in &hours {
            assert!(c.low <= c.open.min(c.close) && c.high >= c.open.max(c.close));
            assert_eq!(c.ts % Interval::H1.millis(), 0);
        }
        assert_eq!(m.price_at("SOL", end - 1).unwrap(), hours[23].close);
        assert_eq!(m.price_at("USDC", end).unwrap(), 1.0);
    }

    #[test]
    fn signals_carry_information_about_future_returns() {
        // Correlate sentiment at t with the next 12 steps' return, over a year of SOL.
        let m = SimulatedMarket::new(42);
        let steps = 100_000;
        let (xs, ys) = m
            .with_steps("SOL", 0, steps, |s| {
                let mut xs = Vec::new();
                let mut ys = Vec::new();
                for i in 0..steps - 12 {
                    xs.push(s[i].signals.sentiment);
                    ys.push((s[i + 12].candle.close / s[i].candle.close).ln());
                }
                (xs, ys)
            })
            .unwrap();
        let corr = correlation(&xs, &ys);
        assert!(corr > 0.03, "sentiment/future-return correlation {corr}");
    }

    #[test]
    fn unknown_pairs_and_times_are_refused() {
        let m = SimulatedMarket::new(1);
        assert!(matches!(
            m.price_at("DOGE", ORIGIN_MS),
            Err(MarketError::UnknownPair(_))
        ));
        assert!(matches!(
            m.price_at("SOL", ORIGIN_MS - 1),
            Err(MarketError::OutOfRange(_))
        ));
        assert!(
            m.candles(&Pair::new("SOL", "BTC"), Interval::H1, ORIGIN_MS, 1)
                .is_err()
        );
        assert!("SOL-USDC".parse::<Pair>().is_err());
        assert!("2h".parse::<Interval>().is_err());
    }

    fn correlation(x: &[f64], y: &[f64]) -> f64 {
        let n = x.len() as f64;
        let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
        let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
        let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
        let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
        cov / (vx * vy).sqrt()
    }
}
