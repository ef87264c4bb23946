//! Registering wallets for a tournament (`docs/api.md`, "Tournament registration"): all wallets
//! of a request register together or none do; a paid entry is verified on chain (amount = fee ×
//! wallets, to the escrow wallet, with the deterministic memo) and its signature pays for one
//! registration only; not yet finalized (or not yet seen by the node, for a while) is a
//! retryable 202 and the same request succeeds later. The payment step is
//! [`crate::chain::payment`], shared with the dungeon's paid entry.

use std::collections::HashMap;
use std::sync::Arc;

use crucible_sql::{self as sql, Conn, Rows};
use futures_util::future::BoxFuture;

use serde::Deserialize;
use utoipa::ToSchema;

use chrono::{DateTime, Utc};

use super::custodial_entry::{CustodialEntry, Entered, EntryError};
use super::model::{Status, Tournament, registration_memo};
use super::queries;
use crate::account::AccountError;
use crate::api_keys::spend::{self, PayFrom};
use crate::auth::Caller;
use crate::cache::ReadCache;
use crate::chain::Chain;
use crate::chain::ExpectedPayment;
use crate::chain::payment::{self, PaymentCheck, PaymentError};
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::crypto::Sealer;
use crate::db::{BatchWrite, Outcomes, Store};
use crate::db::{OnUnique, StoreError};
use crate::domain::WalletAddress;
use crate::events::Bus;
use crate::http::rate_limit::Limited;
use crate::http::rate_limit::RateLimits;

/// Why a registration was refused. The platform API maps it at its edge
/// (`tournaments::routes`); an agent's entry wraps it (`agents::entry`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegistrationError {
    /// The request is malformed, or does not fit the tournament (free or paid); the message
    /// says what to change.
    #[error("{0}")]
    Invalid(String),
    /// No such tournament, or a private one without its invite code.
    #[error("no tournament `{0}`")]
    NotFound(String),
    /// The client sent too many registrations for this tournament.
    #[error(transparent)]
    Limited(#[from] Limited),
    /// Registration is over (deadline passed, ended or cancelled); the message says since when.
    #[error("{0}")]
    Closed(String),
    /// A wallet (or the payer) is not the caller's.
    #[error(transparent)]
    Account(#[from] AccountError),
    #[error(
        "the tournament is full ({0} participants) or has too few seats left for these wallets"
    )]
    Full(i64),
    #[error("wallet {0} is already registered for this tournament")]
    AlreadyRegistered(String),
    #[error("this transaction signature has already paid for a registration")]
    SignatureUsed,
    #[error(transparent)]
    Payment(#[from] PaymentError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(RegistrationError);

/// At most this many wallets per request.
pub(crate) const MAX_WALLETS: usize = 10;

/// The request body (docs/api.md, "Tournament registration").
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RegisterRequest {
    /// One wallet to register (or use `registeredWallets`).
    #[schema(value_type = Option<WalletAddress>)]
    registered_wallet: Option<String>,
    /// 1 to 10 distinct wallets sharing one payment (or use `registeredWallet`).
    #[schema(value_type = Option<Vec<WalletAddress>>, min_items = 1, max_items = 10)]
    registered_wallets: Option<Vec<String>>,
    /// `null` for a free tournament, the payment's signature for a paid one; required unless
    /// `payFrom` is sent.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    tx_signature: Option<Option<String>>,
    /// The wallet that paid (paid tournaments).
    #[schema(value_type = Option<WalletAddress>)]
    payer_wallet: Option<String>,
    /// `embedded`: the server pays the fee from the account's embedded wallet, within the
    /// calling API key's spend limits, instead of `txSignature` and `payerWallet`.
    pay_from: Option<PayFrom>,
    /// A private tournament's invite code (ignored for public ones).
    invite_code: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// The request body as the OpenAPI document states it: [`RegisterRequest`]'s fields, of which
/// exactly one of `registeredWallet` and `registeredWallets` is sent (the other absent or null),
/// as [`RegisterRequest::parse`] demands, and exactly one of `txSignature` (with `payerWallet`)
/// and `payFrom`.
pub(crate) struct RegisterBody;

impl utoipa::PartialSchema for RegisterBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{
            AllOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Type,
        };
        use utoipa::openapi::{Ref, RefOr};
        let absent = || ObjectBuilder::new().schema_type(Type::Null);
        let one = ObjectBuilder::new()
            .required("registeredWallet")
            .property("registeredWallet", Ref::from_schema_name("WalletAddress"))
            .property("registeredWallets", absent());
        let many = ObjectBuilder::new()
            .required("registeredWallets")
            .property(
                "registeredWallets",
                ArrayBuilder::new()
                    .items(Ref::from_schema_name("WalletAddress"))
                    .min_items(Some(1))
                    .max_items(Some(MAX_WALLETS))
                    .unique_items(true),
            )
            .property("registeredWallet", absent());
        // Paid by a signature (`txSignature`, null for a free tournament) or by the server from
        // the embedded wallet (`payFrom`), never both.
        let by_signature = ObjectBuilder::new()
            .required("txSignature")
            .property("payFrom", absent());
        let by_server = ObjectBuilder::new()
            .required("payFrom")
            // Present and not null (`RegisterRequest` alone lets it be null).
            .property("payFrom", Ref::from_schema_name("PayFrom"))
            .property("txSignature", absent())
            .property("payerWallet", absent());
        RefOr::T(
            AllOfBuilder::new()
                .item(Ref::from_schema_name("RegisterRequest"))
                .item(OneOfBuilder::new().item(one).item(many))
                .item(OneOfBuilder::new().item(by_signature).item(by_server))
                .into(),
        )
    }
}

