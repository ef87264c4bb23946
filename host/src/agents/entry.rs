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

use base64::Engine;
use chrono::Duration;

use super::{AgentError, service};
use crate::auth::Caller;
use crate::chain::Keypair;
use crate::clock::to_millis;
use crate::db::StoreError;
use crate::domain::WalletAddress;
use crate::state::AppState;
use crate::tournaments::model::registration_memo;
use crate::tournaments::registration::{self, Outcome, RegisterRequest, RegistrationError};

/// After this long a transfer the chain has never seen can no longer land (its blockhash is
/// about 60 s old), so a new one may be signed in its place.
const UNSEEN_FOR: Duration = Duration::seconds(90);

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
        let request = RegisterRequest::one_wallet(&wallet, None, None, invite_code);
        registration::register(state, tournament_id, Some(&caller), request, None).await?;
        return Ok(Entered::Registered { signature: None });
    }
    let signature = pay_once(state, agent_id, &wallet, &tournament).await?;
    let request =
        RegisterRequest::one_wallet(&wallet, Some(signature.clone()), Some(&wallet), invite_code);
    match registration::register(state, tournament_id, Some(&caller), request, None).await? {
        Outcome::Registered { .. } => Ok(Entered::Registered {
            signature: Some(signature),
        }),
        Outcome::Pending => Ok(Entered::Pending { signature }),
    }
}

/// The signature of the agent's fee payment for `tournament`: the recorded one, (re)sent if the
/// chain has not seen it, or a new one once the recorded one can no longer land.
async fn pay_once(
    state: &AppState,
    agent_id: &str,
    wallet: &str,
    tournament: &crate::tournaments::model::Tournament,
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
    let inserted = sqlx::query(
        "INSERT INTO agent_entry_payments (agent_id, tournament_id, signature, wire, signed_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (agent_id, tournament_id) DO NOTHING",
    )
    .bind(agent_id)
    .bind(&tournament.id)
    .bind(&signature)
    .bind(&wire)
    .bind(to_millis(state.now()))
    .execute(state.store.write())
    .await?;
    if inserted.rows_affected() == 0 {
        // A concurrent call recorded its payment first: that one is the payment.
        return Box::pin(pay_once(state, agent_id, wallet, tournament)).await;
    }
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
