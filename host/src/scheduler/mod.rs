//! The scheduler: durable one-off jobs with leases, and recurring schedules from
//! cron expressions. Nothing it does lives only in memory: a job is a row until it is done, so
//! a restart (or another node) picks up where this one stopped, and work missed while the
//! server was down runs on start — once, not once per missed occurrence.
//!
//! It never decides *what* a job does: [`dispatch`] hands each kind to the module that owns it.

mod dispatch;
pub mod queue;
pub mod recurring;

use std::future::Future;
use std::time::Duration;

use crate::crypto::random_base58;
use crate::state::AppState;

pub use queue::{Job, enqueue};
pub use recurring::Recurring;

/// How long a claimed job stays leased to its node before another may take it over.
const LEASE: chrono::Duration = chrono::Duration::minutes(5);
/// How often the leases of running and waiting jobs are renewed: well inside [`LEASE`].
const RENEW_EVERY: Duration = Duration::from_secs(60);
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
    pub fn standard(state: &AppState) -> anyhow::Result<Self> {
        Ok(Scheduler {
            owner: format!("{}:scheduler", state.node_id),
            recurring: dispatch::standard_schedules(state)?,
        })
    }

    /// Run every due schedule once, then every due job, until nothing is due at this instant.
    pub async fn run_due(&self, state: &AppState) -> anyhow::Result<Pass> {
        let mut pass = Pass::default();
        let now = state.now();
        for schedule in &self.recurring {
            if recurring::claim_if_due(&state.store, schedule, now).await? {
                match dispatch::run_recurring(state, schedule.name).await {
                    Ok(()) => pass.schedules_run.push(schedule.name.to_owned()),
                    Err(error) => {
                        tracing::error!(schedule = schedule.name, error = %format!("{error:#}"), "schedule failed")
                    }
                }
            }
        }
        loop {
            let jobs = queue::claim(&state.store, &self.owner, state.now(), LEASE, BATCH).await?;
            if jobs.is_empty() {
                break;
            }
            for job in jobs {
                let span = tracing::info_span!("job", id = %job.id, attempt = job.attempts);
                let run = tracing::Instrument::instrument(dispatch::run_job(state, &job), span);
                let outcome = self.renewing_leases(state, run).await;
                match outcome {
                    Ok(()) => {
                        queue::complete(&state.store, &job, &self.owner, state.now()).await?;
                        pass.jobs_done += 1;
                    }
                    Err(error) => {
                        let message = format!("{error:#}");
                        tracing::warn!(job = %job.id, attempt = job.attempts, error = %message, "job failed; will retry");
                        queue::retry_later(&state.store, &job, &self.owner, state.now(), &message)
                            .await?;
                        pass.jobs_failed += 1;
                    }
                }
            }
        }
        pass.agent_ticks = crate::agents::ticker::run_due(state, &self.owner).await?;
        Ok(pass)
    }

    /// Run `work` while renewing every lease this scheduler holds (the job running and the
    /// rest of its batch) every [`RENEW_EVERY`], so a long job — a tournament's end over
    /// thousands of wallets — never loses its lease to another node mid-way, and the jobs
    /// waiting behind it keep theirs.
    async fn renewing_leases<T>(&self, state: &AppState, work: impl Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        let mut renew = tokio::time::interval(RENEW_EVERY);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is immediate; the leases were just taken.
        renew.tick().await;
        loop {
            tokio::select! {
                outcome = &mut work => return outcome,
                _ = renew.tick() => {
                    if let Err(error) = queue::renew_held(&state.store, &self.owner, state.now(), LEASE).await {
                        tracing::warn!(%error, "job leases not renewed; retrying at the next beat");
                    }
                }
            }
        }
    }

    /// Run passes every `interval` until the task is dropped.
    pub async fn run_forever(self, state: AppState, interval: Duration) {
        let mut every = tokio::time::interval(interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            if let Err(error) = self.run_due(&state).await {
                tracing::error!(error = %format!("{error:#}"), "scheduler pass failed");
            }
        }
    }
}

/// Give back every lease this node holds (jobs, agent ticks, webhook deliveries, payouts), once
/// its workers have stopped: another node takes the work on its next pass instead of waiting
/// for the leases to run out. A payout keeps its fence, and the next taker bumps it, so
/// nothing this node signed can be recorded twice. Returns how many leases were released.
pub async fn release_leases(state: &AppState) -> Result<u64, sqlx::Error> {
    let mine = format!("{}:%", state.node_id);
    let mut tx = state.store.write().begin().await?;
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