impl utoipa::ToSchema for RegisterBody {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        use utoipa::PartialSchema;
        schemas.push(("RegisterRequest".into(), RegisterRequest::schema()));
        <RegisterRequest as utoipa::ToSchema>::schemas(schemas);
    }
}

/// A parsed request.
struct Registration {
    wallets: Vec<WalletAddress>,
    signature: Option<String>,
    payer: Option<WalletAddress>,
    invite_code: Option<String>,
    /// `payFrom: "embedded"`: the server pays from the account's embedded wallet.
    pay_from: Option<PayFrom>,
}

impl RegisterRequest {
    fn parse(self) -> Result<Registration, RegistrationError> {
        let raw = match (self.registered_wallet, self.registered_wallets) {
            (Some(one), None) => vec![one],
            (None, Some(many)) => many,
            (Some(_), Some(_)) => {
                return Err(RegistrationError::Invalid(
                    "send either `registeredWallet` or `registeredWallets`, not both".into(),
                ));
            }
            (None, None) => {
                return Err(RegistrationError::Invalid(
                    "`registeredWallet` or `registeredWallets` is required".into(),
                ));
            }
        };
        if raw.is_empty() || raw.len() > MAX_WALLETS {
            return Err(RegistrationError::Invalid(format!(
                "`registeredWallets` must list 1 to {MAX_WALLETS} wallets"
            )));
        }
        let mut wallets = raw
            .iter()
            .map(|wallet| WalletAddress::parse(wallet))
            .collect::<Result<Vec<_>, _>>()
            .map_err(RegistrationError::Invalid)?;
        let count = wallets.len();
        wallets.sort();
        wallets.dedup();
        if wallets.len() != count {
            return Err(RegistrationError::Invalid(
                "`registeredWallets` lists a wallet twice".into(),
            ));
        }
        if let Some(pay_from) = self.pay_from {
            if matches!(self.tx_signature, Some(Some(_))) || self.payer_wallet.is_some() {
                return Err(RegistrationError::Invalid(
                    "send either `payFrom` or `txSignature` and `payerWallet`, not both".into(),
                ));
            }
            return Ok(Registration {
                wallets,
                signature: None,
                payer: None,
                invite_code: self.invite_code,
                pay_from: Some(pay_from),
            });
        }
        let Some(signature) = self.tx_signature else {
            return Err(RegistrationError::Invalid("`txSignature` is required: null for a free tournament, the payment's signature for a paid one (or send `payFrom: \"embedded\"`)".into()));
        };
        let payer = self
            .payer_wallet
            .as_deref()
            .map(WalletAddress::parse)
            .transpose()
            .map_err(RegistrationError::Invalid)?;
        Ok(Registration {
            wallets,
            signature: signature.filter(|s| !s.trim().is_empty()),
            payer,
            invite_code: self.invite_code,
            pay_from: None,
        })
    }
}

