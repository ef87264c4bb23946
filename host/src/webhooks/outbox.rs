//! The outbox table `webhook_deliveries`: queueing rows, claiming due ones under a lease, and
//! recording what each attempt did. Every state change here is one statement (the outcomes of
//! attempts that end together share one, [`Record`]); none holds a transaction (or SQLite's
//! single writer) across an HTTP request.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use crucible_sql::{self as sql, Conn, LONG_TEXT, Rows};
use futures_util::future::BoxFuture;

use crate::clock::{from_millis, to_millis};
use crate::db::{Backend, BatchWrite, Outcomes, Store, value_rows};

/// Longest error text kept per delivery.
const MAX_ERROR_CHARS: usize = 500;
/// Due rows a claim reads at most, per row one receiver's share of it may hold (`per_url`, or
/// the claim's whole `limit` when that is smaller). Reading past that only finds more rows of
/// receivers whose share is already full: with one busy receiver, a claim bounded by its whole
/// limit (8,192 rows read to take 256) sorted 32 rows for each it took. A claim that takes less
/// than the worker can hold is followed by the next one as its rows drain.
const READ_PER_CLAIMED: i64 = 4;
/// Ids one statement names at most.
const IDS_PER_STATEMENT: usize = crate::db::rows_per_statement(1);
/// The PostgreSQL types of an outcome's columns in [`Record`]'s statement: the row's id, its
/// lease owner, status, status code, error, error category, next attempt, delivered, dead and
/// attempted.
const RECORD_TYPES: [&str; 10] = [
    "text", "text", "text", "int8", "text", "text", "int8", "int8", "int8", "int8",
];

/// A live key of an account that wants webhooks.
pub(super) struct Subscriber {
    pub key_id: String,
    pub url: String,
}

/// The live (unrevoked, unexpired) keys of both families that have a webhook URL, of each of
/// `accounts` that has any, oldest key first.
pub(super) async fn subscribers(
    conn: &mut Conn<'_>,
    accounts: &[&str],
    now: DateTime<Utc>,
) -> sqlx::Result<HashMap<String, Vec<Subscriber>>> {
    let mut by_account: HashMap<String, Vec<Subscriber>> = HashMap::new();
    for chunk in accounts.chunks(IDS_PER_STATEMENT) {
        let sql = format!(
            "SELECT account_id, id, webhook_url FROM api_keys
             WHERE account_id IN {} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)
               AND webhook_url IS NOT NULL AND webhook_secret_sealed IS NOT NULL
             ORDER BY created_at, id",
            value_rows(1, chunk.len(), 1)
        );
        let mut query = sql::query(&sql).bind(to_millis(now));
        for account in chunk {
            query = query.bind(*account);
        }
        let rows: Vec<(String, String, String)> = query.fetch_all(conn).await?;
        for (account_id, key_id, url) in rows {
            by_account
                .entry(account_id)
                .or_default()
                .push(Subscriber { key_id, url });
        }
    }
    Ok(by_account)
}

/// A new pending row, due at once.
pub(super) struct NewDelivery<'a> {
    pub id: String,
    pub account_id: &'a str,
    pub key_id: &'a str,
    pub event: &'a str,
    pub url: &'a str,
    /// Shared by the rows of one event: the same signed bytes for every key.
    pub payload: Arc<str>,
    pub at: DateTime<Utc>,
}

/// The PostgreSQL types of a delivery's columns in [`insert_all`]; the signed payload travels
/// beside the batch's rows ([`LONG_TEXT`]).
const INSERTED_TYPES: [&str; 7] = ["text", "text", "text", "text", "text", LONG_TEXT, "int8"];

/// Write `rows`, a few dozen per statement.
pub(super) async fn insert_all(conn: &mut Conn<'_>, rows: &[NewDelivery<'_>]) -> sqlx::Result<()> {
    let per_statement = crate::db::rows_per_statement(INSERTED_TYPES.len());
    for chunk in rows.chunks(Rows::per_statement(conn, per_statement)) {
        let values = delivery_rows(conn, chunk, None);
        let sql = insert_from(&values.table(0), "");
        values.bind(sql::query(&sql)).execute(conn).await?;
    }
    Ok(())
}

