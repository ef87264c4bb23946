//! `/api/admin/*`: thin handlers over [`super::service`]; every one takes [`AdminAuth`].

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::AdminAuth;
use super::service::{
    self, AccountDetail, AccountSummary, AgentFilter, AgentRow, BannedComponent, QueuedPayout,
};
use crate::audit::{self, AuditView};
use crate::http::ApiError;
use crate::http::json::{Json, Path, Query};
use crate::state::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_accounts))
        .routes(routes!(account_detail))
        .routes(routes!(suspend))
        .routes(routes!(unsuspend))
        .routes(routes!(agents))
        .routes(routes!(banned))
        .routes(routes!(ban, unban))
        .routes(routes!(disqualify))
        .routes(routes!(reinstate))
        .routes(routes!(payouts))
        .routes(routes!(retry_payout))
        .routes(routes!(audit_log))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct SearchParams {
    /// Part of an e-mail or display name, or an exact account id or wallet; empty: newest.
    search: Option<String>,
    /// 1 to 200 (default 50).
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
struct AccountList {
    accounts: Vec<AccountSummary>,
}

/// Accounts by e-mail, name, id or wallet.
#[utoipa::path(get, path = "/api/admin/accounts", operation_id = "admin_search_accounts",
    security(("sessionCookie" = [])), tag = "admin", params(SearchParams),
    responses((status = 200, body = AccountList), (status = 401), (status = 403)))]
async fn search_accounts(
    _admin: AdminAuth,
    State(state): State<AppState>,
    Query(params): Query<SearchParams>,
) -> Result<axum::Json<AccountList>, ApiError> {
    let accounts = service::search_accounts(
        &state.store,
        params.search.as_deref().unwrap_or_default(),
        params.limit.unwrap_or(50),
    )
    .await?;
    Ok(axum::Json(AccountList { accounts }))
}

/// One account: its wallets, keys (by prefix), agents and entries.
#[utoipa::path(get, path = "/api/admin/accounts/{id}", operation_id = "admin_get_account",
    security(("sessionCookie" = [])), tag = "admin",
    params(("id" = String, Path, description = "Account id")),
    responses((status = 200, body = AccountDetail), (status = 401), (status = 403), (status = 404)))]
async fn account_detail(
    _admin: AdminAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<axum::Json<AccountDetail>, ApiError> {
    Ok(axum::Json(
        service::account_detail(&state.store, &id).await?,
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
struct Reason {
    /// Why (1 to 500 characters); shown to the people it concerns and kept in the audit log.
    #[schema(max_length = 500, pattern = "\\S")]
    reason: String,
}

/// Suspend an account: keys refused, sessions ended, logins refused, running agents stopped.
#[utoipa::path(post, path = "/api/admin/accounts/{id}/suspend", operation_id = "admin_suspend_account",
    security(("sessionCookie" = [])), tag = "admin",
    params(("id" = String, Path, description = "Account id")), request_body = Reason,
    responses((status = 200, body = AccountSummary), (status = 400), (status = 401), (status = 403),
              (status = 404), (status = 409, description = "Already suspended")))]
async fn suspend(
    admin: AdminAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<Reason>,
) -> Result<axum::Json<AccountSummary>, ApiError> {
    Ok(axum::Json(
        service::suspend(
            &state.store,
            &*state.clock,
            &state.events,
            &admin.account_id,
            &id,
            &body.reason,
        )
        .await?,
    ))
}

/// Lift a suspension.
#[utoipa::path(post, path = "/api/admin/accounts/{id}/unsuspend", operation_id = "admin_unsuspend_account",
    security(("sessionCookie" = [])), tag = "admin",
    params(("id" = String, Path, description = "Account id")),
    responses((status = 200, body = AccountSummary), (status = 401), (status = 403), (status = 404),
              (status = 409, description = "Not suspended")))]
