//! Portfolio tracking: every registered wallet's on-chain holdings valued in USD at the market's
//! prices, as a baseline when the tournament starts (or when a wallet joins a live one) and then
//! on a schedule (`CRUCIBLE_SNAPSHOT_INTERVAL_SECS`). Each snapshot is a row; a registration
//! keeps its start and latest values so a leaderboard is one ordered read.
//!
//! Each round also reads the wallet's transactions since the last one it accounted for
//! (`getSignaturesForAddress` + `getTransaction`, the same calls on the simnet and on a real
//! cluster) and records the external flows among them ([`super::flows`]) once per tournament,
//! wallet and signature, so a restart or a repeated round never counts one twice. The
//! registration's cursor moves in the same database transaction as the flows it covers.
//! How PnL is computed from them: docs/tournaments.md.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, bail};
use futures_util::StreamExt;

use super::flows::{self, Movement};
use super::rules::TransferPolicy;
use crate::chain::rpc::SignatureInfo;
use crate::clock::to_millis;
use crate::domain::WalletAddress;
use crate::events::Event;
use crate::state::AppState;

/// Lamports per SOL.
const LAMPORTS: f64 = 1_000_000_000.0;
/// Wallets valued at once: bounded so a large tournament does not flood the RPC.
const CONCURRENT_READS: usize = 16;
/// The commitment history and balances are read at (the balance reads use it too).
const COMMITMENT: &str = "confirmed";
/// Reads of one wallet when a transaction keeps landing while it is read.
const ATTEMPTS: usize = 3;

/// USD value of `wallet` now at `sol_price`: SOL plus the stablecoin at 1. Tokens the
/// market does not price are left out (they cannot move the ranking either way).
async fn value_at(state: &AppState, wallet: &WalletAddress, sol_price: f64) -> anyhow::Result<f64> {
    let portfolio = state
        .chain
        .portfolio(wallet)
        .await
        .context("reading the portfolio")?;
    let stable = portfolio.token(state.chain.stablecoin_mint()) as f64 / crate::usdc::UNIT as f64;
    Ok(portfolio.lamports as f64 / LAMPORTS * sol_price + stable)
}

/// USD value of `wallet` now: SOL at the price source's price (the simnet pool, or Pyth on an
/// external cluster) plus the stablecoin at 1.
pub async fn wallet_value(state: &AppState, wallet: &str) -> anyhow::Result<f64> {
    let address = WalletAddress::parse(wallet).map_err(anyhow::Error::msg)?;
    let sol_price = state
        .chain
        .price_source()
        .sol_usd()
        .await
        .context("pricing SOL")?;
    value_at(state, &address, sol_price).await
}

/// One external flow, as recorded.
#[derive(Debug, Clone)]
struct Flow {
    signature: String,
    slot: i64,
    occurred_at: i64,
    lamports: i128,
    stable_raw: i128,
    value_usd: f64,
}

/// What one round learned about one wallet.
#[derive(Debug)]
struct Observation {
    value: f64,
    /// The newest signature accounted for after this round.
    cursor: Option<String>,
    /// External flows since the previous cursor, oldest first.
    flows: Vec<Flow>,
}

/// Where a registration's tracking stands before this round.
#[derive(Debug, Clone)]
struct Tracked {
    /// `None` until the baseline is taken: this round takes it (and records no flows).
    baseline_at: Option<i64>,
    cursor: Option<String>,
}

fn newest(page: &[SignatureInfo]) -> Option<String> {
    page.first().map(|s| s.signature.clone())
}

/// Read `wallet`'s new transactions and value it, consistently: if a transaction landed while
/// it was being read, read again, so the value and the flows describe the same history.
async fn observe(
    state: &AppState,
    wallet: &str,
    tracked: &Tracked,
    sol_price: f64,
    swap_programs: &[String],
) -> anyhow::Result<Observation> {
    let address = WalletAddress::parse(wallet).map_err(anyhow::Error::msg)?;
    let rpc = state.chain.rpc();
    for _ in 0..ATTEMPTS {
        let since = match tracked.baseline_at {
            // The baseline: everything before it is history, not flow.
            None => {
                rpc.get_signatures_page(wallet, None, None, 1, COMMITMENT)
                    .await?
            }
            Some(_) => {
                rpc.get_signatures_since(wallet, tracked.cursor.as_deref(), COMMITMENT)
                    .await?
            }
        };
        let value = value_at(state, &address, sol_price).await?;
        let after = rpc
            .get_signatures_page(wallet, None, None, 1, COMMITMENT)
            .await?;
        let cursor = newest(&since).or_else(|| tracked.cursor.clone());
        if newest(&after) != cursor {
            continue;
        }
        if tracked.baseline_at.is_none() {
            return Ok(Observation {
                value,
                cursor,
                flows: Vec::new(),
            });
        }
        let mut found = Vec::new();
        for info in since.iter().rev() {
            if info.err.is_some() {
                // A failed transaction moved nothing but its fee.
                continue;
            }
            let tx = rpc
                .get_transaction(&info.signature, COMMITMENT)
                .await?
                .with_context(|| format!("transaction {} is not visible yet", info.signature))?;
            if let Movement::Flow {
                lamports,
                stable_raw,
            } = flows::classify(&tx, wallet, state.chain.stablecoin_mint(), swap_programs)
            {
                let occurred_at = info.block_time.map_or(0, |t| t.saturating_mul(1000));
                let price = if lamports == 0 {
                    sol_price
                } else {
                    price_of_its_time(state, info.slot, occurred_at, sol_price).await
                };
                found.push(Flow {
                    signature: info.signature.clone(),
                    slot: i64::try_from(info.slot).unwrap_or(i64::MAX),
                    occurred_at,
                    lamports,
                    stable_raw,
                    value_usd: flows::value_usd(lamports, stable_raw, price),
                });
            }
        }
        return Ok(Observation {
            value,
            cursor,
            flows: found,
        });
    }
    bail!("transactions kept landing while the wallet was read")
}

