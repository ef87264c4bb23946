//! Group commit: concurrent writes share one transaction and one flush
//! (docs/architecture.md, "Group commit").
//!
//! A hot write path hands its statements to [`GroupCommit::run`] as a closure over the
//! connection. One committer task per [`Store`](super::Store) takes whatever is queued (at most
//! [`MAX_BATCH`] items), runs each item inside one transaction behind its own savepoint, and
//! commits once. Nobody is answered before that commit returns, so an acknowledged write is as
//! durable as it was with a transaction of its own (`synchronous = FULL` on SQLite, the WAL flush
//! on PostgreSQL), and a batch is whole or absent.
//!
//! Batches form by themselves: while one batch flushes, the next requests queue, so the batch
//! grows with the load and a lone request is committed at once, never held back by a timer.
//! Under load the committer yields to the runtime a few times before a batch
//! ([`GATHER_YIELDS`]), which lets the request tasks that are already running reach the queue.
//! A batch of writes that touch rows of their own ([`BatchWrite::SPREAD_OVER_LANES`]) starts at
//! once while another lane is free: a yield waits for every ready task, and waiting there while
//! a lane stood free made dungeon turns move in one convoy (docs/architecture.md, "Group
//! commit").
//!
//! An item that fails rolls back to its savepoint and the rest of its batch commits. Because a
//! failure inside a batch might come from the batch itself (two nodes' batches locking rows in
//! opposite orders on PostgreSQL), a failed item is run again alone before its caller hears the
//! answer: a caller always gets the answer its write would have had in a transaction of its own.
//! When the batch as a whole cannot commit (a full disk, a lost connection), every item is run
//! again alone, one transaction each; none of them had been acknowledged.
//!
//! On PostgreSQL a batch made of one kind of write whose writes share one statement (the
//! dungeon's turns) is that statement alone, outside a transaction block: PostgreSQL commits it
//! by itself and flushes it before it answers, one round trip for the batch
//! ([`BatchWrite::ONE_STATEMENT_ON_POSTGRES`]).
//!
//! On a SQLite file a batch runs in place ([`crucible_sql`]): its statements on the file's
//! writer connection, on the committer's task, while it holds the writer pool's one connection
//! as the process's write lock; only the commit goes to a blocking thread. Through sqlx every
//! statement would be a hand-off to the connection's worker thread and back.

use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crucible_sql::{Conn, SqliteFile, Transaction};
use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use sqlx::AnyPool;
use tokio::sync::{mpsc, oneshot};

/// The most items one transaction carries: large enough that a flush is shared by hundreds of
/// writes, small enough that a batch's locks and its savepoints stay cheap.
pub(crate) const MAX_BATCH: usize = 256;
/// How many times the committer yields before a batch when the last one had company.
const GATHER_YIELDS: usize = 2;
/// Writes waiting for the committer at most; beyond it callers wait for room (backpressure).
const QUEUE: usize = 4 * MAX_BATCH;
/// How often, at most, the committer has a SQLite file's WAL copied into the file beside the
/// writers ([`Checkpoints`]). At once a second, dungeon turns' p99 at 20 % of the floor was
/// 50-54 ms on SQLite; at a tenth of a second, 24-28 ms (docs/benchmarks.md, session 36).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);
/// Checkpoints beside the writers at most, after the one that found the WAL long, before the
/// lane catches up ([`close_in`]).
const CLOSING_ROUNDS: usize = 4;
/// SQLite's own checkpoint threshold, in WAL frames (pages): a backstop the lane's catch-ups
/// keep the WAL below ([`catch_up_from`]).
const BACKSTOP_FRAMES: i64 = crucible_sql::WAL_AUTOCHECKPOINT_PAGES as i64;

/// The WAL's length, in frames, from which the lane catches up after a checkpoint beside the
/// writers ([`Checkpoints`]), given how many frames the WAL grew by since the checkpoint before:
/// as late as leaves room below SQLite's backstop for two more checkpoints' growth, and never
/// sooner than a quarter of the backstop (64 MiB). Each catch-up is a stall of the lane (2-8 ms
/// under paced turns), so the fewer the better as long as no commit crosses the backstop and
/// copies the WAL inside the write lock. Paced turns on a fast machine grew the WAL by about
/// 1,600 frames a checkpoint: from a quarter of the backstop that was three catch-ups a second,
/// from three quarters one, and the turns' p99 fell from a median of 21.0 ms to 17.5 ms over
/// 13 runs each (docs/benchmarks.md, session 41).
fn catch_up_from(growth: i64) -> i64 {
    (BACKSTOP_FRAMES - 2 * growth).max(BACKSTOP_FRAMES / 4)
}

/// How many frames the WAL grew by between two checkpoints that found it `before` and then
/// `frames` long: a WAL shorter than before started over meanwhile, and all of it is new.
fn growth(before: i64, frames: i64) -> i64 {
    if frames >= before {
        frames - before
    } else {
        frames
    }
}

/// One write: its statements, run against the batch's transaction. It may be run more than once
/// (again alone, after its batch failed), each time in a fresh transaction.
pub(crate) type Work<T, E> =
    Box<dyn for<'c, 'd> FnMut(&'c mut Conn<'d>) -> BoxFuture<'c, Result<T, E>> + Send>;

/// The group committer of one writer pool. Cheap to clone; the committer task starts with the
/// first write, on the runtime that sends it.
#[derive(Clone)]
pub(crate) struct GroupCommit {
    writer: Writer,
    /// Batches that may be in flight at once ([`GroupCommit::with_lanes`]).
    lanes: usize,
    queue: Arc<OnceLock<mpsc::Sender<Box<dyn Item>>>>,
    counts: Arc<Counts>,
}

