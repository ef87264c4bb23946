//! The audit log (`docs/admin.md`, "Audit log"): every admin action, key mint and revoke,
//! suspension, ban, disqualification, cancellation and refund, with who did it, when, to what,
//! and the state before and after where it applies.
//!
//! An entry is written in the same database transaction as the change it records, so the log
//! never claims a change that did not happen and never misses one that did.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use crate::clock::{from_millis, rfc3339, to_millis};
use crate::crypto::new_id;
use crate::db::Store;

/// Who acted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Actor {
    /// A signed-in account (an admin, or an account managing its own keys).
    Account(String),
    /// The host, from the command line on the server's database.
    Host,
    /// The server itself (a rule, e.g. too few participants at a tournament's start).
    System,
}

impl Actor {
    fn stored(&self) -> String {
        match self {
            Actor::Account(id) => format!("account:{id}"),
            Actor::Host => "host".to_owned(),
            Actor::System => "system".to_owned(),
        }
    }
}

/// One change to record.
#[derive(Debug, Clone)]
pub(crate) struct Entry<'a> {
    pub actor: &'a Actor,
    /// Dotted, e.g. `key.create`, `account.suspend`, `component.ban`.
    pub action: &'a str,
    pub subject_kind: &'a str,
    pub subject_id: &'a str,
    /// The account the change concerns (whose key, whose suspension), if any.
    pub account_id: Option<&'a str>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub detail: Option<String>,
}

impl<'a> Entry<'a> {
    pub(crate) fn new(
        actor: &'a Actor,
        action: &'a str,
        subject_kind: &'a str,
        subject_id: &'a str,
    ) -> Self {
        Entry {
            actor,
            action,
            subject_kind,
            subject_id,
            account_id: None,
            before: None,
            after: None,
            detail: None,
        }
    }

    pub(crate) fn account(mut self, account_id: &'a str) -> Self {
        self.account_id = Some(account_id);
        self
    }

    pub(crate) fn change(mut self, before: Value, after: Value) -> Self {
        self.before = Some(before);
        self.after = Some(after);
        self
    }

    pub(crate) fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// Write `entry` on `conn` (the transaction of the change itself).
pub(crate) async fn record(
    conn: &mut AnyConnection,
    entry: Entry<'_>,
    now: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (id, at, actor, action, subject_kind, subject_id, account_id,
                                before_state, after_state, detail)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(new_id("aud"))
    .bind(to_millis(now))
    .bind(entry.actor.stored())
    .bind(entry.action)
    .bind(entry.subject_kind)
    .bind(entry.subject_id)
    .bind(entry.account_id)
    .bind(entry.before.map(|v| v.to_string()))
    .bind(entry.after.map(|v| v.to_string()))
    .bind(entry.detail)
    .execute(conn)
    .await?;
    Ok(())
}

/// What to read back.
#[derive(Debug, Default, Clone)]
pub(crate) struct Filter {
    pub action: Option<String>,
    /// Actions starting with this (e.g. `key.`).
    pub action_prefix: Option<String>,
    pub account_id: Option<String>,
    pub actor: Option<String>,
    pub subject_id: Option<String>,
    /// Only entries strictly older than this id's time (paging backwards).
    pub before: Option<DateTime<Utc>>,
    pub limit: i64,
}

#[derive(Debug, sqlx::FromRow)]
struct Row {
    id: String,
    at: i64,
    actor: String,
    action: String,
    subject_kind: String,
    subject_id: String,
    account_id: Option<String>,
    before_state: Option<String>,
    after_state: Option<String>,
    detail: Option<String>,
}

/// One entry as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditView {
    pub id: String,
    pub at: String,
    /// `account:<id>`, `host` or `system`.
    pub actor: String,
    pub action: String,
    pub subject_kind: String,
    pub subject_id: String,
    pub account_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub before: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub after: Option<Value>,
    pub detail: Option<String>,
}

/// Entries matching `filter`, newest first.
pub(crate) async fn list(store: &Store, filter: &Filter) -> sqlx::Result<Vec<AuditView>> {
    // One static query: each optional filter is `$n IS NULL OR …`.
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT id, at, actor, action, subject_kind, subject_id, account_id, before_state, after_state, detail
         FROM audit_log
         WHERE ($1 IS NULL OR action = $1)
           AND ($2 IS NULL OR action LIKE $2)
           AND ($3 IS NULL OR account_id = $3)
           AND ($4 IS NULL OR actor = $4)
           AND ($5 IS NULL OR subject_id = $5)
           AND ($6 IS NULL OR at < $6)
         ORDER BY seq DESC LIMIT $7",
    )
    .bind(filter.action.as_deref())
    .bind(filter.action_prefix.as_ref().map(|prefix| format!("{}%", prefix.replace('%', ""))))
    .bind(filter.account_id.as_deref())
    .bind(filter.actor.as_deref())
    .bind(filter.subject_id.as_deref())
    .bind(filter.before.map(to_millis))
    .bind(filter.limit.clamp(1, 500))
    .fetch_all(store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| AuditView {
            id: row.id,
            at: rfc3339(from_millis(row.at)),
            actor: row.actor,
            action: row.action,
            subject_kind: row.subject_kind,
            subject_id: row.subject_id,
            account_id: row.account_id,
            before: row.before_state.and_then(|s| serde_json::from_str(&s).ok()),
            after: row.after_state.and_then(|s| serde_json::from_str(&s).ok()),
            detail: row.detail,
        })
        .collect())
}