/// The outcome the handler turns into 201 or 202.
pub(crate) enum Outcome {
    Registered {
        count: usize,
    },
    /// The payment is not final yet: resend the same request in a few seconds.
    Pending,
    /// The server paid from the embedded wallet with `signature`, not final yet: resend the
    /// same request in a few seconds.
    Paying {
        signature: String,
    },
}

/// The per-tournament registration limit and who it counts: the account, else the IP.
pub(crate) struct ClientLimit<'a> {
    pub limits: &'a RateLimits,
    pub client: &'a str,
}

/// Register the request's wallets. `limit` counts the request against its client's budget for
/// the tournament, only once it is well-formed and for a tournament the client may see: junk
/// from one client never uses up anyone else's budget. `None` (the server entering an agent it
/// already checked) is not counted. The tournament may come from `tournaments`
/// ([`super::privacy::find_registrable`]).
pub(crate) async fn register(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    sealer: &Sealer,
    tournaments: &ReadCache<Tournament>,
    tournament_id: &str,
    caller: Option<&Caller>,
    request: RegisterRequest,
    limit: Option<ClientLimit<'_>>,
) -> Result<Outcome, EntryError> {
    let registration = request.parse()?;
    // Who may pay from the embedded wallet is settled before anything else is looked at.
    let spender = match registration.pay_from {
        Some(PayFrom::Embedded) => Some(spend::spender(store, caller).await?),
        None => None,
    };
    let tournament = super::privacy::find_registrable(
        store,
        tournaments,
        clock,
        tournament_id,
        registration.invite_code.as_deref(),
    )
    .await?
    .ok_or_else(|| RegistrationError::NotFound(tournament_id.to_owned()))?;
    if let Some(ClientLimit { limits, client }) = limit {
        limits
            .registrations_per_tournament
            .check(&format!("{}|{client}", tournament.id))
            .await
            .map_err(RegistrationError::from)?;
    }
    let Some(spender) = spender else {
        return Ok(register_in(
            store,
            clock,
            events,
            chain,
            &tournament,
            caller,
            registration,
        )
        .await?);
    };
    let memo = registration_memo(&tournament.id, &addresses(&registration.wallets));
    let entry = CustodialEntry {
        tournament: &tournament,
        caller: spender.caller,
        payer: &spender.wallet,
        wallets: &registration.wallets,
        purpose: "account_entry",
        subject: &memo,
        payer_name: "the embedded wallet",
        spend_key: Some(spender.key_id),
    };
    match super::custodial_entry::enter(store, clock, events, chain, sealer, &entry).await? {
        Entered::Registered { count, .. } => Ok(Outcome::Registered { count }),
        Entered::Pending { signature } => Ok(Outcome::Paying { signature }),
    }
}

fn addresses(wallets: &[WalletAddress]) -> Vec<String> {
    wallets.iter().map(ToString::to_string).collect()
}

/// The checks of a registration that need no payment, for `caller`'s `wallets`: whether
/// `tournament` would take them now (open, seats left, none registered yet, all the caller's).
/// A fee the server pays runs them before it moves; the registering transaction checks them
/// again.
pub(crate) async fn precheck(
    store: &Store,
    clock: &dyn Clock,
    tournament: &Tournament,
    caller: &Caller,
    wallets: &[WalletAddress],
) -> Result<(), RegistrationError> {
    ensure_open(tournament, clock.now())?;
    crate::account::ensure_linked(store, &caller.account_id, wallets.iter()).await?;
    ensure_room(
        store,
        &tournament.id,
        &addresses(wallets),
        tournament.max_participants,
    )
    .await
}

