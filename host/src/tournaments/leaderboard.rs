//! Leaderboards: wallets ranked by the tournament's evaluation metric (flow-adjusted PnL
//! percent by default; see docs/tournaments.md), ties by earlier registration; disqualified
//! wallets last. Once a tournament has ended and been settled, each row also carries its frozen
//! standing (`finalRank`, `finalPnl`, `prizeAwarded`; see `docs/api.md`). The ranked list is
//! rebuilt only when its tournament's data changed (a new snapshot, new registrations, the
//! final standings), so reads of a 10,000-wallet board cost one key lookup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use utoipa::openapi::{RefOr, schema::Schema};
use utoipa::{PartialSchema, ToSchema};

use super::metrics::{self, Point};
use super::model::{Status, Tournament};
use super::rules::EvaluationMetric;
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::db::Store;
use crate::tournaments::leaderboard::Cache as LeaderboardCache;

/// Snapshots older than this make a live board `stale`.
pub(crate) const STALE_AFTER: Duration = Duration::hours(2);

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    pub rank: usize,
    pub wallet: String,
    /// An agent's wallet: the agent's name; otherwise the owning account's display name, when
    /// the entry is attributed to one that set it.
    pub display_name: Option<String>,
    /// USD value at the baseline (tournament start, or registration if it joined live).
    pub start_value: Option<f64>,
    pub current_value: Option<f64>,
    /// Value now − value at the baseline − net external flows (USD).
    pub pnl: Option<f64>,
    /// Flow-adjusted return since the baseline (Modified Dietz), in percent.
    pub pnl_percent: Option<f64>,
    /// External flows since the baseline, in USD at SOL's price of their time: deposits
    /// positive, withdrawals negative.
    pub net_flows: f64,
    /// Largest fall from a peak of the flow-adjusted snapshot series, in percent (null before
    /// the second snapshot).
    pub max_drawdown_percent: Option<f64>,
    /// The value the tournament's `evaluationMetric` ranks by (null when it needs more
    /// snapshots than the wallet has).
    pub metric_value: Option<f64>,
    /// Off the board under the `disqualify` transfer policy: ranked after every other wallet
    /// and never paid.
    pub disqualified: bool,
    pub disqualified_reason: Option<String>,
    pub snapshot_at: Option<String>,
    pub registered_at: String,
    /// Present once the tournament has ended and its standings are frozen.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = standing_members)]
    pub standing: Option<FinalStanding>,
}

/// `standing` in the document: [`FinalStanding`]'s members beside the entry's, none of them
/// required, since an entry has them only once the tournament has ended (a flattened `Option`
/// would otherwise be documented as "null or all of them", which no entry is).
fn standing_members() -> RefOr<Schema> {
    let mut schema = <FinalStanding as PartialSchema>::schema();
    if let RefOr::T(Schema::Object(object)) = &mut schema {
        object.required.clear();
    }
    schema
}

/// A wallet's frozen result, written when the tournament ends.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FinalStanding {
    pub final_rank: i64,
    /// PnL percent at the end (null for a wallet that was never valued).
    pub final_pnl: Option<f64>,
    /// The prize in USDC (display units); 0 for a wallet without a prize.
    pub prize_awarded: f64,
    /// The same prize in raw units, as a string (exact for any amount).
    pub prize_awarded_raw: String,
    /// The transfer that paid the prize, once it is finalized (null before, and without a prize).
    pub prize_tx_signature: Option<String>,
}

/// What a cached board was built from; any change rebuilds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    last_snapshot_at: Option<i64>,
    participants: i64,
    status: String,
    /// For an ended tournament: how many rows have a final rank, and how many have a prize plus
    /// how many prizes were sent, since freezing the standings, awarding the prizes and paying
    /// them happen after the status changes.
    finals: (i64, i64),
    /// Manual disqualifications and reinstatements.
    standings_revision: i64,
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
    baseline_at: Option<i64>,
    net_flows_usd: f64,
    flow_time_usd: f64,
    disqualified_reason: Option<String>,
    display_name: Option<String>,
    final_rank: Option<i64>,
    final_pnl: Option<f64>,
    prize_awarded_raw: Option<i64>,
    prize_tx_signature: Option<String>,
}

/// Boards kept at most: a node serves a few hot boards at a time, while every tournament ever
/// read would otherwise stay in memory for good.
const CACHED_BOARDS: usize = 64;

/// Ranked boards by tournament id, the least recently read dropped beyond [`CACHED_BOARDS`].
#[derive(Default)]
pub struct Cache {
    boards: Mutex<HashMap<String, (Built, u64)>>,
    /// A counter standing for "when" a board was last read (no clock needed to order reads).
    reads: std::sync::atomic::AtomicU64,
}

