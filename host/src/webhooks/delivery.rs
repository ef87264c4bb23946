//! The delivery worker's one step, [`deliver_due`]: drop what revoked keys queued, lease due rows,
//! send each once, record how it went. At-least-once: a worker that dies after sending but
//! before recording leaves its lease to run out, and the row is sent again; the
//! `X-Svc-Delivery` id lets receivers drop the duplicate.
//!
//! Receivers belong to different tenants, and one of them may be slow or hang until the timeout.
//! So requests run as a pipeline, not in batches: a new row starts as soon as any request ends
//! (or the next poll finds it due), never after the slowest of a batch; and each destination
//! (scheme, host and port) has a limit of requests in flight, adapted to how it answers
//! ([`super::concurrency`]: 16 to start with, more for a receiver that keeps up, fewer for one
//! that times out or says it is overloaded), so a receiver that hangs ties up its own slots
//! only.
//!
//! The database work is shared, so that it stays a small part of a delivery: one claim leases up
//! to [`HELD`] rows (at most [`CLAIM_PER_URL`] of one URL, so a long queue for one receiver
//! never hides the rows of others), which wait in the worker for a slot of their destination
//! while the worker renews their leases; the keys they are signed with are read once per claim;
//! and the outcomes of the attempts that end together are written in one statement and one
//! flush ([`outbox::Record`]). A claimed row whose destination already has its fill waiting is
//! handed back unsent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::concurrency::{Answer, Limit};
use super::outbox::{self, Claimed, KeyState, Outcome, Record};
use super::schedule::{self, AfterFailure};
use super::sender::{Destination, SendError, Sender, Unreachable};
use super::signing::{SignedRequest, Signer};
use crate::clock::Clock;
use crate::config::Config;
use crate::crypto::Sealer;
use crate::crypto::random_base58;
use crate::db::Store;
use crate::metrics::Metrics;

/// What delivering webhooks touches: the outbox's rows, the clock, the sealer that opens the
/// keys' signing secrets, the node's delivery settings, its delivery counters and its name
/// (leases name their node). Cloned into each request's task.
#[derive(Clone)]
pub struct Delivering {
    pub store: Store,
    pub clock: std::sync::Arc<dyn Clock>,
    pub sealer: std::sync::Arc<Sealer>,
    pub config: std::sync::Arc<Config>,
    pub(crate) metrics: std::sync::Arc<Metrics>,
    pub node_id: std::sync::Arc<str>,
}

/// Requests in flight at once per worker.
const IN_FLIGHT: usize = 256;
/// Rows of one URL one claim leases at most: a receiver with a long queue is served from the
/// worker's memory, a claim per this many requests, not a claim per request.
const CLAIM_PER_URL: usize = 256;
/// Rows of one destination waiting in the worker at most; a claim's rows beyond it are handed
/// back.
const WAITING_PER_DESTINATION: usize = 2 * CLAIM_PER_URL;
/// Rows the worker holds at most (in flight and waiting), and so the most one claim leases.
const HELD: usize = 8 * IN_FLIGHT;
/// URLs a claim is told to skip at most (those of destinations with their fill waiting).
const MAX_SKIPPED_URLS: usize = 100;
/// While requests are in flight, how often to look for rows that became due meanwhile.
const POLL: Duration = Duration::from_millis(200);

/// A claimed row with what it is signed with, waiting for a slot of its destination.
struct Ready {
    row: Claimed,
    /// Where the row's URL goes, parsed and checked once per claim for all its rows.
    to: Arc<Destination>,
    signer: Result<Arc<Signer>, Unsendable>,
}

/// The rows of one destination the worker holds, and how many requests it may have in flight.
struct Queue {
    in_flight: usize,
    limit: Limit,
    waiting: VecDeque<Ready>,
}

impl Queue {
    /// A destination's queue, with the limit it had when the worker last held its rows.
    fn new(limit: Option<Limit>) -> Queue {
        Queue {
            in_flight: 0,
            limit: limit.unwrap_or_else(|| Limit::new(std::time::Instant::now())),
            waiting: VecDeque::new(),
        }
    }
}

/// Limits of destinations kept while the worker holds none of their rows, at most: beyond, they
/// are forgotten and start again from the initial one.
const LIMITS_KEPT: usize = 10_000;