/// A fee the server paid: its payer and signature.
pub(crate) struct Paid {
    pub payer: WalletAddress,
    pub signature: String,
}

/// Register `caller`'s `wallets` in `tournament` (already found and admitted by the caller),
/// with the fee the server `paid` for a paid tournament: an agent's entry, or an account paying
/// from its embedded wallet. Verified exactly as a client's signature would be.
pub(crate) async fn register_paid(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament: &Tournament,
    caller: &Caller,
    wallets: &[WalletAddress],
    paid: Option<Paid>,
) -> Result<Outcome, RegistrationError> {
    let (payer, signature) = match paid {
        Some(Paid { payer, signature }) => (Some(payer), Some(signature)),
        None => (None, None),
    };
    let registration = Registration {
        payer,
        wallets: wallets.to_vec(),
        signature,
        invite_code: None,
        pay_from: None,
    };
    register_in(
        store,
        clock,
        events,
        chain,
        tournament,
        Some(caller),
        registration,
    )
    .await
}

async fn register_in(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament: &Tournament,
    caller: Option<&Caller>,
    registration: Registration,
) -> Result<Outcome, RegistrationError> {
    let tournament_id = tournament.id.as_str();
    ensure_open(tournament, clock.now())?;

    if let Some(caller) = caller {
        // A key (or session) acts only for its account's proven wallets.
        let wallets = registration.wallets.iter().chain(registration.payer.iter());
        crate::account::ensure_linked(store, &caller.account_id, wallets).await?;
    }
    let wallets: Vec<String> = registration
        .wallets
        .iter()
        .map(ToString::to_string)
        .collect();
    let paid = tournament.entry_fee_raw > 0;
    if paid {
        // Cheap refusals first, so a doomed request never waits on the chain. A free one needs
        // no precheck: its write refuses a full tournament or a registered wallet the same way.
        ensure_room(store, &tournament.id, &wallets, tournament.max_participants).await?;
    }
    let claim = match (paid, &registration.signature) {
        (false, None) => None,
        (false, Some(_)) => {
            return Err(RegistrationError::Invalid(
                "this tournament is free: send `txSignature: null`".into(),
            ));
        }
        (true, None) => {
            return Err(RegistrationError::Invalid(
                "this tournament has an entry fee: send the payment's `txSignature`".into(),
            ));
        }
        (true, Some(signature)) => {
            let payer = registration.payer.clone().ok_or_else(|| {
                RegistrationError::Invalid("`payerWallet` is required for a paid tournament".into())
            })?;
            let amount = u64::try_from(tournament.entry_fee_raw)
                .unwrap_or(0)
                .saturating_mul(wallets.len() as u64);
            let expected = ExpectedPayment {
                payer: payer.to_string(),
                recipient: tournament.escrow_wallet.clone(),
                mint: chain.stablecoin_mint().to_owned(),
                amount_raw: amount,
                memo: registration_memo(&tournament.id, &wallets),
            };
            if claimed(store, signature).await? {
                return Err(RegistrationError::SignatureUsed);
            }
            match payment::check(chain, store, clock.now(), signature, &expected).await? {
                PaymentCheck::Verified => Some((signature.clone(), payer, amount)),
                PaymentCheck::Pending => return Ok(Outcome::Pending),
            }
        }
    };
    commit(store, clock, &tournament.id, caller, &wallets, claim).await?;
    tracing::info!(tournament_id, count = wallets.len(), "wallets registered");
    if tournament.status_at(clock.now()) == Status::Live {
        // Joining a live tournament: the baseline is taken now. If the chain cannot be read,
        // the next scheduled snapshot sets it.
        if let Err(error) = super::tracking::snapshot_wallets(
            store,
            clock,
            events,
            chain,
            &tournament.id,
            wallets.clone(),
            super::tracking::Scope::Joining,
        )
        .await
        {
            tracing::warn!(tournament_id, error = %format!("{error:#}"), "baseline at registration deferred");
        }
    } else {
        events.publish(crate::events::Event::LeaderboardChanged {
            tournament_id: tournament.id.clone(),
        });
    }
    Ok(Outcome::Registered {
        count: wallets.len(),
    })
}

