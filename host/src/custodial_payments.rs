//! Paying once from a wallet whose key the server holds ([`crate::custodial`]): an agent's entry
//! fee from its own wallet, an account's registration or dungeon entry from its embedded wallet.
//!
//! A payment is never made twice. The signed transfer is recorded — one per purpose and subject
//! (an agent and tournament, a registration memo, a dungeon quote) — before it is sent, in one
//! transaction with the job that settles it if nobody comes back for it, and with the spend of
//! the API key that authorised it ([`crate::api_keys::spend::charge`], which may refuse it). A
//! retried or concurrent call finds that row and re-checks or re-sends the same transaction
//! (the chain executes a signature once). Only when the chain never saw it and its blockhash can
//! no longer land is it forgotten (its spend released) and a new transfer signed.

use base64::Engine;
use chrono::{DateTime, Duration, Utc};

use crate::api_keys::spend::{self, Charge, SpendError, SpendRefused};
use crate::chain::Chain;
use crate::chain::{ChainError, Keypair, SignedTransfer};
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::crypto::Sealer;
use crate::db::Store;
use crate::db::StoreError;
use crate::domain::WalletAddress;
use crate::usdc::Usdc;

/// After this long a transfer the chain has never seen can no longer land (its blockhash is
/// about 60 s old), so a new one may be signed in its place.
pub(crate) const UNSEEN_FOR: Duration = Duration::seconds(90);

/// When a settling job first looks: after any call that is still polling has had its chance,
/// and after a transfer the chain never saw can no longer land.
pub(crate) const SETTLE_AFTER: Duration = Duration::minutes(3);

/// What to pay, once.
pub(crate) struct Order<'a> {
    /// What kind of payment: `agent_entry`, `account_entry`, `dungeon_entry`.
    pub purpose: &'static str,
    /// What it pays for, once per purpose.
    pub subject: &'a str,
    pub payer: &'a WalletAddress,
    /// Whose payment it is.
    pub account_id: &'a str,
    pub recipient: &'a str,
    pub amount_raw: u64,
    pub memo: &'a str,
    /// The tournament or the dungeon day, and what settling the payment needs (JSON).
    pub reference: &'a str,
    pub detail: serde_json::Value,
    /// The job kind that settles it (subject: the signature).
    pub settle_job: &'static str,
    /// The payer in the words of a refusal: "the agent's wallet", "the embedded wallet".
    pub payer_name: &'a str,
    /// The API key whose spend limits this payment counts against, and what it pays for in the
    /// audit log's words.
    pub spender: Option<(&'a str, &'a str)>,
}

/// A recorded payment.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Recorded {
    pub purpose: String,
    pub subject: String,
    pub signature: String,
    pub wire: String,
    pub payer: String,
    pub account_id: String,
    pub reference: String,
    pub detail: String,
    pub amount_raw: i64,
    pub signed_at: i64,
}

impl Recorded {
    /// The recorded `detail`, or an empty object if it is unreadable.
    pub(crate) fn detail(&self) -> serde_json::Value {
        serde_json::from_str(&self.detail).unwrap_or_else(|_| serde_json::json!({}))
    }
}

/// Why a payment was not made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PayError {
    /// The wallet cannot pay (too little USDC or SOL, or the node refused the transfer).
    #[error("{0}")]
    CannotPay(String),
    /// The key's spend limits refuse it; nothing was sent.
    #[error(transparent)]
    Refused(#[from] SpendRefused),
    #[error("the Solana RPC node is unavailable: {0}")]
    Chain(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

crate::db::store_error_from_sqlx!(PayError);

impl From<SpendError> for PayError {
    fn from(error: SpendError) -> Self {
        match error {
            SpendError::Refused(refused) => PayError::Refused(refused),
            SpendError::Store(store) => PayError::Store(store),
        }
    }
}

const COLUMNS: &str = "purpose, subject, signature, wire, payer, account_id, reference, detail, amount_raw, signed_at";

/// The payment recorded for `purpose` and `subject`, if any.
pub(crate) async fn recorded(
    store: &Store,
    purpose: &str,
    subject: &str,
) -> Result<Option<Recorded>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM custodial_payments WHERE purpose = $1 AND subject = $2"
    ))
    .bind(purpose)
    .bind(subject)
    .fetch_optional(store.read())
    .await?)
}

/// The payment recorded with `signature`, if it is still the one (a replaced one is gone).
pub(crate) async fn by_signature(
    store: &Store,
    signature: &str,
) -> Result<Option<Recorded>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM custodial_payments WHERE signature = $1"
    ))
    .bind(signature)
    .fetch_optional(store.read())
    .await?)
}

/// Whether `signature` has been claimed (by the entry it paid, or by its refund).
pub(crate) async fn claimed(store: &Store, signature: &str) -> Result<bool, StoreError> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT purpose FROM payment_claims WHERE signature = $1")
            .bind(signature)
            .fetch_optional(store.read())
            .await?;
    Ok(row.is_some())
}