/// Transactions committed and the writes they carried, and how long the batches took
/// (`GET /metrics`).
#[derive(Default)]
struct Counts {
    batches: AtomicU64,
    writes: AtomicU64,
    times: BatchTimes,
    /// How long each write waited, from being queued to its answer ([`GroupCommit::wait_seconds`]).
    waits: BatchTimes,
    /// How long the lane held every write to catch up a SQLite WAL ([`Checkpoints`]).
    catch_ups: BatchTimes,
}

/// Upper bounds of the buckets of [`BatchSeconds`], in seconds: from a batch on a disk that
/// flushes at once to the stalls a disk can have.
pub(crate) const BATCH_SECONDS_BOUNDS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// The bucket of [`BATCH_SECONDS_BOUNDS`] that `seconds` falls in (the first bound at or above
/// it), or none past the last; the HTTP latency histogram places its requests the same way.
pub(crate) fn bucket_of(seconds: f64) -> Option<usize> {
    BATCH_SECONDS_BOUNDS
        .iter()
        .position(|bound| seconds <= *bound)
}

/// A histogram of durations over [`BATCH_SECONDS_BOUNDS`]: how long batches took, from their
/// first statement to their commit's return (the flush included), counted as they finish; or
/// how long writes waited for their answer. A write is answered no sooner than its batch
/// commits, so when a host's tail is long, the two say whether the disk's flushes are why or
/// the wait before a batch (docs/architecture.md, "Group commit").
#[derive(Default)]
struct BatchTimes {
    /// Batches at or under each bound of [`BATCH_SECONDS_BOUNDS`] (not cumulative); longer
    /// ones are only in `count`.
    buckets: [AtomicU64; BATCH_SECONDS_BOUNDS.len()],
    micros: AtomicU64,
    count: AtomicU64,
}

impl BatchTimes {
    fn observe(&self, took: Duration) {
        if let Some(bucket) = bucket_of(took.as_secs_f64()) {
            self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.micros.fetch_add(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self) -> BatchSeconds {
        BatchSeconds {
            buckets: std::array::from_fn(|n| self.buckets[n].load(Ordering::Relaxed)),
            seconds: self.micros.load(Ordering::Relaxed) as f64 / 1e6,
            count: self.count.load(Ordering::Relaxed),
        }
    }
}

/// A histogram of batch durations as read ([`BATCH_SECONDS_BOUNDS`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct BatchSeconds {
    /// Batches at or under each bound (not cumulative).
    pub buckets: [u64; BATCH_SECONDS_BOUNDS.len()],
    /// Their durations summed.
    pub seconds: f64,
    pub count: u64,
}

impl std::ops::Add for BatchSeconds {
    type Output = BatchSeconds;

    fn add(self, other: BatchSeconds) -> BatchSeconds {
        BatchSeconds {
            buckets: std::array::from_fn(|n| self.buckets[n] + other.buckets[n]),
            seconds: self.seconds + other.seconds,
            count: self.count + other.count,
        }
    }
}

/// Where batches are written: the writer pool, and on a SQLite file the file's connections.
#[derive(Clone)]
struct Writer {
    pool: AnyPool,
    file: Option<SqliteFile>,
    /// The pool is PostgreSQL's, where a lone statement commits by itself.
    postgres: bool,
}

impl Writer {
    async fn begin(&self) -> Result<Transaction, sqlx::Error> {
        Transaction::begin(&self.pool, self.file.as_ref()).await
    }
}

impl GroupCommit {
    /// The committer of `writer`'s writes; on a SQLite file, `file` runs them in place.
    pub(crate) fn new(writer: AnyPool, file: Option<SqliteFile>) -> Self {
        Self::with_lanes(writer, file, 1)
    }

    /// A committer with up to `lanes` batches in flight at once, each in a transaction of its
    /// own. On PostgreSQL a batch spends most of its time in round trips and in the server's
    /// flush, during which the next batch can run its statements on another connection (and
    /// the server flushes their commits together); on SQLite, one writer, one lane.
    pub(crate) fn with_lanes(writer: AnyPool, file: Option<SqliteFile>, lanes: usize) -> Self {
        let postgres = writer
            .connect_options()
            .database_url
            .scheme()
            .starts_with("postgres");
        GroupCommit {
            writer: Writer {
                pool: writer,
                file,
                postgres,
            },
            lanes: lanes.max(1),
            queue: Arc::new(OnceLock::new()),
            counts: Arc::default(),
        }
    }

