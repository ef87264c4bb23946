//! Public tournament reads: list, detail, and the memo a paid registration needs.

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::custodial_entry::EntryError;
use super::leaderboard::{self, LeaderboardView};
use super::model::{Status, Tournament, TournamentView, registration_memo};
use super::performance::{self, Performance};
use super::privacy::{self, InviteParams};
use super::queries::{self, ListQuery};
use super::registration::{self, Outcome, RegisterBody, RegisterRequest, RegistrationError};
use crate::auth::{MaybeAccountAuth, Write};
use crate::cache;
use crate::chain::payment::PendingPayment;
use crate::domain::WalletAddress;
use crate::http::ApiError;
use crate::http::json::Json;
use crate::http::json::{Path, Query};
use crate::http::rate_limit::{ClientIp, IpLimit, RegistrationPolicy, TournamentReadPolicy};
use crate::state::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tournaments))
        .routes(routes!(get_tournament))
        .routes(routes!(get_registration_memo))
        .routes(routes!(register))
        .routes(routes!(get_leaderboard))
        .routes(routes!(get_performance))
        .routes(routes!(super::live::live))
        .routes(routes!(super::trades_feed::get_trades))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct ListParams {
    /// `upcoming`, `live` (or `active`), `ended` (or `completed`), `cancelled`.
    #[param(pattern = "^(upcoming|live|active|ended|completed|cancelled)?$")]
    status: Option<String>,
    /// Tournament type, e.g. `highest_pnl`.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    kind: Option<String>,
    /// `public` (default) or `private`.
    #[param(pattern = "^(public|private)?$")]
    visibility: Option<String>,
    /// Matches name or description, case-insensitively (at most 100 characters).
    #[param(max_length = 100)]
    search: Option<String>,
    /// 0-based page number (default 0).
    #[param(minimum = 0, maximum = 100_000)]
    page: Option<i64>,
    /// 1 to 50 (default 10).
    #[param(minimum = 1, maximum = 50)]
    page_size: Option<i64>,
    /// `name`, `createdAt` (default), `startDate`, `endDate`, `currentParticipants`.
    #[param(pattern = "^(name|createdAt|startDate|endDate|currentParticipants)?$")]
    order_by: Option<String>,
    /// `asc` or `desc` (default).
    #[param(pattern = "^(asc|desc)?$")]
    order: Option<String>,
}

impl ListParams {
    fn validate(self) -> Result<ListQuery, ApiError> {
        let bad = |message: &str| ApiError::bad_request(message);
        let status = match self.status.as_deref() {
            None | Some("") => None,
            Some("upcoming") => Some(Status::Upcoming),
            Some("live" | "active") => Some(Status::Live),
            Some("ended" | "completed") => Some(Status::Ended),
            Some("cancelled") => Some(Status::Cancelled),
            Some(_) => {
                return Err(bad(
                    "`status` must be one of upcoming, live, ended, cancelled (or active, completed)",
                ));
            }
        };
        let page = self.page.unwrap_or(0);
        if !(0..=100_000).contains(&page) {
            return Err(bad("`page` must be 0 to 100000"));
        }
        let page_size = self.page_size.unwrap_or(10);
        if !(1..=50).contains(&page_size) {
            return Err(bad("`pageSize` must be 1 to 50"));
        }
        ListQuery::parse(
            status,
            page,
            page_size,
            queries::SharedFilters {
                kind: self.kind,
                visibility: self.visibility.as_deref(),
                order_by: self.order_by.as_deref(),
                order: self.order.as_deref(),
                search: self.search,
            },
        )
        .map_err(|invalid| bad(invalid.message))
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Pagination {
    page: i64,
    page_size: i64,
    total_count: i64,
    total_pages: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct TournamentList {
    tournaments: Vec<TournamentView>,
    pagination: Pagination,
}

/// Tournaments, newest first by default; filter by status, type, visibility and text.
#[utoipa::path(get, path = "/api/tournaments", operation_id = "list_tournaments",
    security(()), tag = "tournaments", params(ListParams),
    responses((status = 200, body = TournamentList), (status = 400), (status = 429)))]
async fn list_tournaments(
    _limit: IpLimit<TournamentReadPolicy>,
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    Query(params): Query<ListParams>,
) -> Result<Response, ApiError> {
    let query = params.validate()?;
    cache::public_json(&state.caches, &headers, &cache_key(&uri), async {
        let now = state.now();
        let (rows, total) = privacy::listed(&state.store, &*state.clock, &query).await?;
        let list = TournamentList {
            tournaments: rows.iter().map(|t| t.view(now)).collect(),
            pagination: Pagination {
                page: query.page,
                page_size: query.page_size,
                total_count: total,
                total_pages: (total + query.page_size - 1) / query.page_size,
            },
        };
        let stale_at = rows.iter().filter_map(|t| t.next_change_after(now)).min();
        Ok((list, stale_at))
    })
    .await
}

/// What a public answer is cached under: everything it depends on is in its path and query.
fn cache_key(uri: &Uri) -> String {
    uri.path_and_query()
        .map_or_else(|| uri.path().to_owned(), |pq| pq.as_str().to_owned())
}

/// One tournament, with its escrow wallet, entry fee and status. A private one needs its
/// `inviteCode` (404 without it, as for an unknown id).
#[utoipa::path(get, path = "/api/tournaments/{id}", operation_id = "get_tournament",
    security(()), tag = "tournaments",
    params(("id" = String, Path, description = "Tournament id"), InviteParams),
    responses((status = 200, body = TournamentView), (status = 404), (status = 429)))]
