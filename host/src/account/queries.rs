//! Reads and writes of accounts and their wallets.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use crate::clock::{from_millis, rfc3339, to_millis};
use crate::domain::WalletAddress;
use crate::http::ApiError;
use crate::state::AppState;

/// The account as its owner sees it.
#[derive(Debug, Serialize, ToSchema)]
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

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalletView {
    pub address: String,
    /// `custodial` (embedded wallet the server holds) or `linked` (proven by signature).
    pub kind: String,
    pub linked_at: String,
}

type AccountRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
    i64,
);

/// Load the account's view; 404 if it does not exist (a session of a deleted account).
pub async fn load(state: &AppState, account_id: &str) -> Result<AccountView, ApiError> {
    let row: Option<AccountRow> = sqlx::query_as(
        "SELECT id, email, display_name, avatar_url, bio, created_at, terms_accepted_at, privacy_accepted_at
         FROM accounts WHERE id = $1",
    )
    .bind(account_id)
    .fetch_optional(state.store.read())
    .await?;
    let Some((id, email, display_name, avatar_url, bio, created_at, terms, privacy)) = row else {
        return Err(ApiError::NotFound("account not found".into()));
    };
    let wallets = wallets_of(state, account_id).await?;
    Ok(AccountView {
        id,
        email,
        display_name,
        avatar_url,
        bio,
        all_chain_wallets: wallets
            .iter()
            .map(|wallet| wallet.address.clone())
            .collect(),
        wallets,
        created_at: rfc3339(from_millis(created_at)),
        terms_accepted_at: rfc3339(from_millis(terms)),
        privacy_accepted_at: rfc3339(from_millis(privacy)),
    })
}

/// The account's wallets, oldest first: proven and custodial ones, and its agents' wallets.
pub async fn wallets_of(state: &AppState, account_id: &str) -> Result<Vec<WalletView>, ApiError> {
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        // An agent's custodial wallet is the account's too (kind `agent`): its keys can register
        // it and pay from it like any proven wallet.
        "SELECT address, kind, linked_at FROM account_wallets WHERE account_id = $1
         UNION ALL
         SELECT wallet_address, 'agent', created_at FROM agents WHERE account_id = $1
         ORDER BY 3, 1",
    )
    .bind(account_id)
    .fetch_all(state.store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(|(address, kind, linked_at)| WalletView {
            address,
            kind,
            linked_at: rfc3339(from_millis(linked_at)),
        })
        .collect())
}

/// The account a wallet is linked to, if any.
pub async fn owner_of_wallet(
    state: &AppState,
    wallet: &WalletAddress,
) -> Result<Option<String>, ApiError> {
    let owner: Option<(String,)> = sqlx::query_as(
        "SELECT account_id FROM account_wallets WHERE address = $1
             UNION ALL SELECT account_id FROM agents WHERE wallet_address = $1",
    )
    .bind(wallet.as_str())
    .fetch_optional(state.store.read())
    .await?;
    Ok(owner.map(|(id,)| id))
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
