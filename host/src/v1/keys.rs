//! `/api/v1/api-keys`: v1 keys, minted, listed and revoked with the browser session.
//! Same secrets and storage as account keys (`api_keys::service`), family `v1`, where the
//! scopes column holds the key's `permissions`.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::envelope::{V1Ok, ok};
use super::error::{V1Error, V1ErrorBody};
use super::extract::{Body, PERMISSIONS, Path, V1Session};
use crate::api_keys::{self, CreateKey, CreatedKey, KeyError, KeyView};
use crate::auth::keys::KeyFamily;
use crate::domain::{HttpUrl, Label};
use crate::state::AppState;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys, create_key))
        .routes(routes!(revoke_key))
}

/// The platform API's mapping (`api_keys::routes`), in this family's form.
impl From<KeyError> for V1Error {
    fn from(error: KeyError) -> Self {
        match error {
            KeyError::WebhookRefused(message) => V1Error::field("webhookUrl", message),
            other => crate::http::ApiError::from(other).into(),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = CreateV1KeyRequest)]
struct CreateRequest {
    /// 1 to 64 characters.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    name: String,
    /// Where webhook events for this key are sent (http or https).
    #[schema(value_type = Option<HttpUrl>)]
    webhook_url: Option<String>,
    /// At least one of `agents:read`, `agents:write`, `agents:start`, `agents:stop`.
    #[schema(value_type = Vec<V1Permission>, min_items = 1)]
    permissions: Vec<String>,
    /// 1 to 365 (also accepted as `expiry`); none: the key never expires.
    #[serde(alias = "expiry")]
    #[schema(minimum = 1, maximum = 365)]
    expires_in_days: Option<i64>,
}

/// A permission of a v1 key: one of [`PERMISSIONS`].
#[derive(ToSchema)]
#[allow(
    dead_code,
    reason = "named in the document only: the request keeps strings to word its own errors"
)]
enum V1Permission {
    #[schema(rename = "agents:read")]
    Read,
    #[schema(rename = "agents:write")]
    Write,
    #[schema(rename = "agents:start")]
    Start,
    #[schema(rename = "agents:stop")]
    Stop,
}

impl CreateRequest {
    fn validate(self) -> Result<CreateKey, V1Error> {
        let name = Label::parse("name", &self.name, 64)
            .map_err(|message| V1Error::field("name", message))?
            .into_inner();
        if self.permissions.is_empty() {
            return Err(V1Error::field(
                "permissions",
                format!("name at least one permission of {}", PERMISSIONS.join(", ")),
            ));
        }
        if let Some(unknown) = self
            .permissions
            .iter()
            .find(|p| !PERMISSIONS.contains(&p.as_str()))
        {
            return Err(V1Error::field(
                "permissions",
                format!(
                    "unknown permission `{unknown}`: allowed values are {}",
                    PERMISSIONS.join(", ")
                ),
            ));
        }
        if let Some(days) = self.expires_in_days
            && !(1..=365).contains(&days)
        {
            return Err(V1Error::field(
                "expiresInDays",
                "must be a whole number of days from 1 to 365",
            ));
        }
        let webhook_url = self
            .webhook_url
            .map(|url| HttpUrl::parse("webhookUrl", &url).map(HttpUrl::into_inner))
            .transpose()
            .map_err(|message| V1Error::field("webhookUrl", message))?;
        Ok(CreateKey {
            family: KeyFamily::V1,
            name,
            scopes: PERMISSIONS
                .iter()
                .filter(|p| self.permissions.iter().any(|r| r == *p))
                .map(|p| (*p).to_owned())
                .collect(),
            expires_in_days: self.expires_in_days,
            webhook_url,
            // v1 keys manage agents; they never pay from the embedded wallet.
            spend: None,
        })
    }
}

/// A v1 key as created: the only time `key` and `webhookSecret` appear.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreatedV1Key {
    key_id: String,
    name: String,
    key: String,
    key_prefix: String,
    permissions: Vec<String>,
    created_at: String,
    expires_at: Option<String>,
    webhook_url: Option<String>,
    webhook_secret: Option<String>,
}