async fn unsuspend(
    admin: AdminAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<axum::Json<AccountSummary>, ApiError> {
    Ok(axum::Json(
        service::unsuspend(
            &state.store,
            &*state.clock,
            &state.events,
            &admin.account_id,
            &id,
        )
        .await?,
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct AgentParams {
    /// `unfunded`, `idle`, `active` or `error`.
    status: Option<String>,
    account_id: Option<String>,
    /// SHA-256 of an uploaded component.
    component: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
struct AgentList {
    agents: Vec<AgentRow>,
}

/// Agents across accounts: status, faults and the component each runs.
#[utoipa::path(get, path = "/api/admin/agents", operation_id = "admin_list_agents",
    security(("sessionCookie" = [])), tag = "admin", params(AgentParams),
    responses((status = 200, body = AgentList), (status = 401), (status = 403)))]
async fn agents(
    _admin: AdminAuth,
    State(state): State<AppState>,
    Query(params): Query<AgentParams>,
) -> Result<axum::Json<AgentList>, ApiError> {
    let filter = AgentFilter {
        status: params.status,
        account_id: params.account_id,
        component: params.component.map(|c| c.to_ascii_lowercase()),
    };
    Ok(axum::Json(AgentList {
        agents: service::list_agents(&state.store, &filter).await?,
    }))
}

#[derive(Debug, Serialize, ToSchema)]
struct BannedList {
    components: Vec<BannedComponent>,
}

/// Banned strategy components.
#[utoipa::path(get, path = "/api/admin/components/banned", operation_id = "admin_list_banned_components",
    security(("sessionCookie" = [])), tag = "admin",
    responses((status = 200, body = BannedList), (status = 401), (status = 403)))]
async fn banned(
    _admin: AdminAuth,
    State(state): State<AppState>,
) -> Result<axum::Json<BannedList>, ApiError> {
    Ok(axum::Json(BannedList {
        components: service::banned_components(&state.store).await?,
    }))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Banned {
    sha256: String,
    /// Agents that were running or could start it, now stopped with the reason.
    agents_stopped: u64,
}

/// Ban a component by its SHA-256: its agents stop with the reason, new uploads are refused.
#[utoipa::path(post, path = "/api/admin/components/{sha256}/ban", operation_id = "admin_ban_component",
    security(("sessionCookie" = [])), tag = "admin",
    params(("sha256" = String, Path, description = "The component's SHA-256 (hex)")), request_body = Reason,
    responses((status = 201, body = Banned), (status = 400), (status = 401), (status = 403),
              (status = 409, description = "Already banned")))]
async fn ban(
    admin: AdminAuth,
    State(state): State<AppState>,
    Path(sha256): Path<String>,
    Json(body): Json<Reason>,
) -> Result<(StatusCode, axum::Json<Banned>), ApiError> {
    let agents_stopped = service::ban_component(
        &state.store,
        &*state.clock,
        &admin.account_id,
        &sha256,
        &body.reason,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(Banned {
            sha256: sha256.to_ascii_lowercase(),
            agents_stopped,
        }),
    ))
}

/// Lift a ban (stopped agents stay stopped until their operators start them).
#[utoipa::path(delete, path = "/api/admin/components/{sha256}/ban", operation_id = "admin_unban_component",
    security(("sessionCookie" = [])), tag = "admin",
    params(("sha256" = String, Path, description = "The component's SHA-256 (hex)")),
    responses((status = 204), (status = 400), (status = 401), (status = 403), (status = 404)))]
async fn unban(
    admin: AdminAuth,
    State(state): State<AppState>,
    Path(sha256): Path<String>,
) -> Result<StatusCode, ApiError> {
    service::unban_component(&state.store, &*state.clock, &admin.account_id, &sha256).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, ToSchema)]
struct Disqualification {
    #[schema(value_type = crate::domain::WalletAddress)]
    wallet: String,
    /// Shown on the board.
    reason: String,
}

/// Take a wallet off a tournament's board by hand (before the end): ranked last, never paid.
#[utoipa::path(post, path = "/api/admin/tournaments/{id}/disqualifications", operation_id = "admin_disqualify_wallet",
    security(("sessionCookie" = [])), tag = "admin",
    params(("id" = String, Path, description = "Tournament id")), request_body = Disqualification,
    responses((status = 204), (status = 400), (status = 401), (status = 403), (status = 404),
              (status = 409, description = "Already disqualified, or the tournament is over")))]
