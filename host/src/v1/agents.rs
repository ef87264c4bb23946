//! `/api/v1/public/agents…` and `/api/v1/public/strategies`: thin handlers over
//! [`crate::agents`]. Another account's agent is answered exactly like a missing one.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::{V1Error, ok};
use super::extract::{AgentsRead, AgentsStart, AgentsStop, AgentsWrite, Body, Path, Query, V1Key};
use super::tournaments::{envelope, page};
use crate::agents::entry::{self, Entered, EntryError};
use crate::agents::performance::{self, Period};
use crate::agents::{self, AgentError, AgentView, new_agent, service, strategies};
use crate::chain::payment::PendingPayment;
use crate::clock::{from_millis, rfc3339};
use crate::market::Interval;
use crate::state::AppState;

pub fn router(upload_limit: usize) -> Router<AppState> {
    // Uploads may be as large as the sandbox accepts, plus room for the limit's own check.
    let upload_limit = upload_limit + 1024;
    Router::new()
        .route("/public/agents", get(list))
        .route("/public/agents/create", post(create))
        .route("/public/agents/{agentId}", get(detail))
        .route("/public/agents/{agentId}/start", post(start))
        .route("/public/agents/{agentId}/stop", post(stop))
        .route("/public/agents/{agentId}/performance", get(performance))
        .route("/public/agents/{agentId}/trades", get(trades))
        .route("/public/agents/{agentId}/equity", get(equity))
        .route(
            "/public/agents/{agentId}/tournaments/{tournamentId}/enter",
            post(enter_tournament),
        )
        .route(
            "/public/strategies",
            get(list_strategies)
                .post(upload_strategy)
                .layer(DefaultBodyLimit::max(upload_limit)),
        )
}

