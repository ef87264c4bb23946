//! The scheduler: durable one-off jobs with leases, and recurring schedules from
//! cron expressions. Nothing it does lives only in memory: a job is a row until it is done, so
//! a restart (or another node) picks up where this one stopped, and work missed while the
//! server was down runs on start — once, not once per missed occurrence.
//!
//! It never decides *what* a job does: [`dispatch`] hands each kind to the module that owns it.

mod dispatch;
pub mod queue;
pub(crate) mod recurring;

use std::future::Future;
use std::time::Duration;

use crate::chain::Chain;
use crate::clock::Clock;
use crate::config::Config;
use crate::crypto::random_base58;
use crate::db::Store;
use crate::leases::Leases;
use crate::state::AppState;

pub use queue::{Job, enqueue};
pub use recurring::Recurring;

/// Jobs claimed per round trip.
const BATCH: i64 = 32;

/// What one pass did, for logs and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    pub schedules_run: Vec<String>,
    pub jobs_done: usize,
    pub jobs_failed: usize,
    /// Agent ticks stored.
    pub agent_ticks: crate::agents::ticker::TickPass,
}

/// A class of scheduled work. Each runs on a loop of its own, so no class waits behind
/// another: five thousand unfunded agents being checked delay no tournament's end, and a slow
/// tick round delays no payout. (Webhook deliveries are a class of their own too, with their
/// own worker: [`crate::webhooks::run_forever`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Tournament series, snapshots, starts, ends and payouts (the job queue).
    Lifecycle,
    /// Agent ticks, paper and live.
    AgentTicks,
    /// Whether unfunded agents were funded (batched balance reads).
    Funding,
    /// Reports, retention, dungeon upkeep, the simnet's market maker.
    Maintenance,
}

impl Lane {
    pub(crate) const ALL: [Lane; 4] = [
        Lane::Lifecycle,
        Lane::AgentTicks,
        Lane::Funding,
        Lane::Maintenance,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Lane::Lifecycle => "lifecycle",
            Lane::AgentTicks => "agent_ticks",
            Lane::Funding => "funding",
            Lane::Maintenance => "maintenance",
        }
    }
}

/// One node's scheduler. Several may run against one PostgreSQL database.
pub struct Scheduler {
    owner: String,
    recurring: Vec<Recurring>,
}

impl Scheduler {
    pub fn new(recurring: Vec<Recurring>) -> Self {
        Scheduler {
            owner: format!("node_{}", random_base58(8)),
            recurring,
        }
    }

    /// The scheduler with the server's standard recurring schedules, leasing work under the
    /// node's name so that the node can release it when it shuts down ([`release_leases`]).
    pub fn standard(chain: &Chain, config: &Config, node_id: &str) -> anyhow::Result<Self> {
        Ok(Scheduler {
            owner: format!("{}:scheduler", node_id),
            recurring: dispatch::standard_schedules(chain, config)?,
        })
    }

    /// Run every class's due work once, one class after the other, until nothing is due at
    /// this instant (tests and tools; a server runs the classes side by side, [`Self::spawn`]).
    pub async fn run_due(&self, state: &AppState) -> anyhow::Result<Pass> {
        let mut pass = Pass::default();
        for lane in Lane::ALL {
            let done = self.run_lane(state, lane).await?;
            pass.schedules_run.extend(done.schedules_run);
            pass.jobs_done += done.jobs_done;
            pass.jobs_failed += done.jobs_failed;
            if lane == Lane::AgentTicks {
                pass.agent_ticks = done.agent_ticks;
            }
        }
        Ok(pass)
    }

    /// Run the due work of one class once.
    pub async fn run_lane(&self, state: &AppState, lane: Lane) -> anyhow::Result<Pass> {
        let mut pass = Pass::default();
        let now = state.now();
        for schedule in self
            .recurring
            .iter()
            .filter(|schedule| dispatch::lane_of(schedule.name) == lane)
        {
            if recurring::claim_if_due(&state.store, schedule, now).await? {
                match dispatch::run_recurring(state, schedule.name).await {
                    Ok(()) => pass.schedules_run.push(schedule.name.to_owned()),
                    Err(error) => {
                        tracing::error!(schedule = schedule.name, error = %format!("{error:#}"), "schedule failed")
                    }
                }
            }
        }
        match lane {
            Lane::Lifecycle => self.run_jobs(state, &mut pass).await?,
            Lane::AgentTicks => {
                pass.agent_ticks =
                    crate::agents::ticker::run_due(&state.ticking(), &self.owner).await?;
            }
            Lane::Funding | Lane::Maintenance => {}
        }
        Ok(pass)
    }

    /// Every due job of the queue, until none is due.
    async fn run_jobs(&self, state: &AppState, pass: &mut Pass) -> anyhow::Result<()> {
        let leases = state.config.leases;
        loop {
            // A token per claimed batch fences its bookkeeping (`leases`).
            let lease = crate::leases::token(&self.owner);
            let jobs = queue::claim(&state.store, &lease, state.now(), leases.jobs, BATCH).await?;
            if jobs.is_empty() {
                return Ok(());
            }
            for job in jobs {
                let span = tracing::info_span!("job", id = %job.id, attempt = job.attempts);
                let run = tracing::Instrument::instrument(dispatch::run_job(state, &job), span);
                let outcome =
                    renewing_leases(&state.store, &*state.clock, &lease, leases, run).await;
                match outcome {
                    Ok(()) => {
                        recording(leases, || {
                            queue::complete(&state.store, &job, &lease, state.now())
                        })
                        .await?;
                        pass.jobs_done += 1;
                    }
                    Err(error) => {
                        let message = format!("{error:#}");
                        tracing::warn!(job = %job.id, attempt = job.attempts, error = %message, "job failed; will retry");
                        recording(leases, || {
                            queue::retry_later(&state.store, &job, &lease, state.now(), &message)
                        })
                        .await?;
                        pass.jobs_failed += 1;
                    }
                }
            }
        }
    }

