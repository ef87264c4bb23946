//! Portfolio tracking: every registered wallet's on-chain holdings valued in USD at the market's
//! prices, as a baseline when the tournament starts (or when a wallet joins a live one) and then
//! on a schedule. Each snapshot is a row; a registration keeps its start and latest values so
//! a leaderboard is one ordered read.

use anyhow::Context;
use futures_util::StreamExt;

use crate::clock::to_millis;
use crate::domain::WalletAddress;
use crate::events::Event;
use crate::state::AppState;

/// Lamports per SOL.
const LAMPORTS: f64 = 1_000_000_000.0;
/// Wallets valued at once: bounded so a large tournament does not flood the RPC.
const CONCURRENT_READS: usize = 16;

/// USD value of `wallet` now: SOL at the price source's price (the simnet pool, or the market
/// on an external cluster) plus the stablecoin at 1. Tokens the
/// market does not price are left out (they cannot move the ranking either way).
pub async fn wallet_value(state: &AppState, wallet: &str) -> anyhow::Result<f64> {
    let address = WalletAddress::parse(wallet).map_err(anyhow::Error::msg)?;
    let portfolio = state
        .chain
        .portfolio(&address)
        .await
        .context("reading the portfolio")?;
    // On simnet SOL is worth what the pool says, so swaps there move the leaderboard.
    let sol_price = state
        .chain
        .price_source()
        .sol_usd()
        .await
        .context("pricing SOL")?;
    let stable = portfolio.token(state.chain.stablecoin_mint()) as f64 / 1_000_000.0;
    Ok(portfolio.lamports as f64 / LAMPORTS * sol_price + stable)
}

/// Value `wallets` of a tournament and record the snapshot. A wallet without a baseline gets
/// this value as its baseline. Returns how many wallets were valued.
pub async fn snapshot_wallets(
    state: &AppState,
    tournament_id: &str,
    wallets: Vec<String>,
) -> anyhow::Result<usize> {
    let taken_at = to_millis(state.now());
    let values: Vec<(String, anyhow::Result<f64>)> = futures_util::stream::iter(wallets)
        .map(|wallet| async move {
            let value = wallet_value(state, &wallet).await;
            (wallet, value)
        })
        .buffer_unordered(CONCURRENT_READS)
        .collect()
        .await;
    let mut valued = 0;
    let mut tx = state.store.begin().await?;
    for (wallet, value) in values {
        let value = match value {
            Ok(value) => value,
            Err(error) => {
                // One unreadable wallet must not hold back everyone's snapshot.
                tracing::warn!(tournament_id, wallet, error = %format!("{error:#}"), "wallet not valued");
                continue;
            }
        };
        sqlx::query(
            "INSERT INTO portfolio_snapshots (tournament_id, wallet, taken_at, value_usd) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tournament_id, wallet, taken_at) DO UPDATE SET value_usd = excluded.value_usd",
        )
        .bind(tournament_id)
        .bind(&wallet)
        .bind(taken_at)
        .bind(value)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE tournament_registrations
             SET start_value_usd = COALESCE(start_value_usd, $1), current_value_usd = $1, snapshot_at = $2
             WHERE tournament_id = $3 AND wallet = $4",
        )
        .bind(value)
        .bind(taken_at)
        .bind(tournament_id)
        .bind(&wallet)
        .execute(&mut *tx)
        .await?;
        valued += 1;
    }
    sqlx::query("UPDATE tournaments SET last_snapshot_at = $1 WHERE id = $2")
        .bind(taken_at)
        .bind(tournament_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    state.events.publish(Event::LeaderboardChanged {
        tournament_id: tournament_id.to_owned(),
    });
    Ok(valued)
}

/// Snapshot every registered wallet of one tournament.
pub async fn snapshot_tournament(state: &AppState, tournament_id: &str) -> anyhow::Result<usize> {
    let wallets: Vec<(String,)> =
        sqlx::query_as("SELECT wallet FROM tournament_registrations WHERE tournament_id = $1")
            .bind(tournament_id)
            .fetch_all(state.store.read())
            .await?;
    snapshot_wallets(
        state,
        tournament_id,
        wallets.into_iter().map(|(w,)| w).collect(),
    )
    .await
}

/// The scheduled snapshot: every live tournament.
pub async fn snapshot_live(state: &AppState) -> anyhow::Result<()> {
    let now = to_millis(state.now());
    let live: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM tournaments WHERE status IN ('upcoming', 'live') AND start_date <= $1 AND end_date > $1",
    )
    .bind(now)
    .fetch_all(state.store.read())
    .await?;
    for (id,) in live {
        let valued = snapshot_tournament(state, &id).await?;
        tracing::debug!(tournament_id = id, valued, "snapshot taken");
    }
    Ok(())
}
