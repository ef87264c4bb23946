//! Sign-up, sign-in and sign-out: the web app's back end.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header::SET_COOKIE};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use sqlx::AnyConnection;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{password, session, wallet_proof};
use crate::account::{self, AccountView};
use crate::clock::{rfc3339, to_millis};
use crate::crypto::new_id;
use crate::db::is_unique_violation;
use crate::domain::{Email, Label, Password, WalletAddress};
use crate::http::ApiError;
use crate::http::json::Json;
use crate::http::rate_limit::{AuthPolicy, IpLimit};
use crate::state::AppState;

impl From<wallet_proof::ProofError> for ApiError {
    fn from(error: wallet_proof::ProofError) -> Self {
        use wallet_proof::ProofError;
        match error {
            ProofError::Malformed(message) => ApiError::bad_request(message),
            ProofError::Refused(message) => ApiError::Unauthorized(message.to_owned()),
            ProofError::Store(store) => store.into(),
        }
    }
}

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(signup))
        .routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(nonce))
        .routes(routes!(wallet_sign_in))
}

const ACCEPTANCE_REQUIRED: &str = "sign-up requires accepting the terms (`acceptTerms: true`) and the privacy policy (`acceptPrivacy: true`)";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct SignupRequest {
    #[schema(value_type = Email)]
    email: String,
    /// 10 to 128 characters with at least one letter and one digit.
    #[schema(value_type = Password)]
    password: String,
    /// Must be `true`: the terms are accepted.
    #[serde(default)]
    #[schema(schema_with = accepted, required = true)]
    accept_terms: bool,
    /// Must be `true`: the privacy policy is accepted.
    #[serde(default)]
    #[schema(schema_with = accepted, required = true)]
    accept_privacy: bool,
    /// 1 to 40 characters, no control characters.
    #[schema(
        min_length = 1,
        max_length = 40,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    display_name: Option<String>,
}

/// A consent flag: only `true` is accepted.
fn accepted() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Boolean)
        .enum_values(Some([true]))
        .build()
}

/// Create an account with e-mail and password. Creates its embedded custodial wallet and signs in.
#[utoipa::path(post, path = "/api/auth/signup", operation_id = "signup",
    security(()), tag = "auth", request_body = SignupRequest,
    responses((status = 201, body = AccountView, description = "Signed up; `session-token` cookie set"),
              (status = 400, description = "Invalid e-mail, password rules, or terms not accepted"),
              (status = 409, description = "E-mail already registered"), (status = 429)))]
async fn signup(
    _limit: IpLimit<AuthPolicy>,
    State(state): State<AppState>,
    Json(body): Json<SignupRequest>,
) -> Result<Response, ApiError> {
    if !(body.accept_terms && body.accept_privacy) {
        return Err(ApiError::bad_request(ACCEPTANCE_REQUIRED));
    }
    let email = Email::parse(&body.email).map_err(ApiError::BadRequest)?;
    let password = Password::parse(&body.password).map_err(ApiError::BadRequest)?;
    let display_name = body
        .display_name
        .as_deref()
        .map(|name| Label::parse("displayName", name, 40).map(Label::into_inner))
        .transpose()
        .map_err(ApiError::BadRequest)?;
    let password_hash = password::hash_limited(password).await.map_err(hash_error)?;

    let now = state.now();
    let account_id = new_id("acc");
    let mut tx = state.store.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO accounts (id, email, password_hash, display_name, terms_accepted_at, privacy_accepted_at,
                               created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5, $5, $5)",
    )
    .bind(&account_id)
    .bind(email.as_str())
    .bind(&password_hash)
    .bind(display_name)
    .bind(to_millis(now))
    .execute(&mut *tx)
    .await;
    match inserted {
        Err(error) if is_unique_violation(&error) => {
            return Err(ApiError::Conflict(
                "an account with this e-mail already exists; sign in instead".into(),
            ));
        }
        other => other?,
    };
    let wallet = crate::custodial::create(
        &mut tx,
        &*state.clock,
        &state.sealer,
        "account",
        &account_id,
    )
    .await?;
    account::link_wallet(&mut tx, &account_id, &wallet, "custodial", now).await?;
    let token = session::create(&mut tx, &account_id, now).await?;
    tx.commit().await?;
    tracing::info!(account_id, "account signed up by e-mail");
    signed_in(&state, StatusCode::CREATED, &account_id, &token).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct LoginRequest {
    email: String,
    password: String,
}

