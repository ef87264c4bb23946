//! `/api/account…` handlers.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::balances::{self, BalanceError, WalletBalances};
use super::error::AccountError;
use super::queries::{self, AccountView, ProfileChange, WalletView};
use crate::auth::{AccountAuth, Read, Write, wallet_proof};
use crate::clock::{from_millis, rfc3339};
use crate::domain::{HttpUrl, Label, WalletAddress};
use crate::http::ApiError;
use crate::http::json::Json;
use crate::http::rate_limit::{AccountPolicy, IpLimit};
use crate::state::AppState;
use crate::tournaments::model::Status;
use crate::usdc::Usdc;

impl From<AccountError> for ApiError {
    fn from(error: AccountError) -> Self {
        match error {
            AccountError::NotFound => ApiError::NotFound(error.to_string()),
            AccountError::WalletTaken => ApiError::Conflict(error.to_string()),
            AccountError::WalletNotLinked(_) => ApiError::Forbidden(error.to_string()),
            AccountError::Store(store) => store.into(),
        }
    }
}

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_account, patch_account))
        .routes(routes!(wallet_balances, link_wallet))
        .routes(routes!(account_tournaments))
        .routes(routes!(account_payouts))
        .routes(routes!(account_audit))
}

/// The caller's account, including `allChainWallets`.
#[utoipa::path(get, path = "/api/account", operation_id = "get_account",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    responses((status = 200, body = AccountView), (status = 401), (status = 403)))]
async fn get_account(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<axum::Json<AccountView>, ApiError> {
    let view = state
        .caches
        .accounts
        .get_or_load(auth.account_id(), async {
            queries::load(&state.store, auth.account_id())
                .await
                .map(|view| (view, None))
        })
        .await?;
    Ok(axum::Json(AccountView::clone(&view)))
}

/// Harmless profile fields; `null` clears one, an absent field is left as it is.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct AccountPatch {
    /// 1 to 40 characters, no control characters.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 40, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$")]
    display_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<HttpUrl>)]
    avatar_url: Option<Option<String>>,
    /// 1 to 280 characters, no control characters.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 280, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$")]
    bio: Option<Option<String>>,
}

/// Distinguishes a field sent as `null` (`Some(None)`) from one not sent (`None`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// Update profile fields (`displayName` ≤ 40, `avatarUrl` http(s), `bio` ≤ 280). Unknown fields → 400.
#[utoipa::path(patch, path = "/api/account", operation_id = "patch_account",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account", request_body = AccountPatch,
    responses((status = 200, body = AccountView), (status = 400), (status = 401), (status = 403)))]
async fn patch_account(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Write>,
    Json(patch): Json<AccountPatch>,
) -> Result<axum::Json<AccountView>, ApiError> {
    let clean = |field: &str,
                 value: Option<Option<String>>,
                 parse: &dyn Fn(&str) -> Result<String, String>| {
        value
            .map(|inner| inner.map(|text| parse(&text)).transpose())
            .transpose()
            .map_err(|why| {
                tracing::debug!(field, "invalid account patch");
                ApiError::BadRequest(why)
            })
    };
    let display_name = clean("displayName", patch.display_name, &|text| {
        Label::parse("displayName", text, 40).map(Label::into_inner)
    })?;
    let avatar_url = clean("avatarUrl", patch.avatar_url, &|text| {
        HttpUrl::parse("avatarUrl", text).map(HttpUrl::into_inner)
    })?;
    let bio = clean("bio", patch.bio, &|text| {
        Label::parse("bio", text, 280).map(Label::into_inner)
    })?;

    let change = ProfileChange {
        display_name,
        avatar_url,
        bio,
    };
    queries::update_profile(
        &state.store,
        &*state.clock,
        &state.events,
        auth.account_id(),
        change,
    )
    .await?;
    Ok(axum::Json(
        queries::load(&state.store, auth.account_id()).await?,
    ))
}

impl From<BalanceError> for ApiError {
    fn from(error: BalanceError) -> Self {
        match error {
            BalanceError::Account(account) => account.into(),
            BalanceError::Chain(_) => ApiError::Unavailable(error.to_string()),
        }
    }
}

