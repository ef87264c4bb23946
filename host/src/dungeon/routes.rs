//! `/api/dungeons…` handlers and the account's run list (docs/api.md, "Dungeon"). Thin: parse,
//! call one service function, shape JSON. The OpenAPI document lists them under the tag
//! `dungeon`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::entry::{self, EnterBody, EnterOutcome, EnterRequest, Entered, Quote};
use super::play::{self, IllegalTurn, TurnReply, TurnResult};
use super::run_key::{RunKey, TurnKey};
use super::turn_request::TurnRequest;
use super::views::{AccountRuns, Credential, DungeonList, DungeonView, Leaderboard, RunPage};
use super::{DungeonError, views, watch};
use crate::auth::{AccountAuth, Read, Write};
use crate::chain::payment::PendingPayment;
use crate::domain::WalletAddress;
use crate::http::ApiError;
use crate::http::json::{Json, Path, Query};
use crate::http::rate_limit::{AccountPolicy, IpLimit, Limiter, Policy, RateLimits};
use crate::http::streams::StreamSlot;
use crate::state::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(detail))
        .routes(routes!(quote, quote_by_post))
        .routes(routes!(leaderboard))
        .routes(routes!(enter))
        .routes(routes!(run_page))
        .routes(routes!(credential))
        .routes(routes!(turn))
        .routes(routes!(broadcast))
        .routes(routes!(watch))
        .routes(routes!(account_runs))
}

impl From<DungeonError> for ApiError {
    fn from(error: DungeonError) -> Self {
        match error {
            DungeonError::UnknownDungeon(_)
            | DungeonError::UnknownRun(_)
            | DungeonError::QuoteUnknown(_) => ApiError::NotFound(error.to_string()),
            DungeonError::Closed { .. } | DungeonError::QuoteExpired(_) => {
                ApiError::Gone(error.to_string())
            }
            DungeonError::Invalid(message) => ApiError::BadRequest(message),
            DungeonError::Account(account) => account.into(),
            DungeonError::QuoteMismatch(message) => ApiError::Unprocessable(message),
            DungeonError::QuoteUsed(_)
            | DungeonError::SignatureUsed
            | DungeonError::OutOfTurn(_) => ApiError::Conflict(error.to_string()),
            DungeonError::Payment(payment) => payment.into(),
            DungeonError::Spend(refused) => refused.into(),
            DungeonError::CannotPay(message) => ApiError::PaymentRequired(message),
            DungeonError::Chain(message) => ApiError::Unavailable(message),
            DungeonError::RunEnded { .. } => ApiError::Unauthorized(error.to_string()),
            DungeonError::OtherRun(_) | DungeonError::AccountSuspended(_) => {
                ApiError::Forbidden(error.to_string())
            }
            DungeonError::Limited(limited) => limited.into(),
            DungeonError::Store(store) => store.into(),
            DungeonError::Internal(source) => ApiError::Internal(source),
        }
    }
}

/// Public dungeon reads share one per-IP budget.
pub(super) struct DungeonReadPolicy;
impl Policy for DungeonReadPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.dungeon_reads
    }
}

type Reads = IpLimit<DungeonReadPolicy>;

/// Today's dungeon first, then the previous days.
#[utoipa::path(get, path = "/api/dungeons", operation_id = "list_dungeons",
    security(()), tag = "dungeon",
    responses((status = 200, body = DungeonList), (status = 429)))]
async fn list(_limit: Reads, State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(axum::Json(
        views::list(
            &state.store,
            &*state.clock,
            &state.chain,
            &state.sealer,
            &state.config,
        )
        .await?,
    )
    .into_response())
}

/// One day's dungeon.
#[utoipa::path(get, path = "/api/dungeons/{dungeonId}", operation_id = "get_dungeon",
    security(()), tag = "dungeon",
    params(("dungeonId" = String, Path, description = "The dungeon's day, YYYY-MM-DD (UTC)")),
    responses((status = 200, body = DungeonView), (status = 404), (status = 429)))]