/// `rows` as a batch's rows ([`INSERTED_TYPES`]), each with `tags`' entry as an eighth column
/// when given.
pub(super) fn delivery_rows<'q>(
    conn: &Conn<'_>,
    rows: &'q [NewDelivery<'q>],
    tags: Option<&'q [String]>,
) -> Rows<'q> {
    let types: &'static [&'static str] = if tags.is_some() {
        &TAGGED_TYPES
    } else {
        &INSERTED_TYPES
    };
    let mut values = Rows::new(conn, types);
    for (index, row) in rows.iter().enumerate() {
        let columns = [
            row.id.as_str().into(),
            row.account_id.into(),
            row.key_id.into(),
            row.event.into(),
            row.url.into(),
            (&*row.payload).into(),
            to_millis(row.at).into(),
        ];
        match tags.and_then(|tags| tags.get(index)) {
            Some(tag) => {
                let [a, b, c, d, e, f, g] = columns;
                values.push([a, b, c, d, e, f, g, tag.as_str().into()]);
            }
            None => values.push(columns),
        }
    }
    values
}

/// [`INSERTED_TYPES`] and a tag: what each delivery depends on ([`insert_from`]).
const TAGGED_TYPES: [&str; 8] = [
    "text", "text", "text", "text", "text", LONG_TEXT, "int8", "text",
];

/// The `INSERT` of the deliveries in `table` (the batch's rows as `AS v`), due at once, those
/// `filter` keeps (`WHERE …`, or nothing for all).
pub(super) fn insert_from(table: &str, filter: &str) -> String {
    format!(
        "INSERT INTO webhook_deliveries (id, account_id, key_id, event, url, payload,
                                         next_attempt_at, status, created_at)
         SELECT v.column1, v.column2, v.column3, v.column4, v.column5, v.column6, v.column7,
                'pending', v.column7
         FROM {table} AS v {filter}"
    )
}

/// A row leased to one worker for one attempt.
#[derive(Debug, Clone)]
pub(super) struct Claimed {
    pub id: String,
    pub key_id: String,
    pub event: String,
    pub url: String,
    pub payload: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
    pub created_at: DateTime<Utc>,
}

/// What a worker asks of [`claim`].
#[derive(Clone, Copy)]
pub(super) struct Claim<'a> {
    pub lease_owner: &'a str,
    pub now: DateTime<Utc>,
    pub lease: Duration,
    pub limit: i64,
    pub per_url: i64,
    pub skip_urls: &'a [&'a str],
}

