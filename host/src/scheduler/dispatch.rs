//! Which module runs which job kind and recurring schedule. Adding work to the scheduler means
//! adding an arm here; the modules own what the work does.

use super::recurring::Recurring;
use super::{Job, Lane};
use crate::chain::Chain;
use crate::config::Config;
use crate::state::AppState;
use crate::{agents, tournaments};

/// The recurring schedules every server runs.
pub(super) fn standard_schedules(chain: &Chain, config: &Config) -> anyhow::Result<Vec<Recurring>> {
    // CRUCIBLE_SNAPSHOT_INTERVAL_SECS (validated when the configuration was read).
    let snapshots =
        crate::config::snapshot_cron(config.snapshot_interval_secs).map_err(anyhow::Error::msg)?;
    let mut schedules = vec![
        Recurring::new(SERIES, "0 */10 * * * *")?,
        Recurring::new(SNAPSHOTS, &snapshots)?,
        Recurring::new(AGENT_FUNDING, "0 * * * * *")?,
        Recurring::new(AGENT_DAILY_REPORT, "0 0 0 * * *")?,
        Recurring::new(
            crate::dungeon::maintenance::SCHEDULE,
            crate::dungeon::maintenance::CRON,
        )?,
        Recurring::new(crate::retention::SCHEDULE, crate::retention::CRON)?,
    ];
    if chain.market_maker().is_some() {
        schedules.push(Recurring::new(MARKET_MAKER, "*/30 * * * * *")?);
    }
    Ok(schedules)
}

/// The class of work a recurring schedule belongs to.
pub(super) fn lane_of(schedule: &str) -> Lane {
    match schedule {
        SERIES | SNAPSHOTS => Lane::Lifecycle,
        AGENT_FUNDING => Lane::Funding,
        _ => Lane::Maintenance,
    }
}

const SERIES: &str = "tournaments.series";
const SNAPSHOTS: &str = "tournaments.snapshots";
const AGENT_FUNDING: &str = "agents.funding";
const AGENT_DAILY_REPORT: &str = "agents.daily_report";
/// Simnet only: keep the pool near the simulated market's price.
pub(super) const MARKET_MAKER: &str = "simnet.market_maker";

pub(super) async fn run_recurring(state: &AppState, name: &str) -> anyhow::Result<()> {
    match name {
        SERIES => tournaments::series::ensure(
            &state.store,
            &*state.clock,
            &state.events,
            &state.chain,
            &state.config,
        )
        .await
        .map(|_| ()),
        SNAPSHOTS => {
            tournaments::tracking::snapshot_live(
                &state.store,
                &*state.clock,
                &state.events,
                &state.chain,
            )
            .await
        }
        AGENT_FUNDING => {
            agents::funding::check_unfunded(
                &state.store,
                &*state.clock,
                &state.chain,
                &state.config,
            )
            .await
        }
        AGENT_DAILY_REPORT => {
            agents::daily_report::send(&state.store, &*state.clock).await?;
            agents::daily_report::prune_equity_marks(&state.store, &*state.clock).await
        }
        MARKET_MAKER => {
            // The pool follows the simulated market: that is the price it is pulled toward.
            let target = state
                .market
                .price_at("SOL", crate::clock::to_millis(state.now()))?;
            state.chain.make_market(target).await.map(|_| ())?;
            Ok(())
        }
        crate::dungeon::maintenance::SCHEDULE => crate::dungeon::maintenance::run(
            &state.store,
            &*state.clock,
            &state.events,
            &state.chain,
            &state.config,
        )
        .await
        .map(|_| ()),
        crate::retention::SCHEDULE => {
            crate::retention::prune(&state.store, &*state.clock, &state.config)
                .await
                .map(|_| ())
        }
        other => anyhow::bail!("no handler for schedule `{other}`"),
    }
}

pub(super) async fn run_job(state: &AppState, job: &Job) -> anyhow::Result<()> {
    match job.kind.as_str() {
        tournaments::lifecycle::START_JOB => {
            tournaments::lifecycle::start(
                &state.store,
                &*state.clock,
                &state.events,
                &state.chain,
                &job.subject,
            )
            .await
        }
        tournaments::lifecycle::END_JOB => {
            tournaments::lifecycle::end(
                &state.store,
                &*state.clock,
                &state.events,
                &state.chain,
                &state.leaderboards,
                &job.subject,
            )
            .await
        }
        tournaments::payouts::SEND_JOB => {
            tournaments::payouts::send(state.payer(), &job.subject).await
        }
        tournaments::custodial_entry::SETTLE_JOB
        | tournaments::custodial_entry::AGENT_SETTLE_JOB => {
            tournaments::custodial_entry::settle(
                &state.store,
                &*state.clock,
                &state.events,
                &state.chain,
                &job.subject,
            )
            .await
        }
        crate::dungeon::embedded_entry::SETTLE_JOB => {
            crate::dungeon::embedded_entry::settle(
                &state.store,
                &*state.clock,
                &state.chain,
                &state.sealer,
                &state.config,
                &job.subject,
            )
            .await
        }
        other => anyhow::bail!("no handler for job kind `{other}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn funding_checks_and_upkeep_never_share_a_lane_with_tournament_ends() {
        assert_eq!(lane_of(SERIES), Lane::Lifecycle);
        assert_eq!(lane_of(SNAPSHOTS), Lane::Lifecycle);
        assert_eq!(lane_of(AGENT_FUNDING), Lane::Funding);
        for upkeep in [
            AGENT_DAILY_REPORT,
            MARKET_MAKER,
            crate::dungeon::maintenance::SCHEDULE,
            crate::retention::SCHEDULE,
        ] {
            assert_eq!(lane_of(upkeep), Lane::Maintenance, "{upkeep}");
        }
    }
}
