//! Group commit for the ledger: every write (a transaction landing, an airdrop, a new blockhash)
//! is a job sent to one writer task, which runs the jobs waiting at that moment in one database
//! transaction, each behind a savepoint of its own, and commits them with one flush.
//!
//! - A job is answered only once its batch is durable; a job that fails (a preflight refusal,
//!   an already-processed signature) rolls back to its savepoint and fails alone, the rest of
//!   its batch commits.
//! - Jobs run one after another, in the order they arrived, each seeing the writes of those
//!   before it: the same serial ledger as one transaction per write, with fewer flushes.
//! - Landings in a row run as one set ([`crate::landing`]): their reads, their writes and one
//!   savepoint shared, for the same outcome as landing them one after another.
//! - A lone job runs at once (a batch is whatever is waiting, never a timer), so a quiet
//!   simnet is not slowed.
//! - What a job announces (its `Executed` event) is announced after the commit, in batch order.
//! - The batch runs on a task of its own: a caller that stops waiting does not stop it, and a
//!   job that panics fails its batch, not the writer.
//!
//! On PostgreSQL a batch holds the ledger's advisory lock, as each write did: one leader among
//! the nodes sharing the database. On a SQLite file the batch runs in place on the ledger's own
//! connection ([`crate::sql`]) while it holds the writer pool's one connection, the process's
//! write lock; only its commit, which waits for the disk, goes to a blocking thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

use super::{Backend, LEDGER_LOCK, Shared, SimnetError, Storage};
use crate::landing::Landing;
use crate::sql::Conn;
use crucible_solana::tx::Transaction as Signed;
use crucible_sql::Transaction;

/// A boxed future borrowing the batch's connection.
pub(crate) type Fut<'c, T> = Pin<Box<dyn Future<Output = T> + Send + 'c>>;

/// What a job leaves for after its batch commits (announcing the transaction it landed).
pub(crate) type AfterCommit = Box<dyn FnOnce(&Shared) + Send>;

/// A job's result, and what to do once it is durable.
pub(crate) struct Done<T> {
    pub(crate) value: T,
    pub(crate) after: Option<AfterCommit>,
}

impl<T> Done<T> {
    pub(crate) fn new(value: T) -> Self {
        Done { value, after: None }
    }
}

/// Most jobs one batch runs: bounds how long the first of them waits for the commit.
const MAX_BATCH: usize = 256;

/// Jobs queued for the writer before senders wait for room.
const QUEUE: usize = 4096;

/// A queued job, its result type erased.
trait Pending: Send {
    /// Run against the batch's transaction; false when the job failed (its savepoint is then
    /// rolled back).
    fn run<'c, 'd>(&'c mut self, conn: &'c mut Conn<'d>, shared: &'c Shared) -> Fut<'c, bool>;
    /// Answer the caller once the batch committed, or failed as a whole.
    fn finish(self: Box<Self>, shared: &Shared, batch: &Result<(), String>);
    /// The landing this job is, when it is one: landings in a row run as one set
    /// ([`crate::landing`]).
    fn landing(&mut self) -> Option<&mut Landing> {
        None
    }
    /// Whether [`Pending::landing`] has one (asked where the job cannot be borrowed mutably).
    fn is_landing(&self) -> bool {
        false
    }
}

struct Job<T, F> {
    work: Option<F>,
    outcome: Option<Result<Done<T>, SimnetError>>,
    reply: oneshot::Sender<Result<T, SimnetError>>,
}

impl<T, F> Pending for Job<T, F>
where
    T: Send + 'static,
    F: for<'c, 'd> FnOnce(&'c mut Conn<'d>, &'c Shared) -> Fut<'c, Result<Done<T>, SimnetError>>
        + Send
        + 'static,
{
    fn run<'c, 'd>(&'c mut self, conn: &'c mut Conn<'d>, shared: &'c Shared) -> Fut<'c, bool> {
        Box::pin(async move {
            let Some(work) = self.work.take() else {
                return false;
            };
            let outcome = work(conn, shared).await;
            let ran = outcome.is_ok();
            self.outcome = Some(outcome);
            ran
        })
    }

    fn finish(self: Box<Self>, shared: &Shared, batch: &Result<(), String>) {
        // A caller that stopped waiting is not an error: its write stands or fell with the batch.
        let _ = self.reply.send(answer(self.outcome, shared, batch));
    }
}

/// A transaction to land, queued.
struct LandJob {
    landing: Landing,
    reply: oneshot::Sender<Result<String, SimnetError>>,
}

