//! Paid entry (`docs/api.md`, "Dungeon"): a quote names the amount, the dungeon wallet and the
//! memo `dgn:<dungeonId>:<payerWallet>:<quoteId>`; the operator pays it on chain from one of its
//! `allChainWallets` and sends the signature to `enter`. The quote is signed, not stored
//! ([`super::quote`]), so asking for one changes nothing. The payment goes through the same step
//! as a tournament registration's ([`crate::chain::payment`]: 202 while not final or not yet
//! seen, 422 naming what is wrong, 409 once used); the payment claim, the run and its key are
//! written in one transaction.

use chrono::Duration;
use serde::{Deserialize, Serialize};

use super::DungeonError;
use super::day::{self, DungeonDay, ENTRY_FEE_RAW};
use super::game::skill::{SkillContext, agent_skill_markdown};
use super::game::{Class, Run, rng};
use super::quote::QuoteClaims;
use super::run_key;
use crate::api_keys::spend::PayFrom;
use crate::auth::Caller;
use crate::chain::Chain;
use crate::chain::ExpectedPayment;
use crate::chain::payment::{self, PaymentCheck};
use crate::clock::Clock;
use crate::clock::{rfc3339, to_millis};
use crate::config::Config;
use crate::crypto::Sealer;
use crate::crypto::new_id;
use crate::db::OnUnique;
use crate::db::Store;
use crate::domain::WalletAddress;
use crate::usdc::Usdc;

/// How long a quote may be paid and used (never past the day's end).
pub(crate) const QUOTE_TTL: Duration = Duration::minutes(15);

/// `GET /api/dungeons/{dungeonId}/quote` answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Quote {
    pub quote_id: String,
    pub dungeon_id: String,
    pub payer_wallet: String,
    pub amount_ui: f64,
    pub amount_raw: String,
    pub mint: String,
    pub dungeon_wallet_address: String,
    pub memo: String,
    pub expires_at: String,
}

pub(crate) fn memo(dungeon_id: &str, payer: &str, quote_id: &str) -> String {
    format!("dgn:{dungeon_id}:{payer}:{quote_id}")
}

/// A quote for `wallet`: nothing is stored, the quote id is signed (see [`super::quote`]).
pub(crate) fn quote(
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    dungeon_id: &str,
    wallet: &str,
) -> Result<Quote, DungeonError> {
    let day = day::known(clock, dungeon_id)?;
    day::ensure_open(clock, day)?;
    let payer = WalletAddress::parse(wallet).map_err(DungeonError::Invalid)?;
    let expires = (clock.now() + QUOTE_TTL).min(day.closes_at());
    let claims = QuoteClaims::new(day.id(), &payer, ENTRY_FEE_RAW, expires);
    let quote_id = claims.sign(&quote_key(sealer));
    let memo = memo(&day.id(), payer.as_str(), &quote_id);
    Ok(Quote {
        quote_id,
        dungeon_id: day.id(),
        payer_wallet: payer.to_string(),
        amount_ui: Usdc::from_raw(ENTRY_FEE_RAW as i64).ui(),
        amount_raw: ENTRY_FEE_RAW.to_string(),
        mint: chain.stablecoin_mint().to_owned(),
        dungeon_wallet_address: chain.dungeon().address.to_string(),
        memo,
        expires_at: rfc3339(expires),
    })
}

fn quote_key(sealer: &Sealer) -> [u8; 32] {
    sealer.derived_key(super::quote::KEY_PURPOSE)
}

/// The body of `POST /api/dungeons/{dungeonId}/enter`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct EnterRequest {
    pub quote_id: String,
    /// The quote's wallet, which paid. With `payFrom`, omit it or name the embedded wallet.
    #[schema(value_type = Option<crate::domain::WalletAddress>)]
    pub payer_wallet: Option<String>,
    /// The entry payment's signature; required unless `payFrom` is sent.
    #[schema(pattern = "\\S")]
    pub tx_signature: Option<String>,
    /// `fighter` (default), `ranger`, `mage`, `defender`, `gambler` or `rogue`.
    #[serde(default)]
    #[schema(pattern = "^(fighter|ranger|mage|defender|gambler|rogue)?$")]
    pub class: Option<String>,
    /// `embedded`: the server pays the quote from the account's embedded wallet (the quote must
    /// be for that wallet), within the calling API key's spend limits, instead of `txSignature`.
    pub pay_from: Option<PayFrom>,
}

