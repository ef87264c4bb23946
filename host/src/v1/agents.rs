//! `/api/v1/public/agents…` and `/api/v1/public/strategies`: thin handlers over
//! [`crate::agents`]. Another account's agent is answered exactly like a missing one.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::envelope::{PageParams, V1Ok, V1Page, ok};
use super::error::{V1Error, V1ErrorBody};
use super::extract::{
    AgentsRead, AgentsStart, AgentsStop, AgentsWrite, Body, Path, Permission, Query, V1Key,
};
use crate::agents::entry::{self, Entered, EntryError};
use crate::agents::history::{EquityPoint, TradeView};
use crate::agents::new_agent::NewAgentBody;
use crate::agents::params::DeclaredView;
use crate::agents::performance::{self, Performance, Period};
use crate::agents::strategies::StrategyView as UploadedStrategy;
use crate::agents::thinking::{DecisionView, ModelAccess};
use crate::agents::{self, AgentError, AgentStatus, AgentView, new_agent, service, strategies};
use crate::chain::payment::PendingPayment;
use crate::clock::{from_millis, rfc3339};
use crate::market::Interval;
use crate::state::AppState;

pub(super) fn router(upload_limit: usize) -> OpenApiRouter<AppState> {
    // Uploads may be as large as the sandbox accepts, plus room for the limit's own check.
    let (schemas, paths, strategies) = routes!(list_strategies, upload_strategy);
    let strategies = strategies.layer(DefaultBodyLimit::max(upload_limit + 1024));
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(create))
        .routes(routes!(detail))
        .routes(routes!(start))
        .routes(routes!(stop))
        .routes(routes!(performance))
        .routes(routes!(trades))
        .routes(routes!(equity))
        .routes(routes!(decisions))
        .routes(routes!(enter_tournament))
        .routes(routes!(strategy_params))
        .routes((schemas, paths, strategies))
}

/// The agent services' errors, in this family's codes and statuses.
impl From<AgentError> for V1Error {
    fn from(error: AgentError) -> Self {
        match error {
            AgentError::NotFound(agent_id) => V1Error::AgentNotFound(agent_id),
            AgentError::StrategyNotFound(message) => V1Error::NotFound(message),
            AgentError::Invalid { field, message } => V1Error::field(&field, message),
            AgentError::UsernameTaken(_) => V1Error::Conflict(error.to_string()),
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

/// The caller's agents, newest first.
#[utoipa::path(get, path = "/public/agents", operation_id = "v1_list_agents",
    security(("v1Key" = [])), tag = "v1", params(PageParams),
    responses((status = 200, body = V1Page<AgentView>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 429, body = V1ErrorBody)))]
async fn list(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<V1Page<AgentView>>, V1Error> {
    let (index, size) = params.parse()?;
    let (agents, total) = service::list(&state.store, key.account_id(), index, size).await?;
    let access = model_access(&state, key.account_id()).await?;
    let views: Vec<AgentView> = agents.iter().map(|agent| agent.view(&access)).collect();
    Ok(V1Page::new(views, index, size, total))
}

/// Create an agent (docs/api.md, "Agents", lists the fields): it gets its own wallet and
/// starts `unfunded` or `idle`.
#[utoipa::path(post, path = "/public/agents/create", operation_id = "v1_create_agent",
    security(("v1Key" = [])), tag = "v1",
    request_body = NewAgentBody,
    responses((status = 201, body = V1Ok<AgentView>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody),
              (status = 409, body = V1ErrorBody, description = "The username is taken (`CONFLICT`)"),
              (status = 429, body = V1ErrorBody)))]
async fn create(
    key: V1Key<AgentsWrite>,
    State(state): State<AppState>,
    Body(body): Body<Value>,
) -> Result<(StatusCode, axum::Json<V1Ok<AgentView>>), V1Error> {
    let market = state.market.clone();
    let now = crate::clock::to_millis(state.now());
    let new = new_agent::parse(&body, |pair| {
        market.candles(pair, Interval::M5, now, 1).is_ok()
    })
    .map_err(|invalid| V1Error::field(invalid.field, invalid.message))?;
    let agent = service::create(
        &state.store,
        &*state.clock,
        &state.events,
        &state.sealer,
        &state.config,
        &state.agents,
        key.account_id(),
        new,
    )
    .await?;
    let access = model_access(&state, key.account_id()).await?;
    Ok((StatusCode::CREATED, ok(agent.view(&access))))
}

/// One of the caller's agents.
#[utoipa::path(get, path = "/public/agents/{agentId}", operation_id = "v1_get_agent",
    security(("v1Key" = [])), tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)")),
    responses((status = 200, body = V1Ok<AgentView>),
              (status = 401, body = V1ErrorBody), (status = 403, body = V1ErrorBody),
              (status = 404, body = V1ErrorBody), (status = 429, body = V1ErrorBody)))]
