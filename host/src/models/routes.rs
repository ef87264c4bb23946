//! `/api/account/model-keys…`: an operator's own provider keys (`docs/models.md`).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::keys::{self, ModelKeyError, ModelKeyView};
use crate::auth::{AccountAuth, Read, Write};
use crate::http::ApiError;
use crate::http::json::{Json, Path};
use crate::http::rate_limit::{AccountPolicy, IpLimit};
use crate::state::AppState;

impl From<ModelKeyError> for ApiError {
    fn from(error: ModelKeyError) -> Self {
        match error {
            ModelKeyError::InvalidKey(_) => ApiError::BadRequest(error.to_string()),
            // The keys are per vendor of this host: a vendor it has no endpoint for has no key
            // to set or forget, as a missing resource (which vendors exist is the host's
            // setting, so no document can list them).
            ModelKeyError::UnknownVendor { .. } | ModelKeyError::NotFound(_) => {
                ApiError::NotFound(error.to_string())
            }
            ModelKeyError::Store(store) => store.into(),
        }
    }
}

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_model_keys))
        .routes(routes!(put_model_key, delete_model_key))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct PutModelKey {
    /// The provider's API key: 1 to 512 visible ASCII characters. Stored sealed, never returned.
    #[schema(min_length = 1, max_length = 512)]
    api_key: String,
}

// By hand, so that a body that fails to parse can never print the key.
impl std::fmt::Debug for PutModelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PutModelKey { api_key: [redacted] }")
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ModelKeys {
    model_keys: Vec<ModelKeyView>,
}

/// The account's provider keys: vendor, the key's first characters and when it was set; never
/// the key.
#[utoipa::path(get, path = "/api/account/model-keys", operation_id = "list_model_keys",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    responses((status = 200, body = ModelKeys), (status = 401), (status = 403)))]
async fn list_model_keys(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Read>,
) -> Result<axum::Json<ModelKeys>, ApiError> {
    Ok(axum::Json(ModelKeys {
        model_keys: keys::list(&state.store, auth.account_id()).await?,
    }))
}

/// Store (or replace) the account's key for a vendor of this host; it is sent only to that
/// vendor's endpoint when the account's agents ask their model.
#[utoipa::path(put, path = "/api/account/model-keys/{vendor}", operation_id = "put_model_key",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    params(("vendor" = String, Path, description = "A vendor this host has an endpoint for (`openai`, `anthropic`, `ollama`…)")),
    request_body = PutModelKey,
    responses((status = 200, body = ModelKeyView), (status = 400), (status = 401), (status = 403),
              (status = 404, description = "This host has no endpoint for the vendor")))]
async fn put_model_key(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Write>,
    Path(vendor): Path<String>,
    Json(body): Json<PutModelKey>,
) -> Result<axum::Json<ModelKeyView>, ApiError> {
    Ok(axum::Json(
        keys::put(
            &state.store,
            &*state.clock,
            &state.sealer,
            &state.models,
            auth.account_id(),
            &vendor,
            &body.api_key,
        )
        .await?,
    ))
}

/// Forget the account's key for a vendor (the host's default key, if any, is used again).
#[utoipa::path(delete, path = "/api/account/model-keys/{vendor}", operation_id = "delete_model_key",
    security(("sessionCookie" = []), ("accountKey" = [])), tag = "account",
    params(("vendor" = String, Path, description = "The key's vendor")),
    responses((status = 204, description = "Deleted"), (status = 400), (status = 401), (status = 403),
              (status = 404, description = "No key for this vendor, or no such vendor on this host")))]
async fn delete_model_key(
    _limit: IpLimit<AccountPolicy>,
    State(state): State<AppState>,
    auth: AccountAuth<Write>,
    Path(vendor): Path<String>,
) -> Result<StatusCode, ApiError> {
    keys::delete(
        &state.store,
        &*state.clock,
        &state.models,
        auth.account_id(),
        &vendor,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
