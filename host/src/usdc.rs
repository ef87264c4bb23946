//! The stablecoin's amounts, in one place: raw integer units with [`DECIMALS`] decimals (USDC's,
//! and the simnet stablecoin's). Money is stored, summed and compared raw; [`Usdc::ui`] is the
//! display amount the API shows next to it, never used for arithmetic.

/// Decimals of the stablecoin.
pub(crate) const DECIMALS: u32 = 6;
/// Raw units per whole stablecoin.
pub(crate) const UNIT: i64 = 10_i64.pow(DECIMALS);

/// An amount of the stablecoin in raw units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Usdc(i64);

impl Usdc {
    pub(crate) const fn from_raw(raw: i64) -> Self {
        Usdc(raw)
    }

    /// `whole` stablecoins.
    pub(crate) const fn whole(whole: i64) -> Self {
        Usdc(whole * UNIT)
    }

    pub(crate) const fn raw(self) -> i64 {
        self.0
    }

    /// The display amount (1 USDC = 1.0).
    pub(crate) fn ui(self) -> f64 {
        self.0 as f64 / UNIT as f64
    }

    /// A display amount as sent in a request: `None` unless it is finite and has at most
    /// [`DECIMALS`] decimals. (JSON numbers arrive as binary floats, so `0.3` is within a
    /// thousandth of a raw unit of 300000, not exactly on it.)
    pub(crate) fn from_ui(amount: f64) -> Option<Self> {
        let scaled = amount * UNIT as f64;
        if !scaled.is_finite() || scaled.abs() >= i64::MAX as f64 {
            return None;
        }
        let raw = scaled.round();
        ((scaled - raw).abs() <= 1e-3).then_some(Usdc(raw as i64))
    }
}

/// Whole stablecoins with only the decimals it needs: `2`, `2.5`, `0.000001`.
impl std::fmt::Display for Usdc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let (whole, fraction) = (
            self.0.unsigned_abs() / UNIT as u64,
            self.0.unsigned_abs() % UNIT as u64,
        );
        if fraction == 0 {
            return write!(f, "{sign}{whole}");
        }
        let digits = format!("{fraction:06}");
        write!(f, "{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_amounts_have_six_decimals() {
        assert_eq!(Usdc::whole(1).raw(), 1_000_000);
        assert!((Usdc::from_raw(1_500_000).ui() - 1.5).abs() < f64::EPSILON);
        assert!((Usdc::from_raw(1).ui() - 0.000_001).abs() < f64::EPSILON);
        assert_eq!(Usdc::from_raw(-2_000_000).ui(), -2.0);
    }

    #[test]
    fn request_amounts_keep_at_most_six_decimals() {
        assert_eq!(Usdc::from_ui(0.3), Some(Usdc::from_raw(300_000)));
        assert_eq!(Usdc::from_ui(2.0), Some(Usdc::whole(2)));
        assert_eq!(Usdc::from_ui(0.000_001), Some(Usdc::from_raw(1)));
        assert_eq!(
            Usdc::from_ui(1_000_000.000_001),
            Some(Usdc::from_raw(1_000_000_000_001))
        );
        assert_eq!(Usdc::from_ui(0.000_000_5), None);
        assert_eq!(Usdc::from_ui(1.234_567_8), None);
        assert_eq!(Usdc::from_ui(f64::NAN), None);
        assert_eq!(Usdc::from_ui(1e300), None);
    }

    #[test]
    fn amounts_print_with_the_decimals_they_need() {
        assert_eq!(Usdc::whole(2).to_string(), "2");
        assert_eq!(Usdc::from_raw(2_500_000).to_string(), "2.5");
        assert_eq!(Usdc::from_raw(1).to_string(), "0.000001");
        assert_eq!(Usdc::from_raw(-1_500_000).to_string(), "-1.5");
    }
}
