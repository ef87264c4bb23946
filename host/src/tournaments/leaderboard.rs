//! Leaderboards: wallets ranked by PnL percent since their baseline, ties by earlier
//! registration. Once a tournament has ended and been settled, each row also carries its frozen
//! standing (`finalRank`, `finalPnl`, `prizeAwarded`; see `docs/api.md`). The ranked list is
//! rebuilt only when its tournament's data changed (a new snapshot, new registrations, the
//! final standings), so reads of a 10,000-wallet board cost one key lookup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::model::{Status, Tournament};
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::state::AppState;

/// Snapshots older than this make a live board `stale`.
pub const STALE_AFTER: Duration = Duration::hours(2);

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub rank: usize,
    pub wallet: String,
    /// The owning account's display name, when the entry is attributed to one that set it.
    pub display_name: Option<String>,
    /// USD value at the baseline (tournament start, or registration if it joined live).
    pub start_value: Option<f64>,
    pub current_value: Option<f64>,
    pub pnl: Option<f64>,
    pub pnl_percent: Option<f64>,
    pub snapshot_at: Option<String>,
    pub registered_at: String,
    /// Present once the tournament has ended and its standings are frozen.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    #[schema(inline)]
    pub standing: Option<FinalStanding>,
}

/// A wallet's frozen result, written when the tournament ends.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FinalStanding {
    pub final_rank: i64,
    /// PnL percent at the end (null for a wallet that was never valued).
    pub final_pnl: Option<f64>,
    /// The prize in USDC (display units); 0 for a wallet without a prize.
    pub prize_awarded: f64,
    /// The same prize in raw units, as a string (exact for any amount).
    pub prize_awarded_raw: String,
}

/// What a cached board was built from; any change rebuilds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    last_snapshot_at: Option<i64>,
    participants: i64,
    status: String,
    /// For an ended tournament: how many rows have a final rank and a prize, since freezing the
    /// standings and awarding the prizes happen after the status changes.
    finals: (i64, i64),
}

/// A ranked board and the data version it was built from.
type Built = (Version, Arc<Vec<Entry>>);

/// A registration as ranking needs it.
#[derive(Debug, sqlx::FromRow)]
struct Row {
    wallet: String,
    registered_at: i64,
    start_value_usd: Option<f64>,
    current_value_usd: Option<f64>,
    snapshot_at: Option<i64>,
    display_name: Option<String>,
    final_rank: Option<i64>,
    final_pnl: Option<f64>,
    prize_awarded_raw: Option<i64>,
}

/// Ranked boards by tournament id.
#[derive(Default)]
pub struct Cache {
    boards: Mutex<HashMap<String, Built>>,
}

impl Cache {
    fn get(&self, id: &str, version: &Version) -> Option<Arc<Vec<Entry>>> {
        let boards = self
            .boards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        boards
            .get(id)
            .filter(|(built, _)| built == version)
            .map(|(_, entries)| entries.clone())
    }

    fn put(&self, id: &str, version: Version, entries: Arc<Vec<Entry>>) {
        let mut boards = self
            .boards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        boards.insert(id.to_owned(), (version, entries));
    }
}

/// The full ranked board of `tournament`.
pub async fn ranked(state: &AppState, tournament: &Tournament) -> sqlx::Result<Arc<Vec<Entry>>> {
    let finals = if tournament.status == "ended" {
        sqlx::query_as(
            "SELECT COUNT(final_rank), COUNT(prize_awarded_raw) FROM tournament_registrations
             WHERE tournament_id = $1",
        )
        .bind(&tournament.id)
        .fetch_one(state.store.read())
        .await?
    } else {
        (0, 0)
    };
    let version = Version {
        last_snapshot_at: tournament.last_snapshot_at,
        participants: tournament.current_participants,
        status: tournament.status.clone(),
        finals,
    };
    if let Some(entries) = state.leaderboards.get(&tournament.id, &version) {
        return Ok(entries);
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT r.wallet, r.registered_at, r.start_value_usd, r.current_value_usd, r.snapshot_at, a.display_name,
                r.final_rank, r.final_pnl, r.prize_awarded_raw
         FROM tournament_registrations r LEFT JOIN accounts a ON a.id = r.account_id
         WHERE r.tournament_id = $1",
    )
    .bind(&tournament.id)
    .fetch_all(state.store.read())
    .await?;
    let entries = Arc::new(rank(rows));
    state
        .leaderboards
        .put(&tournament.id, version, entries.clone());
    Ok(entries)
}