impl Cache {
    fn get(&self, id: &str, version: &Version) -> Option<Arc<Vec<Entry>>> {
        let mut boards = self
            .boards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let ((built, entries), last_read) = boards.get_mut(id)?;
        if built != version {
            return None;
        }
        *last_read = self
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(entries.clone())
    }

    fn put(&self, id: &str, version: Version, entries: Arc<Vec<Entry>>) {
        let mut boards = self
            .boards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = self
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        boards.insert(id.to_owned(), ((version, entries), now));
        if boards.len() > CACHED_BOARDS
            && let Some(oldest) = boards
                .iter()
                .min_by_key(|(_, (_, last_read))| *last_read)
                .map(|(id, _)| id.clone())
        {
            boards.remove(&oldest);
        }
    }

    /// Drop the boards nobody read in the last `max_idle` reads of any board (the node's
    /// housekeeping calls it), so boards of tournaments that went quiet leave memory before the
    /// cache is full.
    pub(crate) fn drop_unread(&self, max_idle: u64) {
        let now = self.reads.load(std::sync::atomic::Ordering::Relaxed);
        self.boards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .retain(|_, (_, last_read)| now.saturating_sub(*last_read) <= max_idle);
    }

    /// How many boards are held (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.boards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }
}

/// The full ranked board of `tournament`.
pub(crate) async fn ranked(
    store: &Store,
    leaderboards: &LeaderboardCache,
    tournament: &Tournament,
) -> sqlx::Result<Arc<Vec<Entry>>> {
    let finals = if tournament.status == "ended" {
        sqlx::query_as(
            "SELECT COUNT(final_rank),
                    COUNT(prize_awarded_raw)
                      + (SELECT COUNT(*) FROM payouts WHERE source_kind = 'tournament'
                                                        AND source_id = $1 AND status = 'sent')
             FROM tournament_registrations WHERE tournament_id = $1",
        )
        .bind(&tournament.id)
        .fetch_one(store.read())
        .await?
    } else {
        (0, 0)
    };
    let version = Version {
        last_snapshot_at: tournament.last_snapshot_at,
        participants: tournament.current_participants,
        status: tournament.status.clone(),
        finals,
        standings_revision: tournament.standings_revision,
    };
    if let Some(entries) = leaderboards.get(&tournament.id, &version) {
        return Ok(entries);
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT r.wallet, r.registered_at, r.start_value_usd, r.current_value_usd, r.snapshot_at,
                COALESCE(ag.name, a.display_name) AS display_name,
                r.final_rank, r.final_pnl, r.prize_awarded_raw, r.baseline_at, r.net_flows_usd, r.flow_time_usd,
                r.disqualified_reason, p.tx_signature AS prize_tx_signature
         FROM tournament_registrations r LEFT JOIN accounts a ON a.id = r.account_id
         LEFT JOIN agents ag ON ag.wallet_address = r.wallet
         LEFT JOIN payouts p ON p.source_kind = 'tournament' AND p.source_id = r.tournament_id
                            AND p.wallet = r.wallet AND p.status = 'sent'
         WHERE r.tournament_id = $1",
    )
    .bind(&tournament.id)
    .fetch_all(store.read())
    .await?;
    let points: Vec<(String, f64, f64)> = sqlx::query_as(
        "SELECT wallet, value_usd, net_flows_usd FROM portfolio_snapshots
         WHERE tournament_id = $1 ORDER BY wallet, taken_at",
    )
    .bind(&tournament.id)
    .fetch_all(store.read())
    .await?;
    let mut series: HashMap<String, Vec<Point>> = HashMap::new();
    for (wallet, value, net_flows) in points {
        series
            .entry(wallet)
            .or_default()
            .push(Point { value, net_flows });
    }
    let entries = Arc::new(rank(rows, tournament.evaluation_metric(), &series));
    leaderboards.put(&tournament.id, version, entries.clone());
    Ok(entries)
}

