//! Portfolio tracking: every registered wallet's on-chain holdings valued in USD at the market's
//! prices, as a baseline when the tournament starts (or when a wallet joins a live one) and then
//! on a schedule (`CRUCIBLE_SNAPSHOT_INTERVAL_SECS`). Each snapshot is a row; a registration
//! keeps its start and latest values so a leaderboard is one ordered read.
//!
//! Each round also reads the transactions since the last one it accounted for of the wallet
//! *and of every token account it owns* (`getSignaturesForAddress` + `getTransaction`, the same
//! calls on the simnet and on a real cluster): a bare token transfer into one of its accounts
//! never names the wallet. It records the external flows among them ([`super::flows`]) once per
//! tournament, wallet and signature, so a restart or a repeated round never counts one twice.
//! Then it reconciles: the change of holdings since the last round that those transactions do
//! not explain (money that reached the wallet through an account no longer listed, say) is a
//! flow too. The registration's slot and holdings move in the same database transaction as the
//! flows they cover. How PnL is computed from them: docs/tournaments.md.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, bail};
use futures_util::StreamExt;

use super::flows::{self, Venues};
use super::rules::TransferPolicy;
use crate::chain::Chain;
use crate::chain::rpc::{SignatureInfo, TokenFilter};
use crate::chain::tx::{TOKEN_2022_PROGRAM, TOKEN_PROGRAM};
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::db::Store;
use crate::domain::WalletAddress;
use crate::events::Bus;
use crate::events::Event;

/// Lamports per SOL.
const LAMPORTS: f64 = 1_000_000_000.0;
/// Wallets valued at once: bounded so a large tournament does not flood the RPC.
const CONCURRENT_READS: usize = 16;
/// The commitment history and balances are read at (the balance reads use it too).
const COMMITMENT: &str = "confirmed";
/// Reads of one wallet when a transaction keeps landing while it is read.
const ATTEMPTS: usize = 3;

/// What the valuation counts of a wallet: its lamports and those of every token account it owns
/// (rent and wrapped SOL are SOL it can take back by closing the account), and the stablecoin in
/// those accounts. Other tokens are not valued (no market prices them), so they cannot move the
/// ranking either way.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holdings {
    lamports: u64,
    stable_raw: u64,
    /// Every token account the wallet owns (both token programs), sorted.
    token_accounts: Vec<String>,
}

impl Holdings {
    fn value(&self, sol_price: f64) -> f64 {
        self.lamports as f64 / LAMPORTS * sol_price
            + self.stable_raw as f64 / crate::usdc::UNIT as f64
    }
}

async fn holdings(chain: &Chain, wallet: &WalletAddress) -> anyhow::Result<Holdings> {
    let rpc = chain.rpc();
    let owner = wallet.as_str();
    let (lamports, classic, token_2022) = tokio::try_join!(
        rpc.get_balance(owner),
        rpc.get_token_accounts_by_owner(owner, TokenFilter::Program(TOKEN_PROGRAM)),
        rpc.get_token_accounts_by_owner(owner, TokenFilter::Program(TOKEN_2022_PROGRAM)),
    )
    .context("reading the holdings")?;
    let mint = chain.stablecoin_mint();
    let mut held = Holdings {
        lamports,
        stable_raw: 0,
        token_accounts: Vec::new(),
    };
    for account in classic.into_iter().chain(token_2022) {
        held.lamports = held.lamports.saturating_add(account.lamports);
        if account.mint == mint {
            held.stable_raw = held.stable_raw.saturating_add(account.amount);
        }
        held.token_accounts.push(account.address);
    }
    held.token_accounts.sort();
    Ok(held)
}

/// USD value of `wallet` now: SOL (its own and its token accounts' lamports) at the price
/// source's price (the simnet pool, or Pyth on an external cluster) plus the stablecoin at 1.
pub async fn wallet_value(chain: &Chain, wallet: &str) -> anyhow::Result<f64> {
    let address = WalletAddress::parse(wallet).map_err(anyhow::Error::msg)?;
    let sol_price = chain
        .price_source()
        .sol_usd()
        .await
        .context("pricing SOL")?;
    Ok(holdings(chain, &address).await?.value(sol_price))
}

/// One external flow, as recorded.
#[derive(Debug, Clone)]
struct Flow {
    /// The transaction, or for a change no transaction explains, a key of its own.
    signature: String,
    /// Whether a transaction carried it (`false`: found by reconciling the holdings).
    explained: bool,
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
    held: Holdings,
    /// The newest slot accounted for after this round.
    flow_slot: u64,
    /// External flows since the previous round, oldest first.
    flows: Vec<Flow>,
}

/// Where a registration's tracking stands before this round.
#[derive(Debug, Clone)]
struct Tracked {
    /// `None` until the baseline is taken: this round takes it (and records no flows).
    baseline_at: Option<i64>,
    /// The slot and holdings the last round saw; `None` before the baseline, or for a
    /// registration tracked before holdings were kept (it re-anchors without a flow).
    since: Option<(u64, i128, i128)>,
}

