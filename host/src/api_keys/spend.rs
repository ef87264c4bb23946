//! What an account key may spend from the account's embedded wallet (docs/api.md, "Paying from
//! the embedded wallet"): at most `maxUsdcPerEntry` for one entry and `maxUsdcPerDay` in one UTC
//! day. A key without limits can never move funds.
//!
//! A spend is checked and recorded by [`charge`], inside the transaction that records the signed
//! payment, before it is sent. `charge` first takes the key row's write lock, so concurrent
//! entries of one key are serialised there and two of them can never both fit under the cap
//! (SQLite has a single writer anyway). A spend released ([`release`]: the entry was refunded,
//! or its payment can never land) no longer counts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::AnyConnection;
use utoipa::ToSchema;

use crate::audit::{self, Actor, Entry};
use crate::auth::Caller;
use crate::clock::to_millis;
use crate::db::Store;
use crate::db::StoreError;
use crate::domain::WalletAddress;
use crate::usdc::Usdc;

/// The largest limit a key may have, per entry or per day: far above any entry fee, low enough
/// that a typo cannot hand a key the whole wallet.
pub(crate) const MAX_LIMIT: Usdc = Usdc::whole(1_000_000);

/// A key's limits, raw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpendLimits {
    pub per_day: Usdc,
    pub per_entry: Usdc,
}

impl SpendLimits {
    /// The limits as stored: both columns set, or the key cannot spend.
    pub(crate) fn stored(per_day: Option<i64>, per_entry: Option<i64>) -> Option<Self> {
        Some(SpendLimits {
            per_day: Usdc::from_raw(per_day?),
            per_entry: Usdc::from_raw(per_entry?),
        })
    }
}

/// `spend` of a key creation request: what the key may pay from the embedded wallet.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SpendRequest {
    /// The most the key may spend in one UTC day, in USDC: more than 0, at most 1000000, at most
    /// 6 decimals.
    #[schema(exclusive_minimum = 0, maximum = 1_000_000)]
    max_usdc_per_day: f64,
    /// The most one entry may cost, in USDC: more than 0, at most `maxUsdcPerDay`, at most 6
    /// decimals.
    #[schema(exclusive_minimum = 0, maximum = 1_000_000)]
    max_usdc_per_entry: f64,
}

impl SpendRequest {
    pub(crate) fn validate(&self) -> Result<SpendLimits, String> {
        let amount = |name: &str, value: f64| {
            let usdc = Usdc::from_ui(value)
                .filter(|usdc| usdc.raw() > 0 && *usdc <= MAX_LIMIT)
                .ok_or_else(|| {
                    format!(
                        "`spend.{name}` must be a USDC amount above 0 and at most {MAX_LIMIT}, with at most 6 decimals"
                    )
                })?;
            Ok::<_, String>(usdc)
        };
        let per_day = amount("maxUsdcPerDay", self.max_usdc_per_day)?;
        let per_entry = amount("maxUsdcPerEntry", self.max_usdc_per_entry)?;
        if per_entry > per_day {
            return Err(format!(
                "`spend.maxUsdcPerEntry` ({per_entry}) must not exceed `spend.maxUsdcPerDay` ({per_day})"
            ));
        }
        Ok(SpendLimits { per_day, per_entry })
    }
}

/// A key's limits and what it spent today, as the key list shows them.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpendView {
    /// USDC the key may spend in one UTC day.
    pub max_usdc_per_day: f64,
    /// USDC one entry may cost at most.
    pub max_usdc_per_entry: f64,
    /// USDC spent since 00:00 UTC today (refunded entries not counted).
    pub spent_today_usdc: f64,
}

impl SpendView {
    pub(crate) fn new(limits: SpendLimits, spent_today: Usdc) -> Self {
        SpendView {
            max_usdc_per_day: limits.per_day.ui(),
            max_usdc_per_entry: limits.per_entry.ui(),
            spent_today_usdc: spent_today.ui(),
        }
    }
}

/// Why a spend was refused (401 without a credential, else 403, at the edge).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum SpendRefused {
    #[error(
        "`payFrom: \"embedded\"` pays from the caller's embedded wallet: send an account API key with spend limits (`Authorization: Bearer svc_live_…`)"
    )]
    Anonymous,
    #[error(
        "`payFrom: \"embedded\"` needs an account API key with spend limits: a browser session never pays from the embedded wallet"
    )]
    NotAKey,
    #[error(
        "this API key may not spend from the embedded wallet: create a key with `spend` limits (POST /api/api-keys) to pay with `payFrom: \"embedded\"`"
    )]
    NoLimits,
    #[error(
        "this account has no embedded wallet to pay from (accounts created by e-mail sign-up have one): pay on chain and send `txSignature`"
    )]
    NoEmbeddedWallet,
    #[error(
        "this entry costs {cost} USDC, over this key's limit of {limit} USDC per entry; nothing was paid"
    )]
    PerEntry { limit: Usdc, cost: Usdc },
    #[error(
        "this entry costs {cost} USDC, but this key has spent {spent} of its {limit} USDC per day today (UTC); nothing was paid"
    )]
    PerDay {
        limit: Usdc,
        spent: Usdc,
        cost: Usdc,
    },
}