/// Lease up to `limit` due pending rows to `lease_owner` until `now + lease`, oldest due first,
/// and at most `per_url` of them for one URL, so that a receiver with a long queue does not
/// fill the claim and other tenants' rows are reached; none of `skip_urls` (the worker holds
/// all it can of them already). A lease that ran out (its worker died
/// mid-attempt) is taken over. The attempt is counted here, so an attempt cut short by a crash
/// still counts. The rows come back in the order they were chosen.
pub(super) async fn claim(store: &Store, ask: &Claim<'_>) -> sqlx::Result<Vec<Claimed>> {
    let Claim {
        lease_owner,
        now,
        lease,
        limit,
        per_url,
        skip_urls,
    } = *ask;
    // The due rows are read in order up to a bound (a few times one receiver's share of the
    // claim, [`READ_PER_CLAIMED`]), never the whole backlog: a claim costs what it takes. The
    // URLs the worker holds its fill of are skipped while reading, so a long queue of one
    // receiver cannot fill the bound once the worker has all it can take of it.
    if store.backend() == Backend::Postgres {
        return claim_in_one_statement(store, ask).await;
    }
    // On SQLite each URL's share is counted here rather than by a window function in the
    // statement: `ROW_NUMBER() OVER (PARTITION BY url …)` over the rows read cost SQLite three
    // times the read itself, and was the largest part of a delivery's database work
    // (docs/benchmarks.md, session 52). The transaction holds the one writer from the read to
    // the lease, so nothing can change between them.
    let skip = if skip_urls.is_empty() {
        String::new()
    } else {
        format!("AND url NOT IN {}", value_rows(1, skip_urls.len(), 2))
    };
    let read = format!(
        "SELECT id, url FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= $1
           AND (lease_until IS NULL OR lease_until <= $1) {skip}
         ORDER BY next_attempt_at, id LIMIT $2"
    );
    let mut query = sql::query(&read)
        .bind(to_millis(now))
        .bind(limit.min(per_url).saturating_mul(READ_PER_CLAIMED));
    for url in skip_urls {
        query = query.bind(*url);
    }
    // In place on a SQLite file: a claim returns up to a couple of thousand rows, each a
    // hand-off through sqlx (docs/architecture.md, "Statements in place").
    let mut tx = store.begin_in_place().await?;
    let due: Vec<(String, String)> = query.fetch_all(&mut tx.conn()?).await?;
    let chosen = within_shares(&due, limit, per_url);
    let mut claimed = Vec::with_capacity(chosen.len());
    for chunk in chosen.chunks(IDS_PER_STATEMENT) {
        claimed.extend(lease_rows(&mut tx, chunk, lease_owner, now, lease).await?);
    }
    tx.commit().await?;
    // `RETURNING` gives the rows in the database's order: back to the order they were chosen.
    let place: HashMap<&str, usize> = chosen
        .iter()
        .enumerate()
        .map(|(place, id)| (*id, place))
        .collect();
    claimed.sort_by_key(|row| place.get(row.id.as_str()).copied().unwrap_or(usize::MAX));
    Ok(claimed)
}

/// The ids of `due` (in due order, with their URLs) a claim takes: in order, at most `per_url`
/// of one URL and `limit` in all.
fn within_shares(due: &[(String, String)], limit: i64, per_url: i64) -> Vec<&str> {
    let limit = usize::try_from(limit).unwrap_or(0);
    let per_url = usize::try_from(per_url).unwrap_or(0);
    let mut taken: HashMap<&str, usize> = HashMap::new();
    let mut chosen = Vec::with_capacity(limit.min(due.len()));
    for (id, url) in due {
        if chosen.len() >= limit {
            break;
        }
        let share = taken.entry(url.as_str()).or_default();
        if *share < per_url {
            *share += 1;
            chosen.push(id.as_str());
        }
    }
    chosen
}

/// Lease the rows `ids` (chosen by a claim in this SQLite transaction) to `lease_owner`,
/// counting the attempt; the leased rows. Looked up by id alone: a recheck of the row's state
/// would make SQLite's planner walk every pending row through the status index instead.
async fn lease_rows(
    tx: &mut sql::Transaction,
    ids: &[&str],
    lease_owner: &str,
    now: DateTime<Utc>,
    lease: Duration,
) -> sqlx::Result<Vec<Claimed>> {
    let sql = format!(
        "UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE id IN {}
         RETURNING id, key_id, event, url, payload, attempts, created_at",
        value_rows(1, ids.len(), 2)
    );
    let mut query = sql::query(&sql)
        .bind(lease_owner)
        .bind(to_millis(now + lease));
    for id in ids {
        query = query.bind(*id);
    }
    let rows: Vec<ClaimedRow> = query.fetch_all(&mut tx.conn()?).await?;
    Ok(rows.into_iter().map(claimed).collect())
}

