//! The payment step every paid entry shares (tournament registration and dungeon entry): ask the
//! chain about the signature, allow an unknown signature time to propagate, and answer in one
//! vocabulary — verified, pending (the client resends the same request), or refused.
//!
//! On a real cluster a transaction the client has just sent may not have reached the RPC node we
//! ask. So a well-formed signature the node does not know is "pending" for
//! [`UNSEEN_SIGNATURE_GRACE`] after the first request that named it, and refused after that. The
//! moment of that first request is a row in `payment_sightings`, so a restart or another node
//! counts from the same moment.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::{Chain, ChainError, ExpectedPayment, PaymentStatus, RejectReason};
use crate::clock::to_millis;
use crate::db::{Store, StoreError};
use crate::http::ApiError;

/// How long a signature the node has never seen is worth waiting for. A transaction can land
/// only while its recent blockhash is valid: 150 slots of ~400 ms, about 60 s, plus the time it
/// takes to be finalized (~13 s) and some margin for the client's clock and retries. Past this,
/// a transaction the node still does not know can no longer be confirmed.
pub(crate) const UNSEEN_SIGNATURE_GRACE: Duration = Duration::seconds(90);

/// What became of a payment check that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PaymentCheck {
    /// Final and exactly as expected: the caller may claim it.
    Verified,
    /// Not final, or not visible yet: resend the same request in a few seconds.
    Pending,
}

/// Why a payment check failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PaymentError {
    /// The transaction is final (or can no longer land) and is not the expected payment.
    #[error("transaction verification failed ({field}): {0}", field = .0.field())]
    Rejected(RejectReason),
    /// The Solana RPC could not be asked.
    #[error("the payment cannot be verified right now (Solana RPC unreachable); retry shortly")]
    Unavailable(#[source] ChainError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(PaymentError);

impl From<PaymentError> for ApiError {
    fn from(error: PaymentError) -> Self {
        match error {
            PaymentError::Rejected(_) => ApiError::Unprocessable(error.to_string()),
            PaymentError::Unavailable(ref source) => {
                tracing::warn!(error = %source, "payment verification unavailable");
                ApiError::Unavailable(error.to_string())
            }
            PaymentError::Store(store) => store.into(),
        }
    }
}

/// The 202 body of every paid entry whose payment is not final yet.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct PendingPayment {
    /// Always true: resend the same request, unchanged, in a few seconds.
    pub retryable: bool,
    /// What to do, in words.
    pub message: String,
}

impl PendingPayment {
    pub(crate) fn new() -> Self {
        PendingPayment::saying(
            "the transaction is not finalized yet; resend the same request in a few seconds",
        )
    }

    /// The same answer in other words (an agent's entry, whose client did not send the payment).
    pub(crate) fn saying(message: impl Into<String>) -> Self {
        PendingPayment {
            retryable: true,
            message: message.into(),
        }
    }
}

impl Default for PendingPayment {
    fn default() -> Self {
        PendingPayment::new()
    }
}

/// Is `signature` the `expected` payment, and final? See the module header for unknown
/// signatures.
pub(crate) async fn check(
    chain: &Chain,
    store: &Store,
    now: DateTime<Utc>,
    signature: &str,
    expected: &ExpectedPayment,
) -> Result<PaymentCheck, PaymentError> {
    let status = chain
        .verify_payment(signature, expected)
        .await
        .map_err(PaymentError::Unavailable)?;
    match status {
        PaymentStatus::Verified { .. } => Ok(PaymentCheck::Verified),
        PaymentStatus::Pending => Ok(PaymentCheck::Pending),
        PaymentStatus::Rejected(RejectReason::UnknownSignature) if well_formed(signature) => {
            let first_seen = first_seen(store, signature, now).await?;
            if now - first_seen < UNSEEN_SIGNATURE_GRACE {
                Ok(PaymentCheck::Pending)
            } else {
                Err(PaymentError::Rejected(RejectReason::UnknownSignature))
            }
        }
        PaymentStatus::Rejected(reason) => Err(PaymentError::Rejected(reason)),
    }
}

/// A signature at all (64 bytes in base58)? Anything else can never land, so it is refused at
/// once.
fn well_formed(signature: &str) -> bool {
    bs58::decode(signature)
        .into_vec()
        .is_ok_and(|bytes| bytes.len() == 64)
}

/// When `signature` was first presented unknown: recorded now unless a request (here or on
/// another node) already did.
async fn first_seen(
    store: &Store,
    signature: &str,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, PaymentError> {
    sqlx::query(
        "INSERT INTO payment_sightings (signature, first_seen_at) VALUES ($1, $2)
         ON CONFLICT (signature) DO NOTHING",
    )
    .bind(signature)
    .bind(to_millis(now))
    .execute(store.write())
    .await?;
    let (at,): (i64,) =
        sqlx::query_as("SELECT first_seen_at FROM payment_sightings WHERE signature = $1")
            .bind(signature)
            .fetch_one(store.write())
            .await?;
    Ok(crate::clock::from_millis(at))
}

/// Forget sightings older than `age` (well past the grace period). Returns how many.
pub(crate) async fn prune_sightings(
    store: &Store,
    now: DateTime<Utc>,
    age: Duration,
) -> Result<u64, PaymentError> {
    let pruned = sqlx::query("DELETE FROM payment_sightings WHERE first_seen_at < $1")
        .bind(to_millis(now - age))
        .execute(store.write())
        .await?;
    Ok(pruned.rows_affected())
}
