//! What admins (and the host's command line) do. Each change and its audit entry are written in
//! one transaction (`docs/admin.md`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::AdminError;
use crate::audit::{self, Actor, Entry};
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::db::Store;
use crate::events::Bus;
use crate::events::Event;
use crate::tournaments::payouts::{PayoutStatus, SourceKind};

fn at(millis: i64) -> String {
    rfc3339(from_millis(millis))
}

fn reason(text: &str) -> Result<String, AdminError> {
    let text = text.trim();
    if text.is_empty() || text.chars().count() > 500 {
        return Err(AdminError::Invalid(
            "`reason` must be 1 to 500 characters: it is shown to the people it concerns".into(),
        ));
    }
    Ok(text.to_owned())
}

// ---- the admin role (command line) ----

/// Grant or revoke the admin role of the account with `email`. Returns the account id.
pub async fn set_admin(
    store: &Store,
    email: &str,
    admin: bool,
    now: DateTime<Utc>,
) -> Result<String, AdminError> {
    let email = crate::domain::Email::parse(email).map_err(AdminError::Invalid)?;
    let mut tx = store.begin().await?;
    let found: Option<(String, i64)> =
        sqlx::query_as("SELECT id, is_admin FROM accounts WHERE email = $1")
            .bind(email.as_str())
            .fetch_optional(&mut *tx)
            .await?;
    let Some((account_id, was)) = found else {
        return Err(AdminError::NotFound(format!(
            "no account with the e-mail {}",
            email.as_str()
        )));
    };
    lock_admins(store, &mut tx).await?;
    // Revoking never leaves the service without an admin in good standing.
    let changed = sqlx::query(
        "UPDATE accounts SET is_admin = $1 WHERE id = $2
           AND ($1 = 1 OR is_admin = 0 OR EXISTS (SELECT 1 FROM accounts other
                WHERE other.is_admin = 1 AND other.suspended_at IS NULL AND other.id <> $2))",
    )
    .bind(i64::from(admin))
    .bind(&account_id)
    .execute(&mut *tx)
    .await?;
    if changed.rows_affected() != 1 {
        return Err(AdminError::Conflict(format!(
            "{} is the last admin; grant the role to another account first",
            email.as_str()
        )));
    }
    let action = if admin { "admin.grant" } else { "admin.revoke" };
    audit::record(
        &mut tx,
        Entry::new(&Actor::Host, action, "account", &account_id)
            .account(&account_id)
            .change(json!({"isAdmin": was != 0}), json!({"isAdmin": admin})),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(account_id)
}

/// On PostgreSQL, lock the admins' rows for the rest of `tx`, so two changes that each leave
/// one admin (two admins suspending each other) take turns and the second sees the first.
/// SQLite has a single writer: its transactions take turns anyway.
async fn lock_admins(store: &Store, tx: &mut sqlx::AnyConnection) -> Result<(), AdminError> {
    if store.backend() == crate::db::Backend::Postgres {
        sqlx::query("SELECT id FROM accounts WHERE is_admin = 1 ORDER BY id FOR UPDATE")
            .fetch_all(&mut *tx)
            .await?;
    }
    Ok(())
}

// ---- accounts ----

#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountSummary {
    pub account_id: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    #[serde(skip)]
    created_at_ms: i64,
    #[sqlx(skip)]
    pub created_at: String,
    #[serde(skip)]
    is_admin_flag: i64,
    #[sqlx(skip)]
    pub is_admin: bool,
    #[serde(skip)]
    suspended_at_ms: Option<i64>,
    #[sqlx(skip)]
    pub suspended_at: Option<String>,
    pub suspension_reason: Option<String>,
}

impl AccountSummary {
    fn finish(mut self) -> Self {
        self.created_at = at(self.created_at_ms);
        self.is_admin = self.is_admin_flag != 0;
        self.suspended_at = self.suspended_at_ms.map(at);
        self
    }
}

const ACCOUNT_COLUMNS: &str = "a.id AS account_id, a.email, a.display_name, a.created_at AS created_at_ms, \
     a.is_admin AS is_admin_flag, a.suspended_at AS suspended_at_ms, a.suspension_reason";