/// The request body as the OpenAPI document states it: [`EnterRequest`]'s fields, paid either
/// by a signature (`payerWallet` and `txSignature`) or by the server (`payFrom`), never both.
pub(crate) struct EnterBody;

impl utoipa::PartialSchema for EnterBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Type};
        use utoipa::openapi::{Ref, RefOr};
        let absent = || ObjectBuilder::new().schema_type(Type::Null);
        // Present *and* not null: `EnterRequest` alone lets each of them be null.
        let by_signature = ObjectBuilder::new()
            .required("payerWallet")
            .required("txSignature")
            .property("payerWallet", Ref::from_schema_name("WalletAddress"))
            .property(
                "txSignature",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("\\S")),
            )
            .property("payFrom", absent());
        let by_server = ObjectBuilder::new()
            .required("payFrom")
            .property("payFrom", Ref::from_schema_name("PayFrom"))
            .property("txSignature", absent());
        RefOr::T(
            AllOfBuilder::new()
                .item(Ref::from_schema_name("EnterRequest"))
                .item(OneOfBuilder::new().item(by_signature).item(by_server))
                .into(),
        )
    }
}

impl utoipa::ToSchema for EnterBody {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        use utoipa::PartialSchema;
        schemas.push(("EnterRequest".into(), EnterRequest::schema()));
        <EnterRequest as utoipa::ToSchema>::schemas(schemas);
    }
}

/// What `enter` hands back (201).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entered {
    pub run_id: String,
    pub dungeon_id: String,
    pub class: String,
    pub registration_key: String,
    pub turn_url: String,
    pub broadcast_url: String,
    pub watch_url: String,
    pub run_url: String,
    pub agent_skill_file: String,
}

pub(crate) enum EnterOutcome {
    Entered(Box<Entered>),
    /// Not final yet: resend the same request in a few seconds.
    Pending,
    /// The server paid from the embedded wallet with `signature`, not final yet: resend the
    /// same request in a few seconds.
    Paying {
        signature: String,
    },
}

/// The run's absolute URLs.
pub(crate) struct RunUrls {
    pub turn: String,
    pub broadcast: String,
    pub watch: String,
    pub run: String,
}

impl RunUrls {
    pub(crate) fn of(config: &Config, run_id: &str) -> Self {
        let base = format!("{}/api/dungeons/runs/{run_id}", config.public_url);
        RunUrls {
            turn: format!("{base}/turn"),
            broadcast: format!("{base}/broadcast"),
            watch: format!("{base}/watch"),
            run: base,
        }
    }
}

/// A quote checked for its payer and the run's class: everything but the payment.
pub(super) struct CheckedQuote {
    pub day: DungeonDay,
    pub payer: WalletAddress,
    pub class: Class,
    pub quote_id: String,
    pub amount_raw: u64,
    pub memo: String,
}

impl CheckedQuote {
    /// The payment the quote asks for.
    pub(super) fn expected(&self, chain: &Chain) -> ExpectedPayment {
        ExpectedPayment {
            payer: self.payer.to_string(),
            recipient: chain.dungeon().address.to_string(),
            mint: chain.stablecoin_mint().to_owned(),
            amount_raw: self.amount_raw,
            memo: self.memo.clone(),
        }
    }
}