/// The agent services' errors, in this family's codes and statuses.
impl From<AgentError> for V1Error {
    fn from(error: AgentError) -> Self {
        match error {
            AgentError::NotFound(agent_id) => V1Error::AgentNotFound(agent_id),
            AgentError::Invalid { field, message } => V1Error::field(field, message),
            AgentError::InsufficientFunds { .. } => V1Error::InsufficientFunds(error.to_string()),
            AgentError::BalanceUnavailable => V1Error::Unavailable(error.to_string()),
            AgentError::ComponentTooLarge(message) => V1Error::PayloadTooLarge(message),
            AgentError::QuotaExceeded(message) | AgentError::Banned(message) => {
                V1Error::Forbidden(message)
            }
            AgentError::Busy(message) => V1Error::Unavailable(message),
            AgentError::Store(store) => store.into(),
            AgentError::Internal(source) => V1Error::Internal(source),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageParams {
    page_index: Option<String>,
    page_size: Option<String>,
}

async fn list(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<Value>, V1Error> {
    let (index, size) = page(params.page_index.as_deref(), params.page_size.as_deref())?;
    let (agents, total) = service::list(&state, key.account_id(), index, size).await?;
    let views: Vec<AgentView> = agents.iter().map(agents::Agent::view).collect();
    Ok(axum::Json(envelope(views, index, size, total)))
}

async fn create(
    key: V1Key<AgentsWrite>,
    State(state): State<AppState>,
    Body(body): Body<Value>,
) -> Result<(StatusCode, axum::Json<Value>), V1Error> {
    let market = state.market.clone();
    let now = crate::clock::to_millis(state.now());
    let new = new_agent::parse(&body, |pair| {
        market.candles(pair, Interval::M5, now, 1).is_ok()
    })
    .map_err(|invalid| V1Error::field(invalid.field, invalid.message))?;
    let agent = service::create(&state, key.account_id(), new).await?;
    Ok((StatusCode::CREATED, ok(agent.view())))
}

async fn detail(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
) -> Result<axum::Json<Value>, V1Error> {
    let agent = service::find(&state, key.account_id(), &agent_id)
        .await?
        .ok_or(V1Error::AgentNotFound(agent_id))?;
    Ok(ok(agent.view()))
}

async fn start(
    key: V1Key<AgentsStart>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
) -> Result<axum::Json<Value>, V1Error> {
    let agent = service::start(&state, key.account_id(), &agent_id).await?;
    Ok(ok(json!({
        "agentId": agent.id,
        "status": agent.status(),
        "startedAt": agent.started_at.map(|ms| rfc3339(from_millis(ms))),
    })))
}

async fn stop(
    key: V1Key<AgentsStop>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
) -> Result<axum::Json<Value>, V1Error> {
    let agent = service::stop(&state, key.account_id(), &agent_id).await?;
    Ok(ok(json!({
        "agentId": agent.id,
        "status": agent.status(),
        "stoppedAt": agent.stopped_at.map(|ms| rfc3339(from_millis(ms))),
    })))
}

#[derive(Debug, Deserialize)]
struct PerformanceParams {
    period: Option<String>,
}

async fn performance(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    Query(params): Query<PerformanceParams>,
) -> Result<axum::Json<Value>, V1Error> {
    let period = Period::parse(params.period.as_deref())?;
    let agent = service::find(&state, key.account_id(), &agent_id)
        .await?
        .ok_or(V1Error::AgentNotFound(agent_id))?;
    Ok(ok(performance::of(&state, &agent, period).await?))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TradeParams {
    /// The previous page's last `tradeId`: the page after it.
    before: Option<String>,
    /// 1 to 500 (default 50).
    limit: Option<i64>,
}

/// The agent's trades, newest first, with the strategy's reasons and (live) signatures.
async fn trades(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    Query(params): Query<TradeParams>,
) -> Result<axum::Json<Value>, V1Error> {
    let agent = service::find(&state, key.account_id(), &agent_id)
        .await?
        .ok_or(V1Error::AgentNotFound(agent_id))?;
    let trades = agents::history::trades(
        &state,
        &agent,
        params.before.as_deref(),
        params.limit.unwrap_or(50),
    )
    .await?;
    Ok(ok(trades))
}

#[derive(Debug, Deserialize)]
struct EquityParams {
    /// 2 to 1000 (default 200).
    points: Option<usize>,
}

/// The agent's equity marks over time (the first tick of each hour), oldest first.
async fn equity(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    Query(params): Query<EquityParams>,
) -> Result<axum::Json<Value>, V1Error> {
    let agent = service::find(&state, key.account_id(), &agent_id)
        .await?
        .ok_or(V1Error::AgentNotFound(agent_id))?;
    Ok(ok(agents::history::equity(
        &state,
        &agent,
        params.points.unwrap_or(200),
    )
    .await?))
}

/// The entry services' errors, in this family's codes and statuses (a registration refusal keeps
/// the registration's status).
impl From<EntryError> for V1Error {
    fn from(error: EntryError) -> Self {
        match error {
            EntryError::Agent(agent) => agent.into(),
            // The registration's own answer, in this family's form.
            EntryError::Registration(registration) => {
                crate::http::ApiError::from(registration).into()
            }
            EntryError::CannotPay(message) => V1Error::InsufficientFunds(message),
            EntryError::Chain(message) => V1Error::Unavailable(message),
            EntryError::Store(store) => store.into(),
            EntryError::Internal(source) => V1Error::Internal(source),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnterParams {
    /// A private tournament's invite code.
    invite_code: Option<String>,
}

/// Enter the agent's wallet in a tournament, paying a fee from it: 201 when registered, 202
/// while the payment is not final (call again, unchanged, in a few seconds). A private
/// tournament takes `?inviteCode=`.
async fn enter_tournament(
    key: V1Key<AgentsWrite>,
    State(state): State<AppState>,
    Path((agent_id, tournament_id)): Path<(String, String)>,
    Query(params): Query<EnterParams>,
) -> Result<(StatusCode, axum::Json<Value>), V1Error> {
    let entered = entry::enter(
        &state,
        key.account_id(),
        &agent_id,
        &tournament_id,
        params.invite_code.as_deref(),
    )
    .await?;
    Ok(match entered {
        Entered::Registered { signature } => (
            StatusCode::CREATED,
            ok(AgentEntered {
                agent_id,
                tournament_id,
                count: 1,
                tx_signature: signature,
            }),
        ),
        Entered::Pending { signature } => (
            StatusCode::ACCEPTED,
            ok(AgentEntryPending {
                agent_id,
                tournament_id,
                // The same members as every other 202 of a paid entry.
                pending: PendingPayment::saying(
                    "the entry fee is paid but not final yet; call again in a few seconds",
                ),
                tx_signature: signature,
            }),
        ),
    })
}

/// The 201 `data` of an agent's entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentEntered {
    agent_id: String,
    tournament_id: String,
    count: usize,
    /// The fee's signature (`null` for a free tournament).
    tx_signature: Option<String>,
}

/// The 202 `data` of an agent's entry: the fee is paid, not final yet.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentEntryPending {
    agent_id: String,
    tournament_id: String,
    #[serde(flatten)]
    pending: PendingPayment,
    tx_signature: String,
}

#[derive(Debug, Deserialize)]
struct UploadParams {
    name: Option<String>,
}

async fn upload_strategy(
    key: V1Key<AgentsWrite>,
    State(state): State<AppState>,
    Query(params): Query<UploadParams>,
    request: Request,
) -> Result<(StatusCode, axum::Json<Value>), V1Error> {
    let bytes = Bytes::from_request(request, &state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                V1Error::PayloadTooLarge(format!(
                    "the component is larger than the limit of {} bytes",
                    state.agents.limits().max_component_bytes
                ))
            } else {
                V1Error::field("body", rejection.body_text())
            }
        })?;
    if bytes.is_empty() {
        return Err(V1Error::field(
            "body",
            "send the component's .wasm bytes as the request body (Content-Type: application/wasm)",
        ));
    }
    let name = match params.name {
        None => "strategy".to_owned(),
        Some(name) => crate::domain::Label::parse("name", &name, 64)
            .map_err(|message| V1Error::field("name", message))?
            .into_inner(),
    };
    let view = strategies::upload(&state, key.account_id(), &name, bytes.to_vec()).await?;
    Ok((StatusCode::CREATED, ok(view)))
}

async fn list_strategies(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
) -> Result<axum::Json<Value>, V1Error> {
    Ok(ok(strategies::list(&state, key.account_id()).await?))
}