/// [`claim`] on PostgreSQL: one statement, whose window function costs PostgreSQL little, and
/// whose conditions are checked again on the row being updated, so a concurrent claimer that
/// picked the same row waits for the first one's update, then finds the row leased and leaves
/// it (row locks cannot be taken beside a window function).
async fn claim_in_one_statement(store: &Store, ask: &Claim<'_>) -> sqlx::Result<Vec<Claimed>> {
    let skip = if ask.skip_urls.is_empty() {
        String::new()
    } else {
        format!("AND url NOT IN {}", value_rows(1, ask.skip_urls.len(), 6))
    };
    let sql = format!(
        "UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM (
                          SELECT id, next_attempt_at,
                                 ROW_NUMBER() OVER (PARTITION BY url ORDER BY next_attempt_at, id) AS place
                          FROM (SELECT id, url, next_attempt_at FROM webhook_deliveries
                                WHERE status = 'pending' AND next_attempt_at <= $3
                                  AND (lease_until IS NULL OR lease_until <= $3) {skip}
                                ORDER BY next_attempt_at, id LIMIT $6) read) due
                      WHERE place <= $5
                      ORDER BY next_attempt_at, id LIMIT $4)
           AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $3)
         RETURNING id, key_id, event, url, payload, attempts, created_at"
    );
    let mut query = sql::query(&sql)
        .bind(ask.lease_owner)
        .bind(to_millis(ask.now + ask.lease))
        .bind(to_millis(ask.now))
        .bind(ask.limit)
        .bind(ask.per_url)
        .bind(ask.limit.min(ask.per_url).saturating_mul(READ_PER_CLAIMED));
    for url in ask.skip_urls {
        query = query.bind(*url);
    }
    let mut tx = store.begin_in_place().await?;
    // The due rows must be read in index order, stopping at the bound. Where the table's
    // statistics are missing or stale (autovacuum off, or not yet run after a burst of events),
    // the planner takes the due rows to be few and reads them all through a bitmap scan to
    // sort them: 57 ms a claim at 100,000 due rows against 10 ms in index order
    // (docs/benchmarks.md, session 53). Reading them in order is right at any size, so this
    // transaction does without bitmap scans.
    sql::query("SET LOCAL enable_bitmapscan = off")
        .execute(&mut tx.conn()?)
        .await?;
    let rows: Vec<ClaimedRow> = query.fetch_all(&mut tx.conn()?).await?;
    tx.commit().await?;
    Ok(rows.into_iter().map(claimed).collect())
}

/// A leased row as `RETURNING id, key_id, event, url, payload, attempts, created_at` gives it.
type ClaimedRow = (String, String, String, String, String, i64, i64);

fn claimed((id, key_id, event, url, payload, attempts, created_at): ClaimedRow) -> Claimed {
    Claimed {
        id,
        key_id,
        event,
        url,
        payload,
        attempts,
        created_at: from_millis(created_at),
    }
}

/// The key a claimed row is signed for: its sealed secret, and whether it still stands.
pub(super) struct KeyState {
    pub secret_sealed: Option<String>,
    pub revoked: bool,
    pub expired: bool,
}

/// A key's id, sealed webhook secret, revocation and expiry.
type KeyRow = (String, Option<String>, Option<i64>, Option<i64>);

/// The state of each of `key_ids` that still exists, read in one query: a claim's rows share
/// few keys, and each is read once per claim instead of once per row.
pub(super) async fn key_states(
    store: &Store,
    key_ids: &[&str],
    now: DateTime<Utc>,
) -> sqlx::Result<HashMap<String, KeyState>> {
    let mut states = HashMap::with_capacity(key_ids.len());
    for chunk in key_ids.chunks(IDS_PER_STATEMENT) {
        let sql = format!(
            "SELECT id, webhook_secret_sealed, revoked_at, expires_at FROM api_keys
             WHERE id IN {}",
            value_rows(1, chunk.len(), 0)
        );
        let mut query = sql::query(&sql);
        for id in chunk {
            query = query.bind(*id);
        }
        let rows: Vec<KeyRow> = query.fetch_all(&mut store.reader().await?.conn()?).await?;
        for (id, secret_sealed, revoked_at, expires_at) in rows {
            let state = KeyState {
                secret_sealed,
                revoked: revoked_at.is_some(),
                expired: expires_at.is_some_and(|at| at <= to_millis(now)),
            };
            states.insert(id, state);
        }
    }
    Ok(states)
}