/// Sign in with e-mail and password.
#[utoipa::path(post, path = "/api/auth/login", operation_id = "login",
    security(()), tag = "auth", request_body = LoginRequest,
    responses((status = 200, body = AccountView, description = "Signed in; `session-token` cookie set"),
              (status = 401, description = "Wrong e-mail or password"), (status = 429)))]
async fn login(
    _limit: IpLimit<AuthPolicy>,
    State(state): State<AppState>,
    Json(body): Json<LoginRequest>,
) -> Result<Response, ApiError> {
    let found: Option<(String, Option<String>)> = match Email::parse(&body.email) {
        Ok(email) => {
            sqlx::query_as("SELECT id, password_hash FROM accounts WHERE email = $1")
                .bind(email.as_str())
                .fetch_optional(state.store.read())
                .await?
        }
        Err(_) => None,
    };
    let (account_id, stored_hash) = found.unzip();
    let candidate = body.password;
    let matches = password::verify_limited(candidate, stored_hash.flatten())
        .await
        .map_err(hash_error)?;
    let Some(account_id) = account_id.filter(|_| matches) else {
        return Err(ApiError::Unauthorized("wrong e-mail or password".into()));
    };
    ensure_not_suspended(&state, &account_id).await?;
    let mut conn = state.store.write().acquire().await?;
    let token = session::create(&mut conn, &account_id, state.now()).await?;
    drop(conn);
    signed_in(&state, StatusCode::OK, &account_id, &token).await
}

/// End the current session. Always succeeds; the cookie is cleared.
#[utoipa::path(post, path = "/api/auth/logout", operation_id = "logout",
    security((), ("sessionCookie" = [])), tag = "auth", responses((status = 204)))]
async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(token) = session::token_from_headers(&headers) {
        session::delete(&state.store, &token).await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(SET_COOKIE, session::clear_cookie(&state.config))],
    )
        .into_response())
}

#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct NonceRequest {
    /// The wallet that will sign.
    #[schema(value_type = WalletAddress)]
    wallet: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct NonceResponse {
    nonce: String,
    /// Sign exactly these UTF-8 bytes with the wallet's ed25519 key.
    message: String,
    expires_at: String,
}

/// Get a single-use nonce and the message to sign (valid 5 minutes), for wallet sign-in or linking.
#[utoipa::path(post, path = "/api/auth/nonce", operation_id = "get_sign_in_nonce",
    security(()), tag = "auth", request_body = NonceRequest,
    responses((status = 200, body = NonceResponse), (status = 400), (status = 429)))]