async fn detail(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(
        views::detail(
            &state.store,
            &*state.clock,
            &state.chain,
            &state.sealer,
            &state.config,
            &dungeon_id,
        )
        .await?,
    )
    .into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct QuoteParams {
    /// The wallet that will pay (required).
    #[param(value_type = WalletAddress, required = true)]
    wallet: Option<String>,
}

/// A signed quote for entering today's dungeon from `wallet`; nothing is stored.
#[utoipa::path(get, path = "/api/dungeons/{dungeonId}/quote", operation_id = "get_dungeon_quote",
    security(()), tag = "dungeon",
    params(("dungeonId" = String, Path, description = "The dungeon's day, YYYY-MM-DD (UTC)"), QuoteParams),
    responses((status = 200, body = Quote), (status = 400), (status = 404),
              (status = 410, description = "The dungeon is closed"), (status = 429)))]
async fn quote(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
    Query(params): Query<QuoteParams>,
) -> Result<Response, ApiError> {
    let wallet = params.wallet.ok_or_else(|| {
        ApiError::bad_request("`wallet` is required: the wallet that will pay the entry")
    })?;
    Ok(axum::Json(entry::quote(
        &*state.clock,
        &state.chain,
        &state.sealer,
        &dungeon_id,
        &wallet,
    )?)
    .into_response())
}

/// The body of `POST /api/dungeons/{dungeonId}/quote`: the same quote as the GET, for clients
/// that prefer not to put the wallet in a URL. Like the GET, it stores nothing.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct QuoteBody {
    /// The wallet that will pay.
    #[schema(value_type = WalletAddress)]
    wallet: String,
}

/// The same quote as the GET, with the wallet in the body.
#[utoipa::path(post, path = "/api/dungeons/{dungeonId}/quote", operation_id = "post_dungeon_quote",
    security(()), tag = "dungeon",
    params(("dungeonId" = String, Path, description = "The dungeon's day, YYYY-MM-DD (UTC)")), request_body = QuoteBody,
    responses((status = 200, body = Quote), (status = 400), (status = 404),
              (status = 410, description = "The dungeon is closed"), (status = 429)))]
async fn quote_by_post(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
    Json(body): Json<QuoteBody>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(entry::quote(
        &*state.clock,
        &state.chain,
        &state.sealer,
        &dungeon_id,
        &body.wallet,
    )?)
    .into_response())
}

/// Per wallet: best score, deepest floor, whether any run cleared; best first.
#[utoipa::path(get, path = "/api/dungeons/{dungeonId}/leaderboard", operation_id = "get_dungeon_leaderboard",
    security(()), tag = "dungeon",
    params(("dungeonId" = String, Path, description = "The dungeon's day, YYYY-MM-DD (UTC)")),
    responses((status = 200, body = Leaderboard), (status = 404), (status = 429)))]
async fn leaderboard(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(
        axum::Json(views::leaderboard(&state.store, &*state.clock, &dungeon_id).await?)
            .into_response(),
    )
}

/// Enter today's dungeon with a paid quote: 201 with the run's key and URLs, 202 while the
/// payment is not final (resend the same request). With `payFrom: "embedded"` instead of a
/// signature, the server pays the quote from the account's embedded wallet, within the calling
/// key's spend limits, once per quote.
#[utoipa::path(post, path = "/api/dungeons/{dungeonId}/enter", operation_id = "enter_dungeon",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "dungeon",
    params(("dungeonId" = String, Path, description = "The dungeon's day, YYYY-MM-DD (UTC)")), request_body = EnterBody,
    responses((status = 201, body = Entered),
              (status = 202, body = PendingPayment, description = "Paid, not final yet: resend"),
              (status = 400), (status = 401),
              (status = 402, description = "`payFrom`: the embedded wallet cannot pay the entry"),
              (status = 403, description = "A key without `write`, a payer that is not the account's, or `payFrom` by a session, a key without spend limits or beyond them"),
              (status = 404), (status = 409), (status = 410), (status = 422), (status = 429),
              (status = 503, description = "The Solana RPC node is unavailable")))]
