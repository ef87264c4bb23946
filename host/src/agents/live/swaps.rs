//! The exactly-once life of one live swap: signed and recorded as `pending` (its own small
//! write) before it is sent; then settled from what the chain says — confirmed → one trade and
//! its `agent.trade` webhook, failed or never landed → a refused order. Settling is a
//! conditional update (`WHERE status = 'pending'`) in the transaction that records the outcome,
//! so however often a swap is settled (after a crash, by another node) it has one outcome, and a
//! recorded transaction is never sent again by a later tick.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use base64::Engine;
use crucible_sql::{self as sql, Conn, LONG_TEXT, Rows};
use ed25519_dalek::SigningKey;
use futures_util::future::BoxFuture;

use super::{
    BLOCKHASH_LIFETIME_MS, CONFIRM_TIMEOUT, LAMPORTS_PER_SOL, LiveError, Outcome, PendingSwap,
    Settled, SwapOrder, route_for, to_i64,
};
use crate::agents::ticker::{Ticking, side_name};
use crate::agents::trades::{self, NewTrade};
use crate::chain::Chain;
use crate::chain::ChainError;
use crate::chain::Keypair;
use crate::chain::pool::{self, Direction};
use crate::chain::swap::{self, SwapError};
use crate::chain::trader::{self, SwapRoute};
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::crypto::Sealer;
use crate::crypto::new_id;
use crate::db::{BatchWrite, Outcomes, Store};
use crate::domain::WalletAddress;
use crate::paper::{Side, UNIT};
use crate::webhooks;

/// Build and sign `order` from the agent's wallet and record it as pending (its own small
/// write, committed before this returns), under the tick claim `lease` (`None` outside a tick:
/// tools and tests). Nothing is sent.
pub async fn prepare(
    ticking: &Ticking,
    agent_id: &str,
    order: &SwapOrder,
    lease: Option<&str>,
) -> Result<PendingSwap, LiveError> {
    let route = route_of(ticking)?;
    let t = ticking;
    prepare_with(
        &t.store,
        &*t.clock,
        &t.chain,
        &t.sealer,
        route.as_ref(),
        agent_id,
        order,
        lease,
    )
    .await
}

/// The swap route of `ticking`'s node (the pool on simnet, Jupiter on a real cluster).
fn route_of(ticking: &Ticking) -> Result<Arc<dyn SwapRoute>, LiveError> {
    route_for(
        &ticking.clock,
        &ticking.chain,
        &ticking.config,
        &ticking.agents,
    )
}

/// Build and sign `order` from the agent's wallet and record it as pending (its own small
/// write, committed before this returns). Nothing is sent.
///
/// Within a tick, `lease` is the tick's claim: the swap is recorded only while the claim still
/// holds the agent, in the same statement, so a node cut off from the database past its lease
/// cannot record (and then send) a swap after another node took the agent over
/// ([`LiveError::LeaseLost`]).
pub(super) async fn prepare_with(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    route: &dyn SwapRoute,
    agent_id: &str,
    order: &SwapOrder,
    lease: Option<&str>,
) -> Result<PendingSwap, LiveError> {
    let (key, agent) = signer(store, sealer, agent_id).await?;
    let keypair = Keypair::from_signing_key(key);
    let issued_at = to_millis(clock.now());
    let signed = route
        .sign(
            chain.rpc(),
            &keypair,
            order.direction,
            order.amount_in,
            order.minimum_out,
        )
        .await?;
    let trader::SignedTrade {
        signature,
        wire,
        minimum_out,
        last_valid_block_height: last_valid,
    } = signed;
    let side = match order.direction {
        Direction::SellUsdc => Side::Buy,
        Direction::SellSol => Side::Sell,
    };
    let recorded = store
        .group()
        .write(PendingWrite {
            signature: signature.clone(),
            agent_id: agent_id.to_owned(),
            side: side_name(side),
            amount_in: to_i64(order.amount_in),
            minimum_out: to_i64(minimum_out),
            reason: order.reason.clone(),
            market_ts: order.market_ts,
            wire: base64::engine::general_purpose::STANDARD.encode(&wire),
            last_valid: to_i64(last_valid),
            issued_at,
            lease: lease.map(str::to_owned),
        })
        .await?;
    if !recorded {
        return Err(LiveError::LeaseLost(agent_id.to_owned()));
    }
    let recorded = PendingRow {
        side: side_name(side).to_owned(),
        reason: order.reason.clone(),
        market_ts: order.market_ts,
        account_id: agent.account_id,
        base_token: agent.base_token,
        quote_token: agent.quote_token,
        wallet_address: agent.wallet_address,
    };
    Ok(PendingSwap {
        signature,
        wire,
        recorded,
    })
}