/// SOL's price when the flow at `slot` (block time `occurred_at`, ms) happened: the simnet
/// pool's price after the pool's last transaction before it, or Pyth's price published then.
/// Falls back to the round's price when the source has none (no pool trade yet, or a price
/// service that cannot answer for that moment), which is logged.
async fn price_of_its_time(state: &AppState, slot: u64, occurred_at: i64, round_price: f64) -> f64 {
    match state
        .chain
        .price_source()
        .sol_usd_at(slot, crate::clock::from_millis(occurred_at))
        .await
    {
        Ok(price) => price,
        Err(error) => {
            tracing::debug!(slot, %error, "no price for the flow's time; valued at the round's price");
            round_price
        }
    }
}

/// Why a wallet is off the board under the `disqualify` policy.
fn disqualification(flow: &Flow) -> String {
    let direction = if flow.value_usd >= 0.0 { "in" } else { "out" };
    format!(
        "external flow {direction} of {:.2} USD after the baseline (transaction {})",
        flow.value_usd.abs(),
        flow.signature
    )
}

/// Which wallets a round covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every registered wallet: the board's `latestSnapshotAt` moves (and `stale` clears).
    WholeBoard,
    /// Only wallets joining a live tournament: their baselines, not a fresh board (unless they
    /// are every registered wallet).
    Joining,
}