    /// Run every class on its own task, each pass `interval` after the last one ended, until
    /// the returned workers are stopped.
    pub(crate) fn spawn(self, state: AppState, interval: Duration) -> Workers {
        let scheduler = std::sync::Arc::new(self);
        let mut tasks = tokio::task::JoinSet::new();
        for lane in Lane::ALL {
            let (scheduler, state) = (scheduler.clone(), state.clone());
            tasks.spawn(async move {
                let mut every = tokio::time::interval(interval);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    if let Err(error) = scheduler.run_lane(&state, lane).await {
                        tracing::error!(lane = lane.name(), error = %format!("{error:#}"), "scheduler pass failed");
                    }
                }
            });
        }
        Workers { tasks }
    }
}

/// Run `work` while renewing every lease of the claim `lease` (the job running and the rest of
/// its batch) every [`Leases::job_renewal`], so a long job — a tournament's end over thousands
/// of wallets — never loses its lease to another node mid-way, and the jobs waiting behind it
/// keep theirs.
async fn renewing_leases<T>(
    store: &Store,
    clock: &dyn Clock,
    lease: &str,
    leases: Leases,
    work: impl Future<Output = T>,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut renew = tokio::time::interval(leases.job_renewal());
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate; the leases were just taken.
    renew.tick().await;
    loop {
        tokio::select! {
            outcome = &mut work => return outcome,
            _ = renew.tick() => {
                if let Err(error) = queue::renew_held(store, lease, clock.now(), leases.jobs).await {
                    tracing::warn!(%error, "job leases not renewed; retrying at the next beat");
                }
            }
        }
    }
}

/// Write a job's outcome, trying again while the database is away (restarting, or out of
/// reach): given up at the first error, the job would stay claimed, with the rest of its batch,
/// until the claim ran out, and a tournament would start that much late. Tries for as long as
/// the claim lasts; past that another node may hold the job, and the write, conditioned on this
/// claim's token, would change nothing anyway.
async fn recording<F, Fut>(leases: Leases, mut write: F) -> sqlx::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = sqlx::Result<()>>,
{
    let claim = leases.jobs.to_std().unwrap_or(Duration::from_secs(1));
    let give_up = tokio::time::Instant::now() + claim;
    let mut pause = Duration::from_millis(50);
    loop {
        match write().await {
            Ok(()) => return Ok(()),
            Err(error) if tokio::time::Instant::now() + pause < give_up => {
                tracing::warn!(%error, "a job's outcome was not recorded; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(error) => return Err(error),
        }
    }
}

/// The running classes of a scheduler.
pub(crate) struct Workers {
    tasks: tokio::task::JoinSet<()>,
}

impl Workers {
    /// Stop every class and wait until each has (its leases can then be released safely).
    pub(crate) async fn stop(mut self) {
        self.tasks.shutdown().await;
    }
}

/// Give back every lease this node holds (jobs, agent ticks, webhook deliveries, payouts), once
/// its workers have stopped: another node takes the work on its next pass instead of waiting
/// for the leases to run out. A payout keeps its fence, and the next taker bumps it, so
/// nothing this node signed can be recorded twice. Returns how many leases were released.
pub(crate) async fn release_leases(store: &Store, node_id: &str) -> Result<u64, sqlx::Error> {
    let mine = format!("{}:%", node_id);
    let mut tx = store.write().begin().await?;
    let mut released = 0;
    for sql in [
        "UPDATE jobs SET lease_owner = NULL, lease_until = NULL
         WHERE lease_owner LIKE $1 AND done_at IS NULL",
        "UPDATE agents SET tick_lease_owner = NULL, tick_lease_until = NULL
         WHERE tick_lease_owner LIKE $1",
        "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL
         WHERE lease_owner LIKE $1 AND status = 'pending'",
        "UPDATE payouts SET lease_owner = NULL, lease_until = NULL
         WHERE lease_owner LIKE $1 AND status = 'pending'",
    ] {
        released += sqlx::query(sql)
            .bind(&mine)
            .execute(&mut *tx)
            .await?
            .rows_affected();
    }
    tx.commit().await?;
    Ok(released)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn an_outcome_write_is_tried_again_until_the_database_answers() {
        let tries = AtomicUsize::new(0);
        let recorded = recording(Leases::uniform(5_000), || async {
            match tries.fetch_add(1, Ordering::Relaxed) {
                0 | 1 => Err(sqlx::Error::PoolTimedOut),
                _ => Ok(()),
            }
        })
        .await;
        assert!(recorded.is_ok());
        assert_eq!(tries.load(Ordering::Relaxed), 3);
    }

    #[tokio::test]
    async fn an_outcome_write_is_given_up_once_the_claim_has_run_out() {
        let tries = AtomicUsize::new(0);
        let recorded = recording(Leases::uniform(300), || async {
            tries.fetch_add(1, Ordering::Relaxed);
            Err::<(), _>(sqlx::Error::PoolTimedOut)
        })
        .await;
        assert!(matches!(recorded, Err(sqlx::Error::PoolTimedOut)));
        assert!(tries.load(Ordering::Relaxed) >= 2);
    }
}
