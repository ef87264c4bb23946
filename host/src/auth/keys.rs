//! API key secrets: `svc_live_<base58 of 32 random bytes>`. The secret is shown once at creation;
//! the database keeps its SHA-256 (the lookup key) and the first 12 characters (`keyPrefix`, to
//! recognise a key in lists). Checking a key reads one row and writes nothing on the request path:
//! `lastUsedAt` is refreshed in the background at most once a minute per key.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use chrono::{DateTime, Utc};

use crate::clock::{from_millis, to_millis};
use crate::crypto::{constant_time_eq, random_base58, sha256_hex};
use crate::http::ApiError;
use crate::state::AppState;

pub const KEY_PREFIX: &str = "svc_live_";
pub const DISPLAY_PREFIX_LEN: usize = 12;
const LAST_USED_GRANULARITY_MS: i64 = 60_000;

/// Which API a key belongs to: account keys (scopes `read`/`write`) or v1 keys (`agents:*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFamily {
    Account,
    V1,
}

impl KeyFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyFamily::Account => "account",
            KeyFamily::V1 => "v1",
        }
    }
}

/// A newly minted secret and what is stored of it.
pub struct MintedKey {
    pub key: String,
    pub prefix: String,
    pub hash: String,
}

pub fn mint() -> MintedKey {
    let key = format!("{KEY_PREFIX}{}", random_base58(32));
    MintedKey {
        prefix: key.chars().take(DISPLAY_PREFIX_LEN).collect(),
        hash: sha256_hex(&key),
        key,
    }
}

/// A key that passed the check: live, of the expected family.
#[derive(Debug, Clone)]
pub struct VerifiedKey {
    pub key_id: String,
    pub account_id: String,
    pub scopes: Vec<String>,
}

impl VerifiedKey {
    pub fn allows(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }
}

/// The token of `Authorization: Bearer <token>`, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            value
                .strip_prefix("Bearer ")
                .or_else(|| value.strip_prefix("bearer "))
        })
        .map(str::trim)
}

/// The key the client presented: `Authorization: Bearer <key>`, else `x-api-key: <key>`.
pub fn presented(headers: &HeaderMap) -> Option<String> {
    let bearer = bearer(headers);
    let header = headers
        .get("x-api-key")
        .and_then(|value| value.to_str().ok())
        .map(str::trim);
    bearer
        .or(header)
        .filter(|key| !key.is_empty())
        .map(str::to_owned)
}

/// Check a presented key: 401 with the reason when it is unknown, revoked or expired.
pub async fn verify(
    state: &AppState,
    presented: &str,
    family: KeyFamily,
) -> Result<VerifiedKey, ApiError> {
    if !presented.starts_with(KEY_PREFIX) {
        return Err(ApiError::Unauthorized(format!(
            "not an API key: keys start with `{KEY_PREFIX}`"
        )));
    }
    let hash = sha256_hex(presented);
    type Row = (
        String,
        String,
        String,
        String,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT k.id, k.account_id, k.key_hash, k.scopes, k.expires_at, k.revoked_at, k.last_used_at,
                a.suspended_at
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
         WHERE k.key_hash = $1 AND k.family = $2",
    )
    .bind(&hash)
    .bind(family.as_str())
    .fetch_optional(state.store.read())
    .await?;
    let Some((
        key_id,
        account_id,
        stored_hash,
        scopes,
        expires_at,
        revoked_at,
        last_used_at,
        suspended_at,
    )) = row
    else {
        return Err(ApiError::Unauthorized("unknown API key".into()));
    };
    if !constant_time_eq(stored_hash.as_bytes(), hash.as_bytes()) {
        return Err(ApiError::Unauthorized("unknown API key".into()));
    }
    let now = state.now();
    if revoked_at.is_some() {
        return Err(ApiError::Unauthorized("this API key was revoked".into()));
    }
    if expires_at.is_some_and(|at| at <= to_millis(now)) {
        return Err(ApiError::Unauthorized("this API key has expired".into()));
    }
    if suspended_at.is_some() {
        return Err(ApiError::Forbidden(
            "this key's account is suspended; contact the service's operators".into(),
        ));
    }
    touch_last_used(state, &key_id, last_used_at, now);
    Ok(VerifiedKey {
        key_id,
        account_id,
        scopes: split_scopes(&scopes),
    })
}

/// Record use at minute granularity, off the request path.
fn touch_last_used(state: &AppState, key_id: &str, last_used_at: Option<i64>, now: DateTime<Utc>) {
    let now_ms = to_millis(now);
    if last_used_at.is_some_and(|at| now_ms - at < LAST_USED_GRANULARITY_MS) {
        return;
    }
    let store = state.store.clone();
    let key_id = key_id.to_owned();
    tokio::spawn(async move {
        let touched = sqlx::query(
            "UPDATE api_keys SET last_used_at = $1
             WHERE id = $2 AND (last_used_at IS NULL OR last_used_at <= $3)",
        )
        .bind(now_ms)
        .bind(&key_id)
        .bind(now_ms - LAST_USED_GRANULARITY_MS)
        .execute(store.write())
        .await;
        if let Err(error) = touched {
            tracing::warn!(%error, key_id, "could not record API key use");
        }
    });
}

/// Scopes are stored space-separated.
pub fn split_scopes(stored: &str) -> Vec<String> {
    stored.split_whitespace().map(str::to_owned).collect()
}

pub fn join_scopes(scopes: &[String]) -> String {
    scopes.join(" ")
}

/// Whether a key row is live at `now`.
pub fn status(
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
    now: DateTime<Utc>,
) -> &'static str {
    if revoked_at.is_some() {
        "revoked"
    } else if expires_at.is_some_and(|at| from_millis(at) <= now) {
        "expired"
    } else {
        "active"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn minted_keys_have_the_documented_shape() {
        let minted = mint();
        assert!(minted.key.starts_with("svc_live_"));
        assert!(minted.key.len() >= 9 + 43);
        assert_eq!(minted.prefix, minted.key[..12]);
        assert_eq!(minted.hash, sha256_hex(&minted.key));
        assert_ne!(mint().key, minted.key);
    }

    #[test]
    fn keys_come_from_bearer_or_x_api_key() {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", HeaderValue::from_static("svc_live_b"));
        assert_eq!(presented(&headers).as_deref(), Some("svc_live_b"));
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer svc_live_a"));
        assert_eq!(presented(&headers).as_deref(), Some("svc_live_a"));
        assert_eq!(presented(&HeaderMap::new()), None);
    }

    #[test]
    fn status_prefers_revoked_then_expired() {
        let now = from_millis(10_000);
        assert_eq!(status(None, None, now), "active");
        assert_eq!(status(Some(10_000), None, now), "expired");
        assert_eq!(status(Some(20_000), None, now), "active");
        assert_eq!(status(Some(1), Some(5), now), "revoked");
    }
}