/// What one call of [`deliver_due`] holds: its rows, by destination, and when it last claimed
/// and renewed.
struct Worker {
    lease_owner: Arc<str>,
    lease: chrono::Duration,
    destinations: HashMap<String, Queue>,
    /// The limits of destinations whose rows all went, kept for when they have rows again: a
    /// destination whose queue runs dry between two claims does not start over.
    limits: HashMap<String, Limit>,
    /// Rows held: waiting, in flight, or being recorded.
    held: usize,
    /// Requests in flight.
    requests: usize,
    /// Rows waiting for a slot.
    waiting: usize,
    /// Claim again once fewer than this many rows wait (about half of what the last claim
    /// found; zero when it found nothing, and the next claim waits for the poll).
    refill_below: usize,
    last_claim: tokio::time::Instant,
    last_renewal: tokio::time::Instant,
}

/// Deliver what is due now and return how many requests were sent, once nothing is due and
/// nothing is in flight. Several workers (threads or nodes) may call this at once: each row is
/// leased to one of them, and a lease left by a worker that died is taken over once it has run
/// out. A live worker renews the leases of the rows it holds, so a row waiting in its memory for
/// a slot is never taken over.
pub async fn deliver_due(delivering: &Delivering) -> anyhow::Result<usize> {
    let timeout = Duration::from_millis(delivering.config.webhook_timeout_ms);
    let now = tokio::time::Instant::now();
    let mut worker = Worker {
        // One lease owner per call: two calls, even in one process, never hold the same row.
        // The node's name comes first, so a node shutting down can release what it holds.
        lease_owner: format!("{}:whw_{}", delivering.node_id, random_base58(8)).into(),
        lease: chrono::Duration::from_std(timeout * 2)? + chrono::Duration::seconds(30),
        destinations: HashMap::new(),
        limits: HashMap::new(),
        held: 0,
        requests: 0,
        waiting: 0,
        refill_below: usize::MAX,
        last_claim: now,
        last_renewal: now,
    };
    drop_revoked(&delivering.store, &*delivering.clock).await?;
    // A task per attempt: its request, then the record of its outcome. Its slot is given back
    // (through `freed`) as soon as the request ends, not once the outcome is on disk, so a
    // destination's requests never wait for the database.
    let mut attempts: JoinSet<anyhow::Result<bool>> = JoinSet::new();
    let (slot_freed, mut freed) = mpsc::unbounded_channel::<Freed>();
    // The claim under way, if any. It runs beside the requests rather than before them: while a
    // claim waits for the database, requests that end are replaced from the rows still waiting.
    let mut claiming: Option<BoxFuture<'static, Fetched>> = None;
    let mut sent = 0;
    loop {
        let polled = worker.last_claim.elapsed() >= POLL;
        if claiming.is_none()
            && worker.held < HELD
            && (worker.waiting < worker.refill_below || polled)
        {
            claiming = Some(worker.claim(delivering));
        }
        if worker.held > 0 && worker.last_renewal.elapsed() >= (timeout / 2).max(POLL) {
            worker.renew(delivering).await?;
        }
        worker.start(delivering, timeout, &mut attempts, &slot_freed);
        if attempts.is_empty() && worker.held == 0 && claiming.is_none() {
            return Ok(sent);
        }
        // Whichever comes first: the claim returns its rows, a request ends (its slot is free),
        // an attempt is recorded (its row is no longer held), or it is time to look for rows
        // that became due while every slot was taken by slow receivers.
        tokio::select! {
            fetched = claimed(&mut claiming) => {
                claiming = None;
                worker.take_in(delivering, fetched?).await?;
            }
            Some(slot) = freed.recv() => worker.freed(slot),
            finished = attempts.join_next(), if !attempts.is_empty() => {
                if let Some(finished) = finished {
                    worker.held -= 1;
                    sent += usize::from(finished??);
                }
            }
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// What a claim returns: the rows it leased, and the signers of their keys.
type Fetched = anyhow::Result<(Vec<Claimed>, Signers)>;

/// Each key's signer, or why its rows cannot be signed now.
type Signers = HashMap<String, Result<Arc<Signer>, Unsendable>>;

/// The claim under way's rows, once it returns; never, while no claim is under way.
async fn claimed(claiming: &mut Option<BoxFuture<'static, Fetched>>) -> Fetched {
    match claiming {
        Some(claim) => claim.await,
        None => std::future::pending().await,
    }
}

/// A request's place among its destination's slots, given back when dropped: after the request,
/// or however its task ends.
struct Slot {
    destination: String,
    /// How the destination answered, once a request went out (a row refused by our own rules,
    /// or never sent, says nothing of it).
    answer: Option<Answer>,
    freed: mpsc::UnboundedSender<Freed>,
}

/// A slot given back, with what its request told of its destination.
struct Freed {
    destination: String,
    answer: Option<Answer>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let freed = Freed {
            destination: std::mem::take(&mut self.destination),
            answer: self.answer.take(),
        };
        // The worker is gone when nobody listens: nothing holds the slot any more.
        let _ = self.freed.send(freed);
    }
}

impl Worker {
    /// A claim of what is due, up to what the worker can still hold, and the signers of the
    /// claimed rows' keys.
    fn claim(&self, delivering: &Delivering) -> BoxFuture<'static, Fetched> {
        // The URLs of destinations that have their fill waiting: their rows would be handed
        // straight back.
        let full: Vec<String> = self
            .destinations
            .values()
            .filter(|queue| queue.waiting.len() >= WAITING_PER_DESTINATION)
            .flat_map(|queue| queue.waiting.iter().map(|ready| ready.row.url.as_str()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .take(MAX_SKIPPED_URLS)
            .map(str::to_owned)
            .collect();
        let delivering = delivering.clone();
        let lease_owner = self.lease_owner.clone();
        let (lease, limit) = (self.lease, (HELD - self.held) as i64);
        Box::pin(async move {
            let skip_urls: Vec<&str> = full.iter().map(String::as_str).collect();
            let ask = outbox::Claim {
                lease_owner: &lease_owner,
                now: delivering.clock.now(),
                lease,
                limit,
                per_url: CLAIM_PER_URL as i64,
                skip_urls: &skip_urls,
            };
            let claimed = outbox::claim(&delivering.store, &ask).await?;
            let signers = signers(&delivering, &claimed).await?;
            Ok((claimed, signers))
        })
    }

    /// Take in what a claim returned: its rows wait behind their destinations.
    async fn take_in(
        &mut self,
        delivering: &Delivering,
        (claimed, signers): (Vec<Claimed>, Signers),
    ) -> anyhow::Result<()> {
        self.last_claim = tokio::time::Instant::now();
        let kept = hold(
            delivering,
            &self.lease_owner,
            claimed,
            signers,
            &mut self.destinations,
            &mut self.limits,
        )
        .await?;
        self.held += kept;
        self.waiting += kept;
        self.refill_below = if kept == 0 { 0 } else { kept / 2 + 1 };
        Ok(())
    }

    /// Move the leases of every row still held forward.
    async fn renew(&mut self, delivering: &Delivering) -> sqlx::Result<()> {
        outbox::renew(
            &delivering.store,
            &self.lease_owner,
            delivering.clock.now() + self.lease,
        )
        .await?;
        self.last_renewal = tokio::time::Instant::now();
        Ok(())
    }

    /// Start waiting rows while there are slots: one per destination in turn, so that no
    /// destination's queue takes every slot of the worker.
    fn start(
        &mut self,
        delivering: &Delivering,
        timeout: Duration,
        attempts: &mut JoinSet<anyhow::Result<bool>>,
        freed: &mpsc::UnboundedSender<Freed>,
    ) {
        let mut started = true;
        while started && self.requests < IN_FLIGHT {
            started = false;
            for (destination, queue) in &mut self.destinations {
                if self.requests >= IN_FLIGHT || queue.in_flight >= queue.limit.current() {
                    continue;
                }
                let Some(ready) = queue.waiting.pop_front() else {
                    continue;
                };
                queue.in_flight += 1;
                self.requests += 1;
                self.waiting -= 1;
                started = true;
                let row = &ready.row;
                let span = tracing::info_span!("webhook", delivery_id = %row.id, key_id = %row.key_id,
                                               event = %row.event, attempt = row.attempts);
                let (delivering, lease_owner) = (delivering.clone(), self.lease_owner.clone());
                queue.limit.started(queue.in_flight);
                let slot = Slot {
                    destination: destination.clone(),
                    answer: None,
                    freed: freed.clone(),
                };
                // Boxed: the task then holds a pointer, not the request's whole state, which
                // the runtime would otherwise copy when the task starts and when it ends.
                attempts.spawn(Box::pin(
                    async move { attempt(&delivering, lease_owner, ready, slot, timeout).await }
                        .instrument(span),
                ));
            }
        }
    }

    /// A request ended: its slot is free, and its destination's limit learns how it answered.
    fn freed(
        &mut self,
        Freed {
            destination,
            answer,
        }: Freed,
    ) {
        self.requests -= 1;
        if let Some(queue) = self.destinations.get_mut(&destination) {
            queue.in_flight = queue.in_flight.saturating_sub(1);
            if let Some(answer) = answer {
                queue.limit.ended(std::time::Instant::now(), answer);
            }
            if queue.in_flight == 0
                && queue.waiting.is_empty()
                && let Some(queue) = self.destinations.remove(&destination)
            {
                if self.limits.len() >= LIMITS_KEPT {
                    self.limits.clear();
                }
                self.limits.insert(destination, queue.limit);
            }
        }
    }
}

/// Queue freshly claimed rows behind their destinations, with the signers of their keys
/// (each key read and opened once); rows whose destination already holds its fill are handed
/// back. The number of rows kept.
async fn hold(
    delivering: &Delivering,
    lease_owner: &str,
    claimed: Vec<Claimed>,
    signers: Signers,
    destinations: &mut HashMap<String, Queue>,
    limits: &mut HashMap<String, Limit>,
) -> anyhow::Result<usize> {
    // A claim's rows share a few URLs: each is parsed and checked once.
    let allow_private = delivering.config.webhook_allow_private;
    let mut targets: HashMap<String, Arc<Destination>> = HashMap::new();
    let mut kept = 0;
    let mut handed_back = Vec::new();
    for row in claimed {
        let to = targets
            .entry(row.url.clone())
            .or_insert_with(|| Arc::new(Destination::of(&row.url, allow_private)));
        let queue = destinations
            .entry(to.key.clone())
            .or_insert_with(|| Queue::new(limits.remove(&to.key)));
        if queue.waiting.len() >= WAITING_PER_DESTINATION {
            // Due as it was: claimed again once this destination has room.
            handed_back.push(row.id);
            continue;
        }
        let signer = signers
            .get(&row.key_id)
            .cloned()
            .unwrap_or(Err(Unsendable::Drop(
                "not sent: the API key no longer exists",
            )));
        let to = to.clone();
        queue.waiting.push_back(Ready { row, to, signer });
        kept += 1;
    }
    if !handed_back.is_empty() {
        let ids: Vec<&str> = handed_back.iter().map(String::as_str).collect();
        outbox::hand_back(&delivering.store, &ids, lease_owner).await?;
    }
    destinations.retain(|_, queue| queue.in_flight > 0 || !queue.waiting.is_empty());
    Ok(kept)
}

/// A revoked (or expired) key's pending deliveries go to the dead letter unsent.
async fn drop_revoked(store: &Store, clock: &dyn Clock) -> sqlx::Result<()> {
    let now = crate::clock::to_millis(clock.now());
    let dropped = sqlx::query(
        "UPDATE webhook_deliveries
         SET status = 'dead', dead_at = $1, lease_owner = NULL, lease_until = NULL,
             last_error_category = 'not_sent',
             last_error = CASE WHEN (SELECT revoked_at FROM api_keys WHERE api_keys.id = webhook_deliveries.key_id) IS NOT NULL
                               THEN 'not sent: the API key was revoked'
                               ELSE 'not sent: the API key expired' END
         WHERE status = 'pending' AND key_id IN (
             SELECT id FROM api_keys WHERE revoked_at IS NOT NULL OR expires_at <= $1)
           AND (lease_until IS NULL OR lease_until <= $1)",
    )
    .bind(now)
    .execute(store.write())
    .await?;
    if dropped.rows_affected() > 0 {
        tracing::info!(
            count = dropped.rows_affected(),
            "dropped webhook deliveries of revoked or expired keys"
        );
    }
    Ok(())
}

/// One attempt of a leased row; `Ok(true)` when a request went out.
async fn attempt(
    delivering: &Delivering,
    lease_owner: Arc<str>,
    ready: Ready,
    mut slot: Slot,
    timeout: Duration,
) -> anyhow::Result<bool> {
    let Delivering {
        store,
        config,
        metrics,
        ..
    } = delivering;
    let clock = &*delivering.clock;
    let Ready { row, to, signer } = ready;
    let signer = match signer {
        Ok(signer) => signer,
        Err(Unsendable::Drop(reason)) => {
            drop(slot);
            tracing::info!(reason, "webhook dropped");
            let outcome = Outcome::Dead {
                status_code: None,
                error: Some((NOT_SENT, reason.to_owned())),
            };
            record(store, &row, lease_owner, clock.now(), outcome).await?;
            return Ok(false);
        }
        Err(Unsendable::Retry(error)) => {
            drop(slot);
            tracing::error!(%error, "cannot sign webhook");
            let failure = Failure {
                category: "signing",
                summary: "the server could not sign this delivery; it will retry".into(),
            };
            fail(store, clock, lease_owner, &row, None, failure).await?;
            return Ok(false);
        }
    };
    let signed = signer.sign(&row.payload, clock.now().timestamp());
    let sent = send(
        &row,
        &to,
        signed,
        &mut slot,
        timeout,
        config.webhook_allow_private,
    )
    .await;
    drop(slot);
    match sent {
        Ok(status_code) => {
            // Per delivery at debug only: a busy node sends thousands a second, and each one is
            // on record in the deliveries API and in the metrics.
            tracing::debug!(status_code, "webhook delivered");
            metrics
                .deliveries_sent
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let outcome = Outcome::Delivered { status_code };
            record(store, &row, lease_owner, clock.now(), outcome).await?;
        }
        Err((status_code, failure, detail)) => {
            tracing::warn!(status_code, category = failure.category, %detail, "webhook attempt failed");
            metrics
                .deliveries_failed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            fail(store, clock, lease_owner, &row, status_code, failure).await?;
        }
    }
    Ok(true)
}

/// Record an attempt's outcome with those of the attempts ending at the same time.
async fn record(
    store: &Store,
    row: &Claimed,
    lease_owner: Arc<str>,
    now: chrono::DateTime<chrono::Utc>,
    outcome: Outcome,
) -> sqlx::Result<()> {
    let written = store
        .group()
        .write(Record::new(&row.id, lease_owner, now, outcome))
        .await?;
    if !written {
        tracing::warn!(
            "webhook outcome not recorded: the lease ran out and another worker holds the row"
        );
    }
    Ok(())
}

/// The category of a delivery that was never sent (the key is gone, revoked or expired).
const NOT_SENT: &str = "not_sent";

/// Why an attempt failed, as its owner sees it: a category and a short sentence of ours. The
/// receiver's body and our HTTP stack's error chain go to the host's log only, never to the
/// deliveries API (the body may hold anything, and the error chain names internals).
struct Failure {
    category: &'static str,
    summary: String,
}

/// Why a row cannot be signed now.
#[derive(Clone)]
enum Unsendable {
    /// For good: the key is gone, revoked or expired.
    Drop(&'static str),
    /// For now: the secret does not open (e.g. a wrong master key); retried on schedule.
    Retry(String),
}

/// What each key of the claimed rows signs with, or why its rows cannot be signed now: every
/// key read in one query, its secret opened and its HMAC keyed once.
async fn signers(delivering: &Delivering, claimed: &[Claimed]) -> sqlx::Result<Signers> {
    let mut key_ids: Vec<&str> = claimed.iter().map(|row| row.key_id.as_str()).collect();
    key_ids.sort_unstable();
    key_ids.dedup();
    let states = outbox::key_states(&delivering.store, &key_ids, delivering.clock.now()).await?;
    Ok(states
        .into_iter()
        .map(|(key_id, state)| (key_id, signer(&delivering.sealer, state)))
        .collect())
}

fn signer(sealer: &Sealer, key: KeyState) -> Result<Arc<Signer>, Unsendable> {
    if key.revoked {
        return Err(Unsendable::Drop("not sent: the API key was revoked"));
    }
    if key.expired {
        return Err(Unsendable::Drop("not sent: the API key expired"));
    }
    let Some(sealed) = key.secret_sealed else {
        return Err(Unsendable::Drop(
            "not sent: the API key has no webhook secret",
        ));
    };
    sealer
        .open(&sealed)
        .map(|secret| Arc::new(Signer::new(&secret)))
        .map_err(|error| Unsendable::Retry(format!("cannot open the webhook secret: {error}")))
}

/// Record a failed attempt: retry on the schedule, or dead-letter after 24 h.
async fn fail(
    store: &Store,
    clock: &dyn Clock,
    lease_owner: Arc<str>,
    row: &Claimed,
    status_code: Option<u16>,
    failure: Failure,
) -> sqlx::Result<()> {
    let now = clock.now();
    let error = Some((failure.category, failure.summary));
    let outcome =
        match schedule::after_failure(row.created_at, row.attempts, now, &mut rand::thread_rng()) {
            AfterFailure::RetryAt(retry_at) => Outcome::Retry {
                status_code,
                error,
                retry_at,
            },
            AfterFailure::GiveUp => {
                tracing::warn!(
                    attempts = row.attempts,
                    "webhook dead-lettered after 24 h of failures"
                );
                Outcome::Dead { status_code, error }
            }
        };
    record(store, row, lease_owner, now, outcome).await
}

/// POST the signed body: the 2xx status, or the status (if any), the failure as the owner sees it
/// and the detail for the log. The slot learns how the destination answered.
async fn send(
    row: &Claimed,
    to: &Destination,
    signed: SignedRequest,
    slot: &mut Slot,
    timeout: Duration,
    allow_private: bool,
) -> Result<u16, (Option<u16>, Failure, String)> {
    let uri = match &to.uri {
        Ok(uri) => uri.clone(),
        Err(Unreachable::Refused(refused)) => {
            let failure = Failure {
                category: "destination_refused",
                summary: refused.clone(),
            };
            return Err((None, failure, refused.clone()));
        }
        Err(Unreachable::Invalid(detail)) => {
            return Err((None, request_failed(), detail.clone()));
        }
    };
    let sender = Sender::shared(allow_private).map_err(|error| {
        let failure = Failure {
            category: "request",
            summary: "the server could not send this delivery; it will retry".into(),
        };
        (None, failure, error)
    })?;
    let began = std::time::Instant::now();
    let posted = sender.post(uri, &row.id, &row.event, signed, timeout).await;
    slot.answer = match &posted {
        Ok(status) => Some(Answer::status(status.as_u16(), began.elapsed())),
        // Our resolver refused the name: the destination was never asked.
        Err(SendError::Refused(_)) => None,
        Err(SendError::Timeout | SendError::Connect(_) | SendError::Other(_)) => {
            Some(Answer::Overloaded)
        }
    };
    let status = posted.map_err(|error| {
        let (failure, detail) = classify(error, timeout);
        (None, failure, detail)
    })?;
    if status.is_success() {
        return Ok(status.as_u16());
    }
    let failure = if status.is_redirection() {
        Failure {
            category: "redirect",
            summary: format!("HTTP {status}: redirects are not followed; use the final URL"),
        }
    } else {
        Failure {
            category: "http_status",
            summary: format!("HTTP {status}"),
        }
    };
    Err((Some(status.as_u16()), failure, format!("HTTP {status}")))
}

/// A failed request as the owner sees it, and the detail for the log (it names resolvers,
/// sockets and TLS internals).
fn classify(error: SendError, timeout: Duration) -> (Failure, String) {
    match error {
        SendError::Timeout => {
            let summary = format!("no response within {} ms", timeout.as_millis());
            let failure = Failure {
                category: "timeout",
                summary: summary.clone(),
            };
            (failure, summary)
        }
        // The resolver refused every address of the name (see `egress`): say so, it is ours.
        SendError::Refused(detail) => {
            let failure = Failure {
                category: "destination_refused",
                summary: "refused: the host name resolves to private or reserved addresses only; \
                          webhooks are delivered to public addresses"
                    .into(),
            };
            (failure, detail)
        }
        SendError::Connect(detail) => {
            let failure = Failure {
                category: "connection",
                summary: "could not connect to the receiver".into(),
            };
            (failure, detail)
        }
        SendError::Other(detail) => (request_failed(), detail),
    }
}

fn request_failed() -> Failure {
    Failure {
        category: "request",
        summary: "the request to the receiver failed".into(),
    }
}
