//! Entering an agent into a tournament
//! (`POST /api/v1/public/agents/{agentId}/tournaments/{tournamentId}/enter`): the agent's own
//! wallet is registered, and for a paid tournament the fee is paid from that wallet — signed by
//! the server with the agent's custodial key, with the registration memo — then verified like
//! any other payment.
//!
//! Paying once, refusing before money moves, refunding a fee that landed but could not register
//! and settling a fee nobody comes back for are the shared machinery of every fee the server
//! pays from a wallet it holds: [`crate::tournaments::custodial_entry`] over
//! [`crate::custodial_payments`]. An agent's fee is recorded once per agent and tournament.

use super::{AgentError, service};
use crate::auth::Caller;
use crate::chain::Chain;
use crate::clock::Clock;
use crate::crypto::Sealer;
use crate::db::Store;
use crate::db::StoreError;
use crate::domain::WalletAddress;
use crate::events::Bus;
use crate::tournaments::custodial_entry::{self, CustodialEntry};
use crate::tournaments::registration::RegistrationError;

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

impl From<custodial_entry::EntryError> for EntryError {
    fn from(error: custodial_entry::EntryError) -> Self {
        use custodial_entry::EntryError as Shared;
        match error {
            Shared::Registration(refused) => EntryError::Registration(refused),
            Shared::Refunded { refused, payout_id } => EntryError::Refunded { refused, payout_id },
            Shared::RefundOnceFinal(refused) => EntryError::RefundOnceFinal(refused),
            Shared::CannotPay(message) => EntryError::CannotPay(message),
            Shared::Chain(message) => EntryError::Chain(message),
            Shared::Store(store) => EntryError::Store(store),
            Shared::Internal(source) => EntryError::Internal(source),
            // An agent's fee is paid with no API key's spend limits.
            spend @ Shared::Spend(_) => EntryError::Internal(anyhow::anyhow!(spend)),
        }
    }
}

/// Enter the account's agent `agent_id` into `tournament_id`.
pub(crate) async fn enter(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    sealer: &Sealer,
    account_id: &str,
    agent_id: &str,
    tournament_id: &str,
    invite_code: Option<&str>,
) -> Result<Entered, EntryError> {
    let agent = service::find(store, account_id, agent_id)
        .await?
        .ok_or_else(|| AgentError::NotFound(agent_id.to_owned()))?;
    // A private tournament is as unknown as a missing one without its invite code, and its fee
    // is never paid before that is checked.
    let tournament = crate::tournaments::privacy::find_visible(store, tournament_id, invite_code)
        .await?
        .ok_or_else(|| RegistrationError::NotFound(tournament_id.to_owned()))?;
    let caller = Caller::account(account_id);
    let wallet = WalletAddress::parse(&agent.wallet_address)
        .map_err(|error| EntryError::Internal(anyhow::anyhow!(error)))?;
    let subject = format!("{agent_id}:{}", tournament.id);
    let entry = CustodialEntry {
        tournament: &tournament,
        caller: &caller,
        payer: &wallet,
        wallets: std::slice::from_ref(&wallet),
        purpose: "agent_entry",
        subject: &subject,
        payer_name: "the agent's wallet",
        spend_key: None,
    };
    Ok(
        match custodial_entry::enter(store, clock, events, chain, sealer, &entry).await? {
            custodial_entry::Entered::Registered { signature, .. } => {
                Entered::Registered { signature }
            }
            custodial_entry::Entered::Pending { signature } => Entered::Pending { signature },
        },
    )
}
