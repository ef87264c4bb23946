//! Entering an agent into a tournament
//! (`POST /api/v1/public/agents/{agentId}/tournaments/{tournamentId}/enter`): the agent's own
//! wallet is registered, and for a paid tournament the fee is paid from that wallet — signed by
//! the server with the agent's custodial key, with the registration memo — then verified like
//! any other payment.
//!
//! A payment is never made twice. The signed transfer is recorded (one row per agent and
//! tournament) before it is sent; a retried or concurrent call finds that row and re-checks or
//! re-sends the same transaction (the chain executes a signature once). Only when the chain never
//! saw it and its blockhash can no longer land is a new transfer signed.
//!
//! A fee is never sent for an entry the tournament would refuse: everything that can be checked
//! before money moves (open, a seat left, not registered yet) is checked first, and again in the
//! registering transaction. A fee that landed but could not register (a race took the last seat,
//! the tournament closed meanwhile) is refunded once, as a `refund` payout with its reason
//! (`tournaments::refunds`); its signature is then claimed, so it can neither register nor be
//! refunded again. Each recorded fee also has a settling job ([`SETTLE_JOB`]) that finishes the
//! entry, or refunds it, if no call comes back for it.

use base64::Engine;
use chrono::Duration;

use super::{AgentError, service};
use crate::auth::Caller;
use crate::chain::ExpectedPayment;
use crate::chain::Keypair;
use crate::chain::payment::{self, PaymentCheck, PaymentError};
use crate::clock::to_millis;
use crate::db::StoreError;
use crate::domain::WalletAddress;
use crate::state::AppState;
use crate::tournaments::model::{Tournament, registration_memo};
use crate::tournaments::refunds::{self, UnregisteredFee};
use crate::tournaments::registration::{self, Outcome, RegistrationError};

/// After this long a transfer the chain has never seen can no longer land (its blockhash is
/// about 60 s old), so a new one may be signed in its place.
const UNSEEN_FOR: Duration = Duration::seconds(90);

/// The job that settles one recorded fee (subject: its signature) when no call comes back for
/// it: registers the entry, or refunds the fee if it cannot register.
pub(crate) const SETTLE_JOB: &str = "agent_entry.settle";

/// When the settling job first looks: after any call that is still polling has had its chance,
/// and after a transfer the chain never saw can no longer land.
const SETTLE_AFTER: Duration = Duration::minutes(3);

/// What an entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entered {
    /// Registered; the fee's signature for a paid tournament.
    Registered { signature: Option<String> },
    /// The fee is paid but not final yet: call again in a few seconds.
    Pending { signature: String },
}

