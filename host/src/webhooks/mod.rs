//! Signed webhooks: a durable outbox, signing, and delivery workers.
//!
//! Producers call [`enqueue`] inside the transaction of the change the event reports, so an event
//! exists exactly when its change committed; nothing is sent on the request path. The worker
//! ([`run_forever`], started beside the scheduler) calls [`deliver_due`], which leases due rows,
//! POSTs each to its key's webhook URL (10 s timeout, no redirects) and records the answer: 2xx
//! is delivered; anything else is retried with jittered exponential backoff for 24 h
//! ([`schedule`]), then dead-lettered. Owners see their deliveries in [`recent_deliveries`].
//!
//! This module never decides *when* an event happens (its producers do), and never holds a
//! database transaction across an HTTP request.

pub mod concurrency;
pub mod delivery;
pub(crate) mod egress;
mod outbox;
pub(crate) mod schedule;
mod sender;
pub(crate) mod signing;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::{from_millis, rfc3339, to_millis};
use crate::crypto::ordered_id;
use crate::db::Store;

pub use delivery::{Delivering, deliver_due};

/// The events a webhook can carry. Producers name their event with this type, so the list here
/// is exactly what receivers can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// An agent began trading (start endpoint); data `{agentId, startedAt}`.
    AgentStarted,
    /// An agent stopped (stop endpoint); data `{agentId, stoppedAt}`.
    AgentStopped,
    /// An agent executed a trade; data `{agentId, type, token, amount, price, txHash, …}`.
    AgentTrade,
    /// An agent was stopped by its circuit breaker after repeated strategy faults; data
    /// `{agentId, reason, at}`.
    AgentError,
    /// Daily at 00:00 UTC: the account's 24 h PnL, win rate, total trades, best and worst agent.
    AgentPerformance,
}

impl Event {
    /// The `event` member of the payload.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Event::AgentStarted => "agent.started",
            Event::AgentStopped => "agent.stopped",
            Event::AgentTrade => "agent.trade",
            Event::AgentError => "agent.error",
            Event::AgentPerformance => "agent.performance",
        }
    }
}

/// Most deliveries [`recent_deliveries`] returns at once.
pub(crate) const MAX_LISTED: i64 = 100;

/// An event to queue: what happened, to whose account, and when.
pub(crate) struct Queued<'a> {
    pub account_id: &'a str,
    pub event: Event,
    /// A JSON object: the payload's `data`.
    pub data: serde_json::Value,
    /// The payload's `timestamp` and the row's creation time.
    pub at: DateTime<Utc>,
}

/// Queue `event` with `data` for every live (unrevoked, unexpired) API key of the account — both
/// families, `account` and `v1` — that has a webhook URL; one outbox row per key, in the caller's
/// transaction, so the event exists iff the change that caused it committed. Returns rows queued.
///
/// `now` becomes the payload's `timestamp`; `data` should be a JSON object. The signed
/// payload is serialised here, once, so every retry sends the same bytes.
pub async fn enqueue(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    event: Event,
    data: serde_json::Value,
    now: DateTime<Utc>,
) -> sqlx::Result<u64> {
    let queued = Queued {
        account_id,
        event,
        data,
        at: now,
    };
    enqueue_all(&mut crucible_sql::Conn::Any(conn), vec![queued]).await
}

/// [`enqueue`] for many events at once, as a batch of ticks queues them: the subscribers of
/// every account involved are read in one query, and the rows are written a few dozen per
/// statement. Returns rows queued.
pub(crate) async fn enqueue_all(
    conn: &mut crucible_sql::Conn<'_>,
    events: Vec<Queued<'_>>,
) -> sqlx::Result<u64> {
    let (subscribers, events) = match read_subscribers(conn, events).await? {
        Some(read) => read,
        None => return Ok(0),
    };
    let rows: Vec<outbox::NewDelivery<'_>> = deliveries(&subscribers, &events)
        .map(|(_, row)| row)
        .collect();
    outbox::insert_all(conn, &rows).await?;
    Ok(rows.len() as u64)
}

/// The subscribers of every account `events` name, read in one query; `None` without events.
async fn read_subscribers<'e>(
    conn: &mut crucible_sql::Conn<'_>,
    events: Vec<Queued<'e>>,
) -> sqlx::Result<Option<(Subscribers, Vec<Queued<'e>>)>> {
    let Some(now) = events.iter().map(|queued| queued.at).max() else {
        return Ok(None);
    };
    let mut accounts: Vec<&str> = events.iter().map(|queued| queued.account_id).collect();
    accounts.sort_unstable();
    accounts.dedup();
    let subscribers = outbox::subscribers(conn, &accounts, now).await?;
    Ok(Some((subscribers, events)))
}

type Subscribers = std::collections::HashMap<String, Vec<outbox::Subscriber>>;

