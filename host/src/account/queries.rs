//! Reads and writes of accounts and their wallets.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use super::error::AccountError;
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::db::Store;
use crate::db::is_unique_violation;
use crate::domain::WalletAddress;
use crate::events::Bus;
use crate::tournaments::payouts::PayoutStatus;

/// The account as its owner sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountView {
    pub id: String,
    /// Absent for accounts created by wallet sign-in.
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
    pub bio: Option<String>,
    /// Every wallet this account has proven it controls: the wallets its keys may act for.
    pub all_chain_wallets: Vec<String>,
    pub wallets: Vec<WalletView>,
    pub created_at: String,
    pub terms_accepted_at: String,
    pub privacy_accepted_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalletView {
    pub address: String,
    /// `custodial` (embedded wallet the server holds) or `linked` (proven by signature).
    pub kind: String,
    pub linked_at: String,
}

#[derive(sqlx::FromRow)]
struct AccountRow {
    id: String,
    email: Option<String>,
    display_name: Option<String>,
    avatar_url: Option<String>,
    bio: Option<String>,
    created_at: i64,
    terms_accepted_at: i64,
    privacy_accepted_at: i64,
}

/// Load the account's view; 404 if it does not exist (a session of a deleted account).
pub(crate) async fn load(store: &Store, account_id: &str) -> Result<AccountView, AccountError> {
    let row: Option<AccountRow> = sqlx::query_as(
        "SELECT id, email, display_name, avatar_url, bio, created_at, terms_accepted_at, privacy_accepted_at
         FROM accounts WHERE id = $1",
    )
    .bind(account_id)
    .fetch_optional(store.read())
    .await?;
    let Some(row) = row else {
        return Err(AccountError::NotFound);
    };
    let wallets = wallets_of(store, account_id).await?;
    Ok(AccountView {
        id: row.id,
        email: row.email,
        display_name: row.display_name,
        avatar_url: row.avatar_url,
        bio: row.bio,
        all_chain_wallets: wallets
            .iter()
            .map(|wallet| wallet.address.clone())
            .collect(),
        wallets,
        created_at: rfc3339(from_millis(row.created_at)),
        terms_accepted_at: rfc3339(from_millis(row.terms_accepted_at)),
        privacy_accepted_at: rfc3339(from_millis(row.privacy_accepted_at)),
    })
}

#[derive(sqlx::FromRow)]
struct WalletRow {
    address: String,
    kind: String,
    linked_at: i64,
}

/// The account's wallets, oldest first: proven and custodial ones, and its agents' wallets.
pub(crate) async fn wallets_of(
    store: &Store,
    account_id: &str,
) -> Result<Vec<WalletView>, AccountError> {
    let rows: Vec<WalletRow> = sqlx::query_as(
        // An agent's custodial wallet is the account's too (kind `agent`): its keys can register
        // it and pay from it like any proven wallet.
        "SELECT address, kind, linked_at FROM account_wallets WHERE account_id = $1
         UNION ALL
         SELECT wallet_address, 'agent', created_at FROM agents WHERE account_id = $1
         ORDER BY 3, 1",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| WalletView {
            address: row.address,
            kind: row.kind,
            linked_at: rfc3339(from_millis(row.linked_at)),
        })
        .collect())
}

/// The account a wallet is linked to, if any.
pub(crate) async fn owner_of_wallet(
    store: &Store,
    wallet: &WalletAddress,
) -> Result<Option<String>, AccountError> {
    let owner: Option<(String,)> = sqlx::query_as(
        "SELECT account_id FROM account_wallets WHERE address = $1
             UNION ALL SELECT account_id FROM agents WHERE wallet_address = $1",
    )
    .bind(wallet.as_str())
    .fetch_optional(store.read())
    .await?;
    Ok(owner.map(|(id,)| id))
}

/// Refuses the first of `wallets` the account has not proven (nor holds as an agent's wallet): a
/// key or session acts only for its account's wallets.
pub(crate) async fn ensure_linked<'a>(
    store: &Store,
    account_id: &str,
    wallets: impl IntoIterator<Item = &'a WalletAddress>,
) -> Result<(), AccountError> {
    let owned = wallets_of(store, account_id).await?;
    let is_owned = |wallet: &WalletAddress| owned.iter().any(|w| w.address == wallet.as_str());
    match wallets.into_iter().find(|wallet| !is_owned(wallet)) {
        Some(foreign) => Err(AccountError::WalletNotLinked(foreign.to_string())),
        None => Ok(()),
    }
}

/// Record `wallet` as proven for `account_id`. Fails with a unique violation if any account has it.
pub async fn link_wallet(
    conn: &mut AnyConnection,
    account_id: &str,
    wallet: &WalletAddress,
    kind: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO account_wallets (address, account_id, kind, linked_at) VALUES ($1, $2, $3, $4)")
        .bind(wallet.as_str())
        .bind(account_id)
        .bind(kind)
        .bind(to_millis(now))
        .execute(conn)
        .await?;
    Ok(())
}

