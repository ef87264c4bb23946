//! `/api/dungeons…` handlers and the account's run list (docs/api.md, "Dungeon"). Thin: parse,
//! call one service function, shape JSON. These routes are outside the OpenAPI document, so they
//! are a plain axum router.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

use super::entry::{self, EnterOutcome, EnterRequest};
use super::game::TurnRequest;
use super::play::{self, TurnResult};
use super::run_key::RunKey;
use super::{DungeonError, views, watch};
use crate::auth::{AccountAuth, Read, Write};
use crate::chain::payment::PendingPayment;
use crate::http::ApiError;
use crate::http::json::{Json, Path, Query};
use crate::http::rate_limit::{AccountPolicy, IpLimit, Limiter, Policy, RateLimits};
use crate::http::streams::StreamSlot;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/dungeons", get(list))
        .route("/api/dungeons/{dungeon_id}", get(detail))
        .route(
            "/api/dungeons/{dungeon_id}/quote",
            get(quote).post(quote_by_post),
        )
        .route("/api/dungeons/{dungeon_id}/leaderboard", get(leaderboard))
        .route("/api/dungeons/{dungeon_id}/enter", post(enter))
        .route("/api/dungeons/runs/{run_id}", get(run_page))
        .route("/api/dungeons/runs/{run_id}/credential", get(credential))
        .route("/api/dungeons/runs/{run_id}/turn", post(turn))
        .route("/api/dungeons/runs/{run_id}/broadcast", post(broadcast))
        .route("/api/dungeons/runs/{run_id}/watch", get(watch))
        .route("/api/account/dungeon-runs", get(account_runs))
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
            DungeonError::RunEnded { .. } => ApiError::Unauthorized(error.to_string()),
            DungeonError::OtherRun(_) => ApiError::Forbidden(error.to_string()),
            DungeonError::Limited(limited) => limited.into(),
            DungeonError::Store(store) => store.into(),
            DungeonError::Internal(source) => ApiError::Internal(source),
        }
    }
}

/// Public dungeon reads share one per-IP budget.
pub struct DungeonReadPolicy;
impl Policy for DungeonReadPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.dungeon_reads
    }
}

type Reads = IpLimit<DungeonReadPolicy>;

async fn list(_limit: Reads, State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(axum::Json(views::list(&state).await?).into_response())
}

async fn detail(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(views::detail(&state, &dungeon_id).await?).into_response())
}

#[derive(Debug, Deserialize)]
struct QuoteParams {
    /// The wallet that will pay.
    wallet: Option<String>,
}

async fn quote(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
    Query(params): Query<QuoteParams>,
) -> Result<Response, ApiError> {
    let wallet = params.wallet.ok_or_else(|| {
        ApiError::bad_request("`wallet` is required: the wallet that will pay the entry")
    })?;
    Ok(axum::Json(entry::quote(&state, &dungeon_id, &wallet)?).into_response())
}

/// The body of `POST /api/dungeons/{dungeonId}/quote`: the same quote as the GET, for clients
/// that prefer not to put the wallet in a URL. Like the GET, it stores nothing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuoteBody {
    wallet: String,
}

async fn quote_by_post(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
    Json(body): Json<QuoteBody>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(entry::quote(&state, &dungeon_id, &body.wallet)?).into_response())
}

async fn leaderboard(
    _limit: Reads,
    State(state): State<AppState>,
    Path(dungeon_id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(views::leaderboard(&state, &dungeon_id).await?).into_response())
}

async fn enter(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Write>,
    Path(dungeon_id): Path<String>,
    Json(request): Json<EnterRequest>,
) -> Result<Response, ApiError> {
    Ok(
        match entry::enter(&state, &dungeon_id, &auth.caller, request).await? {
            EnterOutcome::Entered(entered) => {
                (StatusCode::CREATED, axum::Json(entered)).into_response()
            }
            EnterOutcome::Pending => {
                (StatusCode::ACCEPTED, axum::Json(PendingPayment::new())).into_response()
            }
        },
    )
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunPageParams {
    /// Events after this sequence number (the previous page's `nextAfterSeq`).
    after_seq: Option<String>,
    /// Events per page, 1 to [`views::RUN_PAGE_MAX`].
    limit: Option<String>,
}

async fn run_page(
    _limit: Reads,
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    Query(params): Query<RunPageParams>,
) -> Result<Response, ApiError> {
    let after_seq = match params.after_seq.as_deref() {
        None => 0,
        Some(raw) => raw.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::bad_request("`afterSeq` must be a sequence number (0 or more)")
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
    Ok(axum::Json(views::run_page(&state, &run_id, after_seq, limit).await?).into_response())
}

async fn credential(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(views::credential(&state, &run_id, auth.account_id()).await?).into_response())
}

async fn account_runs(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(views::account_runs(&state, auth.account_id()).await?).into_response())
}

async fn turn(
    State(state): State<AppState>,
    key: RunKey,
    Path(run_id): Path<String>,
    Json(request): Json<TurnRequest>,
) -> Result<Response, ApiError> {
    key.for_run(&run_id)?;
    state.limits.dungeon_turns.check(&run_id).await?;
    let span = tracing::debug_span!("dungeon_turn", run_id);
    let result =
        tracing::Instrument::instrument(play::turn(&state, key.row, request), span).await?;
    Ok(match result {
        TurnResult::Played(reply) => axum::Json(reply).into_response(),
        TurnResult::Illegal { message, reply } => (
            StatusCode::BAD_REQUEST,
            axum::Json(IllegalTurn {
                error: message,
                available_actions: reply["availableActions"].clone(),
                state: reply,
            }),
        )
            .into_response(),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BroadcastRequest {
    message: String,
}

async fn broadcast(
    State(state): State<AppState>,
    key: RunKey,
    Path(run_id): Path<String>,
    Json(request): Json<BroadcastRequest>,
) -> Result<Response, ApiError> {
    key.for_run(&run_id)?;
    let seq = play::broadcast(&state, &run_id, &request.message).await?;
    Ok((StatusCode::CREATED, axum::Json(Broadcast { run_id, seq })).into_response())
}

/// The 400 body of an illegal action: the error form plus what is legal now, and the state
/// after the 1 AP charge.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct IllegalTurn {
    error: String,
    available_actions: serde_json::Value,
    state: serde_json::Value,
}

/// The 201 body of a broadcast: its place in the run's event record.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Broadcast {
    run_id: String,
    seq: i64,
}

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