/// Accounts whose e-mail or name contains `search`, or whose id or a wallet is exactly it.
pub(crate) async fn search_accounts(
    store: &Store,
    search: &str,
    limit: i64,
) -> Result<Vec<AccountSummary>, AdminError> {
    let search = search.trim();
    let pattern = format!("%{}%", search.to_lowercase().replace(['%', '_'], ""));
    let rows: Vec<AccountSummary> = sqlx::query_as(&format!(
        "SELECT {ACCOUNT_COLUMNS} FROM accounts a
         WHERE $1 = '' OR LOWER(COALESCE(a.email, '')) LIKE $2 OR LOWER(COALESCE(a.display_name, '')) LIKE $2
            OR a.id = $1 OR a.id IN (SELECT account_id FROM account_wallets WHERE address = $1)
         ORDER BY a.created_at DESC, a.id LIMIT $3"
    ))
    .bind(search)
    .bind(&pattern)
    .bind(limit.clamp(1, 200))
    .fetch_all(store.read())
    .await?;
    Ok(rows.into_iter().map(AccountSummary::finish).collect())
}

#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WalletRow {
    pub address: String,
    /// `custodial` (the server holds its key) or `linked` (proven by signature).
    pub kind: String,
}

#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KeyRow {
    pub key_id: String,
    pub name: String,
    /// `account` or `v1`.
    pub family: String,
    /// The key's first characters (the key itself is never stored).
    pub key_prefix: String,
    pub scopes: String,
    #[serde(skip)]
    created_at_ms: i64,
    #[serde(skip)]
    revoked_at_ms: Option<i64>,
    #[sqlx(skip)]
    pub created_at: String,
    #[sqlx(skip)]
    pub revoked_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntryRow {
    pub tournament_id: String,
    pub wallet: String,
    pub disqualified_reason: Option<String>,
    #[serde(skip)]
    registered_at_ms: i64,
    #[sqlx(skip)]
    pub registered_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountDetail {
    #[serde(flatten)]
    pub account: AccountSummary,
    pub wallets: Vec<WalletRow>,
    pub keys: Vec<KeyRow>,
    pub agents: Vec<AgentRow>,
    pub entries: Vec<EntryRow>,
}

pub(crate) async fn account_detail(
    store: &Store,
    account_id: &str,
) -> Result<AccountDetail, AdminError> {
    let account: AccountSummary = sqlx::query_as(&format!(
        "SELECT {ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1"
    ))
    .bind(account_id)
    .fetch_optional(store.read())
    .await?
    .ok_or_else(|| AdminError::NotFound(format!("no account `{account_id}`")))?;
    let wallets: Vec<WalletRow> = sqlx::query_as(
        "SELECT address, kind FROM account_wallets WHERE account_id = $1 ORDER BY linked_at, address",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?;
    let keys: Vec<KeyRow> = sqlx::query_as(
        "SELECT id AS key_id, name, family, key_prefix, scopes, created_at AS created_at_ms,
                revoked_at AS revoked_at_ms
         FROM api_keys WHERE account_id = $1 ORDER BY created_at DESC, id",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?;
    let entries: Vec<EntryRow> = sqlx::query_as(
        "SELECT tournament_id, wallet, disqualified_reason, registered_at AS registered_at_ms
         FROM tournament_registrations WHERE account_id = $1 ORDER BY registered_at DESC LIMIT 200",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?;
    let agents = list_agents(
        store,
        &AgentFilter {
            account_id: Some(account_id.to_owned()),
            ..AgentFilter::default()
        },
    )
    .await?;
    Ok(AccountDetail {
        account: account.finish(),
        wallets,
        keys: keys
            .into_iter()
            .map(|mut key| {
                key.created_at = at(key.created_at_ms);
                key.revoked_at = key.revoked_at_ms.map(at);
                key
            })
            .collect(),
        agents,
        entries: entries
            .into_iter()
            .map(|mut entry| {
                entry.registered_at = at(entry.registered_at_ms);
                entry
            })
            .collect(),
    })
}

/// Suspend an account: its keys stop working, its sessions end, its logins are refused and its
/// running agents stop with the reason. Its funds and history stay; [`unsuspend`] undoes it.
pub(crate) async fn suspend(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    admin: &str,
    account_id: &str,
    why: &str,
) -> Result<AccountSummary, AdminError> {
    let why = reason(why)?;
    if admin == account_id {
        return Err(AdminError::Conflict(
            "an admin cannot suspend their own account".into(),
        ));
    }
    let now = clock.now();
    let mut tx = store.begin().await?;
    lock_admins(store, &mut tx).await?;
    // Never the last admin in good standing: someone must be able to lift suspensions.
    let suspended = sqlx::query(
        "UPDATE accounts SET suspended_at = $1, suspension_reason = $2 WHERE id = $3 AND suspended_at IS NULL
           AND (is_admin = 0 OR EXISTS (SELECT 1 FROM accounts other
                WHERE other.is_admin = 1 AND other.suspended_at IS NULL AND other.id <> $3))",
    )
    .bind(to_millis(now))
    .bind(&why)
    .bind(account_id)
    .execute(&mut *tx)
    .await?;
    if suspended.rows_affected() != 1 {
        drop(tx);
        let detail = match account_detail(store, account_id).await {
            Ok(detail) if detail.account.suspended_at.is_none() => "is the last admin",
            _ => "is already suspended",
        };
        return Err(refused(store, account_id, detail).await);
    }
    sqlx::query("DELETE FROM sessions WHERE account_id = $1")
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
    let stopped = stop_agents(
        &mut tx,
        "account_id = $3 AND status = 'active'",
        account_id,
        format!("stopped: the account was suspended ({why})"),
        now,
    )
    .await?;
    audit::record(
        &mut tx,
        account_entry(
            &Actor::Account(admin.to_owned()),
            "account.suspend",
            account_id,
        )
        .switched_on("suspended", json!(why))
        .detail(format!("{stopped} running agent(s) stopped")),
        now,
    )
    .await?;
    tx.commit().await?;
    keys_changed(events, account_id);
    tracing::warn!(account_id, admin, stopped, "account suspended");
    Ok(account_detail(store, account_id).await?.account)
}

/// Every node stops (or starts again) accepting the account's keys at once.
fn keys_changed(events: &Bus, account_id: &str) {
    events.publish(crate::events::Event::KeysChanged {
        account_id: account_id.to_owned(),
    });
}

/// How an admin's switch (suspension, ban, disqualification) is audited, the same way for each:
/// `{flag: false}` → `{flag: true, reason}` on, and back off.
trait Switched {
    fn switched_on(self, flag: &str, reason: Value) -> Self;
    /// `reason`: the one the switch was made for, when the off side records it.
    fn switched_off(self, flag: &str, reason: Option<Value>) -> Self;
}

impl Switched for Entry<'_> {
    fn switched_on(self, flag: &str, reason: Value) -> Self {
        self.change(
            json!({ flag: false }),
            json!({ flag: true, "reason": reason }),
        )
    }

    fn switched_off(self, flag: &str, reason: Option<Value>) -> Self {
        let mut before = json!({ flag: true });
        if let Some(reason) = reason {
            before["reason"] = reason;
        }
        self.change(before, json!({ flag: false }))
    }
}

/// Stop the agents `which` selects (`$3` is `value`) in the admin change's transaction: they go
/// to `error` with `reason`, so they tick no more until their operator starts them. Returns how
/// many were stopped.
async fn stop_agents(
    conn: &mut sqlx::AnyConnection,
    which: &'static str,
    value: &str,
    reason: String,
    now: DateTime<Utc>,
) -> sqlx::Result<u64> {
    let sql = format!(
        "UPDATE agents SET status = 'error', status_reason = $1, stopped_at = $2, next_tick_at = NULL,
                tick_lease_owner = NULL, tick_lease_until = NULL, updated_at = $2
         WHERE {which}"
    );
    Ok(sqlx::query(&sql)
        .bind(reason)
        .bind(to_millis(now))
        .bind(value)
        .execute(conn)
        .await?
        .rows_affected())
}

/// Why a change to an account was refused: 404 when there is no such account, otherwise the
/// conflict (`account … is already suspended`).
async fn refused(store: &Store, account_id: &str, conflict: &str) -> AdminError {
    match account_detail(store, account_id).await {
        Err(missing) => missing,
        Ok(_) => AdminError::Conflict(format!("account `{account_id}` {conflict}")),
    }
}

/// The audit entry of an admin's `action` on an account.
fn account_entry<'a>(admin: &'a Actor, action: &'a str, account_id: &'a str) -> Entry<'a> {
    Entry::new(admin, action, "account", account_id).account(account_id)
}

/// Lift a suspension: keys work again and the account may sign in. Stopped agents stay stopped
/// until their operator starts them.
pub(crate) async fn unsuspend(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    admin: &str,
    account_id: &str,
) -> Result<AccountSummary, AdminError> {
    let now = clock.now();
    let mut tx = store.begin().await?;
    let before: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT suspension_reason FROM accounts WHERE id = $1 AND suspended_at IS NOT NULL",
    )
    .bind(account_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((was,)) = before else {
        drop(tx);
        return Err(refused(store, account_id, "is not suspended").await);
    };
    sqlx::query("UPDATE accounts SET suspended_at = NULL, suspension_reason = NULL WHERE id = $1")
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut tx,
        account_entry(
            &Actor::Account(admin.to_owned()),
            "account.unsuspend",
            account_id,
        )
        .switched_off("suspended", Some(json!(was))),
        now,
    )
    .await?;
    tx.commit().await?;
    keys_changed(events, account_id);
    Ok(account_detail(store, account_id).await?.account)
}

