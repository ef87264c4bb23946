//! What can go wrong asking a model. The variants are the ones the strategy interface will
//! report to components (`docs/models.md`); none carries a key.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The host has no endpoint for the vendor.
    #[error("no endpoint for vendor `{0}` on this host")]
    NoEndpoint(String),
    /// Neither the account nor the host has a key for the vendor.
    #[error("no key for vendor `{0}`: add one with PUT /api/account/model-keys/{0}")]
    NoKey(String),
    /// The agent's token budget for the day is spent (kept by the agents' ticks, which check it
    /// before asking).
    #[error("the model token budget is exhausted")]
    BudgetExhausted,
    /// The provider did not answer within the per-call timeout.
    #[error("the model did not answer in time")]
    Timeout,
    /// The provider said no (or could not be reached: status 0), or is backed off after a 429.
    #[error("the provider refused ({status}): {reason}")]
    Refused { status: u16, reason: String },
    /// The provider answered something that is not a completion.
    #[error("the provider's answer is malformed: {0}")]
    Malformed(String),
    /// The account's stored key could not be read (database unavailable, or sealed under
    /// another master key).
    #[error("the stored model key could not be read")]
    KeyUnavailable,
}