/// The agent as its swaps' fills record it.
struct AgentRow {
    wallet_address: String,
    account_id: String,
    base_token: String,
    quote_token: String,
}

/// The agent's signing key and what its fills record of it: one read of the agent's row joined
/// to its custodial wallet, where the key and, at the fill, the agent had been read apart.
async fn signer(
    store: &Store,
    sealer: &Sealer,
    agent_id: &str,
) -> Result<(SigningKey, AgentRow), LiveError> {
    let row: Option<(String, Option<String>, String, String, String)> = sql::query(
        "SELECT a.wallet_address, c.secret_sealed, a.account_id, a.base_token, a.quote_token
         FROM agents a LEFT JOIN custodial_wallets c ON c.address = a.wallet_address
         WHERE a.id = $1",
    )
    .bind(agent_id)
    .fetch_optional(&mut store.reader().await?.conn()?)
    .await?;
    let Some((wallet_address, sealed, account_id, base_token, quote_token)) = row else {
        return Err(LiveError::NoAgent(agent_id.to_owned()));
    };
    let address = WalletAddress::parse(&wallet_address)
        .map_err(|e| LiveError::Internal(format!("the wallet of {agent_id}: {e}")))?;
    let sealed = sealed.ok_or_else(|| LiveError::NoKey(wallet_address.clone()))?;
    let key = crate::custodial::open(sealer, &address, &sealed)
        .map_err(|e| LiveError::Internal(format!("{e:#}")))?;
    let agent = AgentRow {
        wallet_address,
        account_id,
        base_token,
        quote_token,
    };
    Ok((key, agent))
}

/// A signed swap recorded as pending, with the other writes of the moment
/// ([`crate::db::GroupCommit`]): it is on disk before it can be sent.
struct PendingWrite {
    signature: String,
    agent_id: String,
    side: &'static str,
    amount_in: i64,
    minimum_out: i64,
    reason: Option<String>,
    market_ts: i64,
    /// The signed transaction, base64.
    wire: String,
    last_valid: i64,
    issued_at: i64,
    /// The tick's claim: recorded only while it still holds the agent.
    lease: Option<String>,
}

/// A pending swap's columns in [`PendingWrite::apply_all`]: signature, agent, side, amount in,
/// minimum out, reason, market time, the signed transaction (half a kilobyte of base64:
/// [`LONG_TEXT`]), last valid block height, issue time, the tick's claim.
const PENDING_TYPES: [&str; 11] = [
    "text", "text", "text", "int8", "int8", "text", "int8", LONG_TEXT, "int8", "int8", "text",
];

/// Swaps signed at the same moment are recorded by one `INSERT … SELECT`, which on PostgreSQL
/// commits by itself: one round trip for the batch, where each swap had been a savepoint, its
/// `INSERT` and its release inside the batch's transaction. A swap signed within a tick is
/// recorded only while the tick's claim still holds its agent, checked by the same statement.
impl BatchWrite for PendingWrite {
    /// Whether the swap was recorded (not when the claim no longer holds the agent).
    type Output = bool;
    type Error = LiveError;

    const ONE_STATEMENT_ON_POSTGRES: bool = true;
    /// Each swap is a row of its own.
    const SPREAD_OVER_LANES: bool = true;