async fn get_tournament(
    _limit: IpLimit<TournamentReadPolicy>,
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(invite): Query<InviteParams>,
) -> Result<Response, ApiError> {
    cache::public_json(&state.caches, &headers, &cache_key(&uri), async {
        let tournament = visible(&state, &id, invite.invite_code.as_deref()).await?;
        let now = state.now();
        Ok((tournament.view(now), tournament.next_change_after(now)))
    })
    .await
}

/// [`privacy::find_visible`] for the handlers: 404 when the caller may not see it.
pub(super) async fn visible(
    state: &AppState,
    id: &str,
    code: Option<&str>,
) -> Result<Tournament, ApiError> {
    privacy::find_visible(&state.store, id, code)
        .await?
        .ok_or_else(|| not_found(id))
}

pub(super) fn not_found(id: &str) -> ApiError {
    ApiError::NotFound(format!("no tournament `{id}`"))
}

impl From<RegistrationError> for ApiError {
    fn from(error: RegistrationError) -> Self {
        match error {
            RegistrationError::Invalid(message) => ApiError::BadRequest(message),
            RegistrationError::NotFound(id) => not_found(&id),
            RegistrationError::Limited(limited) => limited.into(),
            RegistrationError::Closed(message) => ApiError::Gone(message),
            RegistrationError::Account(account) => account.into(),
            RegistrationError::Full(_)
            | RegistrationError::AlreadyRegistered(_)
            | RegistrationError::SignatureUsed => ApiError::Conflict(error.to_string()),
            RegistrationError::Payment(payment) => payment.into(),
            RegistrationError::Store(store) => store.into(),
        }
    }
}

impl From<EntryError> for ApiError {
    fn from(error: EntryError) -> Self {
        let message = error.to_string();
        match error {
            EntryError::Registration(refused) => refused.into(),
            // The registration's status, its message saying what became of the fee.
            EntryError::Refunded { refused, .. } | EntryError::RefundOnceFinal(refused) => {
                with_message(refused.into(), message)
            }
            EntryError::Spend(refused) => refused.into(),
            EntryError::CannotPay(message) => ApiError::PaymentRequired(message),
            EntryError::Chain(message) => ApiError::Unavailable(message),
            EntryError::Store(store) => store.into(),
            EntryError::Internal(source) => ApiError::Internal(source),
        }
    }
}