async fn enter(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Write>,
    Path(dungeon_id): Path<String>,
    Json(request): Json<EnterRequest>,
) -> Result<Response, ApiError> {
    Ok(
        match entry::enter(&state.store, &*state.clock, &state.chain, &state.sealer, &state.config, &dungeon_id, &auth.caller, request).await? {
            EnterOutcome::Entered(entered) => {
                (StatusCode::CREATED, axum::Json(entered)).into_response()
            }
            EnterOutcome::Pending => {
                (StatusCode::ACCEPTED, axum::Json(PendingPayment::new())).into_response()
            }
            EnterOutcome::Paying { signature } => (
                StatusCode::ACCEPTED,
                axum::Json(PendingPayment::saying(format!(
                    "the entry was paid from the embedded wallet (transaction {signature}) and is not final yet; resend the same request in a few seconds"
                ))),
            )
                .into_response(),
        },
    )
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct RunPageParams {
    /// Events after this sequence number (the previous page's `nextAfterSeq`), 0 to 2147483647.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 2_147_483_647)]
    after_seq: Option<String>,
    /// Events per page, 1 to 1000 ([`views::RUN_PAGE_MAX`]).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
}

/// The largest `afterSeq` (far beyond any run's events): bounded so the document can state it.
const MAX_AFTER_SEQ: i64 = 2_147_483_647;

/// A run's public page: summary, state now, and one page of its event record.
#[utoipa::path(get, path = "/api/dungeons/runs/{runId}", operation_id = "get_dungeon_run",
    security(()), tag = "dungeon",
    params(("runId" = String, Path, description = "Run id"), RunPageParams),
    responses((status = 200, body = RunPage), (status = 400), (status = 404), (status = 429)))]
async fn run_page(
    _limit: Reads,
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    Query(params): Query<RunPageParams>,
) -> Result<Response, ApiError> {
    let after_seq = match params.after_seq.as_deref() {
        None => 0,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (0..=MAX_AFTER_SEQ).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "`afterSeq` must be a sequence number from 0 to {MAX_AFTER_SEQ}"
                ))
            })?,
    };
    let limit = match params.limit.as_deref() {
        None => views::RUN_PAGE_DEFAULT,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=views::RUN_PAGE_MAX).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "`limit` must be 1 to {} events",
                    views::RUN_PAGE_MAX
                ))
            })?,
    };
    Ok(
        axum::Json(views::run_page(&state.store, &state.config, &run_id, after_seq, limit).await?)
            .into_response(),
    )
}

/// The run's key again, for its owner only.
#[utoipa::path(get, path = "/api/dungeons/runs/{runId}/credential", operation_id = "get_dungeon_run_credential",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "dungeon",
    params(("runId" = String, Path, description = "Run id")),
    responses((status = 200, body = Credential), (status = 401), (status = 404), (status = 429)))]
async fn credential(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(
        views::credential(
            &state.store,
            &state.sealer,
            &state.config,
            &run_id,
            auth.account_id(),
        )
        .await?,
    )
    .into_response())
}

/// The caller's runs, newest first.
#[utoipa::path(get, path = "/api/account/dungeon-runs", operation_id = "list_account_dungeon_runs",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "dungeon",
    responses((status = 200, body = AccountRuns), (status = 401), (status = 429)))]
async fn account_runs(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<Response, ApiError> {
    Ok(
        axum::Json(views::account_runs(&state.store, &state.config, auth.account_id()).await?)
            .into_response(),
    )
}

/// Play one turn with the run's key (`Authorization: Bearer`). A retried `turnNumber` is
/// answered from the record, never played twice.
#[utoipa::path(post, path = "/api/dungeons/runs/{runId}/turn", operation_id = "play_dungeon_turn",
    security(("runKey" = [])), tag = "dungeon",
    params(("runId" = String, Path, description = "Run id")), request_body = TurnRequest,
    responses((status = 200, body = TurnReply),
              (status = 400, body = TurnRefused,
               description = "Not a legal action now (1 AP charged, `IllegalTurn`), or a body that does not parse (nothing charged, the plain error form)"),
              (status = 401), (status = 403), (status = 404), (status = 409), (status = 429)))]
