//! Trading costs and time scales, so a strategy asks for an edge that pays for its trades.
//!
//! Every fill of the platform's paper fill model costs the fee (10 bps) plus the slippage
//! (5 bps) at the defaults; a round trip pays both twice. A move worth trading is measured
//! against the interval's own volatility: on 5-minute candles a typical move is smaller than a
//! round trip, on 4-hour candles it is ten times larger.

/// Fee plus slippage of one fill at the platform's defaults, as a fraction of the notional.
pub const FILL_COST: f64 = 0.0015;
/// A buy and a sell.
pub const ROUND_TRIP_COST: f64 = 2.0 * FILL_COST;

/// Length of an interval (`5m`, `15m`, `1h`, `4h`, `1d`) in minutes; `None` for another text.
pub fn interval_minutes(interval: &str) -> Option<u32> {
    Some(match interval {
        "5m" => 5,
        "15m" => 15,
        "1h" => 60,
        "4h" => 240,
        "1d" => 1440,
        _ => return None,
    })
}

/// How many times longer than the textbook periods (written for hourly candles) an indicator
/// should look back at `interval`, so it reads the same stretch of time: 4 at 5m, 2 at 15m, 1 at
/// an hour and above (a 200-candle window holds at most 4 × 50 five-minute candles).
pub fn time_scale(interval: &str) -> usize {
    match interval_minutes(interval) {
        Some(m) if m < 15 => 4,
        Some(m) if m < 60 => 2,
        _ => 1,
    }
}

/// A day's volatility from the per-candle volatility `sigma` at `interval` (square-root of
/// time: `sigma * sqrt(candles per day)`); `sigma` itself for an unknown interval.
pub fn daily_volatility(sigma: f64, interval: &str) -> f64 {
    match interval_minutes(interval) {
        Some(m) => sigma * libm::sqrt(1440.0 / f64::from(m)),
        None => sigma,
    }
}

/// An hour's volatility from the per-candle volatility `sigma` at an interval under an hour
/// (`sigma * sqrt(60 / minutes)`); `sigma` itself at an hour and above or an unknown interval.
/// A strategy that holds for hours, not candles, measures its costs against this, so at 5m it
/// asks for the edge it asks for at 1h instead of one twelve times larger in 5-minute sigmas.
pub fn hourly_volatility(sigma: f64, interval: &str) -> f64 {
    match interval_minutes(interval) {
        Some(m) if m < 60 => sigma * libm::sqrt(60.0 / f64::from(m)),
        _ => sigma,
    }
}

/// The per-tick weight of an exponential average whose half-life is `half_life_minutes` of
/// time at `interval` (`1 - 0.5^(interval / half-life)`), so a smoothed signal forgets at the same
/// pace at every interval; 1 (no smoothing) for an unknown interval.
pub fn smoothing(interval: &str, half_life_minutes: f64) -> f64 {
    match interval_minutes(interval) {
        Some(m) if half_life_minutes > 0.0 => {
            1.0 - libm::pow(0.5, f64::from(m) / half_life_minutes)
        }
        _ => 1.0,
    }
}

/// A round trip's cost in units of the per-candle volatility `sigma` (log-return standard
/// deviation), capped at `cap`: about 1–2 at 5m, 0.3 at 1h, 0.15 at 4h on the simulated SOL.
/// Thresholds grow with it, so a strategy trades less where costs dominate the moves.
pub fn cost_in_sigmas(sigma: f64, cap: f64) -> f64 {
    if sigma > 0.0 {
        (ROUND_TRIP_COST / sigma).min(cap)
    } else {
        cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_costs() {
        assert_eq!(time_scale("5m"), 4);
        assert_eq!(time_scale("15m"), 2);
        assert_eq!(time_scale("4h"), 1);
        assert_eq!(time_scale("odd"), 1);
        assert!((cost_in_sigmas(0.003, 5.0) - 1.0).abs() < 1e-12);
        assert_eq!(cost_in_sigmas(0.0, 2.0), 2.0);
        assert_eq!(cost_in_sigmas(0.0001, 2.0), 2.0);
        assert!((daily_volatility(0.01, "1h") - 0.01 * 24f64.sqrt()).abs() < 1e-12);
        assert!((daily_volatility(0.01, "1d") - 0.01).abs() < 1e-12);
        assert!((hourly_volatility(0.01, "5m") - 0.01 * 12f64.sqrt()).abs() < 1e-12);
        assert_eq!(hourly_volatility(0.01, "1h"), 0.01);
        assert_eq!(hourly_volatility(0.01, "4h"), 0.01);
        assert!((smoothing("1h", 60.0) - 0.5).abs() < 1e-12);
        assert!((smoothing("4h", 60.0) - 0.9375).abs() < 1e-12);
        assert_eq!(smoothing("2h", 60.0), 1.0);
    }
}