/// Rank rows: eligible wallets with a metric value first (highest first), then valued wallets
/// whose metric needs more snapshots (by PnL percent), then unvalued ones, then the
/// disqualified; ties by earlier registration, then wallet.
fn rank(
    rows: Vec<Row>,
    metric: EvaluationMetric,
    series: &HashMap<String, Vec<Point>>,
) -> Vec<Entry> {
    let mut entries: Vec<(Entry, i64)> = rows
        .into_iter()
        .map(|row| {
            let (start, current) = (row.start_value_usd, row.current_value_usd);
            let net_flows = row.net_flows_usd;
            let pnl = start
                .zip(current)
                .map(|(start, current)| current - start - net_flows);
            let pnl_percent = start.zip(current).map(|(start, current)| {
                let elapsed = match (row.baseline_at, row.snapshot_at) {
                    (Some(from), Some(to)) => (to - from) as f64,
                    _ => 0.0,
                };
                metrics::modified_dietz(start, current, net_flows, row.flow_time_usd, elapsed)
            });
            let points = series.get(&row.wallet).map_or(&[][..], Vec::as_slice);
            let max_drawdown_percent = (points.len() >= 2)
                .then(|| metrics::max_drawdown(&metrics::period_returns(points)) * 100.0);
            let metric_value = metrics::score(metric, points, pnl_percent);
            let standing = row.final_rank.map(|final_rank| {
                let prize = row.prize_awarded_raw.unwrap_or(0);
                FinalStanding {
                    final_rank,
                    final_pnl: row.final_pnl,
                    prize_awarded: crate::usdc::Usdc::from_raw(prize).ui(),
                    prize_awarded_raw: prize.to_string(),
                    prize_tx_signature: row.prize_tx_signature.clone(),
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
                net_flows,
                max_drawdown_percent,
                metric_value,
                disqualified: row.disqualified_reason.is_some(),
                disqualified_reason: row.disqualified_reason,
                snapshot_at: row.snapshot_at.map(|at| rfc3339(from_millis(at))),
                registered_at: rfc3339(from_millis(row.registered_at)),
                standing,
            };
            (entry, row.registered_at)
        })
        .collect();
    let finite = |v: Option<f64>| v.filter(|v| !v.is_nan());
    let tier = |e: &Entry| match (
        e.disqualified,
        finite(e.metric_value),
        finite(e.pnl_percent),
    ) {
        (true, ..) => 3,
        (false, Some(_), _) => 0,
        (false, None, Some(_)) => 1,
        (false, None, None) => 2,
    };
    let key = |e: &Entry| {
        finite(e.metric_value)
            .or(finite(e.pnl_percent))
            .unwrap_or(f64::NEG_INFINITY)
    };
    entries.sort_by(|(a, a_at), (b, b_at)| {
        tier(a)
            .cmp(&tier(b))
            .then(key(b).total_cmp(&key(a)))
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
pub(crate) fn is_stale(tournament: &Tournament, now: DateTime<Utc>) -> bool {
    tournament.status_at(now) == Status::Live
        && tournament
            .last_snapshot_at
            .is_none_or(|at| to_millis(now) - at > STALE_AFTER.num_milliseconds())
}

/// One page of a board, as sent to clients and streams.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaderboardView {
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

pub(crate) async fn view(
    store: &Store,
    clock: &dyn Clock,
    leaderboards: &LeaderboardCache,
    tournament: &Tournament,
    page: usize,
    page_size: usize,
) -> sqlx::Result<LeaderboardView> {
    let entries = ranked(store, leaderboards, tournament).await?;
    let now = clock.now();
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
pub(crate) async fn freeze(
    store: &Store,
    leaderboards: &LeaderboardCache,
    tournament: &Tournament,
) -> anyhow::Result<()> {
    let entries = ranked(store, leaderboards, tournament)
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    let mut tx = store.begin().await?;
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

    #[test]
    fn the_board_cache_keeps_the_most_recently_read_boards() {
        let version = |n: i64| Version {
            last_snapshot_at: Some(n),
            participants: n,
            status: "live".into(),
            finals: (0, 0),
            standings_revision: 0,
        };
        let cache = Cache::default();
        cache.put("hot", version(0), Arc::new(Vec::new()));
        for n in 0..(CACHED_BOARDS as i64 + 10) {
            cache.put(&format!("trn_{n}"), version(n), Arc::new(Vec::new()));
            // The hot board is read all along.
            assert!(cache.get("hot", &version(0)).is_some(), "read {n}");
        }
        assert_eq!(cache.len(), CACHED_BOARDS, "bounded");
        assert!(
            cache.get("trn_0", &version(0)).is_none(),
            "the coldest went first"
        );
        let newest = CACHED_BOARDS as i64 + 9;
        assert!(
            cache
                .get(&format!("trn_{newest}"), &version(newest))
                .is_some()
        );
        assert!(
            cache.get("hot", &version(1)).is_none(),
            "a stale version is a miss"
        );
    }

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
            prize_tx_signature: None,
            baseline_at: Some(0),
            net_flows_usd: 0.0,
            flow_time_usd: 0.0,
            disqualified_reason: None,
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
        let ranked = rank(rows, EvaluationMetric::PnlPercent, &HashMap::new());
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