/// How an attempt ended, as recorded on the row.
pub(super) enum Outcome {
    /// 2xx: done.
    Delivered { status_code: u16 },
    /// Failed; try again at `retry_at`. `error` is (category, what the owner is shown).
    Retry {
        status_code: Option<u16>,
        error: Option<(&'static str, String)>,
        retry_at: DateTime<Utc>,
    },
    /// Failed for good (24 h of failures, or the key was revoked): the dead letter.
    Dead {
        status_code: Option<u16>,
        error: Option<(&'static str, String)>,
    },
}

/// One attempt's outcome, to be recorded on its row with the outcomes of the attempts that
/// ended at the same time ([`crate::db::GroupCommit`]): a busy worker writes its rows' states a
/// few hundred at a time, in a few statements and one flush.
pub(super) struct Record {
    id: String,
    lease_owner: Arc<str>,
    now: i64,
    status: &'static str,
    status_code: Option<i64>,
    error: Option<String>,
    category: Option<&'static str>,
    next_attempt_at: Option<i64>,
    delivered_at: Option<i64>,
    dead_at: Option<i64>,
}

impl Record {
    pub(super) fn new(
        id: &str,
        lease_owner: Arc<str>,
        now: DateTime<Utc>,
        outcome: Outcome,
    ) -> Self {
        let now = to_millis(now);
        let (status, status_code, error, next_attempt_at, delivered_at, dead_at) = match outcome {
            Outcome::Delivered { status_code } => {
                ("delivered", Some(status_code), None, None, Some(now), None)
            }
            Outcome::Retry {
                status_code,
                error,
                retry_at,
            } => (
                "pending",
                status_code,
                error,
                Some(to_millis(retry_at)),
                None,
                None,
            ),
            Outcome::Dead { status_code, error } => {
                ("dead", status_code, error, None, None, Some(now))
            }
        };
        let (category, error) = match error {
            Some((category, text)) => (
                Some(category),
                Some(text.chars().take(MAX_ERROR_CHARS).collect()),
            ),
            None => (None, None),
        };
        Record {
            id: id.to_owned(),
            lease_owner,
            now,
            status,
            status_code: status_code.map(i64::from),
            error,
            category,
            next_attempt_at,
            delivered_at,
            dead_at,
        }
    }
}

impl BatchWrite for Record {
    /// Whether the row was still leased to this attempt's worker (and so was written): a worker
    /// whose lease ran out cannot overwrite what its successor recorded.
    type Output = bool;
    type Error = sqlx::Error;

    /// One statement on PostgreSQL (the rows are one parameter, [`Rows`]): a batch of nothing
    /// but outcomes is one round trip, committed by itself, instead of `BEGIN`, its statements
    /// and `COMMIT`. An outcome never fails alone: the statement writes each row it finds still
    /// leased to the attempt's worker, and leaves the others.
    const ONE_STATEMENT_ON_POSTGRES: bool = true;

    /// Every outcome of the batch by one `UPDATE … FROM` a table of the outcomes (on SQLite one
    /// per dozen rows), each guarded by its lease. The lease is released with it.
    fn apply_all<'c, 'd>(
        records: &'c [Arc<Self>],
        conn: &'c mut Conn<'d>,
    ) -> BoxFuture<'c, Outcomes<bool, sqlx::Error>> {
        Box::pin(async move {
            let mut written: HashSet<String> = HashSet::with_capacity(records.len());
            let per_statement = crate::db::rows_per_statement(RECORD_TYPES.len());
            for chunk in records.chunks(Rows::per_statement(conn, per_statement)) {
                let mut rows = Rows::new(conn, &RECORD_TYPES);
                for record in chunk {
                    rows.push([
                        record.id.as_str().into(),
                        (&*record.lease_owner).into(),
                        record.status.into(),
                        record.status_code.into(),
                        record.error.as_deref().into(),
                        record.category.into(),
                        record.next_attempt_at.into(),
                        record.delivered_at.into(),
                        record.dead_at.into(),
                        record.now.into(),
                    ]);
                }
                let sql = format!(
                    "UPDATE webhook_deliveries
                     SET status = v.column3, last_status_code = v.column4, last_error = v.column5,
                         last_error_category = v.column6,
                         next_attempt_at = COALESCE(v.column7, next_attempt_at),
                         delivered_at = v.column8, dead_at = v.column9, last_attempt_at = v.column10,
                         lease_owner = NULL, lease_until = NULL
                     FROM {} AS v
                     WHERE webhook_deliveries.id = v.column1 AND webhook_deliveries.lease_owner = v.column2
                     RETURNING webhook_deliveries.id",
                    rows.table(0)
                );
                let ids: Vec<(String,)> = rows.bind(sql::query(&sql)).fetch_all(conn).await?;
                written.extend(ids.into_iter().map(|(id,)| id));
            }
            Ok(records
                .iter()
                .map(|record| Ok(written.contains(&record.id)))
                .collect())
        })
    }
}

/// Move the lease of every row `lease_owner` still holds to `until`: a worker renews the
/// leases of the rows waiting in its memory, so they are not taken over while it lives.
pub(super) async fn renew(
    store: &Store,
    lease_owner: &str,
    until: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE webhook_deliveries SET lease_until = $1 WHERE lease_owner = $2 AND status = 'pending'",
    )
    .bind(to_millis(until))
    .bind(lease_owner)
    .execute(store.write())
    .await?;
    Ok(())
}