fn ensure_open(tournament: &Tournament, now: DateTime<Utc>) -> Result<(), RegistrationError> {
    match tournament.status_at(now) {
        Status::Upcoming | Status::Live if tournament.registration_closed_at(now) => {
            Err(RegistrationError::Closed(format!(
                "registration for this tournament closed at {}",
                tournament
                    .registration_deadline
                    .map(|deadline| rfc3339(from_millis(deadline)))
                    .unwrap_or_default()
            )))
        }
        Status::Upcoming | Status::Live => Ok(()),
        Status::Ended => Err(RegistrationError::Closed(
            "this tournament has ended; registration is closed".into(),
        )),
        Status::Cancelled => Err(RegistrationError::Closed(
            "this tournament was cancelled; registration is closed".into(),
        )),
    }
}

async fn ensure_room(
    store: &Store,
    tournament_id: &str,
    wallets: &[String],
    max: i64,
) -> Result<(), RegistrationError> {
    let (current,): (i64,) =
        sqlx::query_as("SELECT current_participants FROM tournaments WHERE id = $1")
            .bind(tournament_id)
            .fetch_one(store.read())
            .await?;
    if current + wallets.len() as i64 > max {
        return Err(RegistrationError::Full(max));
    }
    for wallet in wallets {
        let taken: Option<(i64,)> = sqlx::query_as(
            "SELECT 1 FROM tournament_registrations WHERE tournament_id = $1 AND wallet = $2",
        )
        .bind(tournament_id)
        .bind(wallet)
        .fetch_optional(store.read())
        .await?;
        if taken.is_some() {
            return Err(RegistrationError::AlreadyRegistered(wallet.clone()));
        }
    }
    Ok(())
}

async fn claimed(store: &Store, signature: &str) -> Result<bool, RegistrationError> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT purpose FROM payment_claims WHERE signature = $1")
            .bind(signature)
            .fetch_optional(store.read())
            .await?;
    Ok(row.is_some())
}

/// Write the registration whole: seats, the payment claim and every wallet, or nothing. The
/// write shares its transaction and its flush with the registrations of the moment
/// ([`crate::db::GroupCommit`]) and is answered once durable.
async fn commit(
    store: &Store,
    clock: &dyn Clock,
    tournament_id: &str,
    caller: Option<&Caller>,
    wallets: &[String],
    claim: Option<(String, WalletAddress, u64)>,
) -> Result<(), RegistrationError> {
    let now = clock.now();
    let write = RegistrationWrite {
        tournament_id: tournament_id.to_owned(),
        account_id: caller.map(|caller| caller.account_id.clone()),
        wallets: wallets.to_vec(),
        claim,
        now: to_millis(now),
    };
    let seated = if write.claim.is_some() {
        // A paid one also claims its payment: its own statements, behind a savepoint.
        let write = Arc::new(write);
        store
            .seats()
            .run(Box::new(move |conn| {
                let write = write.clone();
                Box::pin(async move { write.apply(conn).await })
            }))
            .await?
    } else {
        store.seats().write(write).await?
    };
    if !seated {
        let tournament = queries::get(store, tournament_id)
            .await?
            .ok_or_else(|| RegistrationError::NotFound(tournament_id.to_owned()))?;
        ensure_open(&tournament, now)?;
        return Err(RegistrationError::Full(tournament.max_participants));
    }
    Ok(())
}