// ---- agents ----

#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct AgentFilter {
    pub status: Option<String>,
    pub account_id: Option<String>,
    pub component: Option<String>,
}

#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentRow {
    pub agent_id: String,
    pub account_id: String,
    pub name: String,
    pub class: String,
    pub status: String,
    pub status_reason: Option<String>,
    /// SHA-256 of the uploaded component it runs; null for the class's built-in strategy.
    pub strategy_component: Option<String>,
    pub ticks: i64,
    pub faults: i64,
    pub last_fault: Option<String>,
}

pub(crate) async fn list_agents(
    store: &Store,
    filter: &AgentFilter,
) -> Result<Vec<AgentRow>, AdminError> {
    Ok(sqlx::query_as(
        "SELECT id AS agent_id, account_id, name, class, status, status_reason, strategy_component,
                ticks, faults, last_fault
         FROM agents
         WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR account_id = $2)
           AND ($3 IS NULL OR strategy_component = $3)
         ORDER BY created_at DESC, id LIMIT 500",
    )
    .bind(filter.status.as_deref())
    .bind(filter.account_id.as_deref())
    .bind(filter.component.as_deref())
    .fetch_all(store.read())
    .await?)
}

// ---- banned components ----

#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BannedComponent {
    pub sha256: String,
    pub reason: String,
    pub banned_by: String,
    #[serde(skip)]
    banned_at_ms: i64,
    #[sqlx(skip)]
    pub banned_at: String,
}

