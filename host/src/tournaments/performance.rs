//! Portfolio value over time per wallet, for charts: one wallet's series, or those of the top ten
//! of the board, each downsampled to at most the points asked for. The snapshots of every chosen
//! wallet come back in one query.

use serde::Serialize;
use utoipa::ToSchema;

use super::leaderboard;
use super::model::Tournament;
use crate::clock::{from_millis, rfc3339};
use crate::db::Store;
use crate::tournaments::leaderboard::Cache as LeaderboardCache;

/// Wallets charted when no wallet is named: the top of the board.
pub(crate) const TOP: usize = 10;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Point {
    at: String,
    value_usd: f64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Series {
    wallet: String,
    rank: usize,
    points: Vec<Point>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Performance {
    tournament_id: String,
    series: Vec<Series>,
}

/// Why a series could not be drawn.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PerformanceError {
    #[error("wallet {0} is not registered for this tournament")]
    NotRegistered(String),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// The series of `wallet`, or of the [`TOP`] wallets of the board, each at most `points` long.
pub(crate) async fn series(
    store: &Store,
    leaderboards: &LeaderboardCache,
    tournament: &Tournament,
    wallet: Option<&str>,
    points: usize,
) -> Result<Performance, PerformanceError> {
    let ranked = leaderboard::ranked(store, leaderboards, tournament).await?;
    let chosen: Vec<(String, usize)> = match wallet {
        Some(wallet) => {
            let entry = ranked
                .iter()
                .find(|entry| entry.wallet == wallet)
                .ok_or_else(|| PerformanceError::NotRegistered(wallet.to_owned()))?;
            vec![(entry.wallet.clone(), entry.rank)]
        }
        None => ranked
            .iter()
            .take(TOP)
            .map(|entry| (entry.wallet.clone(), entry.rank))
            .collect(),
    };
    // One statement for every chosen wallet: ten wallet parameters, the unused ones null.
    let mut query = sqlx::query_as::<_, (String, i64, f64)>(
        "SELECT wallet, taken_at, value_usd FROM portfolio_snapshots
         WHERE tournament_id = $1 AND wallet IN ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ORDER BY wallet, taken_at",
    )
    .bind(&tournament.id);
    for slot in 0..TOP {
        query = query.bind(chosen.get(slot).map(|(wallet, _)| wallet.clone()));
    }
    let rows = query.fetch_all(store.read()).await?;
    let series = chosen
        .into_iter()
        .map(|(wallet, rank)| {
            let own: Vec<(i64, f64)> = rows
                .iter()
                .filter(|(w, _, _)| *w == wallet)
                .map(|(_, at, value)| (*at, *value))
                .collect();
            let points = downsample(&own, points)
                .into_iter()
                .map(|(at, value_usd)| Point {
                    at: rfc3339(from_millis(at)),
                    value_usd,
                })
                .collect();
            Series {
                wallet,
                rank,
                points,
            }
        })
        .collect();
    Ok(Performance {
        tournament_id: tournament.id.clone(),
        series,
    })
}

/// At most `max` points: the series split into equal runs, each run's last point kept (so the
/// first and the latest values always survive).
fn downsample(rows: &[(i64, f64)], max: usize) -> Vec<(i64, f64)> {
    if rows.len() <= max {
        return rows.to_vec();
    }
    let mut out = vec![rows[0]];
    let runs = max - 1;
    for run in 1..=runs {
        let index = (run * (rows.len() - 1)) / runs;
        out.push(rows[index]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::downsample;

    #[test]
    fn downsampling_keeps_first_and_last_and_bounds_the_size() {
        let rows: Vec<(i64, f64)> = (0..1000).map(|i| (i, i as f64)).collect();
        let out = downsample(&rows, 100);
        assert_eq!(out.len(), 100);
        assert_eq!(out[0], (0, 0.0));
        assert_eq!(out[99], (999, 999.0));
        assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(downsample(&rows[..5], 100).len(), 5);
    }
}