/// The account's wallets with their SOL and USDC balances, read from the chain now.
#[utoipa::path(get, path = "/api/account/wallets", operation_id = "list_account_wallets",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    responses((status = 200, body = WalletBalances), (status = 401), (status = 403), (status = 429), (status = 503)))]
async fn wallet_balances(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<axum::Json<WalletBalances>, ApiError> {
    Ok(axum::Json(
        balances::balances(&state.store, &*state.clock, &state.chain, auth.account_id()).await?,
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct LinkWalletRequest {
    #[schema(value_type = WalletAddress)]
    wallet: String,
    /// From `POST /api/auth/nonce` for this wallet.
    nonce: String,
    /// base58 ed25519 signature of the nonce's message by `wallet`.
    #[schema(schema_with = crate::auth::wallet_proof::signature_schema)]
    signature: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct WalletsView {
    all_chain_wallets: Vec<String>,
    wallets: Vec<WalletView>,
}

/// Link a further wallet by proving control of it (signature over a server nonce).
#[utoipa::path(post, path = "/api/account/wallets", operation_id = "link_wallet",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account", request_body = LinkWalletRequest,
    responses((status = 201, body = WalletsView, description = "Linked"),
              (status = 200, body = WalletsView, description = "Already linked to this account"),
              (status = 400), (status = 401), (status = 403),
              (status = 409, description = "Linked to another account")))]
async fn link_wallet(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Write>,
    Json(body): Json<LinkWalletRequest>,
) -> Result<(StatusCode, axum::Json<WalletsView>), ApiError> {
    let wallet = WalletAddress::parse(&body.wallet).map_err(ApiError::BadRequest)?;
    wallet_proof::verify_and_consume(
        &state.store,
        &*state.clock,
        &wallet,
        &body.nonce,
        &body.signature,
    )
    .await?;
    let status = if queries::link_proven(
        &state.store,
        &*state.clock,
        &state.events,
        auth.account_id(),
        &wallet,
    )
    .await?
    {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let wallets = queries::wallets_of(&state.store, auth.account_id()).await?;
    let all_chain_wallets = wallets
        .iter()
        .map(|wallet| wallet.address.clone())
        .collect();
    Ok((
        status,
        axum::Json(WalletsView {
            all_chain_wallets,
            wallets,
        }),
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AccountTournament {
    tournament_id: String,
    name: String,
    status: String,
    wallet: String,
    tx_signature: Option<String>,
    registered_at: String,
    final_rank: Option<i64>,
    final_pnl: Option<f64>,
    /// The prize in USDC (display units), once awarded.
    prize_awarded: Option<f64>,
    /// Raw stablecoin units, as a string (exact for any amount).
    prize_awarded_raw: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AccountTournaments {
    tournaments: Vec<AccountTournament>,
}

/// Tournament entries attributed to the account, newest first.
#[utoipa::path(get, path = "/api/account/tournaments", operation_id = "list_account_tournaments",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    responses((status = 200, body = AccountTournaments), (status = 401), (status = 403)))]
async fn account_tournaments(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<axum::Json<AccountTournaments>, ApiError> {
    let rows = queries::entries(&state.store, auth.account_id()).await?;
    let now = state.now();
    let tournaments = rows
        .into_iter()
        .map(|row| AccountTournament {
            tournament_id: row.tournament_id,
            name: row.name,
            // As every tournament read: the status by the clock, not the row's last write.
            status: Status::effective(&row.stored_status, row.start_date, row.end_date, now)
                .as_str()
                .to_owned(),
            wallet: row.wallet,
            tx_signature: row.tx_signature,
            registered_at: rfc3339(from_millis(row.registered_at)),
            final_rank: row.final_rank,
            final_pnl: row.final_pnl,
            prize_awarded: row.prize_awarded_raw.map(|raw| Usdc::from_raw(raw).ui()),
            prize_awarded_raw: row.prize_awarded_raw.map(|raw| raw.to_string()),
        })
        .collect();
    Ok(axum::Json(AccountTournaments { tournaments }))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AccountPayout {
    payout_id: String,
    /// `tournament` or `dungeon` (a prize), or `refund` (an entry fee paid back; `sourceId` is
    /// the tournament, `reason` says why).
    source_kind: String,
    source_id: String,
    wallet: String,
    rank: Option<i64>,
    /// Raw stablecoin units, as a string.
    amount_raw: String,
    /// The same prize in USDC (display units).
    prize_awarded: f64,
    mint: String,
    /// `pending`, `sent` or `failed`.
    status: String,
    tx_signature: Option<String>,
    created_at: String,
    sent_at: Option<String>,
    /// Why a refund is owed: the tournament's cancellation, or the registration an agent's paid
    /// entry could not complete. `null` for prizes.
    reason: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AccountPayouts {
    payouts: Vec<AccountPayout>,
}

/// Prizes and refunds owed to or paid to the account, newest first.
#[utoipa::path(get, path = "/api/account/payouts", operation_id = "list_account_payouts",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    responses((status = 200, body = AccountPayouts), (status = 401), (status = 403)))]
async fn account_payouts(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<axum::Json<AccountPayouts>, ApiError> {
    let rows = queries::payouts(&state.store, auth.account_id()).await?;
    let payouts = rows
        .into_iter()
        .map(|row| AccountPayout {
            payout_id: row.id,
            source_kind: row.source_kind,
            source_id: row.source_id,
            wallet: row.wallet,
            rank: row.rank,
            amount_raw: row.amount_raw.to_string(),
            prize_awarded: Usdc::from_raw(row.amount_raw).ui(),
            mint: row.mint,
            status: row.status.as_str().to_owned(),
            tx_signature: row.tx_signature,
            created_at: rfc3339(from_millis(row.created_at)),
            sent_at: row.sent_at.map(|at| rfc3339(from_millis(at))),
            reason: row.reason,
        })
        .collect();
    Ok(axum::Json(AccountPayouts { payouts }))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AccountAudit {
    /// The account's key events (`key.create`, `key.revoke`), newest first.
    entries: Vec<crate::audit::AuditView>,
}

/// The account's own key events from the audit log: every key minted or revoked, when and by
/// whom (the last 200).
#[utoipa::path(get, path = "/api/account/audit", operation_id = "get_account_audit",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    responses((status = 200, body = AccountAudit), (status = 401), (status = 403)))]
async fn account_audit(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<axum::Json<AccountAudit>, ApiError> {
    let filter = crate::audit::Filter {
        action_prefix: Some("key.".into()),
        account_id: Some(auth.account_id().to_owned()),
        limit: 200,
        ..crate::audit::Filter::default()
    };
    Ok(axum::Json(AccountAudit {
        entries: crate::audit::list(&state.store, &filter).await?,
    }))
}