/// One registration's rows.
struct RegistrationWrite {
    tournament_id: String,
    account_id: Option<String>,
    wallets: Vec<String>,
    claim: Option<(String, WalletAddress, u64)>,
    now: i64,
}

/// Free registrations of one batch share their statements, per tournament: one `INSERT … ON
/// CONFLICT DO NOTHING` for every wallet, then one `UPDATE` that takes the seats of every request
/// whose wallets were all free, on the condition that they fit and the tournament is open. Only
/// when that condition fails (the seats are running out, or registration closed) are the seats
/// read and handed out request by request ([`seat_one_by_one`]). The requests that cannot be
/// whole have their wallets deleted again before the commit.
///
/// The `UPDATE` locks the tournament's row until the commit, so on PostgreSQL the batches of
/// one tournament's registrations commit one after another; hence their own committer, one
/// batch at a time ([`Store::seats`]). Taken
/// last, after the wallets are in, the lock spans that `UPDATE` and the commit (and the
/// `DELETE` of a request that could not be whole); taken first, it also spanned the `INSERT`
/// and the seat count's own `UPDATE`, and at 20 % of the floor registrations waited for it:
/// p50 9 ms and p99 26–31 ms, now 4–5 ms and 13 ms (docs/benchmarks.md, session 37).
/// Tournaments go in one order and each tournament's row is locked after its wallets, so two
/// batches cannot wait on each other in a cycle: a batch holding a tournament's row has written
/// all of its wallets there.
impl BatchWrite for RegistrationWrite {
    /// False when the tournament had no seats left for the request or was closed.
    type Output = bool;
    type Error = RegistrationError;

    fn apply_all<'c, 'd>(
        writes: &'c [Arc<Self>],
        conn: &'c mut Conn<'d>,
    ) -> BoxFuture<'c, Outcomes<bool, RegistrationError>> {
        Box::pin(async move {
            let mut outcomes: Vec<Option<Result<bool, RegistrationError>>> =
                (0..writes.len()).map(|_| None).collect();
            let mut tournaments: Vec<&str> =
                writes.iter().map(|w| w.tournament_id.as_str()).collect();
            tournaments.sort_unstable();
            tournaments.dedup();
            for tournament_id in tournaments {
                let members: Vec<usize> = (0..writes.len())
                    .filter(|&index| writes[index].tournament_id == tournament_id)
                    .collect();
                let now = writes[members[0]].now;
                let inserted = insert_wallets(conn, tournament_id, writes, &members).await?;
                let ours = |index: usize| {
                    let inserted = &inserted;
                    writes[index]
                        .wallets
                        .iter()
                        .filter(move |wallet| inserted.get(wallet.as_str()) == Some(&index))
                };
                let taken = |index: usize| {
                    writes[index]
                        .wallets
                        .iter()
                        .find(|wallet| inserted.get(wallet.as_str()) != Some(&index))
                };
                let wanted: i64 = members
                    .iter()
                    .filter(|&&index| taken(index).is_none())
                    .map(|&index| writes[index].wallets.len() as i64)
                    .sum();
                let seated_all = wanted > 0
                    && sql::query(
                        "UPDATE tournaments SET current_participants = current_participants + $1
                         WHERE id = $2 AND current_participants + $1 <= max_participants
                           AND status IN ('upcoming', 'live') AND end_date > $3
                           AND (registration_deadline IS NULL OR registration_deadline > $3)",
                    )
                    .bind(wanted)
                    .bind(tournament_id)
                    .bind(now)
                    .execute(conn)
                    .await?
                        == 1;
                let seating = if seated_all {
                    // Every whole request's seats are taken: none can run out.
                    hand_out_seats(writes, &members, &taken, 0, i64::MAX).0
                } else {
                    seat_one_by_one(conn, tournament_id, now, writes, &members, taken).await?
                };
                let mut undo: Vec<&str> = Vec::new();
                for (index, outcome) in seating {
                    if !matches!(outcome, Ok(true)) {
                        undo.extend(ours(index).map(String::as_str));
                    }
                    outcomes[index] = Some(outcome);
                }
                delete_wallets(conn, tournament_id, &undo).await?;
            }
            Ok(outcomes
                .into_iter()
                .map(|outcome| outcome.unwrap_or(Ok(false)))
                .collect())
        })
    }
}