async fn detail(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
) -> Result<axum::Json<V1Ok<AgentView>>, V1Error> {
    let agent = owned(&state, &key, agent_id).await?;
    let access = model_access(&state, key.account_id()).await?;
    Ok(ok(agent.view(&access)))
}

/// What rates the account's agents' models in their views.
async fn model_access(state: &AppState, account_id: &str) -> Result<ModelAccess, V1Error> {
    ModelAccess::of_account(&state.store, &*state.clock, &state.models, account_id)
        .await
        .map_err(|error| AgentError::from(error).into())
}

/// The caller's agent `agent_id`, or 404 AGENT_NOT_FOUND.
async fn owned<P: Permission>(
    state: &AppState,
    key: &V1Key<P>,
    agent_id: String,
) -> Result<agents::Agent, V1Error> {
    service::find(&state.store, key.account_id(), &agent_id)
        .await?
        .ok_or(V1Error::AgentNotFound(agent_id))
}

/// The `data` of a start.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AgentStarted {
    agent_id: String,
    status: AgentStatus,
    started_at: Option<String>,
}

/// The `data` of a stop.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AgentStopped {
    agent_id: String,
    status: AgentStatus,
    stopped_at: Option<String>,
}

/// Start ticking the agent (402 while its wallet cannot pay for the first trade).
#[utoipa::path(post, path = "/public/agents/{agentId}/start", operation_id = "v1_start_agent",
    security(("v1Key" = [])), tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)")),
    responses((status = 200, body = V1Ok<AgentStarted>),
              (status = 401, body = V1ErrorBody), (status = 402, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 404, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody), (status = 503, body = V1ErrorBody)))]
async fn start(
    key: V1Key<AgentsStart>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
) -> Result<axum::Json<V1Ok<AgentStarted>>, V1Error> {
    let agent = service::start(
        &state.store,
        &*state.clock,
        &state.chain,
        &state.config,
        key.account_id(),
        &agent_id,
    )
    .await?;
    Ok(ok(AgentStarted {
        status: agent.status(),
        started_at: agent.started_at.map(|ms| rfc3339(from_millis(ms))),
        agent_id: agent.id,
    }))
}

/// Stop ticking the agent.
#[utoipa::path(post, path = "/public/agents/{agentId}/stop", operation_id = "v1_stop_agent",
    security(("v1Key" = [])), tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)")),
    responses((status = 200, body = V1Ok<AgentStopped>),
              (status = 401, body = V1ErrorBody), (status = 403, body = V1ErrorBody),
              (status = 404, body = V1ErrorBody), (status = 429, body = V1ErrorBody)))]
