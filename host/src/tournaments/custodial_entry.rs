//! Registrations whose fee the server pays from a wallet it holds the key of: an agent's entry
//! from the agent's own wallet (`agents::entry`), and an account's registration with
//! `payFrom: "embedded"`, paid from its embedded wallet (docs/api.md, "Paying from the embedded
//! wallet"). The fee — entry fee × wallets, to the escrow, with the registration memo — is paid
//! once ([`crate::custodial_payments`]) and then registers exactly as a client's signature
//! would (`registration`, `chain::payment`).
//!
//! A fee is never sent for an entry the tournament would refuse: everything that can be checked
//! before money moves (open, seats left, not registered yet, the wallets the caller's) is
//! checked first, and again in the registering transaction. A fee that landed but could not
//! register (a race took the last seat, the tournament closed meanwhile) is refunded once, as a
//! `refund` payout with its reason (`tournaments::refunds`), which also releases the key's spend;
//! its signature is then claimed, so it can neither register nor be refunded again. Each
//! recorded fee also has a settling job ([`SETTLE_JOB`]) that finishes the entry, or refunds it,
//! if no call comes back for it.

use serde_json::json;

use super::model::{Tournament, registration_memo};
use super::refunds::{self, UnregisteredFee};
use super::registration::{self, Outcome, RegistrationError};
use crate::api_keys::spend::{SpendError, SpendRefused};
use crate::auth::Caller;
use crate::chain::Chain;
use crate::chain::ExpectedPayment;
use crate::chain::payment::{self, PaymentCheck, PaymentError};
use crate::clock::Clock;
use crate::crypto::Sealer;
use crate::custodial_payments::{self, Order, PayError};
use crate::db::Store;
use crate::db::StoreError;
use crate::domain::WalletAddress;
use crate::events::Bus;

/// The job that settles one recorded fee (subject: its signature) when no call comes back for
/// it: registers the entry, or refunds the fee if it cannot register.
pub(crate) const SETTLE_JOB: &str = "tournament_entry.settle";

/// The same job as queued by agent entries before the machinery was shared: still settled.
pub(crate) const AGENT_SETTLE_JOB: &str = "agent_entry.settle";

/// One entry to pay and register.
pub(crate) struct CustodialEntry<'a> {
    pub tournament: &'a Tournament,
    pub caller: &'a Caller,
    /// The custodial wallet that pays.
    pub payer: &'a WalletAddress,
    /// The wallets to register, sorted and distinct.
    pub wallets: &'a [WalletAddress],
    /// `agent_entry` or `account_entry`, and what the payment is recorded under for it.
    pub purpose: &'static str,
    pub subject: &'a str,
    /// The payer in the words of a refusal.
    pub payer_name: &'static str,
    /// The API key whose spend limits the fee counts against.
    pub spend_key: Option<&'a str>,
}

/// What an entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entered {
    /// Registered; the fee's signature for a paid tournament.
    Registered {
        count: usize,
        signature: Option<String>,
    },
    /// The fee is paid but not final yet: call again in a few seconds.
    Pending { signature: String },
}