pub(crate) async fn enter(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    config: &Config,
    dungeon_id: &str,
    caller: &Caller,
    request: EnterRequest,
) -> Result<EnterOutcome, DungeonError> {
    if request.pay_from.is_some() {
        return super::embedded_entry::enter(
            store, clock, chain, sealer, config, dungeon_id, caller, request,
        )
        .await;
    }
    let signature = request
        .tx_signature
        .as_deref()
        .map(str::trim)
        .filter(|signature| !signature.is_empty())
        .ok_or_else(|| {
            DungeonError::Invalid(
                "`txSignature` is required: the signature of the entry payment (or send `payFrom: \"embedded\"`)".into(),
            )
        })?
        .to_owned();
    let payer = request.payer_wallet.as_deref().ok_or_else(|| {
        DungeonError::Invalid("`payerWallet` is required: the wallet that paid the quote".into())
    })?;
    let checked = check_quote(
        store,
        clock,
        sealer,
        dungeon_id,
        caller,
        &request.quote_id,
        payer,
        request.class.as_deref(),
        Freshness::Unpaid,
    )
    .await?;
    ensure_unused(store, &signature).await?;
    let checked_payment = payment::check(
        chain,
        store,
        clock.now(),
        &signature,
        &checked.expected(chain),
    )
    .await?;
    if checked_payment == PaymentCheck::Pending {
        return Ok(EnterOutcome::Pending);
    }
    let entered = open_run(store, clock, sealer, config, caller, &checked, &signature).await?;
    tracing::info!(
        run_id = entered.run_id,
        dungeon_id,
        account_id = caller.account_id,
        "dungeon run opened"
    );
    Ok(EnterOutcome::Entered(Box::new(entered)))
}

/// Whether the quote must still be open: a quote the server already paid from the embedded
/// wallet is honoured once its payment lands, even if it expired (or the day ended) meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Freshness {
    Unpaid,
    PaidAlready,
}

/// Everything about the quote that can be refused before asking the chain.
pub(super) async fn check_quote(
    store: &Store,
    clock: &dyn Clock,
    sealer: &Sealer,
    dungeon_id: &str,
    caller: &Caller,
    quote_id: &str,
    payer: &str,
    class: Option<&str>,
    freshness: Freshness,
) -> Result<CheckedQuote, DungeonError> {
    let day = day::known(clock, dungeon_id)?;
    let payer = WalletAddress::parse(payer).map_err(DungeonError::Invalid)?;
    let class = match class.map(str::trim) {
        None | Some("") => Class::Fighter,
        Some(name) => Class::parse(name).ok_or_else(|| {
            DungeonError::Invalid(format!(
                "unknown class `{name}`: use one of {}",
                Class::ALL.map(Class::as_str).join(", ")
            ))
        })?,
    };
    crate::account::ensure_linked(store, &caller.account_id, [&payer]).await?;
    if freshness == Freshness::Unpaid {
        day::ensure_open(clock, day)?;
    }
    let quote_id = quote_id.trim();
    let quote = QuoteClaims::verify(quote_id, &quote_key(sealer)).map_err(|error| {
        DungeonError::QuoteUnknown(format!(
            "{error}: ask GET /api/dungeons/{}/quote?wallet=<payer> for one",
            day.id()
        ))
    })?;
    if quote.dungeon_id != day.id() {
        return Err(DungeonError::QuoteMismatch(format!(
            "quote {quote_id} is for dungeon {}, not {}",
            quote.dungeon_id,
            day.id()
        )));
    }
    if quote.wallet != payer.as_str() {
        return Err(DungeonError::QuoteMismatch(format!(
            "quote {quote_id} was issued to wallet {}, not {payer}",
            quote.wallet
        )));
    }
    if freshness == Freshness::Unpaid && clock.now() > quote.expires_at {
        return Err(DungeonError::QuoteExpired(format!(
            "quote {quote_id} expired at {}; ask for a new quote and pay it",
            rfc3339(quote.expires_at)
        )));
    }
    let memo = memo(&quote.dungeon_id, &quote.wallet, quote_id);
    let quote_used: Option<(String,)> =
        sqlx::query_as("SELECT id FROM dungeon_runs WHERE quote_id = $1")
            .bind(quote_id)
            .fetch_optional(store.read())
            .await?;
    if quote_used.is_some() {
        return Err(DungeonError::QuoteUsed(quote_id.to_owned()));
    }
    Ok(CheckedQuote {
        day,
        payer,
        class,
        quote_id: quote_id.to_owned(),
        amount_raw: quote.amount_raw,
        memo,
    })
}