    fn apply_all<'c, 'd>(
        writes: &'c [Arc<Self>],
        conn: &'c mut Conn<'d>,
    ) -> BoxFuture<'c, Outcomes<bool, LiveError>> {
        Box::pin(async move {
            let mut recorded: HashSet<String> = HashSet::with_capacity(writes.len());
            let per_statement = crate::db::rows_per_statement(PENDING_TYPES.len());
            for chunk in writes.chunks(Rows::per_statement(conn, per_statement)) {
                let mut rows = Rows::new(conn, &PENDING_TYPES);
                for write in chunk {
                    rows.push([
                        write.signature.as_str().into(),
                        write.agent_id.as_str().into(),
                        write.side.into(),
                        write.amount_in.into(),
                        write.minimum_out.into(),
                        write.reason.as_deref().into(),
                        write.market_ts.into(),
                        write.wire.as_str().into(),
                        write.last_valid.into(),
                        write.issued_at.into(),
                        write.lease.as_deref().into(),
                    ]);
                }
                let sql = format!(
                    "INSERT INTO agent_live_swaps (signature, agent_id, status, side, amount_in,
                         minimum_out, reason, market_ts, wire, last_valid_block_height, issued_at,
                         created_at)
                     SELECT v.column1, v.column2, 'pending', v.column3, v.column4, v.column5,
                            v.column6, v.column7, v.column8, v.column9, v.column10, v.column10
                     FROM {} AS v
                     WHERE v.column11 IS NULL
                        OR EXISTS (SELECT 1 FROM agents a WHERE a.id = v.column2
                                    AND a.tick_lease_owner = v.column11 AND a.status = 'active')
                     RETURNING signature",
                    rows.table(0)
                );
                let inserted: Vec<(String,)> = rows.bind(sql::query(&sql)).fetch_all(conn).await?;
                recorded.extend(inserted.into_iter().map(|(signature,)| signature));
            }
            Ok(writes
                .iter()
                .map(|write| Ok(recorded.contains(&write.signature)))
                .collect())
        })
    }
}

/// Send a recorded swap and settle it from what the chain says.
pub async fn send_and_settle(
    ticking: &Ticking,
    agent_id: &str,
    pending: &PendingSwap,
) -> Result<Settled, LiveError> {
    let route = route_of(ticking)?;
    let t = ticking;
    settle_sent(
        &t.store,
        &*t.clock,
        &t.chain,
        route.as_ref(),
        agent_id,
        pending,
    )
    .await
}

pub(super) async fn settle_sent(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    route: &dyn SwapRoute,
    agent_id: &str,
    pending: &PendingSwap,
) -> Result<Settled, LiveError> {
    let rpc = chain.rpc();
    match rpc.send_transaction(&pending.wire).await {
        Ok(_) => {}
        Err(ChainError::Rpc { message, .. }) => {
            // Refused before landing (simulation: slippage, funds, blockhash) — unless the
            // node already has it (a duplicate send), then the chain's record decides.
            if rpc
                .get_signature_status(&pending.signature)
                .await?
                .is_none()
            {
                return refuse(store, clock, agent_id, &pending.signature, &message).await;
            }
        }
        Err(error) => {
            // Sent or not, we cannot tell: the next tick asks the chain.
            tracing::warn!(agent_id, signature = pending.signature, %error, "swap send failed");
            return Ok(Settled::Unknown);
        }
    }
    settle_seen(
        store,
        clock,
        chain,
        route,
        agent_id,
        &pending.signature,
        Some(&pending.recorded),
        CONFIRM_TIMEOUT,
    )
    .await
}

/// Settle a swap the chain has (or will shortly have) seen; `recorded` is what its fill records
/// besides the chain's amounts when the caller still holds it (`None`: read from the swap's row).
async fn settle_seen(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    route: &dyn SwapRoute,
    agent_id: &str,
    signature: &str,
    recorded: Option<&PendingRow>,
    timeout: StdDuration,
) -> Result<Settled, LiveError> {
    match swap::confirmed(chain.rpc(), signature, timeout).await {
        Ok(Some(transaction)) => {
            record_fill(
                store,
                clock,
                route,
                agent_id,
                signature,
                recorded,
                &transaction,
            )
            .await
        }
        Ok(None) => Ok(Settled::Unknown),
        Err(SwapError::Failed { error, .. }) => {
            refuse(
                store,
                clock,
                agent_id,
                signature,
                &format!("the swap failed on chain: {error}"),
            )
            .await
        }
        Err(error) => Err(error.into()),
    }
}

