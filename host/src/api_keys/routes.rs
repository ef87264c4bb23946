//! `/api/api-keys` handlers: session only (an API key never manages keys).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::service::{self, CreateKey, CreatedKey, KeyError, KeyView};
use super::spend::SpendRequest;
use crate::auth::SessionAuth;
use crate::auth::keys::KeyFamily;
use crate::domain::{HttpUrl, Label};
use crate::http::ApiError;
use crate::http::json::{Json, Path};
use crate::http::rate_limit::{AccountPolicy, IpLimit};
use crate::state::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys, create_key))
        .routes(routes!(revoke_key))
}

impl From<KeyError> for ApiError {
    fn from(error: KeyError) -> Self {
        match error {
            KeyError::AccountNotFound | KeyError::NotFound(_) => {
                ApiError::NotFound(error.to_string())
            }
            KeyError::TooMany => ApiError::Conflict(error.to_string()),
            KeyError::WebhookRefused(_) => ApiError::BadRequest(error.to_string()),
            KeyError::Store(store) => store.into(),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreateKeyRequest {
    /// A label to recognise the key by (1–64 characters).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    name: String,
    /// Subset of `read`, `write`; default both.
    #[schema(value_type = Option<Vec<KeyScope>>, min_items = 1)]
    scopes: Option<Vec<String>>,
    /// Days until the key expires, 1 to 365; never when absent. `expiry` is accepted as an alias.
    #[serde(alias = "expiry")]
    #[schema(minimum = 1, maximum = 365)]
    expires_in_days: Option<i64>,
    /// Where to deliver signed webhooks for this key's account.
    #[schema(value_type = Option<HttpUrl>)]
    webhook_url: Option<String>,
    /// Let the key pay entries from the account's embedded wallet (`payFrom: "embedded"`),
    /// within these limits; without it the key can never move funds.
    spend: Option<SpendRequest>,
}

/// A scope of an account key, as `CreateKeyRequest::validate` accepts it.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(
    dead_code,
    reason = "named in the document only: the request keeps strings to word its own errors"
)]
enum KeyScope {
    Read,
    Write,
}

impl CreateKeyRequest {
    fn validate(self) -> Result<CreateKey, String> {
        let name = Label::parse("name", &self.name, 64)?.into_inner();
        let scopes = match self.scopes {
            None => vec!["read".to_owned(), "write".to_owned()],
            Some(requested) => {
                if requested.is_empty() {
                    return Err("`scopes` must name at least one of `read`, `write` (or be omitted for both)".into());
                }
                if let Some(unknown) = requested
                    .iter()
                    .find(|scope| !matches!(scope.as_str(), "read" | "write"))
                {
                    return Err(format!(
                        "unknown scope `{unknown}`: allowed values are `read` and `write`"
                    ));
                }
                ["read", "write"]
                    .into_iter()
                    .filter(|s| requested.iter().any(|r| r == s))
                    .map(str::to_owned)
                    .collect()
            }
        };
        if let Some(days) = self.expires_in_days
            && !(1..=365).contains(&days)
        {
            return Err("`expiresInDays` must be a whole number of days from 1 to 365".into());
        }
        let webhook_url = self
            .webhook_url
            .map(|url| HttpUrl::parse("webhookUrl", &url).map(HttpUrl::into_inner))
            .transpose()?;
        Ok(CreateKey {
            family: KeyFamily::Account,
            name,
            scopes,
            expires_in_days: self.expires_in_days,
            webhook_url,
            spend: self
                .spend
                .as_ref()
                .map(SpendRequest::validate)
                .transpose()?,
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct KeyList {
    keys: Vec<KeyView>,
}

/// The account's keys (prefix, name, scopes, status, lastUsedAt — never the secret).
#[utoipa::path(get, path = "/api/api-keys", operation_id = "list_account_keys",
    security(("sessionCookie" = [])), tag = "api-keys",
    responses((status = 200, body = KeyList), (status = 401), (status = 403, description = "An API key was used")))]
async fn list_keys(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    session: SessionAuth,
) -> Result<axum::Json<KeyList>, ApiError> {
    let keys = service::list(
        &state.store,
        &*state.clock,
        &session.account_id,
        KeyFamily::Account,
    )
    .await?;
    Ok(axum::Json(KeyList { keys }))
}

/// Mint a key. The secret (and webhook secret) are in this response only.
#[utoipa::path(post, path = "/api/api-keys", operation_id = "create_account_key",
    security(("sessionCookie" = [])), tag = "api-keys", request_body = CreateKeyRequest,
    responses((status = 201, body = CreatedKey), (status = 400), (status = 401),
              (status = 403, description = "An API key was used"),
              (status = 409, description = "Already 10 active keys")))]
async fn create_key(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    session: SessionAuth,
    Json(body): Json<CreateKeyRequest>,
) -> Result<(StatusCode, axum::Json<CreatedKey>), ApiError> {
    let request = body.validate().map_err(ApiError::BadRequest)?;
    let created = service::create(
        &state.store,
        &*state.clock,
        &state.sealer,
        &state.config,
        &session.account_id,
        request,
    )
    .await?;
    Ok((StatusCode::CREATED, axum::Json(created)))
}

/// Revoke a key at once; it cannot be undone.
#[utoipa::path(delete, path = "/api/api-keys/{keyId}", operation_id = "revoke_account_key",
    security(("sessionCookie" = [])), tag = "api-keys",
    params(("keyId" = String, Path, description = "The key's id")),
    responses((status = 200, body = KeyView), (status = 401), (status = 403), (status = 404)))]
async fn revoke_key(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    session: SessionAuth,
    Path(key_id): Path<String>,
) -> Result<axum::Json<KeyView>, ApiError> {
    Ok(axum::Json(
        service::revoke(
            &state.store,
            &*state.clock,
            &state.events,
            &session.account_id,
            KeyFamily::Account,
            &key_id,
        )
        .await?,
    ))
}
