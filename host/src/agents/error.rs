//! What can go wrong when operators create, start, stop, measure or upload for agents. The
//! services of this module return [`AgentError`]; the `v1` family maps it to its status and
//! envelope at the edge (`crate::v1::agents`), so no agent service knows about HTTP.

use crate::db::StoreError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    /// No such agent among the caller's (never says whether another account has it).
    #[error("agent `{0}` not found")]
    NotFound(String),
    /// A value the caller sent is not acceptable; `field` names what to fix.
    #[error("{message}")]
    Invalid {
        /// A dotted path: `strategy.type`, or `strategy.params.<name>` for a parameter.
        field: std::borrow::Cow<'static, str>,
        message: String,
    },
    /// No uploaded strategy by that id among the caller's (never says whether another account
    /// has it).
    #[error("{0}")]
    StrategyNotFound(String),
    /// Another agent (of any account) has this username already: 409 (docs/api.md, "Families,
    /// credentials and the answers they share"), not a malformed value.
    #[error("the username `{0}` is taken")]
    UsernameTaken(String),
    /// The agent's wallet holds less SOL than the fee reserve it needs to start.
    #[error(
        "the agent's wallet {wallet} holds {held_sol} SOL; send at least {reserve_sol} SOL for fees to it, then start again"
    )]
    InsufficientFunds {
        wallet: String,
        held_sol: f64,
        reserve_sol: f64,
    },
    /// The chain could not be asked for the agent's balance just now.
    #[error("could not read the agent's wallet balance; try again shortly")]
    BalanceUnavailable,
    /// An uploaded component over the sandbox's size limit.
    #[error("{0}")]
    ComponentTooLarge(String),
    /// An upload that would take the account over its strategy quota.
    #[error("{0}")]
    QuotaExceeded(String),
    /// The component was banned by the service's admins.
    #[error("{0}")]
    Banned(String),
    /// The node could not take the work in time (compile workers busy); try again later.
    #[error("{0}")]
    Busy(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl AgentError {
    pub(crate) fn invalid(
        field: impl Into<std::borrow::Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        AgentError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn internal(error: impl Into<anyhow::Error>) -> Self {
        AgentError::Internal(error.into())
    }
}

crate::db::store_error_from_sqlx!(AgentError);