fn component_id(sha256: &str) -> Result<String, AdminError> {
    let sha256 = sha256.trim().to_ascii_lowercase();
    if sha256.len() != 64 || !sha256.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(AdminError::Invalid(
            "a component is named by its SHA-256: 64 hexadecimal characters".into(),
        ));
    }
    Ok(sha256)
}

/// The reason a component is banned, if it is.
pub async fn ban_of(store: &Store, sha256: &str) -> sqlx::Result<Option<String>> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT reason FROM banned_components WHERE sha256 = $1")
            .bind(sha256)
            .fetch_optional(store.read())
            .await?;
    Ok(row.map(|(reason,)| reason))
}

pub(crate) async fn banned_components(store: &Store) -> Result<Vec<BannedComponent>, AdminError> {
    let rows: Vec<BannedComponent> = sqlx::query_as(
        "SELECT sha256, reason, banned_by, banned_at AS banned_at_ms FROM banned_components ORDER BY banned_at DESC",
    )
    .fetch_all(store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(|mut row| {
            row.banned_at = at(row.banned_at_ms);
            row
        })
        .collect())
}

/// Ban a component: every agent that runs it stops with the reason (and cannot start), and
/// nobody can upload it again. Returns how many agents were stopped.
pub(crate) async fn ban_component(
    store: &Store,
    clock: &dyn Clock,
    admin: &str,
    sha256: &str,
    why: &str,
) -> Result<u64, AdminError> {
    let sha256 = component_id(sha256)?;
    let why = reason(why)?;
    let now = clock.now();
    let mut tx = store.begin().await?;
    let banned = sqlx::query(
        "INSERT INTO banned_components (sha256, reason, banned_by, banned_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (sha256) DO NOTHING",
    )
    .bind(&sha256)
    .bind(&why)
    .bind(format!("account:{admin}"))
    .bind(to_millis(now))
    .execute(&mut *tx)
    .await?;
    if banned.rows_affected() != 1 {
        return Err(AdminError::Conflict(format!(
            "component {sha256} is already banned"
        )));
    }
    let stopped = stop_agents(
        &mut tx,
        "strategy_component = $3 AND status <> 'error'",
        &sha256,
        format!("stopped: its strategy component was banned ({why})"),
        now,
    )
    .await?;
    audit::record(
        &mut tx,
        Entry::new(
            &Actor::Account(admin.to_owned()),
            "component.ban",
            "component",
            &sha256,
        )
        .switched_on("banned", json!(why))
        .detail(format!("{stopped} agent(s) stopped")),
        now,
    )
    .await?;
    tx.commit().await?;
    tracing::warn!(sha256, admin, stopped, "component banned");
    Ok(stopped)
}

