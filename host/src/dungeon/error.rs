//! What can go wrong in the dungeon: an unknown or closed day, a refused entry, a turn out of
//! order, a run that has ended. Every service of this module returns [`DungeonError`]; the
//! platform API maps it to its status and body at the edge (`dungeon::routes`).

use crate::account::AccountError;
use crate::api_keys::spend::{SpendError, SpendRefused};
use crate::chain::payment::PaymentError;
use crate::custodial_payments::PayError;
use crate::db::StoreError;
use crate::http::rate_limit::Limited;

#[derive(Debug, thiserror::Error)]
pub(crate) enum DungeonError {
    /// Not a dungeon id, or a day still to come.
    #[error("no dungeon `{0}` (ids are UTC dates, YYYY-MM-DD, up to today)")]
    UnknownDungeon(String),
    /// A past day: entries are closed.
    #[error("dungeon {day} is closed; only today's dungeon ({today}) can be entered")]
    Closed { day: String, today: String },
    /// No such run (or, for its credential, not one of the caller's).
    #[error("no dungeon run `{0}`")]
    UnknownRun(String),
    /// The request is malformed; the message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The payer is not one of the caller's wallets.
    #[error(transparent)]
    Account(#[from] AccountError),
    /// The quote id is not one this deployment signed; the message says where to get one.
    #[error("{0}")]
    QuoteUnknown(String),
    /// The quote is genuine but for another day or wallet.
    #[error("{0}")]
    QuoteMismatch(String),
    /// The quote's time is up.
    #[error("{0}")]
    QuoteExpired(String),
    #[error("quote {0} has already been used for a run")]
    QuoteUsed(String),
    #[error("this transaction signature has already paid for an entry")]
    SignatureUsed,
    #[error(transparent)]
    Payment(#[from] PaymentError),
    /// `payFrom: "embedded"` by a caller who may not pay from the embedded wallet, or not this
    /// much.
    #[error(transparent)]
    Spend(#[from] SpendRefused),
    /// The embedded wallet cannot pay the entry.
    #[error("{0}")]
    CannotPay(String),
    #[error("the Solana RPC node is unavailable: {0}")]
    Chain(String),
    /// A turn number that is not the next one, or a run contended by several requests.
    #[error("{0}")]
    OutOfTurn(String),
    /// The run is over, so its key no longer works; `status` says how it ended, when known.
    #[error(
        "run {run_id} has ended{}; its key no longer works",
        .status.as_ref().map(|status| format!(" ({status})")).unwrap_or_default()
    )]
    RunEnded {
        run_id: String,
        status: Option<String>,
    },
    /// A genuine run key, of another run.
    #[error("this run key belongs to another run, not to {0}")]
    OtherRun(String),
    /// The run's account is suspended, so its runs no longer play (`docs/admin.md`).
    #[error("this run's account is suspended ({0}); its run keys no longer work")]
    AccountSuspended(String),
    /// Too many broadcasts on this run.
    #[error(transparent)]
    Limited(#[from] Limited),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl DungeonError {
    pub(crate) fn internal(error: impl Into<anyhow::Error>) -> Self {
        DungeonError::Internal(error.into())
    }
}

crate::db::store_error_from_sqlx!(DungeonError);

impl From<SpendError> for DungeonError {
    fn from(error: SpendError) -> Self {
        match error {
            SpendError::Refused(refused) => DungeonError::Spend(refused),
            SpendError::Store(store) => DungeonError::Store(store),
        }
    }
}

impl From<PayError> for DungeonError {
    fn from(error: PayError) -> Self {
        match error {
            PayError::CannotPay(message) => DungeonError::CannotPay(message),
            PayError::Refused(refused) => DungeonError::Spend(refused),
            PayError::Chain(message) => DungeonError::Chain(message),
            PayError::Store(store) => DungeonError::Store(store),
            PayError::Internal(source) => DungeonError::Internal(source),
        }
    }
}
