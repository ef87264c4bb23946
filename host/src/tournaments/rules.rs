//! A tournament's fairness rules: what happens to money moved in or out of a registered wallet
//! ([`TransferPolicy`]) and what its board ranks by ([`EvaluationMetric`]). Stored as text;
//! unknown values are refused when given and read as the default when stored (a row written by
//! a newer server never breaks an older one's board).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransferPolicy {
    /// External flows are subtracted from PnL and weighted in the percentage.
    #[default]
    Adjust,
    /// A wallet with any external flow after its baseline is taken off the board.
    Disqualify,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationMetric {
    /// Flow-adjusted return since the baseline (Modified Dietz), in percent.
    #[default]
    PnlPercent,
    Sharpe,
    Sortino,
    Calmar,
}

impl TransferPolicy {
    #[cfg(test)]
    pub(crate) const NAMES: [&'static str; 2] = ["adjust", "disqualify"];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TransferPolicy::Adjust => "adjust",
            TransferPolicy::Disqualify => "disqualify",
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "adjust" => Ok(TransferPolicy::Adjust),
            "disqualify" => Ok(TransferPolicy::Disqualify),
            other => Err(format!(
                "transferPolicy must be `adjust` or `disqualify`, not `{other}`"
            )),
        }
    }

    pub(crate) fn from_stored(text: &str) -> Self {
        Self::parse(text).unwrap_or_default()
    }
}

impl EvaluationMetric {
    #[cfg(test)]
    pub(crate) const NAMES: [&'static str; 4] = ["pnl_percent", "sharpe", "sortino", "calmar"];

    pub fn as_str(self) -> &'static str {
        match self {
            EvaluationMetric::PnlPercent => "pnl_percent",
            EvaluationMetric::Sharpe => "sharpe",
            EvaluationMetric::Sortino => "sortino",
            EvaluationMetric::Calmar => "calmar",
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "pnl_percent" => Ok(EvaluationMetric::PnlPercent),
            "sharpe" => Ok(EvaluationMetric::Sharpe),
            "sortino" => Ok(EvaluationMetric::Sortino),
            "calmar" => Ok(EvaluationMetric::Calmar),
            other => Err(format!(
                "evaluationMetric must be one of pnl_percent, sharpe, sortino, calmar, not `{other}`"
            )),
        }
    }

    pub(crate) fn from_stored(text: &str) -> Self {
        Self::parse(text).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknowns_are_refused() {
        for name in TransferPolicy::NAMES {
            assert_eq!(TransferPolicy::parse(name).expect("known").as_str(), name);
        }
        for name in EvaluationMetric::NAMES {
            assert_eq!(EvaluationMetric::parse(name).expect("known").as_str(), name);
        }
        assert!(TransferPolicy::parse("ignore").is_err());
        assert!(EvaluationMetric::parse("Sharpe").is_err());
        assert_eq!(
            EvaluationMetric::from_stored("future"),
            EvaluationMetric::PnlPercent
        );
    }
}