/// The seats of one tournament handed out request by request, in the batch's order, once they
/// no longer fit every request whose wallets were free (or registration closed): the seats read
/// (and the tournament's row locked), each request seated while they last, the count written.
/// Each request's outcome; `taken` names a wallet of the request that was registered already.
async fn seat_one_by_one<'w>(
    conn: &mut Conn<'_>,
    tournament_id: &str,
    now: i64,
    writes: &'w [Arc<RegistrationWrite>],
    members: &[usize],
    taken: impl Fn(usize) -> Option<&'w String>,
) -> Result<Vec<Seating>, sqlx::Error> {
    let seats: Option<(i64, i64)> = sql::query(
        "UPDATE tournaments SET current_participants = current_participants
         WHERE id = $1 AND status IN ('upcoming', 'live') AND end_date > $2
           AND (registration_deadline IS NULL OR registration_deadline > $2)
         RETURNING current_participants, max_participants",
    )
    .bind(tournament_id)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((seated, max)) = seats else {
        return Ok(members.iter().map(|&index| (index, Ok(false))).collect());
    };
    let (seating, seated) = hand_out_seats(writes, members, &taken, seated, max);
    sql::query("UPDATE tournaments SET current_participants = $1 WHERE id = $2")
        .bind(seated)
        .bind(tournament_id)
        .execute(conn)
        .await?;
    Ok(seating)
}

/// A request of the batch (its index) and its outcome: seated, refused for want of seats
/// (`Ok(false)`), or refused with an error.
type Seating = (usize, Result<bool, RegistrationError>);

/// Each request of `members` in the batch's order: refused when `taken` names one of its wallets
/// registered already, seated while the seats last (`seated` of `max` taken before), refused
/// (`Ok(false)`) after. The outcomes and the seats taken in the end.
fn hand_out_seats<'w>(
    writes: &'w [Arc<RegistrationWrite>],
    members: &[usize],
    taken: &impl Fn(usize) -> Option<&'w String>,
    mut seated: i64,
    max: i64,
) -> (Vec<Seating>, i64) {
    let seating = members
        .iter()
        .map(|&index| {
            let wanted = writes[index].wallets.len() as i64;
            let outcome = if let Some(wallet) = taken(index) {
                Err(RegistrationError::AlreadyRegistered(wallet.clone()))
            } else if seated + wanted > max {
                Ok(false)
            } else {
                seated += wanted;
                Ok(true)
            };
            (index, outcome)
        })
        .collect();
    (seating, seated)
}