impl From<SpendRefused> for crate::http::ApiError {
    fn from(refused: SpendRefused) -> Self {
        match refused {
            SpendRefused::Anonymous => crate::http::ApiError::Unauthorized(refused.to_string()),
            _ => crate::http::ApiError::Forbidden(refused.to_string()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SpendError {
    #[error(transparent)]
    Refused(#[from] SpendRefused),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(SpendError);

/// 00:00 UTC of `now`'s day, in milliseconds: the start of the day the limits count.
fn day_start(now: DateTime<Utc>) -> i64 {
    to_millis(now.date_naive().and_time(chrono::NaiveTime::MIN).and_utc())
}

/// The limits of `key_id` (`None`: it cannot spend), read where a caller must be refused before
/// anything else happens. [`charge`] reads them again under the key's lock.
pub(crate) async fn limits(
    conn: impl sqlx::Executor<'_, Database = sqlx::Any>,
    key_id: &str,
) -> Result<Option<SpendLimits>, StoreError> {
    let row: Option<(Option<i64>, Option<i64>)> = sqlx::query_as(
        "SELECT spend_max_per_day_raw, spend_max_per_entry_raw FROM api_keys WHERE id = $1",
    )
    .bind(key_id)
    .fetch_optional(conn)
    .await?;
    Ok(row.and_then(|(day, entry)| SpendLimits::stored(day, entry)))
}

/// What the keys of `account_id` spent today, by key id.
pub(crate) async fn spent_today(
    pool: &sqlx::AnyPool,
    account_id: &str,
    now: DateTime<Utc>,
) -> Result<std::collections::HashMap<String, Usdc>, StoreError> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT s.key_id, CAST(SUM(s.amount_raw) AS BIGINT)
         FROM key_spends s JOIN api_keys k ON k.id = s.key_id
         WHERE k.account_id = $1 AND s.released_at IS NULL AND s.spent_at >= $2
         GROUP BY s.key_id",
    )
    .bind(account_id)
    .bind(day_start(now))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(key, raw)| (key, Usdc::from_raw(raw)))
        .collect())
}

/// Where the server takes an entry's fee from when the caller sends no signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PayFrom {
    /// The account's embedded wallet (created at e-mail sign-up).
    Embedded,
}

/// Who pays with `payFrom: "embedded"`: the calling key and its account's embedded wallet.
pub(crate) struct Spender<'a> {
    pub caller: &'a Caller,
    pub key_id: &'a str,
    pub wallet: WalletAddress,
}

/// The spender of a `payFrom: "embedded"` call: an account key with spend limits, and its
/// account's embedded wallet. Refused for no credential, a session, a key without limits, or an
/// account without an embedded wallet, before anything else happens.
pub(crate) async fn spender<'a>(
    store: &Store,
    caller: Option<&'a Caller>,
) -> Result<Spender<'a>, SpendError> {
    let caller = caller.ok_or(SpendRefused::Anonymous)?;
    let key_id = caller.key_id.as_deref().ok_or(SpendRefused::NotAKey)?;
    limits(store.read(), key_id)
        .await?
        .ok_or(SpendRefused::NoLimits)?;
    let wallet = crate::custodial::embedded_wallet(store, &caller.account_id)
        .await?
        .ok_or(SpendRefused::NoEmbeddedWallet)?;
    Ok(Spender {
        caller,
        key_id,
        wallet,
    })
}

/// One payment a key authorises.
pub(crate) struct Charge<'a> {
    pub key_id: &'a str,
    pub account_id: &'a str,
    pub amount: Usdc,
    /// What it pays for, for the audit log: `tournament trn_… registration`, `dungeon 2026-… entry`.
    pub paid_for: &'a str,
    pub signature: &'a str,
}

