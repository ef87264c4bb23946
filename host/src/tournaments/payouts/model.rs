//! The payout columns with a closed set of values, decoded into enums: a stored value outside
//! them is refused when read ([`UnknownValue`]), never passed on as a string.

use serde::Serialize;
use utoipa::ToSchema;

use crate::db::UnknownValue;

/// Where a payout stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PayoutStatus {
    Pending,
    Sent,
    Failed,
}

impl PayoutStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PayoutStatus::Pending => "pending",
            PayoutStatus::Sent => "sent",
            PayoutStatus::Failed => "failed",
        }
    }

    /// The status named `name`, if there is one.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        [
            PayoutStatus::Pending,
            PayoutStatus::Sent,
            PayoutStatus::Failed,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }
}

impl TryFrom<String> for PayoutStatus {
    type Error = UnknownValue;

    fn try_from(stored: String) -> Result<Self, UnknownValue> {
        PayoutStatus::parse(&stored).ok_or(UnknownValue(stored))
    }
}

/// What a payout pays for, which decides the wallet it is paid from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SourceKind {
    /// A prize; `source_id` is the tournament.
    Tournament,
    /// The dungeon's daily prize; `source_id` is the day.
    Dungeon,
    /// An entry paid back after a cancellation; `source_id` is the tournament.
    Refund,
}

impl SourceKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SourceKind::Tournament => "tournament",
            SourceKind::Dungeon => "dungeon",
            SourceKind::Refund => "refund",
        }
    }

    /// The kind named `name`, if there is one.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        [
            SourceKind::Tournament,
            SourceKind::Dungeon,
            SourceKind::Refund,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
    }
}

impl TryFrom<String> for SourceKind {
    type Error = UnknownValue;

    fn try_from(stored: String) -> Result<Self, UnknownValue> {
        SourceKind::parse(&stored).ok_or(UnknownValue(stored))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_round_trip_and_unknown_ones_are_refused() {
        for status in [
            PayoutStatus::Pending,
            PayoutStatus::Sent,
            PayoutStatus::Failed,
        ] {
            assert_eq!(
                PayoutStatus::try_from(status.as_str().to_owned()).ok(),
                Some(status)
            );
        }
        for kind in [
            SourceKind::Tournament,
            SourceKind::Dungeon,
            SourceKind::Refund,
        ] {
            assert_eq!(
                SourceKind::try_from(kind.as_str().to_owned()).ok(),
                Some(kind)
            );
        }
        assert!(PayoutStatus::try_from("paid".to_owned()).is_err());
        assert!(SourceKind::try_from("bonus".to_owned()).is_err());
    }
}
