//! Operators' own provider keys (`/api/account/model-keys`): sealed under the master key in
//! `model_keys`, one per account and vendor, never returned (only a short prefix to tell keys
//! apart) and never logged. [`key_for`] is the one place that opens them, to send one to its
//! vendor's endpoint. Each change is in the audit log (`key.model.put`, `key.model.delete`,
//! with the prefix only), so it shows among the account's key events.

use serde::Serialize;
use utoipa::ToSchema;

use super::error::ModelError;
use crate::audit::{self, Actor, Entry};
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::crypto::Sealer;
use crate::db::Store;
use crate::db::StoreError;
use crate::models::Models;
use crate::secret::Secret;

/// Longest key accepted (providers' keys are under 200 characters).
pub(crate) const MAX_KEY_LEN: usize = 512;
/// Characters of a key shown back, at most (and never more than a quarter of the key).
const PREFIX_CHARS: usize = 6;

/// A stored key as its owner sees it: which vendor, how it starts, when it was set.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelKeyView {
    pub vendor: String,
    /// The key's first characters (at most 6, at most a quarter of it), to tell keys apart.
    pub key_prefix: String,
    pub updated_at: String,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ModelKeyError {
    #[error("unknown vendor `{vendor}`: this host's vendors are {known}")]
    UnknownVendor { vendor: String, known: String },
    #[error("{0}")]
    InvalidKey(String),
    #[error("no key for vendor `{0}`")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(ModelKeyError);

/// The vendor, if the host has an endpoint for it.
pub(crate) fn known_vendor(models: &Models, vendor: &str) -> Result<(), ModelKeyError> {
    let endpoints = models.endpoints();
    match endpoints.get(vendor) {
        Some(_) => Ok(()),
        None => Err(ModelKeyError::UnknownVendor {
            vendor: vendor.chars().take(40).collect(),
            known: endpoints.vendor_list(),
        }),
    }
}

/// A key as providers issue them: 1 to [`MAX_KEY_LEN`] visible ASCII characters (it is sent
/// in an HTTP header).
pub(crate) fn check_key(key: &str) -> Result<(), ModelKeyError> {
    if key.is_empty() {
        return Err(ModelKeyError::InvalidKey(
            "`apiKey` must not be empty".into(),
        ));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(ModelKeyError::InvalidKey(format!(
            "`apiKey` must be at most {MAX_KEY_LEN} characters"
        )));
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ModelKeyError::InvalidKey(
            "`apiKey` must be visible ASCII characters, without spaces".into(),
        ));
    }
    Ok(())
}

fn prefix_of(key: &str) -> String {
    key.chars().take(PREFIX_CHARS.min(key.len() / 4)).collect()
}

/// Store (or replace) the account's key of `vendor`.
pub(crate) async fn put(
    store: &Store,
    clock: &dyn Clock,
    sealer: &Sealer,
    models: &Models,
    account_id: &str,
    vendor: &str,
    api_key: &str,
) -> Result<ModelKeyView, ModelKeyError> {
    known_vendor(models, vendor)?;
    check_key(api_key)?;
    let now = clock.now();
    let prefix = prefix_of(api_key);
    let mut tx = store.begin().await?;
    sqlx::query(
        "INSERT INTO model_keys (id, account_id, vendor, key_sealed, key_prefix, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (account_id, vendor) DO UPDATE SET key_sealed = excluded.key_sealed,
             key_prefix = excluded.key_prefix, updated_at = excluded.updated_at",
    )
    .bind(crate::crypto::new_id("mk"))
    .bind(account_id)
    .bind(vendor)
    .bind(sealer.seal(api_key.as_bytes()))
    .bind(&prefix)
    .bind(to_millis(now))
    .execute(&mut *tx)
    .await?;
    let actor = Actor::Account(account_id.to_owned());
    audit::record(
        &mut tx,
        Entry::new(&actor, "key.model.put", "model_key", vendor)
            .account(account_id)
            .change(
                serde_json::Value::Null,
                serde_json::json!({"vendor": vendor, "keyPrefix": prefix}),
            ),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(ModelKeyView {
        vendor: vendor.to_owned(),
        key_prefix: prefix,
        updated_at: rfc3339(now),
    })
}

/// The account's keys, by vendor.
pub(crate) async fn list(
    store: &Store,
    account_id: &str,
) -> Result<Vec<ModelKeyView>, ModelKeyError> {
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT vendor, key_prefix, updated_at FROM model_keys
         WHERE account_id = $1 ORDER BY vendor",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(|(vendor, key_prefix, updated_at)| ModelKeyView {
            vendor,
            key_prefix,
            updated_at: rfc3339(from_millis(updated_at)),
        })
        .collect())
}

/// Forget the account's key of `vendor`.
pub(crate) async fn delete(
    store: &Store,
    clock: &dyn Clock,
    models: &Models,
    account_id: &str,
    vendor: &str,
) -> Result<(), ModelKeyError> {
    known_vendor(models, vendor)?;
    let mut tx = store.begin().await?;
    let deleted = sqlx::query("DELETE FROM model_keys WHERE account_id = $1 AND vendor = $2")
        .bind(account_id)
        .bind(vendor)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(ModelKeyError::NotFound(vendor.to_owned()));
    }
    let actor = Actor::Account(account_id.to_owned());
    audit::record(
        &mut tx,
        Entry::new(&actor, "key.model.delete", "model_key", vendor).account(account_id),
        clock.now(),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The key to send to `vendor` for `account_id`: the account's own, else the host's default
/// (`CRUCIBLE_MODEL_KEY_<VENDOR>`), else none. Never another account's.
pub async fn key_for(
    store: &Store,
    sealer: &Sealer,
    models: &Models,
    account_id: &str,
    vendor: &str,
) -> Result<Option<Secret>, ModelError> {
    let sealed: Option<(String,)> =
        sqlx::query_as("SELECT key_sealed FROM model_keys WHERE account_id = $1 AND vendor = $2")
            .bind(account_id)
            .bind(vendor)
            .fetch_optional(store.read())
            .await
            .map_err(|error| {
                tracing::warn!(%error, vendor, "cannot read a model key");
                ModelError::KeyUnavailable
            })?;
    match sealed {
        Some((sealed,)) => sealer
            .open_text(&sealed)
            .map(|key| Some(Secret::new(key)))
            .map_err(|_| {
                tracing::warn!(
                    vendor,
                    "a model key does not open with the master key in use"
                );
                ModelError::KeyUnavailable
            }),
        None => Ok(models.default_key(vendor).cloned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_of_bounded_length() {
        assert!(check_key("sk-proj-abc_DEF.123").is_ok());
        assert!(check_key(&"k".repeat(MAX_KEY_LEN)).is_ok());
        for bad in [
            "",
            "sk abc",
            "sk-\u{e9}",
            "sk-\n",
            &"k".repeat(MAX_KEY_LEN + 1),
        ] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_prefix_shows_little_of_the_key() {
        assert_eq!(prefix_of("sk-proj-0123456789abcdef"), "sk-pro");
        assert_eq!(prefix_of("abcdefgh"), "ab");
        assert_eq!(prefix_of("abc"), "");
    }
}