/// `error` with `message` in place of its own.
fn with_message(error: ApiError, message: String) -> ApiError {
    match error {
        ApiError::NotFound(_) => ApiError::NotFound(message),
        ApiError::Conflict(_) => ApiError::Conflict(message),
        ApiError::Gone(_) => ApiError::Gone(message),
        other => other,
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct MemoParams {
    /// The wallets to register, comma-separated (1 to 10 distinct addresses).
    #[param(value_type = String, format = "solana-address-list", pattern = "^[1-9A-HJ-NP-Za-km-z]{32,44}(,[1-9A-HJ-NP-Za-km-z]{32,44}){0,9}$")]
    wallets: String,
    /// A private tournament's invite code.
    invite_code: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemoView {
    memo: String,
    wallets: Vec<String>,
    /// Entry fee × wallets, raw units, as a string.
    amount_raw: String,
    amount_ui: f64,
    escrow_wallet_address: String,
}

/// The exact memo and amount a paid registration of these wallets must carry.
#[utoipa::path(get, path = "/api/tournaments/{id}/registration-memo", operation_id = "get_registration_memo",
    security(()), tag = "tournaments",
    params(("id" = String, Path, description = "Tournament id"), MemoParams),
    responses((status = 200, body = MemoView), (status = 400), (status = 404), (status = 429)))]
async fn get_registration_memo(
    _limit: IpLimit<TournamentReadPolicy>,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<MemoParams>,
) -> Result<axum::Json<MemoView>, ApiError> {
    let tournament = visible(&state, &id, params.invite_code.as_deref()).await?;
    let mut wallets = params
        .wallets
        .split(',')
        .filter(|w| !w.trim().is_empty())
        .map(|w| WalletAddress::parse(w).map(|w| w.to_string()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(ApiError::BadRequest)?;
    wallets.sort_unstable();
    wallets.dedup();
    if !(1..=10).contains(&wallets.len()) {
        return Err(ApiError::bad_request(
            "`wallets` must list 1 to 10 distinct wallet addresses",
        ));
    }
    let amount = tournament
        .entry_fee_raw
        .saturating_mul(wallets.len() as i64);
    Ok(axum::Json(MemoView {
        memo: registration_memo(&tournament.id, &wallets),
        amount_raw: amount.to_string(),
        amount_ui: crate::usdc::Usdc::from_raw(amount).ui(),
        escrow_wallet_address: tournament.escrow_wallet,
        wallets,
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Registered {
    /// Wallets registered.
    count: usize,
}

/// Register 1–10 wallets. Free: `txSignature: null`. Paid: send the entry fee × wallets to
/// `escrowWalletAddress` with the registration memo, then this request with its signature;
/// 202 while the payment is not final (resend unchanged), 201 once registered. With an account
/// key (scope `write`) or session, the entry is attributed to that account and every wallet
/// must be one of its `allChainWallets`. With `payFrom: "embedded"` instead of a signature, the
/// server pays the fee from the account's embedded wallet, within the calling key's spend
/// limits, once however often the request is resent.
#[utoipa::path(post, path = "/api/tournaments/{id}/register", operation_id = "register_for_tournament",
    security((), ("sessionCookie" = []), ("accountKey" = [])), tag = "tournaments",
    params(("id" = String, Path, description = "Tournament id")),
    request_body = RegisterBody,
    responses((status = 201, body = Registered), (status = 202, body = PendingPayment),
              (status = 400, description = "Invalid body or missing fields"),
              (status = 401, description = "`payFrom` without an account key"),
              (status = 402, description = "`payFrom`: the embedded wallet cannot pay the fee"),
              (status = 403, description = "A wallet is not linked to the key's account, or `payFrom` by a key without spend limits or beyond them"),
              (status = 404), (status = 409, description = "Already registered, full, or signature already used"),
              (status = 410, description = "Ended"), (status = 422, description = "Payment verification failed"),
              (status = 429)))]
async fn register(
    _limit: IpLimit<RegistrationPolicy>,
    client_ip: ClientIp,
    State(state): State<AppState>,
    auth: MaybeAccountAuth<Write>,
    Path(id): Path<String>,
    Json(body): Json<RegisterRequest>,
) -> Result<axum::response::Response, ApiError> {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    // The per-tournament limit counts per client: the account when the request has one.
    let client = match &auth.0 {
        Some(caller) => format!("account:{}", caller.account_id),
        None => format!("ip:{}", client_ip.limit_key()),
    };
    let limit = registration::ClientLimit {
        limits: &state.limits,
        client: &client,
    };
    match registration::register(&state.store, &*state.clock, &state.events, &state.chain, &state.sealer, &state.caches.tournaments, &id, auth.0.as_ref(), body, Some(limit)).await? {
        Outcome::Registered { count } => {
            Ok((StatusCode::CREATED, axum::Json(Registered { count })).into_response())
        }
        Outcome::Pending => {
            Ok((StatusCode::ACCEPTED, axum::Json(PendingPayment::new())).into_response())
        }
        Outcome::Paying { signature } => Ok((
            StatusCode::ACCEPTED,
            axum::Json(PendingPayment::saying(format!(
                "the fee was paid from the embedded wallet (transaction {signature}) and is not final yet; resend the same request in a few seconds"
            ))),
        )
            .into_response()),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct PageParams {
    /// 0-based page (default 0), at most 100000.
    #[param(minimum = 0, maximum = 100_000)]
    page: Option<usize>,
    /// 1 to 500 entries (default 100).
    #[param(minimum = 1, maximum = 500)]
    page_size: Option<usize>,
}

impl PageParams {
    pub(super) fn validate(&self) -> Result<(usize, usize), ApiError> {
        let page_size = self.page_size.unwrap_or(100);
        if !(1..=500).contains(&page_size) {
            return Err(ApiError::bad_request("`pageSize` must be 1 to 500"));
        }
        let page = self.page.unwrap_or(0);
        // Bounded like every other page number, so the document can state the range.
        if page > 100_000 {
            return Err(ApiError::bad_request("`page` must be 0 to 100000"));
        }
        Ok((page, page_size))
    }
}

/// Ranked wallets: rank, PnL and portfolio values; `stale` when the newest snapshot is over 2 h old.
#[utoipa::path(get, path = "/api/tournaments/{id}/leaderboard", operation_id = "get_tournament_leaderboard",
    security(()), tag = "tournaments",
    params(("id" = String, Path, description = "Tournament id"), PageParams, InviteParams),
    responses((status = 200, body = LeaderboardView), (status = 400), (status = 404), (status = 429)))]
async fn get_leaderboard(
    _limit: IpLimit<TournamentReadPolicy>,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
    Query(invite): Query<InviteParams>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (page, page_size) = params.validate()?;
    cache::public_json(&state.caches, &headers, &cache_key(&uri), async {
        let tournament = visible(&state, &id, invite.invite_code.as_deref()).await?;
        let board = leaderboard::view(
            &state.store,
            &*state.clock,
            &state.leaderboards,
            &tournament,
            page,
            page_size,
        )
        .await?;
        Ok((board, tournament.next_change_after(state.now())))
    })
    .await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct PerformanceParams {
    /// One wallet's series; default: the top 10 of the leaderboard.
    wallet: Option<String>,
    /// Points per series, 2 to 500 (default 100).
    #[param(minimum = 2, maximum = 500)]
    points: Option<usize>,
}

/// Portfolio value over time per wallet, for charts (each series downsampled to `points`).
#[utoipa::path(get, path = "/api/tournaments/{id}/performance", operation_id = "get_tournament_performance",
    security(()), tag = "tournaments",
    params(("id" = String, Path, description = "Tournament id"), PerformanceParams, InviteParams),
    responses((status = 200, body = Performance), (status = 400), (status = 404), (status = 429)))]
async fn get_performance(
    _limit: IpLimit<TournamentReadPolicy>,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<PerformanceParams>,
    Query(invite): Query<InviteParams>,
) -> Result<axum::Json<Performance>, ApiError> {
    let points = params.points.unwrap_or(100);
    if !(2..=500).contains(&points) {
        return Err(ApiError::bad_request("`points` must be 2 to 500"));
    }
    let tournament = visible(&state, &id, invite.invite_code.as_deref()).await?;
    let series = performance::series(
        &state.store,
        &state.leaderboards,
        &tournament,
        params.wallet.as_deref(),
        points,
    )
    .await
    .map_err(|error| match error {
        performance::PerformanceError::NotRegistered(wallet) => ApiError::NotFound(format!(
            "wallet {wallet} is not registered for this tournament"
        )),
        performance::PerformanceError::Store(error) => error.into(),
    })?;
    Ok(axum::Json(series))
}