/// Settle the agent's swaps an earlier tick left pending, from the chain alone; how many are
/// still unknown.
pub(super) async fn settle_pending(
    ticking: &Ticking,
    agent_id: &str,
    outcome: &mut Outcome,
) -> Result<usize, LiveError> {
    let Ticking { store, chain, .. } = ticking;
    let route = route_of(ticking)?;
    let clock = &*ticking.clock;
    let pending: Vec<(String, i64)> = sql::query(
        "SELECT signature, issued_at FROM agent_live_swaps
         WHERE agent_id = $1 AND status = 'pending' ORDER BY created_at, signature",
    )
    .bind(agent_id)
    .fetch_all(&mut store.reader().await?.conn()?)
    .await?;
    let mut unknown = 0;
    for (signature, issued_at) in pending {
        let seen = chain
            .rpc()
            .get_signature_status(&signature)
            .await?
            .is_some();
        let settled = if seen {
            settle_seen(
                store,
                clock,
                chain,
                route.as_ref(),
                agent_id,
                &signature,
                None,
                CONFIRM_TIMEOUT,
            )
            .await?
        } else if to_millis(clock.now()) - issued_at > BLOCKHASH_LIFETIME_MS {
            refuse(
                store,
                clock,
                agent_id,
                &signature,
                "the swap never reached the chain and its blockhash has expired",
            )
            .await?
        } else {
            Settled::Unknown
        };
        match settled {
            Settled::Filled { .. } => outcome.trades += 1,
            Settled::Refused(_) => outcome.refused += 1,
            Settled::Unknown => unknown += 1,
        }
        tracing::info!(agent_id, signature, ?settled, "pending swap settled");
    }
    Ok(unknown)
}

/// A recorded swap refused: the reason on the swap and on the agent; once only.
async fn refuse(
    store: &Store,
    clock: &dyn Clock,
    agent_id: &str,
    signature: &str,
    reason: &str,
) -> Result<Settled, LiveError> {
    let refusal = Arc::new(Refusal {
        agent_id: agent_id.to_owned(),
        signature: signature.to_owned(),
        reason: reason.to_owned(),
        now: to_millis(clock.now()),
    });
    store
        .group()
        .run(Box::new(move |conn| {
            let refusal = refusal.clone();
            Box::pin(async move { refusal.apply(conn).await })
        }))
        .await?;
    tracing::info!(agent_id, signature, reason, "live order refused");
    Ok(Settled::Refused(reason.to_owned()))
}

/// A swap's refusal as one write: the swap's status, and the agent's count of refused orders
/// if it was still pending.
struct Refusal {
    agent_id: String,
    signature: String,
    reason: String,
    now: i64,
}

impl Refusal {
    async fn apply(&self, conn: &mut Conn<'_>) -> Result<(), LiveError> {
        let updated = sql::query(
            "UPDATE agent_live_swaps SET status = 'refused', error = $1, resolved_at = $2
             WHERE signature = $3 AND status = 'pending'",
        )
        .bind(self.reason.as_str())
        .bind(self.now)
        .bind(self.signature.as_str())
        .execute(conn)
        .await?;
        if updated == 1 {
            sql::query(
                "UPDATE agents SET refused_orders = refused_orders + 1, last_refusal = $1 WHERE id = $2",
            )
            .bind(self.reason.as_str())
            .bind(self.agent_id.as_str())
            .execute(conn)
            .await?;
        }
        Ok(())
    }
}

