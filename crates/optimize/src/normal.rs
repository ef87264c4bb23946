//! The standard normal distribution: density φ, distribution Φ and quantile Φ⁻¹.
//!
//! The deflated Sharpe ratio ([`crate::dsr`]) and the Parzen estimators of the TPE sampler
//! ([`crate::sampler`]) need them; the standard library has no `erf`. Both approximations are
//! classics with published error bounds, written out so results never depend on a platform's
//! libm beyond `exp`, `ln` and `sqrt`.

/// `sqrt(2π)`.
const SQRT_TAU: f64 = 2.506_628_274_631_000_5;

/// The standard normal density `φ(x) = exp(-x²/2) / sqrt(2π)`.
pub fn pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / SQRT_TAU
}

/// `Φ(x)`, the standard normal distribution function: Hart's 1968 algorithm 5666 as written out
/// by G. West ("Better approximations to cumulative normal functions", 2005), accurate to double
/// precision (absolute error about 1e-15) over the whole line; 0 or 1 beyond |x| > 37. NaN gives
/// NaN.
pub fn cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let a = x.abs();
    let tail = if a > 37.0 {
        0.0
    } else {
        let e = (-0.5 * a * a).exp();
        if a < 7.071_067_811_865_47 {
            const NUM: [f64; 7] = [
                3.526_249_659_989_11e-2,
                0.700_383_064_443_688,
                6.373_962_203_531_65,
                33.912_866_078_383,
                112.079_291_497_871,
                221.213_596_169_931,
                220.206_867_912_376,
            ];
            const DEN: [f64; 8] = [
                8.838_834_764_831_84e-2,
                1.755_667_163_182_64,
                16.064_177_579_207,
                86.780_732_202_946_1,
                296.564_248_779_674,
                637.333_633_378_831,
                793.826_512_519_948,
                440.413_735_824_752,
            ];
            let horner = |c: &[f64]| c.iter().fold(0.0, |acc, &k| acc * a + k);
            let num = e * horner(&NUM);
            let den = horner(&DEN);
            num / den
        } else {
            // Continued fraction for the far tail.
            let mut b = a + 0.65;
            b = a + 4.0 / b;
            b = a + 3.0 / b;
            b = a + 2.0 / b;
            b = a + 1.0 / b;
            e / b / SQRT_TAU
        }
    };
    if x > 0.0 { 1.0 - tail } else { tail }
}

/// `Φ⁻¹(p)`, the standard normal quantile: P. J. Acklam's rational approximation (relative error
/// 1.15e-9) polished by one Halley step against [`cdf`], which brings it to about 1e-15 in the
/// central region. `p ≤ 0` gives -∞, `p ≥ 1` gives +∞, NaN gives NaN.
pub fn quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    if p.is_nan() {
        return f64::NAN;
    }
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    };
    // One step of Halley's method on Φ(x) - p.
    let e = cdf(x) - p;
    let u = e * SQRT_TAU * (0.5 * x * x).exp();
    let refined = x - u / (1.0 + 0.5 * x * u);
    if refined.is_finite() { refined } else { x }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_matches_known_values() {
        // Reference values: 0.5·erfc(-x/√2) to 16 digits.
        for (x, want) in [
            (0.0, 0.5),
            (1.96, 0.975_002_104_851_779_5),
            (-1.0, 0.158_655_253_931_457_07),
            (3.0, 0.998_650_101_968_369_9),
            (-8.0, 6.220_960_574_271_819e-16),
        ] {
            let got = cdf(x);
            assert!(
                (got - want).abs() < 1e-14 + 1e-9 * want,
                "Φ({x}) = {got}, want {want}"
            );
        }
        assert_eq!(cdf(-40.0), 0.0);
        assert_eq!(cdf(40.0), 1.0);
        assert!((pdf(0.0) - 0.398_942_280_401_432_7).abs() < 1e-15);
    }

    #[test]
    fn quantile_inverts_cdf() {
        assert!((quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-9);
        assert!((quantile(0.5)).abs() < 1e-15);
        assert!((quantile(0.01) + 2.326_347_874_040_841).abs() < 1e-9);
        assert!((quantile(1e-10) + 6.361_340_902_404_056).abs() < 1e-6);
        for i in 1..200 {
            let p = f64::from(i) / 200.0;
            assert!((cdf(quantile(p)) - p).abs() < 1e-13, "{p}");
        }
        assert_eq!(quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(quantile(1.0), f64::INFINITY);
    }
}
