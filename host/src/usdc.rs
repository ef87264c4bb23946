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
}