/// The key of a change no transaction explains, found by the round at `taken_at`.
fn unexplained_key(taken_at: i64) -> String {
    format!("unexplained-at-{taken_at}")
}

/// Read `wallet`'s holdings and the transactions of every account it holds, consistently: if
/// the holdings changed while the history was read, read again, so the value and the flows
/// describe the same history.
async fn observe(
    chain: &Chain,
    wallet: &str,
    tracked: &Tracked,
    sol_price: f64,
    taken_at: i64,
    venues: &Venues,
) -> anyhow::Result<Observation> {
    let address = WalletAddress::parse(wallet).map_err(anyhow::Error::msg)?;
    let rpc = chain.rpc();
    for _ in 0..ATTEMPTS {
        let before = holdings(chain, &address).await?;
        let followed: Vec<&str> = std::iter::once(wallet)
            .chain(before.token_accounts.iter().map(String::as_str))
            .collect();
        let mut history: Vec<SignatureInfo> = Vec::new();
        for account in &followed {
            let page = match tracked.since {
                // The baseline (or a re-anchor): everything before it is history, not flow;
                // only the newest slot matters.
                None => {
                    rpc.get_signatures_page(account, None, None, 1, COMMITMENT)
                        .await?
                }
                Some((slot, ..)) => {
                    rpc.get_signatures_after_slot(account, slot, COMMITMENT)
                        .await?
                }
            };
            history.extend(page);
        }
        let held = holdings(chain, &address).await?;
        if held != before {
            continue;
        }
        let newest = history.iter().map(|s| s.slot).max().unwrap_or(0);
        let value = held.value(sol_price);
        let Some((last_slot, last_lamports, last_stable)) = tracked.since else {
            return Ok(Observation {
                value,
                held,
                flow_slot: newest,
                flows: Vec::new(),
            });
        };
        // One transaction is often listed under several accounts: each counts once, oldest
        // first.
        history.sort_by(|a, b| (a.slot, &a.signature).cmp(&(b.slot, &b.signature)));
        history.dedup_by(|a, b| a.signature == b.signature);
        let mut found = Vec::new();
        let (mut lamports, mut stable_raw) = (0i128, 0i128);
        for info in &history {
            let tx = rpc
                .get_transaction(&info.signature, COMMITMENT)
                .await?
                .with_context(|| format!("transaction {} is not visible yet", info.signature))?;
            let effect = flows::effect(&tx, wallet, chain.stablecoin_mint(), venues);
            lamports += effect.lamports;
            stable_raw += effect.stable_raw;
            if !effect.is_flow() {
                continue;
            }
            let occurred_at = info.block_time.map_or(0, |t| t.saturating_mul(1000));
            let price = if effect.flow_lamports == 0 {
                sol_price
            } else {
                price_of_its_time(chain, info.slot, occurred_at, sol_price).await
            };
            found.push(Flow {
                signature: info.signature.clone(),
                explained: true,
                slot: i64::try_from(info.slot).unwrap_or(i64::MAX),
                occurred_at,
                lamports: effect.flow_lamports,
                stable_raw: effect.flow_stable_raw,
                value_usd: flows::value_usd(effect.flow_lamports, effect.flow_stable_raw, price),
            });
        }
        let flow_slot = newest.max(last_slot);
        // Reconcile: what the holdings did that the transactions read do not account for
        // reached the wallet (or left it) some other way, and is a flow as well.
        let unexplained_lamports = i128::from(held.lamports) - last_lamports - lamports;
        let unexplained_stable = i128::from(held.stable_raw) - last_stable - stable_raw;
        if unexplained_lamports != 0 || unexplained_stable != 0 {
            found.push(Flow {
                signature: unexplained_key(taken_at),
                explained: false,
                slot: i64::try_from(flow_slot).unwrap_or(i64::MAX),
                occurred_at: taken_at,
                lamports: unexplained_lamports,
                stable_raw: unexplained_stable,
                value_usd: flows::value_usd(unexplained_lamports, unexplained_stable, sol_price),
            });
        }
        return Ok(Observation {
            value,
            held,
            flow_slot,
            flows: found,
        });
    }
    bail!("transactions kept landing while the wallet was read")
}