/// Value `wallets` of a tournament and record the snapshot with the flows seen since the last
/// one. A wallet without a baseline gets this value as its baseline. Returns how many wallets
/// were valued. Fails, writing nothing (so the board stays `stale`), when SOL cannot be priced
/// or no wallet at all could be valued.
pub(crate) async fn snapshot_wallets(
    state: &AppState,
    tournament_id: &str,
    wallets: Vec<String>,
    scope: Scope,
) -> anyhow::Result<usize> {
    let taken_at = to_millis(state.now());
    let (policy,): (String,) =
        sqlx::query_as("SELECT transfer_policy FROM tournaments WHERE id = $1")
            .bind(tournament_id)
            .fetch_one(state.store.read())
            .await?;
    let policy = TransferPolicy::from_stored(&policy);
    let wanted: HashSet<&str> = wallets.iter().map(String::as_str).collect();
    let rows: Vec<(String, Option<i64>, Option<String>)> = sqlx::query_as(
        "SELECT wallet, baseline_at, flow_cursor FROM tournament_registrations WHERE tournament_id = $1",
    )
    .bind(tournament_id)
    .fetch_all(state.store.read())
    .await?;
    let registered = rows.len();
    let tracked: HashMap<String, Tracked> = rows
        .into_iter()
        .filter(|(wallet, ..)| wanted.contains(wallet.as_str()))
        .map(|(wallet, baseline_at, cursor)| {
            (
                wallet,
                Tracked {
                    baseline_at,
                    cursor,
                },
            )
        })
        .collect();
    let mut valued = 0;
    let mut observations = Vec::new();
    if !tracked.is_empty() {
        // One price for the whole round: every wallet (and every flow) is valued alike.
        let sol_price = state
            .chain
            .price_source()
            .sol_usd()
            .await
            .context("pricing SOL")?;
        let swap_programs = flows::swap_programs();
        let swap_programs = &swap_programs;
        observations = futures_util::stream::iter(tracked)
            .map(|(wallet, tracked)| async move {
                let seen = observe(state, &wallet, &tracked, sol_price, swap_programs).await;
                (wallet, tracked, seen)
            })
            .buffer_unordered(CONCURRENT_READS)
            .collect::<Vec<(String, Tracked, anyhow::Result<Observation>)>>()
            .await;
    }
    let attempted = observations.len();
    // Written only once everything is read: the write transaction never waits on the chain.
    let mut tx = state.store.begin().await?;
    {
        for (wallet, tracked, seen) in observations {
            let seen = match seen {
                Ok(seen) => seen,
                Err(error) => {
                    // One unreadable wallet must not hold back everyone's snapshot.
                    tracing::warn!(tournament_id, wallet, error = %format!("{error:#}"), "wallet not valued");
                    continue;
                }
            };
            record(
                &mut tx,
                tournament_id,
                &wallet,
                &tracked,
                &seen,
                policy,
                taken_at,
            )
            .await?;
            valued += 1;
        }
        if valued == 0 && attempted > 0 {
            bail!("no registered wallet could be valued");
        }
    }
    // Joining wallets refresh the board only when they are the whole board: otherwise the
    // others were not valued, and a stale board must stay stale.
    if scope == Scope::WholeBoard || valued == registered {
        sqlx::query("UPDATE tournaments SET last_snapshot_at = $1 WHERE id = $2")
            .bind(taken_at)
            .bind(tournament_id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    state.events.publish(Event::LeaderboardChanged {
        tournament_id: tournament_id.to_owned(),
    });
    Ok(valued)
}

/// Write one wallet's round: its new flows (each once), its registration and its snapshot.
async fn record(
    tx: &mut sqlx::AnyConnection,
    tournament_id: &str,
    wallet: &str,
    tracked: &Tracked,
    seen: &Observation,
    policy: TransferPolicy,
    taken_at: i64,
) -> anyhow::Result<()> {
    let baseline_at = tracked.baseline_at.unwrap_or(taken_at);
    let (mut net, mut timed) = (0.0, 0.0);
    let mut reason = None;
    for flow in &seen.flows {
        let occurred_at = flow.occurred_at.clamp(baseline_at, taken_at);
        let inserted = sqlx::query(
            "INSERT INTO tournament_flows (tournament_id, wallet, signature, slot, occurred_at, lamports, stable_raw, value_usd)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (tournament_id, wallet, signature) DO NOTHING",
        )
        .bind(tournament_id)
        .bind(wallet)
        .bind(&flow.signature)
        .bind(flow.slot)
        .bind(occurred_at)
        .bind(i64::try_from(flow.lamports).unwrap_or(i64::MAX))
        .bind(i64::try_from(flow.stable_raw).unwrap_or(i64::MAX))
        .bind(flow.value_usd)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            continue;
        }
        net += flow.value_usd;
        timed += flow.value_usd * (occurred_at - baseline_at) as f64;
        if policy == TransferPolicy::Disqualify && reason.is_none() {
            reason = Some(disqualification(flow));
        }
    }
    sqlx::query(
        "UPDATE tournament_registrations
         SET start_value_usd = COALESCE(start_value_usd, $1), baseline_at = COALESCE(baseline_at, $2),
             current_value_usd = $1, snapshot_at = $2, flow_cursor = $3,
             net_flows_usd = net_flows_usd + $4, flow_time_usd = flow_time_usd + $5,
             disqualified_reason = COALESCE(disqualified_reason, $6)
         WHERE tournament_id = $7 AND wallet = $8",
    )
    .bind(seen.value)
    .bind(taken_at)
    .bind(&seen.cursor)
    .bind(net)
    .bind(timed)
    .bind(reason)
    .bind(tournament_id)
    .bind(wallet)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO portfolio_snapshots (tournament_id, wallet, taken_at, value_usd, net_flows_usd)
         SELECT tournament_id, wallet, $3, $4, net_flows_usd FROM tournament_registrations
         WHERE tournament_id = $1 AND wallet = $2
         ON CONFLICT (tournament_id, wallet, taken_at)
         DO UPDATE SET value_usd = excluded.value_usd, net_flows_usd = excluded.net_flows_usd",
    )
    .bind(tournament_id)
    .bind(wallet)
    .bind(taken_at)
    .bind(seen.value)
    .execute(&mut *tx)
    .await?;
    Ok(())
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
        Scope::WholeBoard,
    )
    .await
}

/// The scheduled snapshot: every live tournament. One tournament that cannot be valued does not
/// hold back the others (its board stays stale); the round reports the first failure.
pub async fn snapshot_live(state: &AppState) -> anyhow::Result<()> {
    let now = to_millis(state.now());
    let live: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM tournaments WHERE status IN ('upcoming', 'live') AND start_date <= $1 AND end_date > $1",
    )
    .bind(now)
    .fetch_all(state.store.read())
    .await?;
    let mut failure = None;
    for (id,) in live {
        match snapshot_tournament(state, &id).await {
            Ok(valued) => tracing::debug!(tournament_id = id, valued, "snapshot taken"),
            Err(error) => {
                tracing::warn!(tournament_id = id, error = %format!("{error:#}"), "snapshot failed; the board stays stale");
                failure.get_or_insert(error);
            }
        }
    }
    failure.map_or(Ok(()), Err)
}