    /// Batches committed so far and the writes they carried: their ratio is the mean batch.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.counts.batches.load(Ordering::Relaxed),
            self.counts.writes.load(Ordering::Relaxed),
        )
    }

    /// How long the batches committed so far took ([`BatchTimes`]).
    pub(crate) fn batch_seconds(&self) -> BatchSeconds {
        self.counts.times.read()
    }

    /// How long the writes answered so far waited, from being queued to their answer: the
    /// wait for the committer and a free lane, their batch, and the run alone of a write that
    /// failed in it. Beside [`GroupCommit::batch_seconds`], what is not the batch's own time.
    pub(crate) fn wait_seconds(&self) -> BatchSeconds {
        self.counts.waits.read()
    }

    /// How long the lane held every write, each time it caught up a SQLite file's WAL after a
    /// checkpoint beside the writers ([`Checkpoints`]); none on PostgreSQL. Each is a stall all
    /// the writes queued meanwhile wait out, so they are the first suspect of a long tail.
    pub(crate) fn catch_up_seconds(&self) -> BatchSeconds {
        self.counts.catch_ups.read()
    }

    /// Run `work` in the next batch and answer once that batch has committed: `Ok` only when
    /// the write is durable, its own error when it failed (and then it changed nothing).
    pub(crate) async fn run<T, E>(&self, work: Work<T, E>) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<sqlx::Error> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let item = Box::new(Pending {
            work,
            answer: Answer::new(reply),
        });
        self.answered(item, answer).await
    }

    /// Like [`GroupCommit::run`], for a kind of write whose writes of one batch share their
    /// statements ([`BatchWrite::apply_all`]).
    pub(crate) async fn write<W: BatchWrite>(&self, write: W) -> Result<W::Output, W::Error> {
        let (reply, answer) = oneshot::channel();
        let item = Box::new(Batched {
            write: Arc::new(write),
            answer: Answer::new(reply),
        });
        self.answered(item, answer).await
    }

    /// Queue `item` and wait for its `answer`, timing the wait ([`GroupCommit::wait_seconds`]).
    async fn answered<T, E: From<sqlx::Error>>(
        &self,
        item: Box<dyn Item>,
        answer: oneshot::Receiver<Result<T, E>>,
    ) -> Result<T, E> {
        let queued = Instant::now();
        self.enqueue(item).await;
        let outcome = answer.await.unwrap_or_else(|_| Err(gone()));
        self.counts.waits.observe(queued.elapsed());
        outcome
    }

    async fn enqueue(&self, item: Box<dyn Item>) {
        let queue = self.queue.get_or_init(|| {
            let (sender, receiver) = mpsc::channel(QUEUE);
            tokio::spawn(commit_batches(
                self.writer.clone(),
                receiver,
                self.counts.clone(),
                self.lanes,
            ));
            sender
        });
        if let Err(unsent) = queue.send(item).await {
            // The committer's runtime is gone (a store outliving the runtime that first wrote
            // through it): this write runs alone, here.
            alone_answered(&self.writer, unsent.0).await;
        }
    }
}

/// What [`BatchWrite::apply_all`] gives: one outcome per write, or the error that failed them
/// all.
pub(crate) type Outcomes<T, E> = Result<Vec<Result<T, E>>, sqlx::Error>;

/// A kind of write whose writes in one batch share their statements: one `UPDATE … FROM
/// (VALUES …)` for every dungeon turn of the batch instead of one per turn, say.
pub(crate) trait BatchWrite: Send + Sync + Sized + 'static {
    type Output: Send + 'static;
    type Error: From<sqlx::Error> + Send + 'static;

    /// True when, on PostgreSQL, [`BatchWrite::apply_all`] runs exactly one statement. A batch of
    /// nothing but writes of this kind then runs that statement outside any transaction
    /// block: PostgreSQL commits a lone statement by itself, whole or not at all, and flushes
    /// it before answering, so the batch costs one round trip instead of `BEGIN`, a round trip
    /// per statement and `COMMIT`. The kind's writes must then never need a savepoint: a
    /// write whose outcome is an error has written nothing, as [`BatchWrite::apply_all`] asks.
    const ONE_STATEMENT_ON_POSTGRES: bool = false;

    /// True when the writes of this kind touch rows of their own (each dungeon turn its run's):
    /// batches of them in flight at once do not wait on each other, so a batch that starts
    /// with one of them starts at once while a lane is free. Writes that meet on one row (every
    /// registration locks its tournament's) keep gathering: lanes would only queue on the row
    /// with smaller batches.
    const SPREAD_OVER_LANES: bool = false;

    /// Apply `writes` (a batch's writes of this kind, at least one) on `conn`: one outcome per
    /// write, in order. A write whose outcome is an error must have written nothing; an `Err`
    /// of the whole call fails the batch (its writes then run again one by one).
    fn apply_all<'c, 'd>(
        writes: &'c [Arc<Self>],
        conn: &'c mut Conn<'d>,
    ) -> BoxFuture<'c, Outcomes<Self::Output, Self::Error>>;
}

/// A queued write with its type erased, so one batch can mix kinds of write.
trait Item: Send {
    /// Run the write on `conn`; true when it succeeded (its effects stay in the transaction).
    fn apply<'c, 'd>(&'c mut self, conn: &'c mut Conn<'d>) -> BoxFuture<'c, bool>;
    /// Answer the caller with the outcome of the last [`Item::apply`] (its batch committed).
    fn settle(self: Box<Self>);
    /// Answer the caller with `error` (its transaction could not commit).
    fn fail(self: Box<Self>, error: sqlx::Error);
    /// The item's [`BatchWrite`] kind; `None` for a closure ([`Work`]), which runs behind a
    /// savepoint of its own.
    fn kind(&self) -> Option<Kind> {
        None
    }
    fn as_any(&mut self) -> &mut dyn Any;
}

/// A kind of [`BatchWrite`] as the committer sees it: which kind (writes of one kind are applied
/// together), how to apply a group of them, and the kind's constants.
#[derive(Clone, Copy)]
struct Kind {
    id: TypeId,
    apply: ApplyGroup,
    /// [`BatchWrite::ONE_STATEMENT_ON_POSTGRES`].
    one_statement_on_postgres: bool,
    /// [`BatchWrite::SPREAD_OVER_LANES`].
    spreads_over_lanes: bool,
}

impl Kind {
    fn of<W: BatchWrite>() -> Self {
        Kind {
            id: TypeId::of::<W>(),
            apply: apply_group::<W>,
            one_statement_on_postgres: W::ONE_STATEMENT_ON_POSTGRES,
            spreads_over_lanes: W::SPREAD_OVER_LANES,
        }
    }
}

/// The [`Kind`] id of `item`, `None` for a closure.
fn kind_id(item: &dyn Item) -> Option<TypeId> {
    item.kind().map(|kind| kind.id)
}

/// Applies a group of items of one kind together; the positions of those that failed (and
/// wrote nothing).
type ApplyGroup = for<'c, 'd> fn(
    &'c mut [Box<dyn Item>],
    &'c mut Conn<'d>,
) -> BoxFuture<'c, Result<Vec<usize>, sqlx::Error>>;

/// A write's outcome until its batch commits, and where it goes then.
struct Answer<T, E> {
    outcome: Option<Result<T, E>>,
    reply: oneshot::Sender<Result<T, E>>,
}

impl<T, E: From<sqlx::Error>> Answer<T, E> {
    fn new(reply: oneshot::Sender<Result<T, E>>) -> Self {
        Answer {
            outcome: None,
            reply,
        }
    }