/// A confirmed swap becomes the agent's trade (amounts as the chain recorded them) and its
/// `agent.trade` webhook, in one write with the swap's settlement. Whether it was still pending
/// is the write's to decide, not a read's before it.
async fn record_fill(
    store: &Store,
    clock: &dyn Clock,
    route: &dyn SwapRoute,
    agent_id: &str,
    signature: &str,
    recorded: Option<&PendingRow>,
    transaction: &serde_json::Value,
) -> Result<Settled, LiveError> {
    let row = match recorded {
        Some(row) => row.clone(),
        None => match pending_row(store, signature).await? {
            Some(row) => row,
            None => return settled(store, signature).await,
        },
    };
    let direction = if row.side == "buy" {
        Direction::SellUsdc
    } else {
        Direction::SellSol
    };
    let (amount_in, amount_out) = route
        .amounts(transaction, &row.wallet_address, direction)
        .ok_or_else(|| {
            LiveError::Internal(format!(
                "{signature} is confirmed but shows no swap of {}",
                row.wallet_address
            ))
        })?;
    let (lamports, usdc_raw) = if row.side == "buy" {
        (amount_out, amount_in)
    } else {
        (amount_in, amount_out)
    };
    let fill = Fill {
        trade_id: new_id("trd"),
        signature: signature.to_owned(),
        agent_id: agent_id.to_owned(),
        now: clock.now(),
        // The trade table's units: 6 decimals for both tokens (USDC's own on simnet).
        base_raw: to_i64(lamports / 1_000),
        amount: lamports as f64 / LAMPORTS_PER_SOL,
        notional_raw: to_i64(usdc_raw),
        fee_raw: to_i64(usdc_raw * pool::FEE_BPS / 10_000),
        price: if lamports > 0 {
            (usdc_raw as f64 / UNIT) / (lamports as f64 / LAMPORTS_PER_SOL)
        } else {
            0.0
        },
        row,
    };
    let trade_id = fill.trade_id.clone();
    let recorded = store.group().write(fill).await?;
    if !recorded {
        // Settled meanwhile (by this node or another): one outcome per swap, as recorded.
        return settled(store, signature).await;
    }
    tracing::info!(agent_id, signature, trade_id, "live trade recorded");
    Ok(Settled::Filled { trade_id })
}

/// A swap still pending and its agent, as its fill records them.
async fn pending_row(store: &Store, signature: &str) -> Result<Option<PendingRow>, LiveError> {
    Ok(sql::query(
        "SELECT s.side, s.reason, s.market_ts, a.account_id, a.base_token, a.quote_token, a.wallet_address
         FROM agent_live_swaps s JOIN agents a ON a.id = s.agent_id
         WHERE s.signature = $1 AND s.status = 'pending'",
    )
    .bind(signature)
    .fetch_optional(&mut store.reader().await?.conn()?)
    .await?)
}

/// The outcome a swap that is no longer pending was settled with.
async fn settled(store: &Store, signature: &str) -> Result<Settled, LiveError> {
    let settled: Option<(String, Option<String>, Option<String>)> =
        sqlx::query_as("SELECT status, trade_id, error FROM agent_live_swaps WHERE signature = $1")
            .bind(signature)
            .fetch_optional(store.read())
            .await?;
    match settled {
        Some((status, Some(trade_id), _)) if status == "filled" => Ok(Settled::Filled { trade_id }),
        Some((_, _, error)) => Ok(Settled::Refused(error.unwrap_or_default())),
        None => Err(LiveError::Internal(format!(
            "{signature} is not a recorded swap"
        ))),
    }
}

/// A confirmed swap's settlement as one write: the swap marked filled (only while pending), its
/// trade and the trade's webhook.
struct Fill {
    trade_id: String,
    signature: String,
    agent_id: String,
    now: chrono::DateTime<chrono::Utc>,
    base_raw: i64,
    amount: f64,
    notional_raw: i64,
    fee_raw: i64,
    price: f64,
    row: PendingRow,
}

impl Fill {
    /// The trade this fill records.
    fn trade(&self) -> NewTrade<'_> {
        let row = &self.row;
        NewTrade {
            id: &self.trade_id,
            agent_id: &self.agent_id,
            account_id: &row.account_id,
            executed_at: self.now,
            market_ts: row.market_ts,
            side: &row.side,
            base_token: &row.base_token,
            quote_token: &row.quote_token,
            base_raw: self.base_raw,
            amount: self.amount,
            notional_raw: self.notional_raw,
            fee_raw: self.fee_raw,
            price: self.price,
            realized_pnl_raw: None,
            closed_trip: false,
            won_trip: false,
            reason: row.reason.as_deref(),
            tx_hash: &self.signature,
            is_paper: false,
        }
    }
}