impl Pending for LandJob {
    fn run<'c, 'd>(&'c mut self, conn: &'c mut Conn<'d>, shared: &'c Shared) -> Fut<'c, bool> {
        Box::pin(async move {
            let Some(transaction) = self.landing.transaction.take() else {
                return false;
            };
            let skip_preflight = self.landing.skip_preflight;
            let outcome = crate::land(conn, shared, transaction, skip_preflight).await;
            let ran = outcome.is_ok();
            self.landing.outcome = Some(outcome);
            ran
        })
    }

    fn finish(self: Box<Self>, shared: &Shared, batch: &Result<(), String>) {
        let _ = self.reply.send(answer(self.landing.outcome, shared, batch));
    }

    fn landing(&mut self) -> Option<&mut Landing> {
        Some(&mut self.landing)
    }

    fn is_landing(&self) -> bool {
        true
    }
}

/// What a job's caller hears once its batch committed or failed.
fn answer<T>(
    outcome: Option<Result<Done<T>, SimnetError>>,
    shared: &Shared,
    batch: &Result<(), String>,
) -> Result<T, SimnetError> {
    match (outcome, batch) {
        // A job that failed fails alone, whatever became of its batch.
        (Some(Err(error)), _) => Err(error),
        (Some(Ok(done)), Ok(())) => {
            if let Some(after) = done.after {
                after(shared);
            }
            Ok(done.value)
        }
        (_, Err(why)) => Err(batch_failed(why)),
        (None, Ok(())) => Err(batch_failed("the job was not run")),
    }
}

fn batch_failed(why: &str) -> SimnetError {
    SimnetError::Store(sqlx::Error::Protocol(format!(
        "the ledger's write did not commit: {why}"
    )))
}

/// The handle writes are sent through.
pub(crate) struct Writer {
    queue: mpsc::Sender<Box<dyn Pending>>,
    counts: Arc<Counts>,
}

/// Batches committed and the writes they carried, for benchmarks and metrics.
#[derive(Default)]
struct Counts {
    batches: AtomicU64,
    writes: AtomicU64,
}

impl Writer {
    /// Start the writer task on the current runtime; it ends with the last handle.
    pub(crate) fn start(store: Storage, shared: Arc<Shared>) -> Self {
        let (queue, mut jobs) = mpsc::channel::<Box<dyn Pending>>(QUEUE);
        let counts = Arc::new(Counts::default());
        let counted = counts.clone();
        tokio::spawn(async move {
            while let Some(first) = jobs.recv().await {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match jobs.try_recv() {
                        Ok(job) => batch.push(job),
                        Err(_) => break,
                    }
                }
                counted.batches.fetch_add(1, Ordering::Relaxed);
                counted
                    .writes
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                // On a task of its own, so a panicking job costs its batch (its callers see the
                // writer gone), never the writer.
                let batch = tokio::spawn(run_batch(store.clone(), shared.clone(), batch));
                if let Err(error) = batch.await {
                    tracing::error!(%error, "a simnet ledger batch panicked; its writes were rolled back");
                }
            }
        });
        Writer { queue, counts }
    }

    /// Batches run so far, and the writes they carried.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.counts.batches.load(Ordering::Relaxed),
            self.counts.writes.load(Ordering::Relaxed),
        )
    }

    /// Run `work` in the next batch; its result once the batch is durable.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T, SimnetError>
    where
        T: Send + 'static,
        F: for<'c, 'd> FnOnce(
                &'c mut Conn<'d>,
                &'c Shared,
            ) -> Fut<'c, Result<Done<T>, SimnetError>>
            + Send
            + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            work: Some(work),
            outcome: None,
            reply,
        };
        self.queued(Box::new(job), answer).await
    }

    /// Land `transaction` in the next batch (with the landings beside it, as one set); its
    /// signature once the batch is durable.
    pub(crate) async fn land(
        &self,
        transaction: Signed,
        skip_preflight: bool,
    ) -> Result<String, SimnetError> {
        let (reply, answer) = oneshot::channel();
        let job = LandJob {
            landing: Landing::new(transaction, skip_preflight),
            reply,
        };
        self.queued(Box::new(job), answer).await
    }

    async fn queued<T>(
        &self,
        job: Box<dyn Pending>,
        answer: oneshot::Receiver<Result<T, SimnetError>>,
    ) -> Result<T, SimnetError> {
        if self.queue.send(job).await.is_err() {
            return Err(batch_failed("the ledger's writer has stopped"));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(batch_failed("its batch was abandoned")))
    }
}

/// One batch: one transaction, a savepoint per job (none for a lone job), one commit; then
/// every job answered.
async fn run_batch(store: Storage, shared: Arc<Shared>, mut batch: Vec<Box<dyn Pending>>) {
    let outcome = commit_batch(&store, &shared, &mut batch)
        .await
        .map_err(|error| error.to_string());
    for job in batch {
        job.finish(&shared, &outcome);
    }
}