    /// Keep `outcome`; whether it succeeded.
    fn record(&mut self, outcome: Result<T, E>) -> bool {
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn settle(self) {
        let outcome = self.outcome.unwrap_or_else(|| Err(gone()));
        // The caller may have gone (its request was cancelled); the write stands either way.
        let _ = self.reply.send(outcome);
    }

    fn fail(self, error: sqlx::Error) {
        let _ = self.reply.send(Err(error.into()));
    }
}

struct Pending<T, E> {
    work: Work<T, E>,
    answer: Answer<T, E>,
}

impl<T, E> Item for Pending<T, E>
where
    T: Send + 'static,
    E: From<sqlx::Error> + Send + 'static,
{
    fn apply<'c, 'd>(&'c mut self, conn: &'c mut Conn<'d>) -> BoxFuture<'c, bool> {
        Box::pin(async move {
            let outcome = (self.work)(conn).await;
            self.answer.record(outcome)
        })
    }

    fn settle(self: Box<Self>) {
        self.answer.settle();
    }

    fn fail(self: Box<Self>, error: sqlx::Error) {
        self.answer.fail(error);
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

struct Batched<W: BatchWrite> {
    write: Arc<W>,
    answer: Answer<W::Output, W::Error>,
}

impl<W: BatchWrite> Item for Batched<W> {
    fn apply<'c, 'd>(&'c mut self, conn: &'c mut Conn<'d>) -> BoxFuture<'c, bool> {
        Box::pin(async move {
            let outcome = match W::apply_all(std::slice::from_ref(&self.write), conn).await {
                Ok(mut outcomes) => outcomes.pop().unwrap_or_else(|| Err(gone())),
                Err(error) => Err(error.into()),
            };
            self.answer.record(outcome)
        })
    }

    fn settle(self: Box<Self>) {
        self.answer.settle();
    }

    fn fail(self: Box<Self>, error: sqlx::Error) {
        self.answer.fail(error);
    }

    fn kind(&self) -> Option<Kind> {
        Some(Kind::of::<W>())
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

/// [`ApplyGroup`] for the writes of kind `W`: [`BatchWrite::apply_all`] on all of them, each
/// item given its outcome.
fn apply_group<'c, 'd, W: BatchWrite>(
    group: &'c mut [Box<dyn Item>],
    conn: &'c mut Conn<'d>,
) -> BoxFuture<'c, Result<Vec<usize>, sqlx::Error>> {
    Box::pin(async move {
        let mut writes = Vec::with_capacity(group.len());
        for item in group.iter_mut() {
            if let Some(batched) = item.as_any().downcast_mut::<Batched<W>>() {
                writes.push(batched.write.clone());
            }
        }
        let outcomes = W::apply_all(&writes, conn).await?;
        if outcomes.len() != group.len() {
            return Err(sqlx::Error::Protocol(format!(
                "a batch of {} writes gave {} outcomes",
                group.len(),
                outcomes.len()
            )));
        }
        let mut failed = Vec::new();
        for (index, (item, outcome)) in group.iter_mut().zip(outcomes).enumerate() {
            if outcome.is_err() {
                failed.push(index);
            }
            if let Some(batched) = item.as_any().downcast_mut::<Batched<W>>() {
                batched.answer.outcome = Some(outcome);
            }
        }
        Ok(failed)
    })
}

/// The answer of a write whose committer stopped before answering (its runtime shut down): the
/// database is out of reach as far as the caller can tell, and nothing was acknowledged.
fn gone<E: From<sqlx::Error>>() -> E {
    sqlx::Error::WorkerCrashed.into()
}

/// The committer, until every sender is gone: one batch at a time with one lane, up to `lanes`
/// in flight otherwise.
async fn commit_batches(
    writer: Writer,
    queue: mpsc::Receiver<Box<dyn Item>>,
    counts: Arc<Counts>,
    lanes: usize,
) {
    let mut gather = Gather {
        queue,
        counts,
        last_batch: 0,
    };
    if lanes > 1 {
        return commit_in_lanes(writer, gather, lanes).await;
    }
    let mut checkpoints = Checkpoints::new(writer.file.clone());
    // One batch at a time: its vector is emptied by the commit and filled again.
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = gather.queue.recv().await {
        gather.batch(first, false, &mut batch).await;
        commit(&writer, &mut batch, &gather.counts.times).await;
        checkpoints.after_batch(&gather.counts.catch_ups).await;
    }
}

/// Up to `lanes` batches in flight at once, each in a transaction of its own. They run inside
/// the committer's task rather than as tasks of their own: a spawned batch waited for its first
/// poll behind every task that was ready before it, so each write paid one more pass of the
/// runtime's queue before its statement left (docs/architecture.md, "Group commit").
async fn commit_in_lanes(writer: Writer, mut gather: Gather, lanes: usize) {
    let mut in_flight: FuturesUnordered<BoxFuture<'static, ()>> = FuturesUnordered::new();
    loop {
        let first = tokio::select! {
            // A batch that committed frees its lane.
            Some(()) = in_flight.next(), if !in_flight.is_empty() => continue,
            // A batch is gathered once a lane is free, so it takes what queued meanwhile.
            item = gather.queue.recv(), if in_flight.len() < lanes => match item {
                Some(item) => item,
                None => break,
            },
        };
        // With a lane to spare, a batch of writes that spread over lanes starts at once: while
        // it is in flight, what queues meanwhile goes to the next lane. Other batches, and the
        // last free lane, wait for company.
        let at_once =
            first.kind().is_some_and(|kind| kind.spreads_over_lanes) && in_flight.len() + 1 < lanes;
        // The batch leaves with its vector, so each one in flight has its own.
        let mut batch = Vec::with_capacity(MAX_BATCH);
        {
            let gathering = gather.batch(first, at_once, &mut batch);
            tokio::pin!(gathering);
            // Batches in flight go on while this one waits for company.
            loop {
                tokio::select! {
                    () = &mut gathering => break,
                    Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
                }
            }
        }
        let (writer, counts) = (writer.clone(), gather.counts.clone());
        // Polled by the next `in_flight.next()` above, at once: its statement leaves now.
        in_flight.push(Box::pin(async move {
            commit(&writer, &mut batch, &counts.times).await;
        }));
    }
    while in_flight.next().await.is_some() {}
}

/// The committer's queue, and how batches are taken from it.
struct Gather {
    queue: mpsc::Receiver<Box<dyn Item>>,
    counts: Arc<Counts>,
    /// The size of the batch before: under load (more than one), the next one waits for
    /// company ([`GATHER_YIELDS`]).
    last_batch: usize,
}

impl Gather {
    /// Fill the empty `batch` with `first` and what is queued behind it, up to [`MAX_BATCH`];
    /// under load, unless `at_once`, after letting the tasks that are ready reach the queue.
    async fn batch(&mut self, first: Box<dyn Item>, at_once: bool, batch: &mut Vec<Box<dyn Item>>) {
        batch.push(first);
        if self.last_batch > 1 && !at_once {
            for _ in 0..GATHER_YIELDS {
                tokio::task::yield_now().await;
            }
        }
        while batch.len() < MAX_BATCH {
            match self.queue.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        self.last_batch = batch.len();
        self.counts.batches.fetch_add(1, Ordering::Relaxed);
        self.counts
            .writes
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
}

/// The committer's WAL checkpoints on a SQLite file (docs/architecture.md, "Checkpoints").
///
/// At most every [`CHECKPOINT_EVERY`] a `PASSIVE` checkpoint copies the WAL into the file on a
/// blocking thread, beside the writers. It cannot copy what batches append while it runs, and
/// SQLite starts the WAL over only once every frame in it is copied, so under a sustained load
/// the WAL grew to SQLite's backstop and the commit that crossed it copied, inside the write
/// lock, up to a tenth of a second of batches. So when a checkpoint beside the writers finds the
/// WAL long enough ([`catch_up_from`]), a few more close in on its end ([`close_in`]), and the
/// lane copies what the last one could not (about a flush's worth of batches) before its next
/// batch: the WAL is then all in the file, and the next batch starts it over. Below that length
/// the WAL just grows; once it has been that long, it is rewritten in place, so a flush does not
/// pay for the file growing.
struct Checkpoints {
    file: Option<SqliteFile>,
    last: Instant,
    running: Arc<AtomicBool>,
    /// Set when a checkpoint beside the writers found the WAL long enough: the lane catches up
    /// before its next batch.
    catch_up: Arc<AtomicBool>,
    /// The WAL's length, in frames, when the last checkpoint beside the writers ran.
    frames_before: Arc<AtomicI64>,
}

impl Checkpoints {
    fn new(file: Option<SqliteFile>) -> Self {
        Checkpoints {
            file,
            last: Instant::now(),
            running: Arc::default(),
            catch_up: Arc::default(),
            frames_before: Arc::default(),
        }
    }

    /// Between two batches of the lane: catch up after a checkpoint that found the WAL long
    /// (timed into `stalls`), and start the next one when it is time.
    async fn after_batch(&mut self, stalls: &BatchTimes) {
        let Some(file) = &self.file else {
            return;
        };
        if self.catch_up.swap(false, Ordering::AcqRel) {
            let began = Instant::now();
            let file = file.clone();
            if let Err(error) = tokio::task::spawn_blocking(move || checkpoint(&file)).await {
                tracing::warn!(%error, "a WAL checkpoint's thread failed");
            }
            stalls.observe(began.elapsed());
        }
        if self.last.elapsed() < CHECKPOINT_EVERY || self.running.swap(true, Ordering::AcqRel) {
            return;
        }
        self.last = Instant::now();
        let (file, running, catch_up, frames_before) = (
            file.clone(),
            self.running.clone(),
            self.catch_up.clone(),
            self.frames_before.clone(),
        );
        tokio::task::spawn_blocking(move || {
            if let Some(frames) = checkpoint(&file) {
                let before = frames_before.swap(frames, Ordering::AcqRel);
                if frames >= catch_up_from(growth(before, frames))
                    && let Some(frames) = close_in(&file, frames)
                {
                    frames_before.store(frames, Ordering::Release);
                    catch_up.store(true, Ordering::Release);
                }
            }
            running.store(false, Ordering::Release);
        });
    }
}

/// Before the lane catches up a WAL a checkpoint beside the writers found `frames` long: more
/// checkpoints beside the writers, each copying what was appended while the one before it ran,
/// until what they find appended no longer shrinks by half (at most [`CLOSING_ROUNDS`]). The
/// lane then copies only what the last one could not. A checkpoint's time is mostly its flush of
/// the database file, so the frames appended meanwhile shrink to about a flush's worth, and so
/// does the lane's stall: it copied the frames of a whole checkpoint beside the writers before,
/// 6-10 ms at the median and up to 47 ms under registrations (docs/architecture.md,
/// "Checkpoints"). The WAL's length when the last one ran, or none when the WAL started over
/// meanwhile (every frame had been copied, and a batch began a new WAL): then nothing is left
/// to catch up.
fn close_in(file: &SqliteFile, mut frames: i64) -> Option<i64> {
    let mut appended = i64::MAX;
    for _ in 0..CLOSING_ROUNDS {
        let now = checkpoint(file)?;
        if now < frames {
            return None;
        }
        let before = std::mem::replace(&mut appended, now - frames);
        frames = now;
        if appended == 0 || appended > before / 2 {
            break;
        }
    }
    Some(frames)
}

/// One `PASSIVE` checkpoint of `file`: the frames the WAL held, or none when it failed (a failure
/// is logged; the next one tries again).
fn checkpoint(file: &SqliteFile) -> Option<i64> {
    match file.checkpoint() {
        Ok((frames, _copied)) => Some(frames),
        Err(error) => {
            tracing::warn!(%error, "a WAL checkpoint failed; the next one tries again");
            None
        }
    }
}

/// Commit `batch` (emptying it): together when that works, otherwise each item alone.
async fn commit(writer: &Writer, batch: &mut Vec<Box<dyn Item>>, times: &BatchTimes) {
    // Timed up to the commit's return, before anyone is answered: a caller that reads the
    // metrics after its answer finds its batch counted.
    let began = Instant::now();
    if batch.len() == 1 {
        if let Some(mut item) = batch.pop() {
            let outcome = alone(writer, &mut item).await;
            times.observe(began.elapsed());
            answer(item, outcome);
        }
        return;
    }
    let outcome = together(writer, batch).await;
    times.observe(began.elapsed());
    match outcome {
        Ok(failed) => {
            let mut retry = Vec::new();
            for (index, item) in batch.drain(..).enumerate() {
                if failed.contains(&index) {
                    retry.push(item);
                } else {
                    item.settle();
                }
            }
            for item in retry {
                alone_answered(writer, item).await;
            }
        }
        Err(error) => {
            tracing::warn!(%error, size = batch.len(), "a write batch could not commit; its writes run one by one");
            for item in batch.drain(..) {
                alone_answered(writer, item).await;
            }
        }
    }
}

/// Answer `item`'s caller with how its transaction ended.
fn answer(item: Box<dyn Item>, outcome: Result<(), sqlx::Error>) {
    match outcome {
        Ok(()) => item.settle(),
        Err(error) => item.fail(error),
    }
}

/// Run `batch` in one transaction and commit it: the writes of each [`BatchWrite`] kind
/// together, every other item behind its own savepoint. The positions of the items that failed
/// (and left nothing behind).
async fn together(writer: &Writer, batch: &mut [Box<dyn Item>]) -> Result<Vec<usize>, sqlx::Error> {
    if let Some(apply) = one_statement(writer, batch) {
        return run_statement(writer, apply, batch).await;
    }
    // Writes of one kind side by side (the order between callers' writes is free: they are
    // concurrent, and all of them commit at once).
    batch.sort_by_key(|item| kind_id(item.as_ref()));
    let mut tx = writer.begin().await?;
    let mut failed = Vec::new();
    let mut start = 0;
    while start < batch.len() {
        if let Some(kind) = batch[start].kind() {
            let len = batch[start..]
                .iter()
                .take_while(|item| kind_id(item.as_ref()) == Some(kind.id))
                .count();
            let positions = (kind.apply)(&mut batch[start..start + len], &mut tx.conn()?).await?;
            failed.extend(positions.into_iter().map(|position| start + position));
            start += len;
            continue;
        }
        tx.savepoint("group_item").await?;
        if !batch[start].apply(&mut tx.conn()?).await {
            failed.push(start);
            tx.rollback_to("group_item").await?;
        }
        tx.release("group_item").await?;
        start += 1;
    }
    tx.commit().await?;
    Ok(failed)
}

/// How to apply `batch` as one statement that commits by itself, when it can be: on
/// PostgreSQL, every item of one kind whose writes are one statement
/// ([`BatchWrite::ONE_STATEMENT_ON_POSTGRES`]).
fn one_statement(writer: &Writer, batch: &[Box<dyn Item>]) -> Option<ApplyGroup> {
    let first = batch.first()?;
    let kind = first.kind()?;
    let alike = batch
        .iter()
        .all(|item| kind_id(item.as_ref()) == Some(kind.id));
    (writer.postgres && kind.one_statement_on_postgres && alike).then_some(kind.apply)
}

/// Apply `batch` by `apply` on a pooled connection outside a transaction block: one statement
/// that commits by itself ([`one_statement`]).
async fn run_statement(
    writer: &Writer,
    apply: ApplyGroup,
    batch: &mut [Box<dyn Item>],
) -> Result<Vec<usize>, sqlx::Error> {
    let mut conn = writer.pool.acquire().await?;
    apply(batch, &mut Conn::Any(&mut conn)).await
}

/// Run `item` in a transaction of its own and answer it (the retries, untimed).
async fn alone_answered(writer: &Writer, mut item: Box<dyn Item>) {
    let outcome = alone(writer, &mut item).await;
    answer(item, outcome);
}

/// Run `item` in a transaction of its own: how that transaction ended (the caller answers
/// the item with it, [`answer`]).
async fn alone(writer: &Writer, item: &mut Box<dyn Item>) -> Result<(), sqlx::Error> {
    if let Some(apply) = one_statement(writer, std::slice::from_ref(item)) {
        return run_statement(writer, apply, std::slice::from_mut(item))
            .await
            .map(|_| ());
    }
    let mut tx = writer.begin().await?;
    if item.apply(&mut tx.conn()?).await {
        tx.commit().await
    } else {
        tx.rollback().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Store;

    #[test]
    fn batch_times_fall_in_the_first_bucket_that_holds_them() {
        let times = BatchTimes::default();
        times.observe(Duration::from_micros(300));
        times.observe(Duration::from_micros(500));
        times.observe(Duration::from_millis(40));
        times.observe(Duration::from_secs(3));
        let read = times.read();
        assert_eq!(read.count, 4);
        assert_eq!(read.buckets[0], 2, "0.5 ms is inside its bound");
        assert_eq!(read.buckets[6], 1, "40 ms is under 50 ms");
        assert_eq!(
            read.buckets.iter().sum::<u64>(),
            3,
            "3 s is past the last bound"
        );
        assert!((read.seconds - 3.0408).abs() < 1e-9, "{}", read.seconds);
        assert_eq!((read + read).count, 8);
    }

    #[derive(Debug, thiserror::Error)]
    enum TestError {
        #[error(transparent)]
        Sql(#[from] sqlx::Error),
        #[error("refused")]
        Refused,
    }

    /// `rows` rows of 3,000 bytes, a page each, with the ids after `first`, in one statement.
    async fn insert_pages(store: &Store, first: i64, rows: i64) {
        sqlx::query(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) \
             INSERT INTO items (id, note) SELECT $1 + i, hex(randomblob(1500)) FROM n",
        )
        .bind(first)
        .bind(rows)
        .execute(store.write())
        .await
        .expect("insert");
    }

    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("dir");
        let url = crate::config::sqlite_url_in(dir.path());
        let store = Store::connect(&url).await.expect("connect");
        sqlx::query("CREATE TABLE items (id INTEGER PRIMARY KEY, note TEXT NOT NULL)")
            .execute(store.write())
            .await
            .expect("table");
        (dir, store)
    }

    /// Insert `id` twice when `twice` (the second insert fails after the first one wrote).
    fn insert(id: i64, twice: bool) -> Work<i64, TestError> {
        Box::new(move |conn| {
            Box::pin(async move {
                crucible_sql::query("INSERT INTO items (id, note) VALUES ($1, 'x')")
                    .bind(id)
                    .execute(conn)
                    .await?;
                if twice {
                    crucible_sql::query("INSERT INTO items (id, note) VALUES ($1, 'x')")
                        .bind(id)
                        .execute(conn)
                        .await?;
                }
                if id < 0 {
                    return Err(TestError::Refused);
                }
                Ok(id)
            })
        })
    }

    async fn ids(store: &Store) -> Vec<i64> {
        sqlx::query_as::<_, (i64,)>("SELECT id FROM items ORDER BY id")
            .fetch_all(store.read())
            .await
            .expect("ids")
            .into_iter()
            .map(|(id,)| id)
            .collect()
    }

    #[tokio::test]
    async fn concurrent_writes_commit_and_a_failing_one_fails_alone() {
        // In place on the file, through sqlx's writer pool, and with three batches in flight
        // at once (as on PostgreSQL; here they take the one writer connection in turn).
        for (in_place, lanes) in [(true, 1), (false, 1), (false, 3)] {
            concurrent_writes(in_place, lanes).await;
        }
    }

    async fn concurrent_writes(in_place: bool, lanes: usize) {
        let (_dir, store) = store().await;
        assert!(store.sqlite_file().is_some());
        let file = store.sqlite_file().cloned().filter(|_| in_place);
        let group = GroupCommit::with_lanes(store.write().clone(), file, lanes);
        let mut calls = Vec::new();
        for id in 1..=300_i64 {
            let group = group.clone();
            // 7 fails half-way (its first insert must not survive); -5 writes, then refuses.
            let work = insert(if id == 5 { -5 } else { id }, id == 7);
            calls.push(tokio::spawn(async move { group.run(work).await }));
        }
        let mut answers = Vec::new();
        for call in calls {
            answers.push(call.await.expect("task"));
        }
        assert!(matches!(answers[4], Err(TestError::Refused)));
        assert!(matches!(answers[6], Err(TestError::Sql(_))));
        let stored = ids(&store).await;
        let expected: Vec<i64> = (1..=300).filter(|id| *id != 5 && *id != 7).collect();
        assert_eq!(stored, expected);
        let (batches, writes) = group.counts();
        assert_eq!(writes, 300);
        assert!(
            batches < 30,
            "300 concurrent writes took {batches} transactions"
        );
        for (index, answer) in answers.iter().enumerate() {
            let id = index as i64 + 1;
            if id != 5 && id != 7 {
                assert_eq!(answer.as_ref().ok(), Some(&id));
            }
        }
    }

    /// Once a checkpoint beside the writers is done, the lane copies what was appended while it
    /// ran, so the next write starts the WAL over: it holds that write's frames alone, not every
    /// batch's since the stream began.
    #[tokio::test]
    async fn after_a_checkpoint_the_lane_catches_up_and_the_wal_starts_over() {
        let (_dir, store) = store().await;
        let file = store.sqlite_file().cloned().expect("a file");
        insert_pages(&store, 0, 200).await;
        // A checkpoint beside the writers has just finished (and the next is not due yet).
        let mut checkpoints = Checkpoints::new(Some(file.clone()));
        checkpoints.catch_up.store(true, Ordering::Release);
        let stalls = BatchTimes::default();
        checkpoints.after_batch(&stalls).await;
        assert_eq!(stalls.read().count, 1, "the catch-up is timed");
        insert_pages(&store, 1000, 1).await;
        let (frames, copied) = tokio::task::spawn_blocking(move || file.checkpoint())
            .await
            .expect("thread")
            .expect("checkpoint");
        assert_eq!(frames, copied);
        assert!(frames < 10, "the WAL holds {frames} frames after one row");
    }

    /// Start a checkpoint beside the writers now, as the lane would once it is due, and wait for
    /// it: whether it asks the lane to catch up.
    async fn checkpoint_beside(checkpoints: &mut Checkpoints) -> bool {
        checkpoints.last = Instant::now()
            .checked_sub(CHECKPOINT_EVERY)
            .expect("a past instant");
        checkpoints.after_batch(&BatchTimes::default()).await;
        assert!(checkpoints.running.load(Ordering::Acquire), "started");
        for _ in 0..1000 {
            if !checkpoints.running.load(Ordering::Acquire) {
                return checkpoints.catch_up.swap(false, Ordering::AcqRel);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the checkpoint beside the writers never finished");
    }

    /// A short WAL is left to grow: the lane stalls to catch up only once a checkpoint beside
    /// the writers finds it long enough for its growth ([`catch_up_from`]).
    #[tokio::test]
    async fn the_lane_catches_up_only_once_the_wal_is_long() {
        let (_dir, store) = store().await;
        let file = store.sqlite_file().cloned().expect("a file");
        let mut checkpoints = Checkpoints::new(Some(file));
        for id in 1..=50 {
            sqlx::query("INSERT INTO items (id, note) VALUES ($1, 'short')")
                .bind(id)
                .execute(store.write())
                .await
                .expect("insert");
        }
        assert!(!checkpoint_beside(&mut checkpoints).await, "50 rows");
        // 24,000 rows of 3,000 bytes in one statement, a page each: 24,000 frames that came
        // since the last checkpoint, past a backstop of 65,536 less twice that growth.
        insert_pages(&store, 1000, 24_000).await;
        assert!(
            checkpoint_beside(&mut checkpoints).await,
            "24,000 pages at once"
        );
    }

    /// The checkpoints that close in before a catch-up stop as soon as one finds nothing
    /// appended, and leave nothing to catch up when the WAL started over meanwhile.
    #[tokio::test]
    async fn closing_in_stops_when_nothing_was_appended_or_the_wal_started_over() {
        let (_dir, store) = store().await;
        let file = store.sqlite_file().cloned().expect("a file");
        let blocking = |file: &SqliteFile, frames: Option<i64>| {
            let file = file.clone();
            tokio::task::spawn_blocking(move || match frames {
                Some(frames) => close_in(&file, frames),
                None => checkpoint(&file),
            })
        };
        insert_pages(&store, 0, 500).await;
        let found = blocking(&file, None)
            .await
            .expect("thread")
            .expect("frames");
        assert!(found >= 500, "the WAL holds {found} frames");
        // Nobody writes: the next checkpoint finds the same WAL, all of it copied.
        let closed = blocking(&file, Some(found)).await.expect("thread");
        assert_eq!(closed, Some(found));
        // Every frame was copied, so the next write starts the WAL over: shorter than found.
        insert_pages(&store, 1000, 1).await;
        let closed = blocking(&file, Some(found)).await.expect("thread");
        assert_eq!(closed, None, "the WAL started over: nothing to catch up");
    }

    /// The faster the WAL grows, the sooner the lane catches up, always two checkpoints' growth
    /// short of SQLite's backstop, and never sooner than a quarter of it.
    #[test]
    fn the_catch_up_keeps_two_checkpoints_of_growth_below_the_backstop() {
        assert_eq!(catch_up_from(0), BACKSTOP_FRAMES);
        assert_eq!(catch_up_from(1_600), BACKSTOP_FRAMES - 3_200);
        assert!(catch_up_from(1_600) > catch_up_from(3_000));
        assert_eq!(catch_up_from(BACKSTOP_FRAMES / 2), BACKSTOP_FRAMES / 4);
        assert_eq!(catch_up_from(BACKSTOP_FRAMES), BACKSTOP_FRAMES / 4);
        assert_eq!(growth(1_000, 2_600), 1_600);
        assert_eq!(
            growth(13_000, 1_500),
            1_500,
            "the WAL started over meanwhile"
        );
    }

    #[tokio::test]
    async fn a_lone_write_is_answered_after_it_is_stored() {
        let (_dir, store) = store().await;
        let group = store.group();
        assert_eq!(group.run(insert(1, false)).await.ok(), Some(1));
        assert_eq!(ids(&store).await, vec![1]);
        assert!(matches!(
            group.run(insert(1, false)).await,
            Err(TestError::Sql(_))
        ));
        assert_eq!(ids(&store).await, vec![1]);
    }
}