/// A fill's columns in the swaps' `UPDATE`: signature, trade, time settled.
const FILL_TYPES: [&str; 3] = ["text", "text", "int8"];

/// The fills of one batch share their statements. On PostgreSQL they are one statement that
/// commits by itself ([`settle_at_once`]), after one read of the accounts' webhooks; on SQLite
/// one `UPDATE … FROM` settles every swap still pending and returns those it settled, whose
/// trades then go in by one `INSERT` and their webhooks by one more. Each fill had been a
/// savepoint, its `UPDATE`, its trade, a read of its account's webhooks and the savepoint's
/// release.
impl BatchWrite for Fill {
    /// Whether this write settled the swap (not when it was no longer pending).
    type Output = bool;
    type Error = LiveError;

    const ONE_STATEMENT_ON_POSTGRES: bool = true;
    /// Each swap is a row of its own, and so is each trade.
    const SPREAD_OVER_LANES: bool = true;

    fn apply_all<'c, 'd>(
        writes: &'c [Arc<Self>],
        conn: &'c mut Conn<'d>,
    ) -> BoxFuture<'c, Outcomes<bool, LiveError>> {
        Box::pin(async move {
            // Two fills of one swap in a batch: the first is tried, the other finds it settled.
            let mut first: HashMap<&str, usize> = HashMap::with_capacity(writes.len());
            for (index, write) in writes.iter().enumerate() {
                first.entry(write.signature.as_str()).or_insert(index);
            }
            let mut tried: Vec<&Fill> = first.values().map(|&index| &*writes[index]).collect();
            // Swaps in one order, so two batches in flight never wait on each other's rows in
            // a cycle.
            tried.sort_unstable_by(|a, b| a.signature.cmp(&b.signature));
            let settled = if conn.is_postgres() {
                settle_at_once(&tried, conn).await?
            } else {
                settle_in_steps(&tried, conn).await?
            };
            Ok(writes
                .iter()
                .enumerate()
                .map(|(index, write)| {
                    Ok(first.get(write.signature.as_str()) == Some(&index)
                        && settled.contains(&write.signature))
                })
                .collect())
        })
    }
}