async fn disqualify(
    admin: AdminAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<Disqualification>,
) -> Result<StatusCode, ApiError> {
    service::disqualify(
        &state.store,
        &*state.clock,
        &state.events,
        &admin.account_id,
        &id,
        &body.wallet,
        &body.reason,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Undo a manual disqualification (before the end).
#[utoipa::path(delete, path = "/api/admin/tournaments/{id}/disqualifications/{wallet}", operation_id = "admin_reinstate_wallet",
    security(("sessionCookie" = [])), tag = "admin",
    params(("id" = String, Path, description = "Tournament id"), ("wallet" = String, Path, description = "Wallet")),
    responses((status = 204), (status = 401), (status = 403), (status = 404),
              (status = 409, description = "Not disqualified by hand, or the tournament is over")))]
async fn reinstate(
    admin: AdminAuth,
    State(state): State<AppState>,
    Path((id, wallet)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    service::reinstate(
        &state.store,
        &*state.clock,
        &state.events,
        &admin.account_id,
        &id,
        &wallet,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct PayoutParams {
    /// `pending`, `sent` or `failed`.
    #[param(pattern = "^(pending|sent|failed)$")]
    status: Option<String>,
    /// `tournament`, `dungeon` or `refund`.
    #[param(pattern = "^(tournament|dungeon|refund)$")]
    kind: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
struct PayoutQueue {
    payouts: Vec<QueuedPayout>,
}

/// The payout and refund queue, newest first, with attempts and the last error.
#[utoipa::path(get, path = "/api/admin/payouts", operation_id = "admin_list_payouts",
    security(("sessionCookie" = [])), tag = "admin", params(PayoutParams),
    responses((status = 200, body = PayoutQueue), (status = 400), (status = 401), (status = 403)))]
async fn payouts(
    _admin: AdminAuth,
    State(state): State<AppState>,
    Query(params): Query<PayoutParams>,
) -> Result<axum::Json<PayoutQueue>, ApiError> {
    Ok(axum::Json(PayoutQueue {
        payouts: service::payouts(
            &state.store,
            params.status.as_deref(),
            params.kind.as_deref(),
        )
        .await?,
    }))
}

/// Send a pending or failed payout now; it can still never be paid twice.
#[utoipa::path(post, path = "/api/admin/payouts/{id}/retry", operation_id = "admin_retry_payout",
    security(("sessionCookie" = [])), tag = "admin",
    params(("id" = String, Path, description = "Payout id")),
    responses((status = 202), (status = 401), (status = 403), (status = 404),
              (status = 409, description = "Already sent")))]
async fn retry_payout(
    admin: AdminAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    service::retry_payout(&state.store, &*state.clock, &admin.account_id, &id).await?;
    Ok(StatusCode::ACCEPTED)
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct AuditParams {
    /// An exact action, e.g. `account.suspend`.
    action: Option<String>,
    /// Entries concerning this account.
    account_id: Option<String>,
    /// `account:<id>`, `host` or `system`.
    actor: Option<String>,
    subject_id: Option<String>,
    /// RFC 3339: only entries before this instant (paging backwards).
    before: Option<String>,
    /// 1 to 500 (default 100).
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
struct AuditLog {
    entries: Vec<AuditView>,
}

/// The audit log, newest first, filtered.
#[utoipa::path(get, path = "/api/admin/audit", operation_id = "admin_get_audit_log",
    security(("sessionCookie" = [])), tag = "admin", params(AuditParams),
    responses((status = 200, body = AuditLog), (status = 400), (status = 401), (status = 403)))]
async fn audit_log(
    _admin: AdminAuth,
    State(state): State<AppState>,
    Query(params): Query<AuditParams>,
) -> Result<axum::Json<AuditLog>, ApiError> {
    let before = params
        .before
        .as_deref()
        .map(|text| {
            chrono::DateTime::parse_from_rfc3339(text)
                .map(|at| at.with_timezone(&chrono::Utc))
                .map_err(|_| ApiError::bad_request("`before` must be an RFC 3339 time"))
        })
        .transpose()?;
    let filter = audit::Filter {
        action: params.action,
        account_id: params.account_id,
        actor: params.actor,
        subject_id: params.subject_id,
        before,
        limit: params.limit.unwrap_or(100),
        ..audit::Filter::default()
    };
    Ok(axum::Json(AuditLog {
        entries: audit::list(&state.store, &filter).await?,
    }))
}