/// Why an entry failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EntryError {
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The registration refused it, for the registration's own reason.
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// The registration refused it after its fee landed; the fee is refunded by `payout_id`.
    #[error("{refused}; the entry fee it paid is refunded (payout {payout_id})")]
    Refunded {
        refused: RegistrationError,
        payout_id: String,
    },
    /// The registration refused it while its fee is not final yet; the fee is refunded once it
    /// is (by the next call or the settling job).
    #[error("{0}; the entry fee it paid is not final yet and will be refunded once it is")]
    RefundOnceFinal(RegistrationError),
    /// The wallet cannot pay the fee.
    #[error("{0}")]
    CannotPay(String),
    #[error("the Solana RPC node is unavailable: {0}")]
    Chain(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

crate::db::store_error_from_sqlx!(EntryError);

fn internal(error: impl Into<anyhow::Error>) -> EntryError {
    EntryError::Internal(error.into())
}

/// Enter the account's agent `agent_id` into `tournament_id`.
pub(crate) async fn enter(
    state: &AppState,
    account_id: &str,
    agent_id: &str,
    tournament_id: &str,
    invite_code: Option<&str>,
) -> Result<Entered, EntryError> {
    let agent = service::find(state, account_id, agent_id)
        .await?
        .ok_or_else(|| AgentError::NotFound(agent_id.to_owned()))?;
    // A private tournament is as unknown as a missing one without its invite code, and its fee
    // is never paid before that is checked.
    let tournament = crate::tournaments::privacy::find_visible(state, tournament_id, invite_code)
        .await?
        .ok_or_else(|| RegistrationError::NotFound(tournament_id.to_owned()))?;
    let caller = Caller {
        account_id: account_id.to_owned(),
    };
    let wallet = agent.wallet_address.clone();
    if tournament.entry_fee_raw <= 0 {
        registration::register_wallet(state, &tournament, &caller, &wallet, None).await?;
        return Ok(Entered::Registered { signature: None });
    }
    if let Err(refused) = registration::precheck(state, &tournament, &caller, &wallet).await {
        // Nothing is paid for an entry the tournament refuses. A fee an earlier call already
        // sent can register nothing now either: it is paid back.
        let recorded: Option<(String,)> = sqlx::query_as(
            "SELECT signature FROM agent_entry_payments WHERE agent_id = $1 AND tournament_id = $2",
        )
        .bind(agent_id)
        .bind(&tournament.id)
        .fetch_optional(state.store.read())
        .await?;
        return Err(match recorded {
            Some((signature,)) if permanent(&refused) => {
                refund_unregistered(state, &tournament, &caller, &wallet, &signature, refused).await
            }
            _ => refused.into(),
        });
    }
    let signature = pay_once(state, agent_id, &wallet, &tournament).await?;
    complete(state, &tournament, &caller, &wallet, &signature).await
}

/// Register the agent's wallet with its recorded fee `signature`; a refusal that no retry can
/// change refunds the fee if it landed.
async fn complete(
    state: &AppState,
    tournament: &Tournament,
    caller: &Caller,
    wallet: &str,
    signature: &str,
) -> Result<Entered, EntryError> {
    match registration::register_wallet(
        state,
        tournament,
        caller,
        wallet,
        Some(signature.to_owned()),
    )
    .await
    {
        Ok(Outcome::Registered { .. }) => Ok(Entered::Registered {
            signature: Some(signature.to_owned()),
        }),
        Ok(Outcome::Pending) => Ok(Entered::Pending {
            signature: signature.to_owned(),
        }),
        Err(refused) if permanent(&refused) => {
            Err(refund_unregistered(state, tournament, caller, wallet, signature, refused).await)
        }
        Err(other) => Err(other.into()),
    }
}

/// Refusals no retry of the same entry can change. (A used signature means the fee is claimed
/// already, by its registration or its refund: nothing more to do.)
fn permanent(refused: &RegistrationError) -> bool {
    matches!(
        refused,
        RegistrationError::Closed(_)
            | RegistrationError::Full(_)
            | RegistrationError::AlreadyRegistered(_)
            | RegistrationError::NotFound(_)
    )
}

/// The fee `signature` paid for an entry that `refused`: refund it if it landed and nothing has
/// claimed it, and say so in the error the caller sees.
async fn refund_unregistered(
    state: &AppState,
    tournament: &Tournament,
    caller: &Caller,
    wallet: &str,
    signature: &str,
    refused: RegistrationError,
) -> EntryError {
    let claimed: Result<Option<(String,)>, sqlx::Error> =
        sqlx::query_as("SELECT purpose FROM payment_claims WHERE signature = $1")
            .bind(signature)
            .fetch_optional(state.store.read())
            .await;
    match claimed {
        Ok(Some(_)) => return refused.into(),
        Ok(None) => {}
        Err(error) => return error.into(),
    }
    let expected = ExpectedPayment {
        payer: wallet.to_owned(),
        recipient: tournament.escrow_wallet.clone(),
        mint: state.chain.stablecoin_mint().to_owned(),
        amount_raw: u64::try_from(tournament.entry_fee_raw).unwrap_or(0),
        memo: registration_memo(&tournament.id, &[wallet.to_owned()]),
    };
    let landed = payment::check(
        &state.chain,
        &state.store,
        state.now(),
        signature,
        &expected,
    )
    .await;
    match landed {
        Ok(PaymentCheck::Verified) => {}
        Ok(PaymentCheck::Pending) => return EntryError::RefundOnceFinal(refused),
        // It never landed as this fee: nothing to pay back.
        Err(PaymentError::Rejected(_)) => return refused.into(),
        Err(PaymentError::Unavailable(error)) => return EntryError::Chain(error.to_string()),
        Err(PaymentError::Store(error)) => return error.into(),
    }
    let reason = format!("the agent's entry could not register: {refused}");
    let fee = UnregisteredFee {
        signature,
        tournament_id: &tournament.id,
        payer: wallet,
        account_id: &caller.account_id,
        amount_raw: tournament.entry_fee_raw,
        mint: state.chain.stablecoin_mint(),
        reason: &reason,
    };
    match refunds::record_entry_refund(&state.store, &fee, state.now()).await {
        Ok(Some(payout_id)) => {
            tracing::info!(
                tournament_id = tournament.id,
                wallet,
                signature,
                payout_id,
                "unregistered entry fee refunded"
            );
            EntryError::Refunded { refused, payout_id }
        }
        // Claimed meanwhile (a concurrent call registered or refunded it).
        Ok(None) => refused.into(),
        Err(error) => error.into(),
    }
}

/// The settling job of the fee `signature`: finish the entry it paid for, or refund it. Done
/// when the fee is claimed (registered or refunded), replaced, or never landed; retried while
/// it is not final yet.
pub(crate) async fn settle(state: &AppState, signature: &str) -> anyhow::Result<()> {
    let recorded: Option<(String, String, String)> = sqlx::query_as(
        "SELECT p.tournament_id, a.account_id, a.wallet_address
         FROM agent_entry_payments p JOIN agents a ON a.id = p.agent_id
         WHERE p.signature = $1",
    )
    .bind(signature)
    .fetch_optional(state.store.read())
    .await?;
    let Some((tournament_id, account_id, wallet)) = recorded else {
        // Replaced by a newer transfer, which has its own job.
        return Ok(());
    };
    let claimed: Option<(String,)> =
        sqlx::query_as("SELECT purpose FROM payment_claims WHERE signature = $1")
            .bind(signature)
            .fetch_optional(state.store.read())
            .await?;
    if claimed.is_some() {
        return Ok(());
    }
    let Some(tournament) = crate::tournaments::queries::get(&state.store, &tournament_id).await?
    else {
        tracing::error!(
            tournament_id,
            signature,
            "an agent's entry fee names a tournament that no longer exists"
        );
        return Ok(());
    };
    let caller = Caller { account_id };
    match complete(state, &tournament, &caller, &wallet, signature).await {
        Ok(Entered::Registered { .. }) => {
            tracing::info!(tournament_id, wallet, "agent entry settled: registered");
            Ok(())
        }
        Ok(Entered::Pending { .. }) | Err(EntryError::RefundOnceFinal(_)) => {
            anyhow::bail!("the entry fee {signature} is not final yet")
        }
        Err(EntryError::Refunded { .. }) => Ok(()),
        // Refused with nothing landed, or the fee is claimed: nothing left to settle.
        Err(EntryError::Registration(_) | EntryError::Agent(_) | EntryError::CannotPay(_)) => {
            Ok(())
        }
        Err(error @ (EntryError::Chain(_) | EntryError::Store(_) | EntryError::Internal(_))) => {
            Err(anyhow::anyhow!(error))
        }
    }
}

/// The signature of the agent's fee payment for `tournament`: the recorded one, (re)sent if the
/// chain has not seen it, or a new one once the recorded one can no longer land.
async fn pay_once(
    state: &AppState,
    agent_id: &str,
    wallet: &str,
    tournament: &Tournament,
) -> Result<String, EntryError> {
    let recorded: Option<(String, String, i64)> = sqlx::query_as(
        "SELECT signature, wire, signed_at FROM agent_entry_payments WHERE agent_id = $1 AND tournament_id = $2",
    )
    .bind(agent_id)
    .bind(&tournament.id)
    .fetch_optional(state.store.read())
    .await?;
    if let Some((signature, wire, signed_at)) = recorded {
        let seen = state
            .chain
            .signature_status(&signature)
            .await
            .map_err(|error| EntryError::Chain(error.to_string()))?;
        if seen.is_some() {
            return Ok(signature);
        }
        if to_millis(state.now()) - signed_at < UNSEEN_FOR.num_milliseconds() {
            // Not seen yet and still able to land: send the same transaction again.
            send(state, &wire).await?;
            return Ok(signature);
        }
        // It can never land now: replace it (only if nobody replaced it first).
        sqlx::query(
            "DELETE FROM agent_entry_payments WHERE agent_id = $1 AND tournament_id = $2 AND signature = $3",
        )
        .bind(agent_id)
        .bind(&tournament.id)
        .bind(&signature)
        .execute(state.store.write())
        .await?;
    }
    let owner = WalletAddress::parse(wallet).map_err(|e| internal(anyhow::anyhow!(e)))?;
    let key = crate::custodial::signing_key(state, &owner)
        .await
        .map_err(EntryError::Internal)?
        .ok_or_else(|| internal(anyhow::anyhow!("agent wallet {wallet} has no key")))?;
    let payer = Keypair::from_secret(key.to_bytes());
    let escrow = WalletAddress::parse(&tournament.escrow_wallet)
        .map_err(|e| internal(anyhow::anyhow!(e)))?;
    let amount = u64::try_from(tournament.entry_fee_raw).unwrap_or(0);
    let memo = registration_memo(&tournament.id, &[wallet.to_owned()]);
    let crate::chain::SignedTransfer {
        signature, wire, ..
    } = state
        .chain
        .sign_token_transfer(
            &payer,
            &escrow,
            state.chain.stablecoin_mint(),
            amount,
            &memo,
        )
        .await
        .map_err(|error| match error {
            crate::chain::ChainError::Transfer(why) => EntryError::CannotPay(format!(
                "the agent's wallet cannot pay the entry fee: {why}"
            )),
            other => EntryError::Chain(other.to_string()),
        })?;
    let wire = base64::engine::general_purpose::STANDARD.encode(&wire);
    let now = state.now();
    let mut tx = state.store.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO agent_entry_payments (agent_id, tournament_id, signature, wire, signed_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (agent_id, tournament_id) DO NOTHING",
    )
    .bind(agent_id)
    .bind(&tournament.id)
    .bind(&signature)
    .bind(&wire)
    .bind(to_millis(now))
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 0 {
        // A concurrent call recorded its payment first: that one is the payment.
        drop(tx);
        return Box::pin(pay_once(state, agent_id, wallet, tournament)).await;
    }
    // Recorded with the job that settles it, so a fee nobody comes back for is never stranded.
    crate::scheduler::enqueue(&mut tx, SETTLE_JOB, &signature, now + SETTLE_AFTER, now).await?;
    tx.commit().await?;
    send(state, &wire).await?;
    Ok(signature)
}

/// Send a recorded transfer. A refusal that leaves nothing on chain (e.g. too little USDC) is
/// the wallet's problem; a transport failure leaves the record to be sent again next call.
async fn send(state: &AppState, wire: &str) -> Result<(), EntryError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(wire)
        .map_err(|error| internal(anyhow::anyhow!("recorded transfer: {error}")))?;
    match state.chain.send_signed(&bytes).await {
        Ok(_) => Ok(()),
        Err(crate::chain::ChainError::Rpc { message, .. }) => {
            if message.contains("already been processed") || message.contains("AlreadyProcessed") {
                return Ok(());
            }
            Err(EntryError::CannotPay(format!(
                "the agent's wallet could not pay the entry fee: {message}"
            )))
        }
        Err(error) => Err(EntryError::Chain(error.to_string())),
    }
}