async fn turn(
    State(state): State<AppState>,
    TurnKey { key, fresh }: TurnKey,
    Path(run_id): Path<String>,
    Json(request): Json<TurnRequest>,
) -> Result<Response, ApiError> {
    key.for_run(&run_id)?;
    state.limits.dungeon_turns.check(&run_id).await?;
    let span = tracing::debug_span!("dungeon_turn", run_id);
    let result = tracing::Instrument::instrument(
        play::turn(
            &state.store,
            &*state.clock,
            &state.events,
            &state.caches.dungeon_runs,
            key.row,
            fresh,
            request,
        ),
        span,
    )
    .await?;
    let (status, body) = match result {
        TurnResult::Played(body) => (StatusCode::OK, body),
        TurnResult::Illegal(body) => (StatusCode::BAD_REQUEST, body),
    };
    Ok((
        status,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct BroadcastRequest {
    /// 1 to 280 characters once trimmed.
    #[schema(max_length = 280, pattern = "\\S")]
    message: String,
}

/// A message for the run's watchers, with the run's key.
#[utoipa::path(post, path = "/api/dungeons/runs/{runId}/broadcast", operation_id = "broadcast_to_dungeon_run",
    security(("runKey" = [])), tag = "dungeon",
    params(("runId" = String, Path, description = "Run id")), request_body = BroadcastRequest,
    responses((status = 201, body = Broadcast), (status = 400), (status = 401), (status = 403),
              (status = 404), (status = 429)))]
async fn broadcast(
    State(state): State<AppState>,
    key: RunKey,
    Path(run_id): Path<String>,
    Json(request): Json<BroadcastRequest>,
) -> Result<Response, ApiError> {
    key.for_run(&run_id)?;
    let seq = play::broadcast(
        &state.store,
        &*state.clock,
        &state.events,
        &run_id,
        &request.message,
    )
    .await?;
    Ok((StatusCode::CREATED, axum::Json(Broadcast { run_id, seq })).into_response())
}

/// A turn's 400 bodies (docs/api.md, "Dungeon"): one of the two forms, told apart by
/// `availableActions`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
enum TurnRefused {
    /// An illegal action: charged, with what is legal now.
    #[allow(
        dead_code,
        reason = "spliced from its parts by play::turn; here for the document"
    )]
    Illegal(IllegalTurn),
    /// A missing body or one that does not parse.
    #[allow(
        dead_code,
        reason = "sent by the body's extractor; here only for the document"
    )]
    Unreadable(UnreadableTurn),
}

/// The plain error form of a turn whose body is missing or does not parse: sent by the body's
/// extractor (`crate::http::json`) before the handler runs, so nothing here builds it; it is
/// named so the document lists both forms. Nothing beside `error`, which tells it apart from
/// [`IllegalTurn`].
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "sent by the body's extractor; here only for the document"
)]
struct UnreadableTurn {
    error: String,
}

/// The 201 body of a broadcast: its place in the run's event record.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Broadcast {
    run_id: String,
    seq: i64,
}

/// The run's events as server-sent events, with the run's key; `Last-Event-ID` resumes.
#[utoipa::path(get, path = "/api/dungeons/runs/{runId}/watch", operation_id = "watch_dungeon_run",
    security(("runKey" = [])), tag = "dungeon",
    params(("runId" = String, Path, description = "Run id")),
    responses((status = 200, content_type = "text/event-stream", description = "The event stream"),
              (status = 400), (status = 401), (status = 403), (status = 404), (status = 429)))]
async fn watch(
    State(state): State<AppState>,
    key: RunKey,
    slot: StreamSlot,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    key.for_run(&run_id)?;
    state.limits.dungeon_watches.check(&run_id).await?;
    let last_seq = match headers.get("last-event-id") {
        None => 0,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok())
            .filter(|seq| *seq >= 0)
            .ok_or_else(|| {
                ApiError::bad_request("`Last-Event-ID` must be an event id (a sequence number)")
            })?,
    };
    Ok(watch::stream(state, run_id, last_seq, slot).into_response())
}