/// Profile fields to change: `None` keeps a field, `Some(None)` clears it.
#[derive(Debug, Default)]
pub(super) struct ProfileChange {
    pub display_name: Option<Option<String>>,
    pub avatar_url: Option<Option<String>>,
    pub bio: Option<Option<String>>,
}

/// Apply `change` to the account's profile.
pub(super) async fn update_profile(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    account_id: &str,
    change: ProfileChange,
) -> Result<(), AccountError> {
    // COALESCE-free on purpose: each column is either set (to a value or NULL) or kept.
    sqlx::query(
        "UPDATE accounts SET
            display_name = CASE WHEN $1 = 1 THEN $2 ELSE display_name END,
            avatar_url   = CASE WHEN $3 = 1 THEN $4 ELSE avatar_url END,
            bio          = CASE WHEN $5 = 1 THEN $6 ELSE bio END,
            updated_at   = $7
         WHERE id = $8",
    )
    .bind(i64::from(change.display_name.is_some()))
    .bind(change.display_name.flatten())
    .bind(i64::from(change.avatar_url.is_some()))
    .bind(change.avatar_url.flatten())
    .bind(i64::from(change.bio.is_some()))
    .bind(change.bio.flatten())
    .bind(to_millis(clock.now()))
    .bind(account_id)
    .execute(store.write())
    .await?;
    changed(events, account_id);
    Ok(())
}

/// Announce that what `GET /api/account` shows of `account_id` changed (every node's cached
/// answer is dropped).
pub(crate) fn changed(events: &Bus, account_id: &str) {
    events.publish(crate::events::Event::AccountChanged {
        account_id: account_id.to_owned(),
    });
}

/// Link a wallet whose control the caller has just proven. True when newly linked, false when
/// it already was this account's; refused when another account has it.
pub(super) async fn link_proven(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    account_id: &str,
    wallet: &WalletAddress,
) -> Result<bool, AccountError> {
    let mut conn = store.write().acquire().await?;
    let linked = link_wallet(&mut conn, account_id, wallet, "linked", clock.now()).await;
    drop(conn);
    match linked {
        Ok(()) => {
            changed(events, account_id);
            Ok(true)
        }
        Err(error) if is_unique_violation(&error) => {
            if owner_of_wallet(store, wallet).await?.as_deref() == Some(account_id) {
                Ok(false)
            } else {
                Err(AccountError::WalletTaken)
            }
        }
        Err(error) => Err(error.into()),
    }
}

/// A tournament entry attributed to the account, with its tournament's name and dates.
#[derive(sqlx::FromRow)]
pub(super) struct EntryRow {
    pub tournament_id: String,
    pub name: String,
    /// The tournament row's last written status (readers apply the clock).
    pub stored_status: String,
    pub start_date: i64,
    pub end_date: i64,
    pub wallet: String,
    pub tx_signature: Option<String>,
    pub registered_at: i64,
    pub final_rank: Option<i64>,
    pub final_pnl: Option<f64>,
    pub prize_awarded_raw: Option<i64>,
}

/// The account's tournament entries, newest first (at most 500).
pub(super) async fn entries(
    store: &Store,
    account_id: &str,
) -> Result<Vec<EntryRow>, AccountError> {
    Ok(sqlx::query_as(
        "SELECT t.id AS tournament_id, t.name, t.status AS stored_status, t.start_date, t.end_date,
                r.wallet, r.tx_signature, r.registered_at, r.final_rank, r.final_pnl,
                r.prize_awarded_raw
         FROM tournament_registrations r JOIN tournaments t ON t.id = r.tournament_id
         WHERE r.account_id = $1 ORDER BY r.registered_at DESC, r.wallet LIMIT 500",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?)
}

/// A prize or refund owed to the account.
#[derive(sqlx::FromRow)]
pub(super) struct PayoutRow {
    pub id: String,
    pub source_kind: String,
    pub source_id: String,
    pub wallet: String,
    pub rank: Option<i64>,
    pub amount_raw: i64,
    pub mint: String,
    #[sqlx(try_from = "String")]
    pub status: PayoutStatus,
    pub tx_signature: Option<String>,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    pub reason: Option<String>,
}

/// The account's payouts, newest first (at most 500).
pub(super) async fn payouts(
    store: &Store,
    account_id: &str,
) -> Result<Vec<PayoutRow>, AccountError> {
    Ok(sqlx::query_as(
        "SELECT id, source_kind, source_id, wallet, rank, amount_raw, mint, status, tx_signature, created_at, sent_at, reason
         FROM payouts WHERE account_id = $1 ORDER BY created_at DESC, id LIMIT 500",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?)
}