/// Delete `wallets` of `tournament_id` again: the wallets of the requests that could not be
/// whole, inside the batch that inserted them.
async fn delete_wallets(
    conn: &mut Conn<'_>,
    tournament_id: &str,
    wallets: &[&str],
) -> Result<(), sqlx::Error> {
    for chunk in wallets.chunks(Rows::per_statement(conn, WALLETS_PER_STATEMENT)) {
        let mut rows = Rows::new(conn, &["text"]);
        for wallet in chunk {
            rows.push([(*wallet).into()]);
        }
        let sql = format!(
            "DELETE FROM tournament_registrations
             WHERE tournament_id = $1 AND wallet IN (SELECT column1 FROM {} AS v)",
            rows.table(1)
        );
        rows.bind(sql::query(&sql).bind(tournament_id))
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// A registration's columns: tournament, wallet, account, time.
const REGISTRATION_TYPES: [&str; 4] = ["text", "text", "text", "int8"];
/// Registrations per statement on SQLite ([`Rows`]).
const ROWS_PER_STATEMENT: usize = crate::db::rows_per_statement(REGISTRATION_TYPES.len());
/// Wallets per `DELETE` on SQLite.
const WALLETS_PER_STATEMENT: usize = crate::db::rows_per_statement(1);

/// Insert the wallets of `members` (writes for `tournament_id`) where they are not registered
/// yet; which write each inserted wallet belongs to (a wallet two requests of the batch name
/// goes to the first).
async fn insert_wallets<'w>(
    conn: &mut Conn<'_>,
    tournament_id: &str,
    writes: &'w [Arc<RegistrationWrite>],
    members: &[usize],
) -> Result<HashMap<&'w str, usize>, sqlx::Error> {
    let mut owner: HashMap<&'w str, usize> = HashMap::new();
    let mut rows: Vec<(&'w str, usize)> = Vec::new();
    for &index in members {
        for wallet in &writes[index].wallets {
            if !owner.contains_key(wallet.as_str()) {
                owner.insert(wallet.as_str(), index);
                rows.push((wallet.as_str(), index));
            }
        }
    }
    let mut inserted = HashMap::new();
    for chunk in rows.chunks(Rows::per_statement(conn, ROWS_PER_STATEMENT)) {
        let mut values = Rows::new(conn, &REGISTRATION_TYPES);
        for (wallet, index) in chunk {
            let write = &writes[*index];
            values.push([
                tournament_id.into(),
                (*wallet).into(),
                write.account_id.as_deref().into(),
                write.now.into(),
            ]);
        }
        let sql = format!(
            "INSERT INTO tournament_registrations (tournament_id, wallet, account_id, registered_at)
             {}
             ON CONFLICT (tournament_id, wallet) DO NOTHING
             RETURNING wallet",
            values.insert(0)
        );
        let query = values.bind(sql::query(&sql));
        let returned: Vec<(String,)> = query.fetch_all(conn).await?;
        for (wallet,) in returned {
            if let Some((&name, &index)) = owner.get_key_value(wallet.as_str()) {
                inserted.insert(name, index);
            }
        }
    }
    Ok(inserted)
}

impl RegistrationWrite {
    /// False when the tournament had no seats left or was closed (nothing written).
    async fn apply(&self, conn: &mut Conn<'_>) -> Result<bool, RegistrationError> {
        let n = self.wallets.len() as i64;
        // Taking the seats first also takes the tournament row's lock, which orders concurrent
        // registrations of one tournament on PostgreSQL (SQLite has a single writer anyway).
        let seated = sql::query(
            "UPDATE tournaments SET current_participants = current_participants + $1
             WHERE id = $2 AND current_participants + $1 <= max_participants
               AND status IN ('upcoming', 'live') AND end_date > $3
               AND (registration_deadline IS NULL OR registration_deadline > $3)",
        )
        .bind(n)
        .bind(self.tournament_id.as_str())
        .bind(self.now)
        .execute(conn)
        .await?;
        if seated != 1 {
            return Ok(false);
        }
        let signature = self
            .claim
            .as_ref()
            .map(|(signature, _, _)| signature.as_str());
        if let Some((signature, payer, amount)) = &self.claim {
            sql::query(
                "INSERT INTO payment_claims (signature, purpose, reference, payer, amount_raw, claimed_at)
                 VALUES ($1, 'tournament', $2, $3, $4, $5)",
            )
            .bind(signature)
            .bind(self.tournament_id.as_str())
            .bind(payer.as_str())
            .bind(i64::try_from(*amount).unwrap_or(i64::MAX))
            .bind(self.now)
            .execute(conn)
            .await
            .on_unique(|| RegistrationError::SignatureUsed)?;
        }
        for wallet in &self.wallets {
            sql::query(
                "INSERT INTO tournament_registrations (tournament_id, wallet, account_id, tx_signature, registered_at)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(self.tournament_id.as_str())
            .bind(wallet)
            .bind(self.account_id.as_deref())
            .bind(signature)
            .bind(self.now)
            .execute(conn)
            .await
            .on_unique(|| RegistrationError::AlreadyRegistered(wallet.clone()))?;
        }
        Ok(true)
    }
}
