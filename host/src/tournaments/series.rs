//! Recurring tournaments (daily, weekly, monthly) created ahead from cron schedules in the
//! configuration. A series' windows run from one cron occurrence to the next; each window's
//! tournament has a deterministic id, so creating it is idempotent across passes and nodes.

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;

use super::queries::{self, NewTournament};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::config::Config;
use crate::db::Store;
use crate::events::Bus;
use crate::scheduler::Recurring;
use crate::usdc::UNIT as USDC_UNIT;

/// One recurring tournament, as configured (`CRUCIBLE_TOURNAMENT_SERIES` holds a JSON array).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeriesSpec {
    /// Short key used in ids, e.g. `daily`.
    pub key: String,
    pub name: String,
    /// Window starts (seconds-first cron), e.g. `0 0 0 * * *` for every midnight UTC.
    pub cron: String,
    pub entry_fee_usdc: f64,
    pub max_participants: i64,
    #[serde(default = "public")]
    pub visibility: String,
    pub payout_split: Vec<u32>,
    #[serde(default)]
    pub rake_percent: f64,
    #[serde(default = "highest_pnl", rename = "type")]
    pub kind: String,
}

fn public() -> String {
    "public".into()
}

fn highest_pnl() -> String {
    "highest_pnl".into()
}

/// The series a fresh install runs.
pub fn default_series() -> Vec<SeriesSpec> {
    let spec = |key: &str, name: &str, cron: &str, fee: f64, max: i64, split: &[u32]| SeriesSpec {
        key: key.into(),
        name: name.into(),
        cron: cron.into(),
        entry_fee_usdc: fee,
        max_participants: max,
        visibility: public(),
        payout_split: split.to_vec(),
        rake_percent: 10.0,
        kind: highest_pnl(),
    };
    vec![
        spec(
            "daily",
            "Daily PnL Sprint",
            "0 0 0 * * *",
            1.0,
            500,
            &[50, 30, 20],
        ),
        spec(
            "weekly",
            "Weekly Championship",
            "0 0 0 * * Mon",
            5.0,
            1000,
            &[40, 25, 15, 10, 10],
        ),
        spec(
            "monthly",
            "Monthly Grand Prix",
            "0 0 0 1 * *",
            10.0,
            2000,
            &[35, 20, 15, 10, 8, 7, 5],
        ),
    ]
}

/// Make sure every series has its current window (if one is open) and its next window created.
pub async fn ensure(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    config: &Config,
) -> anyhow::Result<usize> {
    let now = clock.now();
    let escrow = chain.escrow().address.to_string();
    let mut created = 0;
    for spec in &config.tournament_series {
        let schedule = Recurring::new("series", &spec.cron)?;
        let windows = [
            current_window_start(&schedule, now),
            schedule.next_after(now),
        ];
        for start in windows.into_iter().flatten() {
            let Some(end) = schedule.next_after(start) else {
                continue;
            };
            let new = NewTournament {
                id: format!("trn_{}_{}", spec.key, start.format("%Y%m%d%H%M")),
                name: format!("{} {}", spec.name, start.format("%Y-%m-%d")),
                description: format!(
                    "Recurring {} tournament: highest PnL over the window wins.",
                    spec.key
                ),
                kind: spec.kind.clone(),
                visibility: spec.visibility.clone(),
                entry_fee_raw: (spec.entry_fee_usdc * USDC_UNIT as f64).round() as i64,
                max_participants: spec.max_participants,
                escrow_wallet: escrow.clone(),
                payout_split: spec.payout_split.clone(),
                rake_bps: (spec.rake_percent * 100.0).round() as i64,
                is_paper_trading: false,
                transfer_policy: crate::tournaments::rules::TransferPolicy::Adjust,
                evaluation_metric: crate::tournaments::rules::EvaluationMetric::PnlPercent,
                start_date: start,
                end_date: end,
                series: Some(spec.key.clone()),
                registration_deadline: None,
                invite_code_hash: None,
                min_participants: 2,
            };
            new.validate()
                .map_err(|why| anyhow::anyhow!("series `{}`: {why}", spec.key))?;
            let mut conn = store.write().acquire().await?;
            if queries::insert(&mut conn, &new, now).await? {
                tracing::info!(id = new.id, "created recurring tournament");
                events.publish(crate::events::Event::TournamentsChanged);
                created += 1;
            }
        }
    }
    Ok(created)
}

/// The latest window start at or before `now`, if that window is still open.
fn current_window_start(schedule: &Recurring, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let mut cursor = now - Duration::days(32);
    let mut latest = None;
    for _ in 0..10_000 {
        match schedule.next_after(cursor) {
            Some(start) if start <= now => {
                latest = Some(start);
                cursor = start;
            }
            _ => break,
        }
    }
    latest.filter(|start| schedule.next_after(*start).is_some_and(|end| end > now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_window_is_the_latest_start_before_now() {
        let daily = Recurring::new("d", "0 0 0 * * *").expect("cron");
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z")
            .expect("t")
            .with_timezone(&Utc);
        let start = current_window_start(&daily, now).expect("open window");
        assert_eq!(start.to_rfc3339(), "2026-11-23T00:00:00+00:00");
        let monthly = Recurring::new("m", "0 0 0 1 * *").expect("cron");
        assert_eq!(
            current_window_start(&monthly, now)
                .expect("open")
                .to_rfc3339(),
            "2026-11-01T00:00:00+00:00"
        );
    }

    #[test]
    fn default_series_are_valid_json_shapes() {
        let parsed: Vec<SeriesSpec> = serde_json::from_str(
            r#"[{"key":"hourly","name":"Hourly","cron":"0 0 * * * *","entryFeeUsdc":0,"maxParticipants":10,"payoutSplit":[100]}]"#,
        )
        .expect("parses");
        assert_eq!(parsed[0].visibility, "public");
        assert_eq!(default_series().len(), 3);
    }
}