/// `fills` as the rows of a batch's swaps to settle ([`FILL_TYPES`]).
fn fill_rows<'q>(conn: &Conn<'_>, fills: &[&'q Fill]) -> Rows<'q> {
    let mut rows = Rows::new(conn, &FILL_TYPES);
    for fill in fills {
        rows.push([
            fill.signature.as_str().into(),
            fill.trade_id.as_str().into(),
            to_millis(fill.now).into(),
        ]);
    }
    rows
}

/// On PostgreSQL: the swaps settled, their trades and their webhooks in one statement, which
/// commits by itself (the batch's only one: [`BatchWrite::ONE_STATEMENT_ON_POSTGRES`]). Every
/// fill's trade and webhooks are in it, and only those of the swaps it settles are written:
/// `BEGIN`, an `INSERT` and `COMMIT` fewer a batch than in steps. The webhooks' subscribers
/// are read just before it, as a statement inside a transaction would read them (each
/// statement of a transaction at read committed sees what had committed when it began).
///
/// The swaps are named by primary key first (as a batch of ticks names its agents): joined to
/// the batch's rows alone, the planner read every pending swap with a bitmap scan, which never
/// clears the index entries of swaps settled since (plain index scans do), so each fill read
/// more than the one before until a vacuum. Naming them was not enough: while the statistics
/// held the partial index of pending swaps to be a few entries, the planner still took it and
/// read 1,500 entries and 217 pages for 9 swaps (`auto_explain`). The status is therefore
/// compared with a value the statement computes, `(SELECT 'pending')`, not a constant: the
/// comparison still settles only pending swaps, but it no longer proves the index's
/// `WHERE status = 'pending'`, so that index cannot serve this statement.
async fn settle_at_once(fills: &[&Fill], conn: &mut Conn<'_>) -> sqlx::Result<HashSet<String>> {
    let trades: Vec<NewTrade<'_>> = fills.iter().map(|fill| fill.trade()).collect();
    let events = trades
        .iter()
        .map(|trade| (trade.tx_hash.to_owned(), trades::announcement(trade)))
        .collect();
    let prepared = webhooks::prepare_all(conn, events).await?;
    let deliveries = prepared.rows();
    let swaps = fill_rows(conn, fills);
    let traded = trades::rows(conn, &trades);
    let trades_table = traded.table(swaps.params());
    let skip = swaps.params() + traded.params();
    let (announce, announced) = if deliveries.is_empty() {
        (String::new(), None)
    } else {
        let (insert, rows) = deliveries.insert_where(conn, skip, "SELECT signature FROM settled");
        (format!(", announced AS ({insert})"), Some(rows))
    };
    let sql = format!(
        "WITH v AS MATERIALIZED {swaps_table},
         settled AS (
             UPDATE agent_live_swaps SET status = 'filled', trade_id = v.column2,
                 resolved_at = v.column3
             FROM v
             WHERE agent_live_swaps.signature = v.column1
               AND agent_live_swaps.signature = ANY (ARRAY(SELECT k.column1 FROM v AS k))
               AND agent_live_swaps.status = (SELECT 'pending')
             RETURNING agent_live_swaps.signature),
         traded AS (
             INSERT INTO agent_trades ({columns})
             SELECT t.* FROM {trades_table} AS t
             WHERE t.column15 IN (SELECT signature FROM settled)){announce}
         SELECT signature FROM settled",
        swaps_table = swaps.table(0),
        columns = trades::COLUMNS,
    );
    let mut query = traded.bind(swaps.bind(sql::query(&sql)));
    if let Some(rows) = announced {
        query = rows.bind(query);
    }
    let settled: Vec<(String,)> = query.fetch_all(conn).await?;
    Ok(settled.into_iter().map(|(signature,)| signature).collect())
}

/// On SQLite, inside the batch's transaction: the swaps settled by `UPDATE … FROM`, a few
/// dozen a statement, then the trades and webhooks of those it settled.
async fn settle_in_steps(fills: &[&Fill], conn: &mut Conn<'_>) -> sqlx::Result<HashSet<String>> {
    let mut settled: HashSet<String> = HashSet::with_capacity(fills.len());
    let per_statement = crate::db::rows_per_statement(FILL_TYPES.len());
    for chunk in fills.chunks(Rows::per_statement(conn, per_statement)) {
        let rows = fill_rows(conn, chunk);
        let sql = format!(
            "UPDATE agent_live_swaps SET status = 'filled', trade_id = v.column2,
                 resolved_at = v.column3
             FROM {} AS v
             WHERE agent_live_swaps.signature = v.column1
               AND agent_live_swaps.status = 'pending'
             RETURNING signature",
            rows.table(0)
        );
        let updated: Vec<(String,)> = rows.bind(sql::query(&sql)).fetch_all(conn).await?;
        settled.extend(updated.into_iter().map(|(signature,)| signature));
    }
    let trades: Vec<NewTrade<'_>> = fills
        .iter()
        .filter(|fill| settled.contains(&fill.signature))
        .map(|fill| fill.trade())
        .collect();
    trades::insert_all(conn, &trades).await?;
    webhooks::enqueue_all(conn, trades.iter().map(trades::announcement).collect()).await?;
    Ok(settled)
}

/// A pending swap and its agent, as a fill needs them.
#[derive(Debug, Clone)]
pub(super) struct PendingRow {
    side: String,
    reason: Option<String>,
    market_ts: i64,
    account_id: String,
    base_token: String,
    quote_token: String,
    wallet_address: String,
}

crucible_sql::from_row!(PendingRow {
    side,
    reason,
    market_ts,
    account_id,
    base_token,
    quote_token,
    wallet_address,
});