async fn commit_batch(
    store: &Storage,
    shared: &Shared,
    batch: &mut [Box<dyn Pending>],
) -> Result<(), SimnetError> {
    if let [job] = batch {
        let (mut tx, _) = begin(store, None).await?;
        // Alone, the job's failure is the transaction's: nothing of it is kept.
        if job.run(&mut tx.conn()?, shared).await {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        return Ok(());
    }
    // Landings next to each other form one run; every other job is a run of its own.
    let runs: Vec<&mut [Box<dyn Pending>]> = batch
        .chunk_by_mut(|a, b| a.is_landing() && b.is_landing())
        .collect();
    let set_first = runs.first().is_some_and(|run| run.len() >= 2);
    let (mut tx, marked) = begin(store, set_first.then_some(LANDS)).await?;
    let count = runs.len();
    for (index, run) in runs.into_iter().enumerate() {
        if run.len() >= 2 {
            let savepoint = SetSavepoint {
                marked: index == 0 && marked,
                last: index + 1 == count,
            };
            land_run(&mut tx, shared, run, savepoint).await?;
        } else {
            each_alone(&mut tx, shared, run).await?;
        }
    }
    // On a SQLite file the commit, which waits for the disk, runs on a blocking thread while
    // the runtime goes on; the write lock is held until it returns.
    tx.commit().await?;
    Ok(())
}

/// Begin a batch's transaction: on PostgreSQL holding the ledger's advisory lock, taken in the
/// same round trip as the `BEGIN`, with generic plans from the first use of each statement.
/// The writer's statements are point reads by primary key, inserts and updates of one row by
/// key, whose generic plan is the custom one; but PostgreSQL plans a statement five times per
/// connection before it keeps a generic plan, and a read of a few dozen accounts took a
/// millisecond to plan (`pg_stat_statements`: plans as many as calls over 4 s of swaps, the
/// writer taking whichever of the pool's connections is free), all of it in the one writer.
///
/// On PostgreSQL the savepoint `mark` (the batch's first set of landings) is marked in that
/// round trip too; whether it was. Each round trip of the ledger's one writer holds back every
/// landing queued behind its batch.
async fn begin(store: &Storage, mark: Option<&str>) -> Result<(Transaction, bool), SimnetError> {
    if store.backend() == Backend::Postgres {
        let savepoint = mark.map(|name| format!("; SAVEPOINT {name}"));
        let locked = format!(
            "BEGIN; SELECT pg_advisory_xact_lock({LEDGER_LOCK}); \
             SET LOCAL plan_cache_mode = force_generic_plan{}",
            savepoint.as_deref().unwrap_or_default()
        );
        let tx = Transaction::begin_with(store.writer(), locked).await?;
        return Ok((tx, mark.is_some()));
    }
    Ok((
        Transaction::begin(store.writer(), store.local()).await?,
        false,
    ))
}

/// The savepoint of a set of landings.
const LANDS: &str = "lands";

/// Where a set's savepoint stands: already `marked` (in the batch's `BEGIN`), and whether the
/// set is the batch's `last` run, which needs no release: the `COMMIT` right after it keeps
/// what was done since the savepoint all the same.
#[derive(Debug, Clone, Copy)]
struct SetSavepoint {
    marked: bool,
    last: bool,
}

/// Run `jobs` one after another, each behind a savepoint of its own: one that fails rolls back
/// alone.
async fn each_alone(
    tx: &mut Transaction,
    shared: &Shared,
    jobs: &mut [Box<dyn Pending>],
) -> Result<(), SimnetError> {
    for job in jobs {
        tx.savepoint("job").await?;
        if !job.run(&mut tx.conn()?, shared).await {
            tx.rollback_to("job").await?;
        }
        tx.release("job").await?;
    }
    Ok(())
}

/// Land a run of landings as one set behind one savepoint; should a statement of the set fail,
/// roll it back and land each alone, so a landing still fails only for its own reasons.
async fn land_run(
    tx: &mut Transaction,
    shared: &Shared,
    jobs: &mut [Box<dyn Pending>],
    savepoint: SetSavepoint,
) -> Result<(), SimnetError> {
    if !savepoint.marked {
        tx.savepoint(LANDS).await?;
    }
    let landed = {
        let mut lands: Vec<&mut Landing> = jobs.iter_mut().filter_map(|j| j.landing()).collect();
        crate::landing::land_all(&mut tx.conn()?, shared, &mut lands).await
    };
    match landed {
        Ok(()) if savepoint.last => {}
        Ok(()) => tx.release(LANDS).await?,
        Err(error) => {
            tracing::warn!(%error, "a set of landings failed; landing each alone");
            tx.rollback_to(LANDS).await?;
            tx.release(LANDS).await?;
            for job in jobs.iter_mut() {
                if let Some(landing) = job.landing() {
                    landing.outcome = None;
                }
            }
            each_alone(tx, shared, jobs).await?;
        }
    }
    Ok(())
}
