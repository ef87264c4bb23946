//! API key secrets: `svc_live_<base58 of 32 random bytes>`. The secret is shown once at creation;
//! the database keeps its SHA-256 (the lookup key) and the first 12 characters (`keyPrefix`, to
//! recognise a key in lists). Checking a key reads one row — or, for a key seen recently, nothing:
//! verified keys stay in the node's read cache until a revocation or suspension is announced —
//! and writes nothing on the request path: `lastUsedAt` is refreshed in the background at most
//! once a minute per key.

use std::sync::atomic::{AtomicI64, Ordering};

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use chrono::{DateTime, Utc};

use crate::cache::Caches;
use crate::clock::Clock;
use crate::clock::{from_millis, to_millis};
use crate::crypto::{constant_time_eq, random_base58, sha256_hex};
use crate::db::Store;

pub(crate) const KEY_PREFIX: &str = "svc_live_";
pub(crate) const DISPLAY_PREFIX_LEN: usize = 12;
const LAST_USED_GRANULARITY_MS: i64 = 60_000;

/// Which API a key belongs to: account keys (scopes `read`/`write`) or v1 keys (`agents:*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyFamily {
    Account,
    V1,
}

impl KeyFamily {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            KeyFamily::Account => "account",
            KeyFamily::V1 => "v1",
        }
    }
}

/// A newly minted secret and what is stored of it.
pub(crate) struct MintedKey {
    pub key: String,
    pub prefix: String,
    pub hash: String,
}

pub(crate) fn mint() -> MintedKey {
    let key = format!("{KEY_PREFIX}{}", random_base58(32));
    MintedKey {
        prefix: key.chars().take(DISPLAY_PREFIX_LEN).collect(),
        hash: sha256_hex(&key),
        key,
    }
}

/// A key that passed the check: live, of the expected family.
#[derive(Debug, Clone)]
pub(crate) struct VerifiedKey {
    /// `None` only for the web app acting for a session (`v1::extract`).
    pub key_id: Option<String>,
    pub account_id: String,
    pub scopes: Vec<String>,
}

impl VerifiedKey {
    pub(crate) fn allows(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }
}

/// The token of `Authorization: Bearer <token>`, if any.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
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
pub(crate) fn presented(headers: &HeaderMap) -> Option<String> {
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

/// A key row as checks need it, kept in the node's key cache (by the secret's hash) until a
/// revocation or suspension is announced (`Event::KeysChanged`).
#[derive(Debug)]
pub struct CachedKey {
    key_id: String,
    account_id: String,
    scopes: Vec<String>,
    expires_at: Option<i64>,
    revoked: bool,
    suspended: bool,
    /// When use was last recorded; moved forward by whoever records it next.
    last_used_at: AtomicI64,
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    id: String,
    account_id: String,
    key_hash: String,
    scopes: String,
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
    last_used_at: Option<i64>,
    suspended_at: Option<i64>,
}

/// Why a presented key is not accepted (mapped to 401, or 403 for a suspended account, at the
/// extractors).
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyCheckError {
    #[error("not an API key: keys start with `{KEY_PREFIX}`")]
    NotAKey,
    #[error("unknown API key")]
    Unknown,
    #[error("this API key was revoked")]
    Revoked,
    #[error("this API key has expired")]
    Expired,
    #[error("this key's account is suspended; contact the service's operators")]
    Suspended,
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// Check a presented key: the reason when it is unknown, revoked or expired, or its account is
/// suspended. A key seen recently is checked from memory, without a database round trip.
pub(crate) async fn verify(
    store: &Store,
    clock: &dyn Clock,
    caches: &Caches,
    presented: &str,
    family: KeyFamily,
) -> Result<VerifiedKey, KeyCheckError> {
    if !presented.starts_with(KEY_PREFIX) {
        return Err(KeyCheckError::NotAKey);
    }
    let hash = sha256_hex(presented);
    let cache_key = format!("{}:{hash}", family.as_str());
    let key = caches
        .keys
        .get_or_load(&cache_key, async {
            load(store, &hash, family).await.map(|key| (key, None))
        })
        .await?;
    let now = clock.now();
    if key.revoked {
        return Err(KeyCheckError::Revoked);
    }
    // Expiry is checked on every use against the clock, cached or not.
    if key.expires_at.is_some_and(|at| at <= to_millis(now)) {
        return Err(KeyCheckError::Expired);
    }
    if key.suspended {
        return Err(KeyCheckError::Suspended);
    }
    touch_last_used(store, &key, now);
    Ok(VerifiedKey {
        key_id: Some(key.key_id.clone()),
        account_id: key.account_id.clone(),
        scopes: key.scopes.clone(),
    })
}

async fn load(store: &Store, hash: &str, family: KeyFamily) -> Result<CachedKey, KeyCheckError> {
    let row: Option<KeyRow> = sqlx::query_as(
        "SELECT k.id, k.account_id, k.key_hash, k.scopes, k.expires_at, k.revoked_at, k.last_used_at,
                a.suspended_at
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
         WHERE k.key_hash = $1 AND k.family = $2",
    )
    .bind(hash)
    .bind(family.as_str())
    .fetch_optional(store.read())
    .await?;
    // Unknown keys are not cached: a key created on another node must work at once.
    let Some(row) = row else {
        return Err(KeyCheckError::Unknown);
    };
    if !constant_time_eq(row.key_hash.as_bytes(), hash.as_bytes()) {
        return Err(KeyCheckError::Unknown);
    }
    Ok(CachedKey {
        key_id: row.id,
        account_id: row.account_id,
        scopes: split_scopes(&row.scopes),
        expires_at: row.expires_at,
        revoked: row.revoked_at.is_some(),
        suspended: row.suspended_at.is_some(),
        last_used_at: AtomicI64::new(row.last_used_at.unwrap_or(i64::MIN)),
    })
}

/// Record use at minute granularity, off the request path. The cached key remembers the last
/// recording, so a busy key spawns one write a minute, not one per request.
fn touch_last_used(store: &Store, key: &CachedKey, now: DateTime<Utc>) {
    let now_ms = to_millis(now);
    let last = key.last_used_at.load(Ordering::Relaxed);
    if now_ms.saturating_sub(last) < LAST_USED_GRANULARITY_MS
        || key
            .last_used_at
            .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let store = store.clone();
    let key_id = key.key_id.clone();
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
pub(crate) fn split_scopes(stored: &str) -> Vec<String> {
    stored.split_whitespace().map(str::to_owned).collect()
}

pub(crate) fn join_scopes(scopes: &[String]) -> String {
    scopes.join(" ")
}

/// Whether a key row is live at `now`.
pub(crate) fn status(
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
