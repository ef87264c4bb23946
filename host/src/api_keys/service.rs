//! Creating, listing and revoking keys; shared by the account keys and (later) the v1 keys,
//! which differ only in family and in what their scopes mean.

use chrono::Duration;
use serde::Serialize;
use utoipa::ToSchema;

use super::spend::{self, SpendLimits, SpendView};
use crate::audit::{self, Actor, Entry};
use crate::auth::keys::{self, KeyFamily};
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::config::Config;
use crate::crypto::Sealer;
use crate::crypto::{new_id, random_base58};
use crate::db::Store;
use crate::db::StoreError;
use crate::events::Bus;
use crate::usdc::Usdc;

/// At most this many active (unrevoked, unexpired) keys per account, account keys and v1 keys
/// counted together: the contract's limit is per user, not per kind of key.
pub(crate) const MAX_ACTIVE_KEYS: i64 = 10;

/// Why a key could not be created, listed or revoked. The HTTP families map it at their edge
/// (`api_keys::routes` for the platform API, `v1::keys` for v1).
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    /// The session's account no longer exists.
    #[error("account not found")]
    AccountNotFound,
    /// The account already holds [`MAX_ACTIVE_KEYS`] active keys.
    #[error(
        "an account may have at most {MAX_ACTIVE_KEYS} active API keys, account and v1 keys together; revoke one before creating another"
    )]
    TooMany,
    /// No such key of this family on this account.
    #[error("no API key `{0}` on this account")]
    NotFound(String),
    /// The webhook URL names an address deliveries would refuse (`webhooks::egress`).
    #[error("webhookUrl {0}")]
    WebhookRefused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(KeyError);

/// A validated creation request.
pub(crate) struct CreateKey {
    pub family: KeyFamily,
    pub name: String,
    pub scopes: Vec<String>,
    pub expires_in_days: Option<i64>,
    pub webhook_url: Option<String>,
    /// What the key may pay from the embedded wallet; `None`: nothing, ever.
    pub spend: Option<SpendLimits>,
}

/// The creation response: the only time `key` and `webhookSecret` are ever shown.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreatedKey {
    pub key_id: String,
    pub name: String,
    /// The secret, `svc_live_…`. Store it now: it cannot be retrieved again.
    pub key: String,
    pub key_prefix: String,
    pub scopes: Vec<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub webhook_url: Option<String>,
    /// HMAC-SHA256 secret for verifying webhook signatures; only when `webhookUrl` was given.
    pub webhook_secret: Option<String>,
    /// What the key may pay from the account's embedded wallet (`payFrom: "embedded"`); null
    /// when it can never move funds.
    #[schema(value_type = Option<SpendView>)]
    pub spend: Option<SpendView>,
}

/// A key as listed: never the secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KeyView {
    pub key_id: String,
    pub name: String,
    pub key_prefix: String,
    pub scopes: Vec<String>,
    /// `active`, `revoked` or `expired`.
    pub status: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    pub webhook_url: Option<String>,
    /// What the key may pay from the account's embedded wallet, and what it paid today (UTC);
    /// null when it can never move funds.
    #[schema(value_type = Option<SpendView>)]
    pub spend: Option<SpendView>,
}

/// Mint a key for `account_id`, refusing the 11th active one of either family.
pub(crate) async fn create(
    store: &Store,
    clock: &dyn Clock,
    sealer: &Sealer,
    config: &Config,
    account_id: &str,
    request: CreateKey,
) -> Result<CreatedKey, KeyError> {
    // Refused now, by the very rule deliveries apply, rather than at every delivery later.
    if let Some(url) = &request.webhook_url
        && !config.webhook_allow_private
    {
        crate::webhooks::egress::check_literal(url).map_err(KeyError::WebhookRefused)?;
    }
    let now = clock.now();
    let minted = keys::mint();
    let key_id = new_id("key");
    let expires_at = request
        .expires_in_days
        .map(|days| now + Duration::days(days));
    let webhook_secret = request
        .webhook_url
        .as_ref()
        .map(|_| format!("whsec_{}", random_base58(32)));

    let mut tx = store.begin().await?;
    // Take the account row's write lock first so two concurrent creations cannot both see 9.
    let locked = sqlx::query("UPDATE accounts SET updated_at = updated_at WHERE id = $1")
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
    if locked.rows_affected() != 1 {
        return Err(KeyError::AccountNotFound);
    }
    let (active,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM api_keys
         WHERE account_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
    )
    .bind(account_id)
    .bind(to_millis(now))
    .fetch_one(&mut *tx)
    .await?;
    if active >= MAX_ACTIVE_KEYS {
        return Err(KeyError::TooMany);
    }
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, family, name, key_prefix, key_hash, scopes, webhook_url,
                               webhook_secret_sealed, created_at, expires_at,
                               spend_max_per_day_raw, spend_max_per_entry_raw)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(&key_id)
    .bind(account_id)
    .bind(request.family.as_str())
    .bind(&request.name)
    .bind(&minted.prefix)
    .bind(&minted.hash)
    .bind(keys::join_scopes(&request.scopes))
    .bind(request.webhook_url.as_deref())
    .bind(webhook_secret.as_ref().map(|secret| sealer.seal(secret.as_bytes())))
    .bind(to_millis(now))
    .bind(expires_at.map(to_millis))
    .bind(request.spend.map(|limits| limits.per_day.raw()))
    .bind(request.spend.map(|limits| limits.per_entry.raw()))
    .execute(&mut *tx)
    .await?;
    let actor = Actor::Account(account_id.to_owned());
    audit::record(
        &mut tx,
        Entry::new(&actor, "key.create", "key", &key_id)
            .account(account_id)
            .change(
                serde_json::Value::Null,
                serde_json::json!({
                    "name": request.name, "family": request.family.as_str(), "keyPrefix": minted.prefix,
                    "scopes": request.scopes, "expiresAt": expires_at.map(rfc3339),
                    "webhookUrl": request.webhook_url,
                    "spend": request.spend.map(|limits| serde_json::json!({
                        "maxPerDayRaw": limits.per_day.raw().to_string(),
                        "maxPerEntryRaw": limits.per_entry.raw().to_string(),
                    })),
                }),
            ),
        now,
    )
    .await?;
    tx.commit().await?;
    tracing::info!(
        account_id,
        key_id,
        family = request.family.as_str(),
        "API key created"
    );

    Ok(CreatedKey {
        key_id,
        name: request.name,
        key: minted.key,
        key_prefix: minted.prefix,
        scopes: request.scopes,
        created_at: rfc3339(now),
        expires_at: expires_at.map(rfc3339),
        webhook_url: request.webhook_url,
        webhook_secret,
        spend: request
            .spend
            .map(|limits| SpendView::new(limits, Usdc::default())),
    })
}