fn rank(rows: Vec<Row>) -> Vec<Entry> {
    let mut entries: Vec<(Entry, i64)> = rows
        .into_iter()
        .map(|row| {
            let (start, current) = (row.start_value_usd, row.current_value_usd);
            let pnl = start.zip(current).map(|(start, current)| current - start);
            let pnl_percent = start.zip(pnl).map(|(start, pnl)| {
                if start > 0.0 {
                    pnl / start * 100.0
                } else {
                    0.0
                }
            });
            let standing = row.final_rank.map(|final_rank| {
                let prize = row.prize_awarded_raw.unwrap_or(0);
                FinalStanding {
                    final_rank,
                    final_pnl: row.final_pnl,
                    prize_awarded: super::model::ui_amount(prize),
                    prize_awarded_raw: prize.to_string(),
                }
            });
            let entry = Entry {
                rank: 0,
                wallet: row.wallet,
                display_name: row.display_name,
                start_value: start,
                current_value: current,
                pnl,
                pnl_percent,
                snapshot_at: row.snapshot_at.map(|at| rfc3339(from_millis(at))),
                registered_at: rfc3339(from_millis(row.registered_at)),
                standing,
            };
            (entry, row.registered_at)
        })
        .collect();
    // Valued wallets first by PnL percent (highest first), then by earlier registration.
    entries.sort_by(|(a, a_at), (b, b_at)| {
        let key = |e: &Entry| {
            e.pnl_percent.map_or(f64::NEG_INFINITY, |p| {
                if p.is_nan() { f64::NEG_INFINITY } else { p }
            })
        };
        key(b)
            .total_cmp(&key(a))
            .then(a_at.cmp(b_at))
            .then(a.wallet.cmp(&b.wallet))
    });
    entries
        .into_iter()
        .enumerate()
        .map(|(index, (mut entry, _))| {
            entry.rank = index + 1;
            entry
        })
        .collect()
}

/// Whether a board shown at `now` is stale: live, and no snapshot within [`STALE_AFTER`].
pub fn is_stale(tournament: &Tournament, now: DateTime<Utc>) -> bool {
    tournament.status_at(now) == Status::Live
        && tournament
            .last_snapshot_at
            .is_none_or(|at| to_millis(now) - at > STALE_AFTER.num_milliseconds())
}

/// One page of a board, as sent to clients and streams.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderboardView {
    pub tournament_id: String,
    pub status: Status,
    /// True when the tournament is live and its newest snapshot is older than 2 hours.
    pub stale: bool,
    pub latest_snapshot_at: Option<String>,
    pub total_entries: usize,
    pub page: usize,
    pub page_size: usize,
    pub entries: Vec<Entry>,
}

pub async fn view(
    state: &AppState,
    tournament: &Tournament,
    page: usize,
    page_size: usize,
) -> sqlx::Result<LeaderboardView> {
    let entries = ranked(state, tournament).await?;
    let now = state.now();
    Ok(LeaderboardView {
        tournament_id: tournament.id.clone(),
        status: tournament.status_at(now),
        stale: is_stale(tournament, now),
        latest_snapshot_at: tournament
            .last_snapshot_at
            .map(|at| rfc3339(from_millis(at))),
        total_entries: entries.len(),
        page,
        page_size,
        entries: entries
            .iter()
            .skip(page.saturating_mul(page_size))
            .take(page_size)
            .cloned()
            .collect(),
    })
}

/// Freeze the final standings at the end: rank, PnL percent and (later) prizes per wallet.
pub async fn freeze(state: &AppState, tournament: &Tournament) -> anyhow::Result<()> {
    let entries = ranked(state, tournament)
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    let mut tx = state.store.begin().await?;
    for entry in entries.iter() {
        sqlx::query("UPDATE tournament_registrations SET final_rank = $1, final_pnl = $2 WHERE tournament_id = $3 AND wallet = $4")
            .bind(entry.rank as i64)
            .bind(entry.pnl_percent)
            .bind(&tournament.id)
            .bind(&entry.wallet)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        wallet: &str,
        registered_at: i64,
        start: Option<f64>,
        current: Option<f64>,
        snapshot_at: Option<i64>,
        display_name: Option<String>,
    ) -> Row {
        Row {
            wallet: wallet.to_owned(),
            registered_at,
            start_value_usd: start,
            current_value_usd: current,
            snapshot_at,
            display_name,
            final_rank: None,
            final_pnl: None,
            prize_awarded_raw: None,
        }
    }

    #[test]
    fn ranks_by_pnl_percent_then_earlier_registration_unvalued_last() {
        let rows = vec![
            row("late_tie", 20, Some(100.0), Some(110.0), Some(1), None),
            row("early_tie", 10, Some(200.0), Some(220.0), Some(1), None),
            row(
                "best",
                30,
                Some(50.0),
                Some(100.0),
                Some(1),
                Some("Ada".to_owned()),
            ),
            row("unvalued", 5, None, None, None, None),
            row("empty_wallet", 1, Some(0.0), Some(0.0), Some(1), None),
            row("loser", 2, Some(100.0), Some(90.0), Some(1), None),
        ];
        let ranked = rank(rows);
        let order: Vec<&str> = ranked.iter().map(|e| e.wallet.as_str()).collect();
        assert_eq!(
            order,
            [
                "best",
                "early_tie",
                "late_tie",
                "empty_wallet",
                "loser",
                "unvalued"
            ]
        );
        assert_eq!(ranked[0].rank, 1);
        assert_eq!(ranked[0].pnl_percent, Some(100.0));
        assert_eq!(ranked[0].pnl, Some(50.0));
        assert_eq!(ranked[0].display_name.as_deref(), Some("Ada"));
        assert_eq!(ranked[5].rank, 6);
    }
}