/// A delivery per event and subscriber of its account, with the event's index in `events`:
/// its payload serialised once and shared by its deliveries.
fn deliveries<'a>(
    subscribers: &'a Subscribers,
    events: &'a [Queued<'a>],
) -> impl Iterator<Item = (usize, outbox::NewDelivery<'a>)> + 'a {
    let subscribed = events.iter().enumerate().filter_map(|(index, queued)| {
        let keys = subscribers.get(queued.account_id)?;
        (!keys.is_empty()).then_some((index, queued, keys))
    });
    subscribed.flat_map(|(index, queued, keys)| {
        let event = queued.event.as_str();
        let payload: std::sync::Arc<str> =
            signing::signed_payload(event, &rfc3339(queued.at), &queued.data).into();
        keys.iter().map(move |subscriber| {
            let id = ordered_id("whd", to_millis(queued.at));
            tracing::debug!(delivery_id = %id, key_id = %subscriber.key_id, event, "webhook queued");
            let row = outbox::NewDelivery {
                id,
                account_id: queued.account_id,
                key_id: &subscriber.key_id,
                event,
                url: &subscriber.url,
                payload: payload.clone(),
                at: queued.at,
            };
            (index, row)
        })
    })
}

/// Events that happen or not by the outcome of one statement (a live swap's trade, only if the
/// statement settles the swap), each tagged with what decides it, their deliveries built
/// before the statement and written by it ([`Prepared::insert_where`]).
pub(crate) struct Prepared<'e> {
    subscribers: Subscribers,
    events: Vec<Queued<'e>>,
    tags: Vec<String>,
}

/// Read the subscribers of `events` (each with its tag) and hold them for [`Prepared::insert_where`].
pub(crate) async fn prepare_all<'e>(
    conn: &mut crucible_sql::Conn<'_>,
    events: Vec<(String, Queued<'e>)>,
) -> sqlx::Result<Prepared<'e>> {
    let (tags, events): (Vec<String>, Vec<Queued<'e>>) = events.into_iter().unzip();
    let (subscribers, events) = read_subscribers(conn, events).await?.unwrap_or_default();
    Ok(Prepared {
        subscribers,
        events,
        tags,
    })
}

/// The deliveries of a [`Prepared`] set, owned by the statement that writes them.
pub(crate) struct PreparedRows<'p> {
    rows: Vec<outbox::NewDelivery<'p>>,
    tags: Vec<String>,
}

impl<'e> Prepared<'e> {
    /// The deliveries to write, none when no account has a subscriber.
    pub(crate) fn rows(&self) -> PreparedRows<'_> {
        let (tags, rows) = deliveries(&self.subscribers, &self.events)
            .map(|(index, row)| (self.tags[index].clone(), row))
            .unzip();
        PreparedRows { rows, tags }
    }
}

impl PreparedRows<'_> {
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `INSERT` of the deliveries whose tag `tags` (a subquery of the same statement)
    /// returns, its rows numbered after the statement's first `skip` parameters, and the rows
    /// to bind after those.
    pub(crate) fn insert_where<'q>(
        &'q self,
        conn: &crucible_sql::Conn<'_>,
        skip: usize,
        tags: &str,
    ) -> (String, crucible_sql::Rows<'q>) {
        let rows = outbox::delivery_rows(conn, &self.rows, Some(&self.tags));
        let sql = outbox::insert_from(&rows.table(skip), &format!("WHERE v.column8 IN ({tags})"));
        (sql, rows)
    }
}

/// One delivery as its owner sees it (`GET /api/v1/webhooks/deliveries`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// Also sent as the `X-Svc-Delivery` header, the same on every retry.
    pub delivery_id: String,
    /// The API key whose webhook URL and secret this delivery uses.
    pub key_id: String,
    pub event: String,
    pub url: String,
    /// `pending` (queued or between retries), `delivered` (a 2xx came back) or `dead` (gave up
    /// after 24 h of failures, or dropped unsent because the key was revoked or expired).
    pub status: String,
    /// Requests sent (or started) so far.
    pub attempts: i64,
    /// HTTP status of the last response; null when none came (timeout, connection error).
    pub last_status_code: Option<i64>,
    /// What went wrong last time, in a short sentence of ours (never the receiver's body);
    /// null after a first-time success.
    pub last_error: Option<String>,
    /// The kind of that failure: `timeout`, `connection`, `http_status`, `redirect`,
    /// `destination_refused`, `request`, `signing` or `not_sent`.
    pub error_category: Option<String>,
    pub created_at: String,
    pub last_attempt_at: Option<String>,
    /// When the next attempt is due; only while `pending`.
    pub next_attempt_at: Option<String>,
    pub delivered_at: Option<String>,
    pub dead_at: Option<String>,
}

/// Recent deliveries of the account's keys, newest first, for `GET /api/v1/webhooks/deliveries`.
/// `limit` is clamped to 1..=[`MAX_LISTED`].
pub async fn recent_deliveries(
    store: &Store,
    account_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<DeliveryView>> {
    let rows = outbox::recent(store, account_id, limit.clamp(1, MAX_LISTED)).await?;
    let at = |millis: Option<i64>| millis.map(|ms| rfc3339(from_millis(ms)));
    Ok(rows
        .into_iter()
        .map(|row| DeliveryView {
            next_attempt_at: (row.status == "pending")
                .then(|| rfc3339(from_millis(row.next_attempt_at))),
            delivery_id: row.id,
            key_id: row.key_id,
            event: row.event,
            url: row.url,
            status: row.status,
            attempts: row.attempts,
            last_status_code: row.last_status_code,
            last_error: row.last_error,
            error_category: row.last_error_category,
            created_at: rfc3339(from_millis(row.created_at)),
            last_attempt_at: at(row.last_attempt_at),
            delivered_at: at(row.delivered_at),
            dead_at: at(row.dead_at),
        })
        .collect())
}

/// The worker: [`deliver_due`] every `interval` until the task is aborted. Started by the server
/// next to the scheduler; safe to run on every node.
pub(crate) async fn run_forever(delivering: Delivering, interval: std::time::Duration) {
    let mut every = tokio::time::interval(interval);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if let Err(error) = deliver_due(&delivering).await {
            tracing::error!(error = %format!("{error:#}"), "webhook delivery pass failed");
        }
    }
}