async fn nonce(
    _limit: IpLimit<AuthPolicy>,
    State(state): State<AppState>,
    Json(body): Json<NonceRequest>,
) -> Result<axum::Json<NonceResponse>, ApiError> {
    let wallet = WalletAddress::parse(&body.wallet).map_err(ApiError::BadRequest)?;
    let challenge =
        wallet_proof::issue(&state.store, &*state.clock, &state.config, &wallet).await?;
    Ok(axum::Json(NonceResponse {
        nonce: challenge.nonce,
        message: challenge.message,
        expires_at: rfc3339(challenge.expires_at),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct WalletSignInRequest {
    #[schema(value_type = WalletAddress)]
    wallet: String,
    nonce: String,
    /// base58 ed25519 signature of the nonce's `message` by `wallet`.
    #[schema(schema_with = crate::auth::wallet_proof::signature_schema)]
    signature: String,
    /// `true`: the terms are accepted. The first sign-in of a wallet creates its account and
    /// needs it; later ones ignore it, so clients always send `true`.
    #[serde(default)]
    #[schema(schema_with = accepted, required = true)]
    accept_terms: bool,
    /// `true`: the privacy policy is accepted (as `acceptTerms`).
    #[serde(default)]
    #[schema(schema_with = accepted, required = true)]
    accept_privacy: bool,
}

/// Sign in with a wallet signature; the first sign-in creates the account.
#[utoipa::path(post, path = "/api/auth/wallet", operation_id = "wallet_sign_in",
    security(()), tag = "auth", request_body = WalletSignInRequest,
    responses((status = 200, body = AccountView, description = "Signed in to the wallet's account"),
              (status = 201, body = AccountView, description = "Account created and signed in"),
              (status = 400), (status = 401, description = "Bad signature or unusable nonce"), (status = 429)))]
async fn wallet_sign_in(
    _limit: IpLimit<AuthPolicy>,
    State(state): State<AppState>,
    Json(body): Json<WalletSignInRequest>,
) -> Result<Response, ApiError> {
    let wallet = WalletAddress::parse(&body.wallet).map_err(ApiError::BadRequest)?;
    let existing = account::owner_of_wallet(&state.store, &wallet).await?;
    if existing.is_none() && !(body.accept_terms && body.accept_privacy) {
        return Err(ApiError::bad_request(ACCEPTANCE_REQUIRED));
    }
    wallet_proof::verify_and_consume(
        &state.store,
        &*state.clock,
        &wallet,
        &body.nonce,
        &body.signature,
    )
    .await?;

    if let Some(account_id) = &existing {
        ensure_not_suspended(&state, account_id).await?;
    }
    let now = state.now();
    let mut tx = state.store.begin().await?;
    let (account_id, status) = match existing {
        Some(account_id) => (account_id, StatusCode::OK),
        None => (
            create_wallet_account(&mut tx, &wallet, now).await?,
            StatusCode::CREATED,
        ),
    };
    let token = session::create(&mut tx, &account_id, now).await?;
    tx.commit().await?;
    signed_in(&state, status, &account_id, &token).await
}

/// A suspended account cannot sign in (403, with the reason), until an admin lifts it.
async fn ensure_not_suspended(state: &AppState, account_id: &str) -> Result<(), ApiError> {
    let (suspended_at, reason): (Option<i64>, Option<String>) =
        sqlx::query_as("SELECT suspended_at, suspension_reason FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_one(state.store.read())
            .await?;
    match suspended_at {
        Some(_) => Err(ApiError::Forbidden(format!(
            "this account is suspended ({}); contact the service's operators",
            reason.unwrap_or_default()
        ))),
        None => Ok(()),
    }
}

async fn create_wallet_account(
    conn: &mut AnyConnection,
    wallet: &WalletAddress,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<String, ApiError> {
    let account_id = new_id("acc");
    sqlx::query(
        "INSERT INTO accounts (id, terms_accepted_at, privacy_accepted_at, created_at, updated_at)
         VALUES ($1, $2, $2, $2, $2)",
    )
    .bind(&account_id)
    .bind(to_millis(now))
    .execute(&mut *conn)
    .await?;
    match account::link_wallet(conn, &account_id, wallet, "linked", now).await {
        Err(error) if is_unique_violation(&error) => Err(ApiError::Conflict(
            "this wallet was just linked to an account; sign in again".into(),
        )),
        other => Ok(other.map(|()| account_id)?),
    }
}

async fn signed_in(
    state: &AppState,
    status: StatusCode,
    account_id: &str,
    token: &str,
) -> Result<Response, ApiError> {
    let view = account::load(&state.store, account_id).await?;
    Ok((
        status,
        [(SET_COOKIE, session::set_cookie(&state.config, token))],
        axum::Json(view),
    )
        .into_response())
}

/// A password hash that did not run: busy is a 503 the client may retry; anything else is ours.
fn hash_error(error: password::HashError) -> ApiError {
    match error {
        password::HashError::Busy => ApiError::Unavailable(error.to_string()),
        password::HashError::Failed(_) => ApiError::internal(error),
    }
}