/// Why an entry failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EntryError {
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
    /// The caller may not pay from the embedded wallet, or not this much.
    #[error(transparent)]
    Spend(#[from] SpendRefused),
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

impl From<SpendError> for EntryError {
    fn from(error: SpendError) -> Self {
        match error {
            SpendError::Refused(refused) => EntryError::Spend(refused),
            SpendError::Store(store) => EntryError::Store(store),
        }
    }
}

impl From<PayError> for EntryError {
    fn from(error: PayError) -> Self {
        match error {
            PayError::CannotPay(message) => EntryError::CannotPay(message),
            PayError::Refused(refused) => EntryError::Spend(refused),
            PayError::Chain(message) => EntryError::Chain(message),
            PayError::Store(store) => EntryError::Store(store),
            PayError::Internal(source) => EntryError::Internal(source),
        }
    }
}

fn addresses(wallets: &[WalletAddress]) -> Vec<String> {
    wallets.iter().map(ToString::to_string).collect()
}

/// Pay `entry`'s fee once from its custodial wallet and register its wallets with it. A free
/// tournament registers them with nothing paid.
pub(crate) async fn enter(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    sealer: &Sealer,
    entry: &CustodialEntry<'_>,
) -> Result<Entered, EntryError> {
    let tournament = entry.tournament;
    let wallets = addresses(entry.wallets);
    if tournament.entry_fee_raw <= 0 {
        let outcome = registration::register_paid(
            store,
            clock,
            events,
            chain,
            tournament,
            entry.caller,
            entry.wallets,
            None,
        )
        .await?;
        return Ok(match outcome {
            Outcome::Registered { count } => Entered::Registered {
                count,
                signature: None,
            },
            Outcome::Pending | Outcome::Paying { .. } => {
                return Err(EntryError::Internal(anyhow::anyhow!(
                    "a free registration waited on a payment"
                )));
            }
        });
    }
    if let Err(refused) =
        registration::precheck(store, clock, tournament, entry.caller, entry.wallets).await
    {
        // Nothing is paid for an entry the tournament refuses. A fee an earlier call already
        // sent can register nothing now either: it is paid back.
        let recorded = custodial_payments::recorded(store, entry.purpose, entry.subject).await?;
        return Err(match recorded {
            Some(recorded) if permanent(&refused) => {
                refund_unregistered(
                    store,
                    clock,
                    chain,
                    tournament,
                    entry.caller,
                    &recorded,
                    &wallets,
                    refused,
                )
                .await
            }
            _ => refused.into(),
        });
    }
    let amount_raw = fee_raw(tournament, wallets.len());
    let memo = registration_memo(&tournament.id, &wallets);
    let paid_for = format!(
        "the registration of {} wallet(s) in tournament {}",
        wallets.len(),
        tournament.id
    );
    let order = Order {
        purpose: entry.purpose,
        subject: entry.subject,
        payer: entry.payer,
        account_id: &entry.caller.account_id,
        recipient: &tournament.escrow_wallet,
        amount_raw,
        memo: &memo,
        reference: &tournament.id,
        detail: json!({"wallets": wallets}),
        settle_job: SETTLE_JOB,
        payer_name: entry.payer_name,
        spender: entry.spend_key.map(|key| (key, paid_for.as_str())),
    };
    let signature = custodial_payments::pay_once(store, clock, chain, sealer, &order).await?;
    complete(
        store,
        clock,
        events,
        chain,
        tournament,
        entry.caller,
        entry.payer,
        entry.wallets,
        &signature,
    )
    .await
}

fn fee_raw(tournament: &Tournament, wallets: usize) -> u64 {
    u64::try_from(tournament.entry_fee_raw)
        .unwrap_or(0)
        .saturating_mul(wallets as u64)
}

/// Register `wallets` with the recorded fee `signature` paid by `payer`; a refusal that no retry
/// can change refunds the fee if it landed.
async fn complete(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament: &Tournament,
    caller: &Caller,
    payer: &WalletAddress,
    wallets: &[WalletAddress],
    signature: &str,
) -> Result<Entered, EntryError> {
    let paid = registration::Paid {
        payer: payer.clone(),
        signature: signature.to_owned(),
    };
    match registration::register_paid(
        store,
        clock,
        events,
        chain,
        tournament,
        caller,
        wallets,
        Some(paid),
    )
    .await
    {
        Ok(Outcome::Registered { count }) => Ok(Entered::Registered {
            count,
            signature: Some(signature.to_owned()),
        }),
        Ok(Outcome::Pending | Outcome::Paying { .. }) => Ok(Entered::Pending {
            signature: signature.to_owned(),
        }),
        Err(refused) if permanent(&refused) => {
            let recorded = custodial_payments::by_signature(store, signature).await?;
            match recorded {
                Some(recorded) => Err(refund_unregistered(
                    store,
                    clock,
                    chain,
                    tournament,
                    caller,
                    &recorded,
                    &addresses(wallets),
                    refused,
                )
                .await),
                None => Err(refused.into()),
            }
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

/// The fee `recorded` paid for an entry of `wallets` that `refused`: refund it if it landed and
/// nothing has claimed it, and say so in the error the caller sees.
async fn refund_unregistered(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    tournament: &Tournament,
    caller: &Caller,
    recorded: &custodial_payments::Recorded,
    wallets: &[String],
    refused: RegistrationError,
) -> EntryError {
    let signature = recorded.signature.as_str();
    match custodial_payments::claimed(store, signature).await {
        Ok(true) => return refused.into(),
        Ok(false) => {}
        Err(error) => return error.into(),
    }
    let amount_raw = u64::try_from(recorded.amount_raw).unwrap_or(0);
    let expected = ExpectedPayment {
        payer: recorded.payer.clone(),
        recipient: tournament.escrow_wallet.clone(),
        mint: chain.stablecoin_mint().to_owned(),
        amount_raw,
        memo: registration_memo(&tournament.id, wallets),
    };
    let landed = payment::check(chain, store, clock.now(), signature, &expected).await;
    match landed {
        Ok(PaymentCheck::Verified) => {}
        Ok(PaymentCheck::Pending) => return EntryError::RefundOnceFinal(refused),
        // It never landed as this fee: nothing to pay back.
        Err(PaymentError::Rejected(_)) => return refused.into(),
        Err(PaymentError::Unavailable(error)) => return EntryError::Chain(error.to_string()),
        Err(PaymentError::Store(error)) => return error.into(),
    }
    let reason = format!("the paid entry could not register: {refused}");
    let fee = UnregisteredFee {
        signature,
        tournament_id: &tournament.id,
        payer: &recorded.payer,
        account_id: &caller.account_id,
        amount_raw: i64::try_from(amount_raw).unwrap_or(i64::MAX),
        mint: chain.stablecoin_mint(),
        reason: &reason,
    };
    match refunds::record_entry_refund(store, &fee, clock.now()).await {
        Ok(Some(payout_id)) => {
            tracing::info!(
                tournament_id = tournament.id,
                payer = recorded.payer,
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
/// when the fee is claimed (registered or refunded), replaced, or can never land; retried while
/// it is not final yet.
pub(crate) async fn settle(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    signature: &str,
) -> anyhow::Result<()> {
    let Some(recorded) = custodial_payments::by_signature(store, signature).await? else {
        // Replaced by a newer transfer, which has its own job.
        return Ok(());
    };
    if custodial_payments::claimed(store, signature).await? {
        return Ok(());
    }
    if custodial_payments::forget_if_dead(store, clock, chain, &recorded)
        .await
        .map_err(|error| anyhow::anyhow!(error))?
    {
        return Ok(());
    }
    let Some(tournament) = super::queries::get(store, &recorded.reference).await? else {
        tracing::error!(
            tournament_id = recorded.reference,
            signature,
            "an entry fee names a tournament that no longer exists"
        );
        return Ok(());
    };
    let payer = WalletAddress::parse(&recorded.payer).map_err(|error| anyhow::anyhow!(error))?;
    // An agent's entry (recorded before entries named their wallets) registers its payer.
    let wallets = match recorded.detail()["wallets"].as_array() {
        Some(listed) => listed
            .iter()
            .filter_map(|wallet| wallet.as_str())
            .map(WalletAddress::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| anyhow::anyhow!(error))?,
        None => vec![payer.clone()],
    };
    let caller = Caller::account(recorded.account_id.clone());
    match complete(
        store,
        clock,
        events,
        chain,
        &tournament,
        &caller,
        &payer,
        &wallets,
        signature,
    )
    .await
    {
        Ok(Entered::Registered { .. }) => {
            tracing::info!(
                tournament_id = tournament.id,
                signature,
                "paid entry settled: registered"
            );
            Ok(())
        }
        Ok(Entered::Pending { .. }) | Err(EntryError::RefundOnceFinal(_)) => {
            anyhow::bail!("the entry fee {signature} is not final yet")
        }
        Err(EntryError::Refunded { .. }) => Ok(()),
        // Refused with nothing landed, or the fee is claimed: nothing left to settle.
        Err(EntryError::Registration(_) | EntryError::CannotPay(_) | EntryError::Spend(_)) => {
            Ok(())
        }
        Err(error @ (EntryError::Chain(_) | EntryError::Store(_) | EntryError::Internal(_))) => {
            Err(anyhow::anyhow!(error))
        }
    }
}