/// SOL's price when the flow at `slot` (block time `occurred_at`, ms) happened: the simnet
/// pool's price after the pool's last transaction before it, or Pyth's price published then.
/// Falls back to the round's price when the source has none (no pool trade yet, or a price
/// service that cannot answer for that moment), which is logged.
async fn price_of_its_time(chain: &Chain, slot: u64, occurred_at: i64, round_price: f64) -> f64 {
    match chain
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
    if flow.explained {
        format!(
            "external flow {direction} of {:.2} USD after the baseline (transaction {})",
            flow.value_usd.abs(),
            flow.signature
        )
    } else {
        format!(
            "external flow {direction} of {:.2} USD after the baseline (a change of holdings that no transaction of the wallet's accounts explains, up to slot {})",
            flow.value_usd.abs(),
            flow.slot
        )
    }
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
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament_id: &str,
    wallets: Vec<String>,
    scope: Scope,
) -> anyhow::Result<usize> {
    let taken_at = to_millis(clock.now());
    let (policy,): (String,) =
        sqlx::query_as("SELECT transfer_policy FROM tournaments WHERE id = $1")
            .bind(tournament_id)
            .fetch_one(store.read())
            .await?;
    let policy = TransferPolicy::from_stored(&policy);
    let wanted: HashSet<&str> = wallets.iter().map(String::as_str).collect();
    type Row = (String, Option<i64>, Option<i64>, Option<i64>, Option<i64>);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT wallet, baseline_at, flow_slot, held_lamports, held_stable_raw
         FROM tournament_registrations WHERE tournament_id = $1",
    )
    .bind(tournament_id)
    .fetch_all(store.read())
    .await?;
    let registered = rows.len();
    let tracked: HashMap<String, Tracked> = rows
        .into_iter()
        .filter(|(wallet, ..)| wanted.contains(wallet.as_str()))
        .map(|(wallet, baseline_at, slot, lamports, stable)| {
            let since = match (baseline_at, slot, lamports, stable) {
                (Some(_), Some(slot), Some(lamports), Some(stable)) => Some((
                    u64::try_from(slot).unwrap_or_default(),
                    i128::from(lamports),
                    i128::from(stable),
                )),
                _ => None,
            };
            (wallet, Tracked { baseline_at, since })
        })
        .collect();
    let mut valued = 0;
    let mut observations = Vec::new();
    if !tracked.is_empty() {
        // One price for the whole round: every wallet (and every flow) is valued alike.
        let sol_price = chain
            .price_source()
            .sol_usd()
            .await
            .context("pricing SOL")?;
        let venues = Venues::known();
        let venues = &venues;
        observations = futures_util::stream::iter(tracked)
            .map(|(wallet, tracked)| async move {
                let seen = observe(chain, &wallet, &tracked, sol_price, taken_at, venues).await;
                (wallet, tracked, seen)
            })
            .buffer_unordered(CONCURRENT_READS)
            .collect::<Vec<(String, Tracked, anyhow::Result<Observation>)>>()
            .await;
    }
    let attempted = observations.len();
    // Written only once everything is read: the write transaction never waits on the chain.
    let mut tx = store.begin().await?;
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
    events.publish(Event::LeaderboardChanged {
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
             current_value_usd = $1, snapshot_at = $2, flow_slot = $3,
             held_lamports = $9, held_stable_raw = $10,
             net_flows_usd = net_flows_usd + $4, flow_time_usd = flow_time_usd + $5,
             disqualified_reason = COALESCE(disqualified_reason, $6)
         WHERE tournament_id = $7 AND wallet = $8",
    )
    .bind(seen.value)
    .bind(taken_at)
    .bind(i64::try_from(seen.flow_slot).unwrap_or(i64::MAX))
    .bind(net)
    .bind(timed)
    .bind(reason)
    .bind(tournament_id)
    .bind(wallet)
    .bind(i64::try_from(seen.held.lamports).unwrap_or(i64::MAX))
    .bind(i64::try_from(seen.held.stable_raw).unwrap_or(i64::MAX))
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
pub async fn snapshot_tournament(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    tournament_id: &str,
) -> anyhow::Result<usize> {
    let wallets: Vec<(String,)> =
        sqlx::query_as("SELECT wallet FROM tournament_registrations WHERE tournament_id = $1")
            .bind(tournament_id)
            .fetch_all(store.read())
            .await?;
    snapshot_wallets(
        store,
        clock,
        events,
        chain,
        tournament_id,
        wallets.into_iter().map(|(w,)| w).collect(),
        Scope::WholeBoard,
    )
    .await
}

/// The scheduled snapshot: every live tournament. One tournament that cannot be valued does not
/// hold back the others (its board stays stale); the round reports the first failure.
pub async fn snapshot_live(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
) -> anyhow::Result<()> {
    let now = to_millis(clock.now());
    let live: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM tournaments WHERE status IN ('upcoming', 'live') AND start_date <= $1 AND end_date > $1",
    )
    .bind(now)
    .fetch_all(store.read())
    .await?;
    let mut failure = None;
    for (id,) in live {
        match snapshot_tournament(store, clock, events, chain, &id).await {
            Ok(valued) => tracing::debug!(tournament_id = id, valued, "snapshot taken"),
            Err(error) => {
                tracing::warn!(tournament_id = id, error = %format!("{error:#}"), "snapshot failed; the board stays stale");
                failure.get_or_insert(error);
            }
        }
    }
    failure.map_or(Ok(()), Err)
}
