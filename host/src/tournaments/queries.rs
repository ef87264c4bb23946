//! Reading and creating tournaments.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::model::{COLUMNS, Status, Tournament};
use super::rules::{EvaluationMetric, TransferPolicy};
use crate::clock::to_millis;
use crate::db::Store;
use crate::scheduler;

/// A validated tournament to create.
#[derive(Debug, Clone)]
pub struct NewTournament {
    pub id: String,
    pub name: String,
    pub description: String,
    pub kind: String,
    pub visibility: String,
    pub entry_fee_raw: i64,
    pub max_participants: i64,
    pub escrow_wallet: String,
    pub payout_split: Vec<u32>,
    pub rake_bps: i64,
    pub is_paper_trading: bool,
    pub start_date: DateTime<Utc>,
    pub end_date: DateTime<Utc>,
    pub series: Option<String>,
    pub transfer_policy: TransferPolicy,
    pub evaluation_metric: EvaluationMetric,
    /// Registration closes here (410 after it); `None`: open until the end.
    pub registration_deadline: Option<DateTime<Utc>>,
    /// SHA-256 of a private tournament's invite code (see `privacy`).
    pub invite_code_hash: Option<String>,
    /// A paid tournament with fewer registered wallets at its start is cancelled and refunded;
    /// 0 turns that off.
    pub min_participants: i64,
}

impl NewTournament {
    /// Check the invariants every creator (CLI, series, demo) must respect.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() || self.name.chars().count() > 100 {
            return Err("the name must be 1 to 100 characters".into());
        }
        if self.kind.trim().is_empty()
            || !self
                .kind
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(
                "the type must be letters, digits and underscores, e.g. highest_pnl".into(),
            );
        }
        if !matches!(self.visibility.as_str(), "public" | "private") {
            return Err("visibility must be `public` or `private`".into());
        }
        if self.entry_fee_raw < 0 {
            return Err("the entry fee cannot be negative".into());
        }
        if !(1..=100_000).contains(&self.max_participants) {
            return Err("max participants must be 1 to 100000".into());
        }
        if self.end_date <= self.start_date {
            return Err("the end must come after the start".into());
        }
        if self.payout_split.is_empty() || self.payout_split.iter().sum::<u32>() != 100 {
            return Err(
                "the payout split must be percentages that add up to 100, e.g. 50,30,20".into(),
            );
        }
        if !(0..=5_000).contains(&self.rake_bps) {
            return Err("the rake must be 0 to 50 percent".into());
        }
        if self
            .registration_deadline
            .is_some_and(|deadline| deadline > self.end_date)
        {
            return Err("the registration deadline must not come after the end".into());
        }
        if !(0..=self.max_participants).contains(&self.min_participants) {
            return Err("the minimum participants must be 0 (off) to the maximum".into());
        }
        if self.visibility == "private" && self.invite_code_hash.is_none() {
            return Err("a private tournament needs an invite code".into());
        }
        Ok(())
    }
}

/// Insert a tournament and schedule its start and end. Returns false if the id already exists
/// (series creation is idempotent).
pub async fn insert(
    conn: &mut AnyConnection,
    new: &NewTournament,
    now: DateTime<Utc>,
) -> sqlx::Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO tournaments (id, name, description, type, visibility, status, entry_fee_raw, max_participants,
                                  escrow_wallet, payout_split, rake_bps, series, is_paper_trading, start_date, end_date,
                                  created_at, transfer_policy, evaluation_metric, registration_deadline,
                                  invite_code_hash, min_participants)
         VALUES ($1, $2, $3, $4, $5, 'upcoming', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(&new.id)
    .bind(&new.name)
    .bind(&new.description)
    .bind(&new.kind)
    .bind(&new.visibility)
    .bind(new.entry_fee_raw)
    .bind(new.max_participants)
    .bind(&new.escrow_wallet)
    .bind(serde_json::to_string(&new.payout_split).unwrap_or_else(|_| "[100]".into()))
    .bind(new.rake_bps)
    .bind(new.series.as_deref())
    .bind(i64::from(new.is_paper_trading))
    .bind(to_millis(new.start_date))
    .bind(to_millis(new.end_date))
    .bind(to_millis(now))
    .bind(new.transfer_policy.as_str())
    .bind(new.evaluation_metric.as_str())
    .bind(new.registration_deadline.map(to_millis))
    .bind(new.invite_code_hash.as_deref())
    .bind(new.min_participants)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(false);
    }
    scheduler::enqueue(
        &mut *conn,
        super::lifecycle::START_JOB,
        &new.id,
        new.start_date,
        now,
    )
    .await?;
    scheduler::enqueue(
        &mut *conn,
        super::lifecycle::END_JOB,
        &new.id,
        new.end_date,
        now,
    )
    .await?;
    Ok(true)
}

/// One tournament by id: in place on a SQLite file, as every registration reads it
/// (docs/architecture.md, "Statements in place").
pub(crate) async fn get(store: &Store, id: &str) -> sqlx::Result<Option<Tournament>> {
    static BY_ID: LazyLock<String> =
        LazyLock::new(|| format!("SELECT {COLUMNS} FROM tournaments WHERE id = $1"));
    crucible_sql::query(&BY_ID)
        .bind(id)
        .fetch_optional(&mut store.reader().await?.conn()?)
        .await
}

/// Filters and paging of a tournament list.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListQuery {
    pub status: Option<Status>,
    pub kind: Option<String>,
    /// `None` lists public tournaments only; private ones are listed when asked for by name.
    pub visibility: Option<String>,
    pub search: Option<String>,
    pub page: i64,
    pub page_size: i64,
    pub order_by: OrderBy,
    pub descending: bool,
}