impl From<CreatedKey> for CreatedV1Key {
    fn from(key: CreatedKey) -> Self {
        CreatedV1Key {
            key_id: key.key_id,
            name: key.name,
            key: key.key,
            key_prefix: key.key_prefix,
            permissions: key.scopes,
            created_at: key.created_at,
            expires_at: key.expires_at,
            webhook_url: key.webhook_url,
            webhook_secret: key.webhook_secret,
        }
    }
}

/// A v1 key as listed: never the secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct V1KeyView {
    key_id: String,
    name: String,
    key_prefix: String,
    permissions: Vec<String>,
    status: String,
    created_at: String,
    expires_at: Option<String>,
    last_used_at: Option<String>,
    revoked_at: Option<String>,
    webhook_url: Option<String>,
}

impl From<KeyView> for V1KeyView {
    fn from(key: KeyView) -> Self {
        V1KeyView {
            key_id: key.key_id,
            name: key.name,
            key_prefix: key.key_prefix,
            permissions: key.scopes,
            status: key.status,
            created_at: key.created_at,
            expires_at: key.expires_at,
            last_used_at: key.last_used_at,
            revoked_at: key.revoked_at,
            webhook_url: key.webhook_url,
        }
    }
}

/// Mint a v1 key: the only answer that carries the key and its webhook secret.
#[utoipa::path(post, path = "/api-keys", operation_id = "v1_create_key",
    security(("sessionCookie" = [])), tag = "v1", request_body = CreateRequest,
    responses((status = 201, body = V1Ok<CreatedV1Key>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody, description = "An API key was sent: keys never manage keys"),
              (status = 409, body = V1ErrorBody, description = "Too many active keys"),
              (status = 429, body = V1ErrorBody)))]
async fn create_key(
    State(state): State<AppState>,
    session: V1Session,
    Body(body): Body<CreateRequest>,
) -> Result<(StatusCode, axum::Json<V1Ok<CreatedV1Key>>), V1Error> {
    let request = body.validate()?;
    let created = api_keys::create(
        &state.store,
        &*state.clock,
        &state.sealer,
        &state.config,
        &session.account_id,
        request,
    )
    .await?;
    Ok((StatusCode::CREATED, ok(CreatedV1Key::from(created))))
}

/// The account's v1 keys (never their secrets).
#[utoipa::path(get, path = "/api-keys", operation_id = "v1_list_keys",
    security(("sessionCookie" = [])), tag = "v1",
    responses((status = 200, body = V1Ok<Vec<V1KeyView>>),
              (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody, description = "An API key was sent: keys never manage keys"), (status = 429, body = V1ErrorBody)))]
async fn list_keys(
    State(state): State<AppState>,
    session: V1Session,
) -> Result<axum::Json<V1Ok<Vec<V1KeyView>>>, V1Error> {
    let keys = api_keys::list(
        &state.store,
        &*state.clock,
        &session.account_id,
        KeyFamily::V1,
    )
    .await?;
    Ok(ok(keys
        .into_iter()
        .map(V1KeyView::from)
        .collect::<Vec<_>>()))
}

/// Revoke a v1 key at once.
#[utoipa::path(delete, path = "/api-keys/{keyId}", operation_id = "v1_revoke_key",
    security(("sessionCookie" = [])), tag = "v1",
    params(("keyId" = String, Path, description = "Key id")),
    responses((status = 200, body = V1Ok<V1KeyView>),
              (status = 401, body = V1ErrorBody),
              (status = 403, body = V1ErrorBody, description = "An API key was sent: keys never manage keys"), (status = 404, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn revoke_key(
    State(state): State<AppState>,
    session: V1Session,
    Path(key_id): Path<String>,
) -> Result<axum::Json<V1Ok<V1KeyView>>, V1Error> {
    let key = api_keys::revoke(
        &state.store,
        &*state.clock,
        &state.events,
        &session.account_id,
        KeyFamily::V1,
        &key_id,
    )
    .await?;
    Ok(ok(V1KeyView::from(key)))
}