/// Check `charge` against its key's limits and record it, in `conn`'s transaction (the one that
/// records the signed payment). Refused beyond the per-entry limit or the rest of today's.
pub(crate) async fn charge(
    conn: &mut AnyConnection,
    charge: &Charge<'_>,
    now: DateTime<Utc>,
) -> Result<(), SpendError> {
    // The key row's write lock first: every entry of this key waits here for the one before it
    // to commit, so the sum below always includes it.
    sqlx::query("UPDATE api_keys SET spend_max_per_day_raw = spend_max_per_day_raw WHERE id = $1")
        .bind(charge.key_id)
        .execute(&mut *conn)
        .await?;
    let limits = limits(&mut *conn, charge.key_id)
        .await?
        .ok_or(SpendRefused::NoLimits)?;
    if charge.amount > limits.per_entry {
        return Err(SpendRefused::PerEntry {
            limit: limits.per_entry,
            cost: charge.amount,
        }
        .into());
    }
    let (spent,): (Option<i64>,) = sqlx::query_as(
        "SELECT CAST(SUM(amount_raw) AS BIGINT) FROM key_spends
         WHERE key_id = $1 AND released_at IS NULL AND spent_at >= $2",
    )
    .bind(charge.key_id)
    .bind(day_start(now))
    .fetch_one(&mut *conn)
    .await?;
    let spent = Usdc::from_raw(spent.unwrap_or(0));
    if spent.raw().saturating_add(charge.amount.raw()) > limits.per_day.raw() {
        return Err(SpendRefused::PerDay {
            limit: limits.per_day,
            spent,
            cost: charge.amount,
        }
        .into());
    }
    sqlx::query(
        "INSERT INTO key_spends (signature, key_id, amount_raw, spent_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(charge.signature)
    .bind(charge.key_id)
    .bind(charge.amount.raw())
    .bind(to_millis(now))
    .execute(&mut *conn)
    .await?;
    let actor = Actor::Account(charge.account_id.to_owned());
    audit::record(
        &mut *conn,
        Entry::new(&actor, "key.spend", "key", charge.key_id)
            .account(charge.account_id)
            .change(
                Value::Null,
                json!({"amountRaw": charge.amount.raw().to_string(), "paidFor": charge.paid_for,
                       "signature": charge.signature}),
            )
            .detail(format!(
                "{} USDC from the embedded wallet for {}",
                charge.amount, charge.paid_for
            )),
        now,
    )
    .await?;
    Ok(())
}

/// Release the spend of the payment `signature`, if a key authorised it: the entry was refunded,
/// or the payment can never land. Idempotent.
pub(crate) async fn release(
    conn: &mut AnyConnection,
    signature: &str,
    why: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<()> {
    let spend: Option<(String, i64, String)> = sqlx::query_as(
        "SELECT s.key_id, s.amount_raw, k.account_id FROM key_spends s JOIN api_keys k ON k.id = s.key_id
         WHERE s.signature = $1 AND s.released_at IS NULL",
    )
    .bind(signature)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((key_id, amount_raw, account_id)) = spend else {
        return Ok(());
    };
    let released = sqlx::query(
        "UPDATE key_spends SET released_at = $1 WHERE signature = $2 AND released_at IS NULL",
    )
    .bind(to_millis(now))
    .bind(signature)
    .execute(&mut *conn)
    .await?;
    if released.rows_affected() == 1 {
        audit::record(
            &mut *conn,
            Entry::new(&Actor::System, "key.spend_release", "key", &key_id)
                .account(&account_id)
                .change(
                    json!({"amountRaw": amount_raw.to_string(), "signature": signature}),
                    Value::Null,
                )
                .detail(why),
            now,
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(day: f64, entry: f64) -> Result<SpendLimits, String> {
        SpendRequest {
            max_usdc_per_day: day,
            max_usdc_per_entry: entry,
        }
        .validate()
    }

    #[test]
    fn limits_are_positive_bounded_amounts_with_the_entry_within_the_day() {
        assert_eq!(
            request(5.5, 2.0),
            Ok(SpendLimits {
                per_day: Usdc::from_raw(5_500_000),
                per_entry: Usdc::whole(2)
            })
        );
        assert!(request(1_000_000.0, 0.000_001).is_ok());
        for (day, entry) in [
            (0.0, 0.0),
            (-1.0, 1.0),
            (1_000_000.5, 1.0),
            (1.000_000_1, 1.0),
        ] {
            assert!(request(day, entry).is_err(), "{day} / {entry}");
        }
        let over = request(1.0, 2.0).expect_err("entry over day");
        assert!(
            over.contains("maxUsdcPerEntry") && over.contains("(2)"),
            "{over}"
        );
    }

    #[test]
    fn the_day_starts_at_midnight_utc() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-24T13:14:15Z")
            .expect("time")
            .with_timezone(&Utc);
        assert_eq!(
            day_start(now),
            to_millis(
                chrono::DateTime::parse_from_rfc3339("2026-11-24T00:00:00Z")
                    .expect("time")
                    .with_timezone(&Utc)
            )
        );
    }

    #[test]
    fn refusals_say_the_limit_what_is_spent_and_the_cost() {
        let message = SpendRefused::PerDay {
            limit: Usdc::whole(5),
            spent: Usdc::whole(4),
            cost: Usdc::from_raw(1_500_000),
        }
        .to_string();
        assert!(
            message.contains("1.5 USDC") && message.contains("spent 4 of its 5 USDC"),
            "{message}"
        );
    }
}