/// A key's row as listed (never its hash or webhook secret).
#[derive(sqlx::FromRow)]
struct KeyRow {
    id: String,
    name: String,
    key_prefix: String,
    scopes: String,
    created_at: i64,
    expires_at: Option<i64>,
    last_used_at: Option<i64>,
    revoked_at: Option<i64>,
    webhook_url: Option<String>,
    spend_max_per_day_raw: Option<i64>,
    spend_max_per_entry_raw: Option<i64>,
}

/// Every key of the account in `family`, newest first (revoked and expired ones included).
pub(crate) async fn list(
    store: &Store,
    clock: &dyn Clock,
    account_id: &str,
    family: KeyFamily,
) -> Result<Vec<KeyView>, KeyError> {
    let rows: Vec<KeyRow> = sqlx::query_as(
        "SELECT id, name, key_prefix, scopes, created_at, expires_at, last_used_at, revoked_at, webhook_url,
                spend_max_per_day_raw, spend_max_per_entry_raw
         FROM api_keys WHERE account_id = $1 AND family = $2 ORDER BY created_at DESC, id",
    )
    .bind(account_id)
    .bind(family.as_str())
    .fetch_all(store.read())
    .await?;
    let now = clock.now();
    let spent = spend::spent_today(store.read(), account_id, now).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let spent = spent.get(&row.id).copied().unwrap_or_default();
            key_view(row, spent, now)
        })
        .collect())
}

fn key_view(row: KeyRow, spent_today: Usdc, now: chrono::DateTime<chrono::Utc>) -> KeyView {
    let at = |millis: Option<i64>| millis.map(|ms| rfc3339(from_millis(ms)));
    KeyView {
        spend: SpendLimits::stored(row.spend_max_per_day_raw, row.spend_max_per_entry_raw)
            .map(|limits| SpendView::new(limits, spent_today)),
        key_id: row.id,
        name: row.name,
        key_prefix: row.key_prefix,
        scopes: keys::split_scopes(&row.scopes),
        status: keys::status(row.expires_at, row.revoked_at, now).to_owned(),
        created_at: rfc3339(from_millis(row.created_at)),
        expires_at: at(row.expires_at),
        last_used_at: at(row.last_used_at),
        revoked_at: at(row.revoked_at),
        webhook_url: row.webhook_url,
    }
}

/// Revoke a key of the account; effective for the next request. Revoking twice is harmless.
pub(crate) async fn revoke(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    account_id: &str,
    family: KeyFamily,
    key_id: &str,
) -> Result<KeyView, KeyError> {
    let now = clock.now();
    let mut tx = store.begin().await?;
    let revoked = sqlx::query(
        "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND account_id = $3 AND family = $4 AND revoked_at IS NULL",
    )
    .bind(to_millis(now))
    .bind(key_id)
    .bind(account_id)
    .bind(family.as_str())
    .execute(&mut *tx)
    .await?;
    if revoked.rows_affected() == 1 {
        let actor = Actor::Account(account_id.to_owned());
        audit::record(
            &mut tx,
            Entry::new(&actor, "key.revoke", "key", key_id)
                .account(account_id)
                .change(
                    serde_json::json!({"revoked": false}),
                    serde_json::json!({"revoked": true}),
                ),
            now,
        )
        .await?;
    }
    tx.commit().await?;
    if revoked.rows_affected() == 1 {
        // Every node drops the key from its cache and refuses it from the next request on.
        events.publish(crate::events::Event::KeysChanged {
            account_id: account_id.to_owned(),
        });
    }
    let row: Option<KeyRow> = sqlx::query_as(
        "SELECT id, name, key_prefix, scopes, created_at, expires_at, last_used_at, revoked_at, webhook_url,
                spend_max_per_day_raw, spend_max_per_entry_raw
         FROM api_keys WHERE id = $1 AND account_id = $2 AND family = $3",
    )
    .bind(key_id)
    .bind(account_id)
    .bind(family.as_str())
    .fetch_optional(store.write())
    .await?;
    let spent = spend::spent_today(store.write(), account_id, clock.now()).await?;
    row.map(|row| {
        let spent = spent.get(&row.id).copied().unwrap_or_default();
        key_view(row, spent, clock.now())
    })
    .ok_or_else(|| KeyError::NotFound(key_id.to_owned()))
}