async fn stop(
    key: V1Key<AgentsStop>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
) -> Result<axum::Json<V1Ok<AgentStopped>>, V1Error> {
    let agent = service::stop(&state.store, &*state.clock, key.account_id(), &agent_id).await?;
    Ok(ok(AgentStopped {
        status: agent.status(),
        stopped_at: agent.stopped_at.map(|ms| rfc3339(from_millis(ms))),
        agent_id: agent.id,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct PerformanceParams {
    /// `24h` (default), `7d`, `30d` or `all`.
    #[param(pattern = "^(24h|7d|30d|all)?$")]
    period: Option<String>,
}

/// The agent's metrics over a period ending now.
#[utoipa::path(get, path = "/public/agents/{agentId}/performance", operation_id = "v1_get_agent_performance",
    security(("v1Key" = [])), tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)"), PerformanceParams),
    responses((status = 200, body = V1Ok<Performance>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 404, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn performance(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    Query(params): Query<PerformanceParams>,
) -> Result<axum::Json<V1Ok<Performance>>, V1Error> {
    let period = Period::parse(params.period.as_deref())?;
    let agent = owned(&state, &key, agent_id).await?;
    Ok(ok(performance::of(
        &state.store,
        &*state.clock,
        &agent,
        period,
    )
    .await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct TradeParams {
    /// The previous page's last `tradeId`: the page after it. An id that is not one of this
    /// agent's trades is 400 `VALIDATION_ERROR` naming `before`.
    before: Option<String>,
    /// 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// The agent's trades, newest first, with the strategy's reasons and (live) signatures.
#[utoipa::path(get, path = "/public/agents/{agentId}/trades", operation_id = "v1_list_agent_trades",
    security(("v1Key" = [])), tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)"), TradeParams),
    responses((status = 200, body = V1Ok<Vec<TradeView>>),
              (status = 400, body = V1ErrorBody,
               description = "`limit` out of range, or `before` is not a trade of this agent (`VALIDATION_ERROR` naming the field)"),
              (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 404, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn trades(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    Query(params): Query<TradeParams>,
) -> Result<axum::Json<V1Ok<Vec<TradeView>>>, V1Error> {
    let agent = owned(&state, &key, agent_id).await?;
    let trades = agents::history::trades(
        &state.store,
        &agent,
        params.before.as_deref(),
        params.limit.unwrap_or(50),
    )
    .await?;
    Ok(ok(trades))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct EquityParams {
    /// 2 to 1000 (default 200).
    #[param(minimum = 2, maximum = 1000)]
    points: Option<usize>,
}

/// The agent's equity marks over time (the first tick of each hour), oldest first.
#[utoipa::path(get, path = "/public/agents/{agentId}/equity", operation_id = "v1_get_agent_equity",
    security(("v1Key" = [])), tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)"), EquityParams),
    responses((status = 200, body = V1Ok<Vec<EquityPoint>>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 404, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn equity(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    Query(params): Query<EquityParams>,
) -> Result<axum::Json<V1Ok<Vec<EquityPoint>>>, V1Error> {
    let agent = owned(&state, &key, agent_id).await?;
    Ok(ok(agents::history::equity(
        &state.store,
        &agent,
        params.points.unwrap_or(200),
    )
    .await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct DecisionParams {
    /// The last `decisionId` of the previous page.
    before: Option<String>,
    /// 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

/// The agent's decisions, newest first: each tick's verdict, whether its model or its class
/// rule decided (and why the rule did), tokens, latency, and what the model was sent and said.
#[utoipa::path(get, path = "/public/agents/{agentId}/decisions", operation_id = "v1_list_agent_decisions",
    security(("v1Key" = [])), tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)"), DecisionParams),
    responses((status = 200, body = V1Ok<Vec<DecisionView>>),
              (status = 400, body = V1ErrorBody,
               description = "`limit` out of range, or `before` is not a decision of this agent (`VALIDATION_ERROR` naming the field)"),
              (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 404, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn decisions(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    Query(params): Query<DecisionParams>,
) -> Result<axum::Json<V1Ok<Vec<DecisionView>>>, V1Error> {
    let agent = owned(&state, &key, agent_id).await?;
    let decisions = agents::thinking::decisions::page(
        &state.store,
        &agent.id,
        params.before.as_deref(),
        params.limit.unwrap_or(50),
    )
    .await?;
    Ok(ok(decisions))
}

/// The entry services' errors, in this family's codes and statuses (a registration refusal keeps
/// the registration's status).
impl From<EntryError> for V1Error {
    fn from(error: EntryError) -> Self {
        let message = error.to_string();
        match error {
            EntryError::Agent(agent) => agent.into(),
            // The registration's own answer, in this family's form.
            EntryError::Registration(registration) => {
                crate::http::ApiError::from(registration).into()
            }
            // The registration's status, its message saying what became of the fee.
            EntryError::Refunded { refused, .. } | EntryError::RefundOnceFinal(refused) => {
                with_message(crate::http::ApiError::from(refused).into(), message)
            }
            EntryError::CannotPay(message) => V1Error::InsufficientFunds(message),
            EntryError::Chain(message) => V1Error::Unavailable(message),
            EntryError::Store(store) => store.into(),
            EntryError::Internal(source) => V1Error::Internal(source),
        }
    }
}

/// `error` with `message` in place of its own (statuses that carry no message keep theirs).
fn with_message(error: V1Error, message: String) -> V1Error {
    match error {
        V1Error::NotFound(_) => V1Error::NotFound(message),
        V1Error::Conflict(_) => V1Error::Conflict(message),
        V1Error::Validation { field, .. } => V1Error::Validation { field, message },
        V1Error::Forbidden(_) => V1Error::Forbidden(message),
        other => other,
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct EnterParams {
    /// A private tournament's invite code.
    invite_code: Option<String>,
}

/// Enter the agent's wallet in a tournament, paying a fee from it: 201 when registered, 202
/// while the payment is not final (call again, unchanged, in a few seconds). A private
/// tournament takes `?inviteCode=`.
#[utoipa::path(post, path = "/public/agents/{agentId}/tournaments/{tournamentId}/enter", operation_id = "v1_enter_agent_in_tournament",
    security(("v1Key" = [])),
    tag = "v1",
    params(("agentId" = String, Path, description = "Agent id (another account's agent is answered as missing)"),
           ("tournamentId" = String, Path, description = "Tournament id"), EnterParams),
    responses((status = 201, body = V1Ok<AgentEntered>),
              (status = 202, body = V1Ok<AgentEntryPending>,
               description = "The fee is paid, not final yet: call again, unchanged"),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 402, body = V1ErrorBody), (status = 403, body = V1ErrorBody),
              (status = 404, body = V1ErrorBody), (status = 409, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody), (status = 503, body = V1ErrorBody)))]
async fn enter_tournament(
    key: V1Key<AgentsWrite>,
    State(state): State<AppState>,
    Path((agent_id, tournament_id)): Path<(String, String)>,
    Query(params): Query<EnterParams>,
) -> Result<Response, V1Error> {
    let entered = entry::enter(
        &state.store,
        &*state.clock,
        &state.events,
        &state.chain,
        &state.sealer,
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
        )
            .into_response(),
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
        )
            .into_response(),
    })
}

/// The 201 `data` of an agent's entry.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AgentEntered {
    agent_id: String,
    tournament_id: String,
    count: usize,
    /// The fee's signature (`null` for a free tournament).
    tx_signature: Option<String>,
}

/// The 202 `data` of an agent's entry: the fee is paid, not final yet.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AgentEntryPending {
    agent_id: String,
    tournament_id: String,
    #[serde(flatten)]
    pending: PendingPayment,
    tx_signature: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct UploadParams {
    /// The account's name for the component (default `strategy`): 1 to 64 characters, no
    /// control characters, not only spaces.
    #[param(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    name: Option<String>,
}

/// Upload a strategy component (a `.wasm` WASI component), checked with a dry tick.
#[utoipa::path(post, path = "/public/strategies", operation_id = "v1_upload_strategy",
    security(("v1Key" = [])), tag = "v1", params(UploadParams),
    request_body(content = String, content_type = "application/wasm",
                 description = "The component's bytes"),
    responses((status = 201, body = V1Ok<UploadedStrategy>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody), (status = 413, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn upload_strategy(
    key: V1Key<AgentsWrite>,
    State(state): State<AppState>,
    Query(params): Query<UploadParams>,
    request: Request,
) -> Result<(StatusCode, axum::Json<V1Ok<UploadedStrategy>>), V1Error> {
    let bytes = Bytes::from_request(request, &state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                V1Error::PayloadTooLarge(format!(
                    "the component is larger than the limit of {} bytes",
                    state.agents.limits().max_component_bytes
                ))
            } else {
                V1Error::field(
                    "body",
                    "the component's bytes could not be read: the body was cut off",
                )
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
    let view = strategies::upload(
        &state.store,
        &*state.clock,
        &state.agents,
        &*state.market,
        key.account_id(),
        &name,
        bytes.to_vec(),
    )
    .await?;
    Ok((StatusCode::CREATED, ok(view)))
}

/// The caller's uploaded strategies.
#[utoipa::path(get, path = "/public/strategies", operation_id = "v1_list_strategies",
    security(("v1Key" = [])), tag = "v1",
    responses((status = 200, body = V1Ok<Vec<UploadedStrategy>>),
              (status = 401, body = V1ErrorBody), (status = 403, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn list_strategies(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
) -> Result<axum::Json<V1Ok<Vec<UploadedStrategy>>>, V1Error> {
    Ok(ok(strategies::list(&state.store, key.account_id()).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct StrategyParamsQuery {
    /// `builtin` (the class's strategy, the default) or `custom:<strategyId>` (one of the
    /// account's uploads).
    #[serde(rename = "type")]
    #[param(rename = "type", pattern = "^(builtin|custom:[0-9a-f]{64})$")]
    kind: Option<String>,
    /// The agent class (`fighter`, `ranger`, `mage`, `defender`, `gambler`, `rogue`); for
    /// `builtin`, whose strategy it names.
    #[param(pattern = "^(fighter|ranger|mage|defender|gambler|rogue)$")]
    class: String,
}

/// The tunable parameters a strategy declares: what `strategy.params` of a new agent may set.
#[utoipa::path(get, path = "/public/strategies/params", operation_id = "v1_strategy_params",
    security(("v1Key" = [])), tag = "v1", params(StrategyParamsQuery),
    responses((status = 200, body = V1Ok<DeclaredView>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody),
              (status = 404, body = V1ErrorBody, description = "No uploaded strategy by that id on this account (`NOT_FOUND`)"),
              (status = 429, body = V1ErrorBody),
              (status = 503, body = V1ErrorBody)))]
async fn strategy_params(
    key: V1Key<AgentsRead>,
    State(state): State<AppState>,
    Query(query): Query<StrategyParamsQuery>,
) -> Result<axum::Json<V1Ok<DeclaredView>>, V1Error> {
    let view = crate::agents::params::declared_view(
        &state.store,
        &state.agents,
        key.account_id(),
        query.kind.as_deref().unwrap_or("builtin"),
        &query.class,
    )
    .await?;
    Ok(ok(view))
}