/// A list parameter that does not parse: which one, and what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadParam {
    pub field: &'static str,
    pub message: &'static str,
}

/// The filters both tournament lists share, as their query parameters gave them.
#[derive(Debug)]
pub(crate) struct SharedFilters<'a> {
    pub kind: Option<String>,
    pub visibility: Option<&'a str>,
    pub order_by: Option<&'a str>,
    pub order: Option<&'a str>,
    pub search: Option<String>,
}

impl ListQuery {
    /// The query for one page of tournaments in `status`: each list parses its own status
    /// vocabulary and paging, and both parse the shared filters here.
    pub(crate) fn parse(
        status: Option<Status>,
        page: i64,
        page_size: i64,
        filters: SharedFilters<'_>,
    ) -> Result<Self, BadParam> {
        let bad = |field, message| BadParam { field, message };
        let visibility = match filters.visibility {
            None | Some("") => None,
            Some(v @ ("public" | "private")) => Some(v.to_owned()),
            Some(_) => {
                return Err(bad(
                    "visibility",
                    "`visibility` must be `public` or `private`",
                ));
            }
        };
        let order_by = match filters.order_by {
            None | Some("") => OrderBy::CreatedAt,
            Some(raw) => OrderBy::parse(raw).ok_or(bad(
                "orderBy",
                "`orderBy` must be one of name, createdAt, startDate, endDate, currentParticipants",
            ))?,
        };
        let descending = match filters.order {
            None | Some("") | Some("desc") => true,
            Some("asc") => false,
            Some(_) => return Err(bad("order", "`order` must be `asc` or `desc`")),
        };
        let search = filters.search.filter(|s| !s.trim().is_empty());
        if search.as_ref().is_some_and(|s| s.chars().count() > 100) {
            return Err(bad("search", "`search` must be at most 100 characters"));
        }
        Ok(ListQuery {
            status,
            kind: filters.kind.filter(|k| !k.is_empty()),
            visibility,
            search,
            page,
            page_size,
            order_by,
            descending,
        })
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum OrderBy {
    Name,
    #[default]
    CreatedAt,
    StartDate,
    EndDate,
    CurrentParticipants,
}

impl OrderBy {
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "name" => OrderBy::Name,
            "createdAt" => OrderBy::CreatedAt,
            "startDate" => OrderBy::StartDate,
            "endDate" => OrderBy::EndDate,
            "currentParticipants" => OrderBy::CurrentParticipants,
            _ => return None,
        })
    }

    fn column(self) -> &'static str {
        match self {
            OrderBy::Name => "name",
            OrderBy::CreatedAt => "created_at",
            OrderBy::StartDate => "start_date",
            OrderBy::EndDate => "end_date",
            OrderBy::CurrentParticipants => "current_participants",
        }
    }
}

/// The filter of a tournament list, written once: every filter is a parameter that is either
/// null (not filtering) or the value to match, so the same statement serves every combination.
/// `$1` visibility, `$2` type, `$3` a `LIKE` pattern on name or description, `$4` the status
/// asked for (on the *effective* status, so rows the scheduler has not moved yet match; without
/// one, cancelled tournaments are left out), `$5` now.
const LIST_FILTER: &str = "visibility = $1
    AND ($2 IS NULL OR type = $2)
    AND ($3 IS NULL OR LOWER(name) LIKE $3 ESCAPE '\\' OR LOWER(description) LIKE $3 ESCAPE '\\')
    AND CASE $4
        WHEN 'cancelled' THEN status = 'cancelled'
        WHEN 'ended' THEN (status = 'ended' OR (status <> 'cancelled' AND end_date <= $5))
        WHEN 'live' THEN (status IN ('upcoming', 'live') AND start_date <= $5 AND end_date > $5)
        WHEN 'upcoming' THEN (status = 'upcoming' AND start_date > $5)
        ELSE status <> 'cancelled'
    END";

/// One page of tournaments and the total count of matches.
pub(crate) async fn list(
    store: &Store,
    query: &ListQuery,
    now: DateTime<Utc>,
) -> sqlx::Result<(Vec<Tournament>, i64)> {
    let visibility = query.visibility.as_deref().unwrap_or("public");
    let pattern = query
        .search
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|search| {
            let escaped = search
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
    let status = query.status.map(|status| status.as_str());
    // The sort column and direction come from closed enums, never from the request's text.
    let direction = if query.descending { "DESC" } else { "ASC" };
    let order = query.order_by.column();
    let page_sql = format!(
        "SELECT {COLUMNS} FROM tournaments WHERE {LIST_FILTER}
         ORDER BY {order} {direction}, id {direction} LIMIT $6 OFFSET $7"
    );
    let rows = sqlx::query_as::<_, Tournament>(&page_sql)
        .bind(visibility)
        .bind(query.kind.as_deref())
        .bind(pattern.as_deref())
        .bind(status)
        .bind(to_millis(now))
        .bind(query.page_size)
        .bind(query.page.saturating_mul(query.page_size))
        .fetch_all(store.read())
        .await?;
    let (total,): (i64,) = sqlx::query_as(&format!(
        "SELECT COUNT(*) FROM tournaments WHERE {LIST_FILTER}"
    ))
    .bind(visibility)
    .bind(query.kind.as_deref())
    .bind(pattern.as_deref())
    .bind(status)
    .bind(to_millis(now))
    .fetch_one(store.read())
    .await?;
    Ok((rows, total))
}