/// Give claimed rows back unsent (their destination had no room): the leases are released and
/// the attempts the claim counted are taken back.
pub(super) async fn hand_back(store: &Store, ids: &[&str], lease_owner: &str) -> sqlx::Result<()> {
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let sql = format!(
            "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, attempts = attempts - 1
             WHERE lease_owner = $1 AND id IN {}",
            value_rows(1, chunk.len(), 1)
        );
        let mut query = sqlx::query(&sql).bind(lease_owner);
        for id in chunk {
            query = query.bind(*id);
        }
        query.execute(store.write()).await?;
    }
    Ok(())
}

/// A row as the owner sees it.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct Listed {
    pub id: String,
    pub key_id: String,
    pub event: String,
    pub url: String,
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_category: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
    pub last_attempt_at: Option<i64>,
    pub next_attempt_at: i64,
    pub dead_at: Option<i64>,
}

/// The account's most recent rows, newest first.
pub(super) async fn recent(
    store: &Store,
    account_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as(
        "SELECT id, key_id, event, url, status, attempts, last_status_code, last_error,
                last_error_category, created_at, delivered_at, last_attempt_at, next_attempt_at, dead_at
         FROM webhook_deliveries WHERE account_id = $1
         ORDER BY created_at DESC, id DESC LIMIT $2",
    )
    .bind(account_id)
    .bind(limit)
    .fetch_all(store.read())
    .await
}

#[cfg(test)]
mod tests {
    use super::within_shares;

    fn due(rows: &[(&str, &str)]) -> Vec<(String, String)> {
        rows.iter()
            .map(|(id, url)| ((*id).to_owned(), (*url).to_owned()))
            .collect()
    }

    #[test]
    fn a_claim_takes_due_rows_in_order_within_each_urls_share() {
        let due = due(&[
            ("a1", "https://a/hook"),
            ("a2", "https://a/hook"),
            ("b1", "https://b/hook"),
            ("a3", "https://a/hook"),
            ("c1", "https://c/hook"),
            ("b2", "https://b/hook"),
        ]);
        assert_eq!(
            within_shares(&due, 10, 2),
            ["a1", "a2", "b1", "c1", "b2"],
            "a's third row waits: its share is two"
        );
        assert_eq!(
            within_shares(&due, 3, 2),
            ["a1", "a2", "b1"],
            "the limit stops the claim"
        );
        assert!(within_shares(&due, 0, 2).is_empty());
        assert!(within_shares(&due, 5, 0).is_empty());
        assert!(within_shares(&[], 5, 5).is_empty());
    }
}