/// The signature of `order`'s payment: the recorded one, (re)sent if the chain has not seen it,
/// or a new one once the recorded one can no longer land.
pub(crate) async fn pay_once(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    order: &Order<'_>,
) -> Result<String, PayError> {
    if let Some(recorded) = recorded(store, order.purpose, order.subject).await?
        && !forget_if_dead(store, clock, chain, &recorded).await?
    {
        if !seen(chain, &recorded.signature).await? {
            // Not seen yet and still able to land: send the same transaction again.
            send(chain, &recorded.wire, order.payer_name).await?;
        }
        return Ok(recorded.signature);
    }
    let SignedTransfer {
        signature, wire, ..
    } = sign(store, chain, sealer, order).await?;
    let wire = base64::engine::general_purpose::STANDARD.encode(&wire);
    let now = clock.now();
    let mut tx = store.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO custodial_payments (purpose, subject, signature, wire, payer, account_id,
                                         reference, detail, amount_raw, signed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (purpose, subject) DO NOTHING",
    )
    .bind(order.purpose)
    .bind(order.subject)
    .bind(&signature)
    .bind(&wire)
    .bind(order.payer.as_str())
    .bind(order.account_id)
    .bind(order.reference)
    .bind(order.detail.to_string())
    .bind(i64::try_from(order.amount_raw).unwrap_or(i64::MAX))
    .bind(to_millis(now))
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 0 {
        // A concurrent call recorded its payment first: that one is the payment.
        drop(tx);
        return Box::pin(pay_once(store, clock, chain, sealer, order)).await;
    }
    if let Some((key_id, paid_for)) = order.spender {
        let charge = Charge {
            key_id,
            account_id: order.account_id,
            amount: Usdc::from_raw(i64::try_from(order.amount_raw).unwrap_or(i64::MAX)),
            paid_for,
            signature: &signature,
        };
        // Refused: the transaction rolls back and the signed transfer is never sent.
        spend::charge(&mut tx, &charge, now).await?;
    }
    // Recorded with the job that settles it, so a payment nobody comes back for is never
    // stranded.
    crate::scheduler::enqueue(
        &mut tx,
        order.settle_job,
        &signature,
        now + SETTLE_AFTER,
        now,
    )
    .await?;
    tx.commit().await?;
    send(chain, &wire, order.payer_name).await?;
    Ok(signature)
}

async fn sign(
    store: &Store,
    chain: &Chain,
    sealer: &Sealer,
    order: &Order<'_>,
) -> Result<SignedTransfer, PayError> {
    let internal = |error: String| PayError::Internal(anyhow::anyhow!(error));
    let key = crate::custodial::signing_key(store, sealer, order.payer)
        .await
        .map_err(PayError::Internal)?
        .ok_or_else(|| internal(format!("custodial wallet {} has no key", order.payer)))?;
    let payer = Keypair::from_signing_key(key);
    let recipient = WalletAddress::parse(order.recipient).map_err(internal)?;
    chain
        .sign_token_transfer(
            &payer,
            &recipient,
            chain.stablecoin_mint(),
            order.amount_raw,
            order.memo,
        )
        .await
        .map_err(|error| match error {
            ChainError::Transfer(why) => PayError::CannotPay(format!(
                "{} cannot pay {}: {why}",
                order.payer_name,
                fee(order)
            )),
            other => PayError::Chain(other.to_string()),
        })
}

fn fee(order: &Order<'_>) -> String {
    format!(
        "the fee of {} USDC",
        Usdc::from_raw(i64::try_from(order.amount_raw).unwrap_or(i64::MAX))
    )
}

async fn seen(chain: &Chain, signature: &str) -> Result<bool, PayError> {
    Ok(chain
        .signature_status(signature)
        .await
        .map_err(|error| PayError::Chain(error.to_string()))?
        .is_some())
}

/// Forget `recorded` if it can never land (the chain never saw it and its blockhash has
/// expired): its row goes, and the spend it was charged is released, in one transaction. True
/// when it was forgotten (by this call or a concurrent one).
pub(crate) async fn forget_if_dead(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    recorded: &Recorded,
) -> Result<bool, PayError> {
    let now = clock.now();
    if !dead_at(recorded.signed_at, now) || seen(chain, &recorded.signature).await? {
        return Ok(false);
    }
    let mut tx = store.begin().await?;
    // Only if nobody replaced it first.
    sqlx::query("DELETE FROM custodial_payments WHERE signature = $1")
        .bind(&recorded.signature)
        .execute(&mut *tx)
        .await?;
    spend::release(
        &mut tx,
        &recorded.signature,
        "the payment never reached the network and can no longer land",
        now,
    )
    .await?;
    tx.commit().await?;
    tracing::info!(
        purpose = recorded.purpose,
        subject = recorded.subject,
        signature = recorded.signature,
        "a custodial payment that never landed was forgotten"
    );
    Ok(true)
}

fn dead_at(signed_at: i64, now: DateTime<Utc>) -> bool {
    to_millis(now) - signed_at >= UNSEEN_FOR.num_milliseconds()
}

/// Send a recorded transfer. A refusal that leaves nothing on chain (e.g. too little USDC) is
/// the wallet's problem; a transport failure leaves the record to be sent again next call.
async fn send(chain: &Chain, wire: &str, payer_name: &str) -> Result<(), PayError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(wire)
        .map_err(|error| PayError::Internal(anyhow::anyhow!("recorded transfer: {error}")))?;
    match chain.send_signed(&bytes).await {
        Ok(_) => Ok(()),
        Err(ChainError::Rpc { message, .. }) => {
            if message.contains("already been processed") || message.contains("AlreadyProcessed") {
                return Ok(());
            }
            Err(PayError::CannotPay(format!(
                "{payer_name} could not pay the fee: {message}"
            )))
        }
        Err(error) => Err(PayError::Chain(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payment_is_dead_once_its_blockhash_can_no_longer_land() {
        let now = crate::clock::from_millis(1_000_000);
        assert!(!dead_at(1_000_000 - 89_999, now));
        assert!(dead_at(1_000_000 - 90_000, now));
    }
}