pub(crate) async fn unban_component(
    store: &Store,
    clock: &dyn Clock,
    admin: &str,
    sha256: &str,
) -> Result<(), AdminError> {
    let sha256 = component_id(sha256)?;
    let now = clock.now();
    let mut tx = store.begin().await?;
    let removed = sqlx::query("DELETE FROM banned_components WHERE sha256 = $1")
        .bind(&sha256)
        .execute(&mut *tx)
        .await?;
    if removed.rows_affected() != 1 {
        return Err(AdminError::NotFound(format!(
            "component {sha256} is not banned"
        )));
    }
    audit::record(
        &mut tx,
        Entry::new(
            &Actor::Account(admin.to_owned()),
            "component.unban",
            "component",
            &sha256,
        )
        .switched_off("banned", None),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

// ---- manual disqualification ----

async fn open_tournament(
    store: &Store,
    clock: &dyn Clock,
    tournament_id: &str,
) -> Result<(), AdminError> {
    let tournament = crate::tournaments::queries::get(store, tournament_id)
        .await?
        .ok_or_else(|| AdminError::NotFound(format!("no tournament `{tournament_id}`")))?;
    match tournament.status_at(clock.now()) {
        crate::tournaments::Status::Upcoming | crate::tournaments::Status::Live => Ok(()),
        _ => Err(AdminError::Conflict(
            "this tournament is over: its standings and prizes are final".into(),
        )),
    }
}

/// Cached boards (on every node) are keyed by this revision: a manual change rebuilds them.
async fn bump_standings(conn: &mut sqlx::AnyConnection, tournament_id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE tournaments SET standings_revision = standings_revision + 1 WHERE id = $1")
        .bind(tournament_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Take `wallet` off a tournament's board by hand, with a reason shown on the board; it is then
/// ranked last and never paid. Only before the end.
pub(crate) async fn disqualify(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    admin: &str,
    tournament_id: &str,
    wallet: &str,
    why: &str,
) -> Result<(), AdminError> {
    let why = reason(why)?;
    open_tournament(store, clock, tournament_id).await?;
    let now = clock.now();
    let shown = format!("disqualified by the organisers: {why}");
    let mut tx = store.begin().await?;
    let standing = standing(&mut tx, tournament_id, wallet).await?;
    if let Some(already) = standing.disqualified_reason {
        return Err(AdminError::Conflict(format!(
            "wallet {wallet} is already disqualified: {already}"
        )));
    }
    set_disqualified(&mut tx, tournament_id, wallet, Some(&shown)).await?;
    let actor = Actor::Account(admin.to_owned());
    let entry = Entry::new(&actor, "tournament.disqualify", "registration", wallet)
        .switched_on("disqualified", json!(shown));
    standing_changed(events, tx, entry, &standing, tournament_id, now).await
}

/// Undo a manual disqualification before the end. A disqualification by the transfer policy
/// (an external flow) is a fact about the wallet and cannot be undone.
pub(crate) async fn reinstate(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    admin: &str,
    tournament_id: &str,
    wallet: &str,
) -> Result<(), AdminError> {
    open_tournament(store, clock, tournament_id).await?;
    let now = clock.now();
    let mut tx = store.begin().await?;
    let standing = standing(&mut tx, tournament_id, wallet).await?;
    match (
        standing.disqualified_reason.as_deref(),
        standing.disqualified_by.as_deref(),
    ) {
        (None, _) => {
            return Err(AdminError::Conflict(format!(
                "wallet {wallet} is not disqualified"
            )));
        }
        (Some(_), Some("admin")) => {}
        (Some(_), _) => {
            return Err(AdminError::Conflict(
                "this wallet was disqualified by the tournament's transfer policy (an external flow), which cannot be undone".into(),
            ));
        }
    }
    set_disqualified(&mut tx, tournament_id, wallet, None).await?;
    let actor = Actor::Account(admin.to_owned());
    let entry = Entry::new(&actor, "tournament.reinstate", "registration", wallet)
        .switched_off("disqualified", Some(json!(standing.disqualified_reason)));
    standing_changed(events, tx, entry, &standing, tournament_id, now).await
}

/// A registration as a manual disqualification or its undo reads it.
#[derive(sqlx::FromRow)]
struct Standing {
    account_id: Option<String>,
    disqualified_reason: Option<String>,
    disqualified_by: Option<String>,
}

/// `wallet`'s registration for the tournament, or 404.
async fn standing(
    conn: &mut sqlx::AnyConnection,
    tournament_id: &str,
    wallet: &str,
) -> Result<Standing, AdminError> {
    sqlx::query_as(
        "SELECT account_id, disqualified_reason, disqualified_by FROM tournament_registrations
         WHERE tournament_id = $1 AND wallet = $2",
    )
    .bind(tournament_id)
    .bind(wallet)
    .fetch_optional(conn)
    .await?
    .ok_or_else(|| {
        AdminError::NotFound(format!(
            "wallet {wallet} is not registered for `{tournament_id}`"
        ))
    })
}

/// Disqualify `wallet` by hand for `reason`, or (`None`) lift a manual disqualification.
async fn set_disqualified(
    conn: &mut sqlx::AnyConnection,
    tournament_id: &str,
    wallet: &str,
    reason: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE tournament_registrations SET disqualified_reason = $1, disqualified_by = $2
         WHERE tournament_id = $3 AND wallet = $4",
    )
    .bind(reason)
    .bind(reason.map(|_| "admin"))
    .bind(tournament_id)
    .bind(wallet)
    .execute(conn)
    .await?;
    Ok(())
}

/// Finish a change of a wallet's standing in `tx`: re-rank the board, audit `entry` (for the
/// registration's account), commit, and tell the board's watchers.
async fn standing_changed(
    events: &Bus,
    mut tx: sqlx::Transaction<'static, sqlx::Any>,
    entry: Entry<'_>,
    standing: &Standing,
    tournament_id: &str,
    now: DateTime<Utc>,
) -> Result<(), AdminError> {
    bump_standings(&mut tx, tournament_id).await?;
    let mut entry = entry.detail(format!("tournament {tournament_id}"));
    if let Some(account_id) = standing.account_id.as_deref() {
        entry = entry.account(account_id);
    }
    audit::record(&mut tx, entry, now).await?;
    tx.commit().await?;
    events.publish(Event::LeaderboardChanged {
        tournament_id: tournament_id.to_owned(),
    });
    Ok(())
}

// ---- the payout and refund queue ----

#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QueuedPayout {
    pub payout_id: String,
    /// `tournament`, `dungeon` (prizes) or `refund`.
    #[sqlx(try_from = "String")]
    pub source_kind: SourceKind,
    pub source_id: String,
    pub wallet: String,
    pub account_id: Option<String>,
    #[serde(skip)]
    amount: i64,
    #[sqlx(skip)]
    pub amount_raw: String,
    #[sqlx(try_from = "String")]
    pub status: PayoutStatus,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub tx_signature: Option<String>,
    #[serde(skip)]
    created_at_ms: i64,
    #[sqlx(skip)]
    pub created_at: String,
    #[serde(skip)]
    sent_at_ms: Option<i64>,
    #[sqlx(skip)]
    pub sent_at: Option<String>,
    /// While a worker holds it: until when.
    #[serde(skip)]
    lease_until_ms: Option<i64>,
    #[sqlx(skip)]
    pub leased_until: Option<String>,
}

pub(crate) async fn payouts(
    store: &Store,
    status: Option<&str>,
    kind: Option<&str>,
) -> Result<Vec<QueuedPayout>, AdminError> {
    if status.is_some_and(|s| PayoutStatus::parse(s).is_none()) {
        return Err(AdminError::Invalid(
            "`status` must be pending, sent or failed".into(),
        ));
    }
    if kind.is_some_and(|k| SourceKind::parse(k).is_none()) {
        return Err(AdminError::Invalid(
            "`kind` must be tournament, dungeon or refund".into(),
        ));
    }
    let rows: Vec<QueuedPayout> = sqlx::query_as(
        "SELECT id AS payout_id, source_kind, source_id, wallet, account_id, amount_raw AS amount, status,
                attempts, last_error, tx_signature, created_at AS created_at_ms, sent_at AS sent_at_ms,
                lease_until AS lease_until_ms
         FROM payouts WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR source_kind = $2)
         ORDER BY created_at DESC, id LIMIT 500",
    )
    .bind(status)
    .bind(kind)
    .fetch_all(store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(|mut row| {
            row.amount_raw = row.amount.to_string();
            row.created_at = at(row.created_at_ms);
            row.sent_at = row.sent_at_ms.map(at);
            row.leased_until = row.lease_until_ms.map(at);
            row
        })
        .collect())
}

/// What a retry needs to know of the payout.
#[derive(sqlx::FromRow)]
struct RetriedPayout {
    #[sqlx(try_from = "String")]
    status: PayoutStatus,
    account_id: Option<String>,
}

/// Send a pending or failed payout now (its job due at once). The sending itself keeps every
/// exactly-once guarantee, so a retry can never pay twice.
pub(crate) async fn retry_payout(
    store: &Store,
    clock: &dyn Clock,
    admin: &str,
    payout_id: &str,
) -> Result<(), AdminError> {
    let now = clock.now();
    let mut tx = store.begin().await?;
    let row: Option<RetriedPayout> =
        sqlx::query_as("SELECT status, account_id FROM payouts WHERE id = $1")
            .bind(payout_id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some(RetriedPayout { status, account_id }) = row else {
        return Err(AdminError::NotFound(format!("no payout `{payout_id}`")));
    };
    if status == PayoutStatus::Sent {
        return Err(AdminError::Conflict("this payout was sent already".into()));
    }
    sqlx::query("UPDATE payouts SET status = 'pending' WHERE id = $1 AND status = 'failed'")
        .bind(payout_id)
        .execute(&mut *tx)
        .await?;
    let job_id = format!("{}:{payout_id}", crate::tournaments::payouts::SEND_JOB);
    sqlx::query("DELETE FROM jobs WHERE id = $1 AND done_at IS NOT NULL")
        .bind(&job_id)
        .execute(&mut *tx)
        .await?;
    crate::scheduler::enqueue(
        &mut tx,
        crate::tournaments::payouts::SEND_JOB,
        payout_id,
        now,
        now,
    )
    .await?;
    let actor = Actor::Account(admin.to_owned());
    let mut entry = Entry::new(&actor, "payout.retry", "payout", payout_id).change(
        json!({"status": status.as_str()}),
        json!({"status": "pending", "dueAt": rfc3339(now)}),
    );
    if let Some(account_id) = account_id.as_deref() {
        entry = entry.account(account_id);
    }
    audit::record(&mut tx, entry, now).await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_are_audited_with_the_reason_on_the_switched_on_side() {
        let admin = Actor::Account("acc_admin".into());
        let on = Entry::new(&admin, "component.ban", "component", "abc")
            .switched_on("banned", json!("malware"));
        assert_eq!(on.before, Some(json!({"banned": false})));
        assert_eq!(on.after, Some(json!({"banned": true, "reason": "malware"})));
        let off = Entry::new(&admin, "account.unsuspend", "account", "acc_x")
            .switched_off("suspended", Some(Value::Null));
        assert_eq!(off.before, Some(json!({"suspended": true, "reason": null})));
        assert_eq!(off.after, Some(json!({"suspended": false})));
        let plain =
            Entry::new(&admin, "component.unban", "component", "abc").switched_off("banned", None);
        assert_eq!(plain.before, Some(json!({"banned": true})));
    }
}