/// A signature pays for one entry only.
pub(super) async fn ensure_unused(store: &Store, signature: &str) -> Result<(), DungeonError> {
    let used: Option<(String,)> =
        sqlx::query_as("SELECT purpose FROM payment_claims WHERE signature = $1")
            .bind(signature)
            .fetch_optional(store.read())
            .await?;
    if used.is_some() {
        return Err(DungeonError::SignatureUsed);
    }
    Ok(())
}

/// The claim, the run and its key, all or nothing.
pub(super) async fn open_run(
    store: &Store,
    clock: &dyn Clock,
    sealer: &Sealer,
    config: &Config,
    caller: &Caller,
    checked: &CheckedQuote,
    signature: &str,
) -> Result<Entered, DungeonError> {
    let salt = day::map_salt(store, sealer).await?;
    let map = checked.day.map(&salt);
    let run_id = new_id("run");
    let run = Run::new(&map, checked.class, rng::seed_from_str(&run_id));
    let key = run_key::mint();
    let now = to_millis(clock.now());
    let mut tx = store.begin().await?;
    sqlx::query(
        "INSERT INTO payment_claims (signature, purpose, reference, payer, amount_raw, claimed_at)
         VALUES ($1, 'dungeon', $2, $3, $4, $5)",
    )
    .bind(signature)
    .bind(&run_id)
    .bind(checked.payer.as_str())
    .bind(i64::try_from(checked.amount_raw).unwrap_or(i64::MAX))
    .bind(now)
    .execute(&mut *tx)
    .await
    .on_unique(|| DungeonError::SignatureUsed)?;
    sqlx::query(
        "INSERT INTO dungeon_runs (id, dungeon_id, account_id, wallet, class, quote_id, tx_signature,
             amount_raw, key_hash, key_sealed, status, score, deepest_floor, turn_number, version,
             last_seq, created_at, last_action_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'active', $11, $12, 0, 0, 0, $13, $13)",
    )
    .bind(&run_id)
    .bind(checked.day.id())
    .bind(&caller.account_id)
    .bind(checked.payer.as_str())
    .bind(checked.class.as_str())
    .bind(&checked.quote_id)
    .bind(signature)
    .bind(i64::try_from(checked.amount_raw).unwrap_or(i64::MAX))
    .bind(&key.hash)
    .bind(sealer.seal(key.key.as_bytes()))
    .bind(run.score())
    .bind(i64::from(run.tally().deepest_floor))
    .bind(now)
    .execute(&mut *tx)
    .await
    .on_unique(|| DungeonError::QuoteUsed(checked.quote_id.clone()))?;
    sqlx::query("INSERT INTO dungeon_run_snapshots (run_id, seq, state) VALUES ($1, 0, $2)")
        .bind(&run_id)
        .bind(serde_json::to_string(&run).map_err(DungeonError::internal)?)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    let urls = RunUrls::of(config, &run_id);
    let skill = agent_skill_markdown(&SkillContext {
        run_id: &run_id,
        dungeon_id: &map.id,
        theme: &map.theme,
        class: checked.class,
        turn_url: &urls.turn,
        broadcast_url: &urls.broadcast,
        watch_url: &urls.watch,
        run_url: &urls.run,
    });
    Ok(Entered {
        dungeon_id: map.id.clone(),
        class: checked.class.as_str().to_owned(),
        registration_key: key.key,
        turn_url: urls.turn,
        broadcast_url: urls.broadcast,
        watch_url: urls.watch,
        run_url: urls.run,
        agent_skill_file: skill,
        run_id,
    })
}

/// The skill file of an existing run (for the credential endpoint).
pub(crate) fn skill_file(
    config: &Config,
    run_id: &str,
    dungeon_id: &str,
    theme: &str,
    class: Class,
) -> String {
    let urls = RunUrls::of(config, run_id);
    agent_skill_markdown(&SkillContext {
        run_id,
        dungeon_id,
        theme,
        class,
        turn_url: &urls.turn,
        broadcast_url: &urls.broadcast,
        watch_url: &urls.watch,
        run_url: &urls.run,
    })
}
