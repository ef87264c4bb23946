//! The exactly-once life of one live swap: signed and recorded as `pending` (its own small
//! write) before it is sent; then settled from what the chain says — confirmed → one trade and
//! its `agent.trade` webhook, failed or never landed → a refused order. Settling is a
//! conditional update (`WHERE status = 'pending'`) in the transaction that records the outcome,
//! so however often a swap is settled (after a crash, by another node) it has one outcome, and a
//! recorded transaction is never sent again by a later tick.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use base64::Engine;

use super::{
    BLOCKHASH_LIFETIME_MS, CONFIRM_TIMEOUT, LAMPORTS_PER_SOL, LiveError, Outcome, PendingSwap,
    Settled, SwapOrder, route_for, store_error, to_i64,
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
use crate::db::Store;
use crate::domain::WalletAddress;
use crate::paper::{Side, UNIT};

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
    let wallet: Option<(String,)> =
        sqlx::query_as("SELECT wallet_address FROM agents WHERE id = $1")
            .bind(agent_id)
            .fetch_optional(store.read())
            .await?;
    let (wallet,) = wallet.ok_or_else(|| LiveError::NoAgent(agent_id.to_owned()))?;
    let address = WalletAddress::parse(&wallet).map_err(LiveError::Internal)?;
    let key = crate::custodial::signing_key(store, sealer, &address)
        .await
        .map_err(|e| LiveError::Internal(format!("{e:#}")))?
        .ok_or_else(|| LiveError::NoKey(wallet.clone()))?;
    let keypair = Keypair::from_secret(key.to_bytes());
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
    let columns = "INSERT INTO agent_live_swaps (signature, agent_id, status, side, amount_in,
                       minimum_out, reason, market_ts, wire, last_valid_block_height, issued_at,
                       created_at)";
    let sql = match lease {
        None => {
            format!("{columns} VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $10)")
        }
        Some(_) => format!(
            "{columns} SELECT $1, id, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $10 FROM agents
              WHERE id = $2 AND tick_lease_owner = $11 AND status = 'active'"
        ),
    };
    let mut insert = sqlx::query(&sql)
        .bind(&signature)
        .bind(agent_id)
        .bind(side_name(side))
        .bind(to_i64(order.amount_in))
        .bind(to_i64(minimum_out))
        .bind(order.reason.as_deref())
        .bind(order.market_ts)
        .bind(base64::engine::general_purpose::STANDARD.encode(&wire))
        .bind(to_i64(last_valid))
        .bind(issued_at);
    if let Some(lease) = lease {
        insert = insert.bind(lease);
    }
    if insert.execute(store.write()).await?.rows_affected() == 0 {
        return Err(LiveError::LeaseLost(agent_id.to_owned()));
    }
    Ok(PendingSwap { signature, wire })
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
        CONFIRM_TIMEOUT,
    )
    .await
}

/// Settle a swap the chain has (or will shortly have) seen.
async fn settle_seen(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    route: &dyn SwapRoute,
    agent_id: &str,
    signature: &str,
    timeout: StdDuration,
) -> Result<Settled, LiveError> {
    match swap::confirmed(chain.rpc(), signature, timeout).await {
        Ok(Some(transaction)) => {
            record_fill(store, clock, route, agent_id, signature, &transaction).await
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
    let pending: Vec<(String, i64)> = sqlx::query_as(
        "SELECT signature, issued_at FROM agent_live_swaps
         WHERE agent_id = $1 AND status = 'pending' ORDER BY created_at, signature",
    )
    .bind(agent_id)
    .fetch_all(store.read())
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
    let now = to_millis(clock.now());
    let mut tx = store.begin().await.map_err(store_error)?;
    let updated = sqlx::query(
        "UPDATE agent_live_swaps SET status = 'refused', error = $1, resolved_at = $2
         WHERE signature = $3 AND status = 'pending'",
    )
    .bind(reason)
    .bind(now)
    .bind(signature)
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 1 {
        sqlx::query(
            "UPDATE agents SET refused_orders = refused_orders + 1, last_refusal = $1 WHERE id = $2",
        )
        .bind(reason)
        .bind(agent_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    tracing::info!(agent_id, signature, reason, "live order refused");
    Ok(Settled::Refused(reason.to_owned()))
}

/// A confirmed swap becomes the agent's trade (amounts as the chain recorded them) and its
/// `agent.trade` webhook, in one transaction with the swap's settlement.
async fn record_fill(
    store: &Store,
    clock: &dyn Clock,
    route: &dyn SwapRoute,
    agent_id: &str,
    signature: &str,
    transaction: &serde_json::Value,
) -> Result<Settled, LiveError> {
    let now = clock.now();
    let now_ms = to_millis(now);
    let mut tx = store.begin().await.map_err(store_error)?;
    let swap: Option<PendingRow> = sqlx::query_as(
        "SELECT s.side, s.reason, s.market_ts, a.account_id, a.base_token, a.quote_token, a.wallet_address
         FROM agent_live_swaps s JOIN agents a ON a.id = s.agent_id
         WHERE s.signature = $1 AND s.status = 'pending'",
    )
    .bind(signature)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(PendingRow {
        side,
        reason,
        market_ts,
        account_id,
        base_token: base,
        quote_token: quote,
        wallet_address: wallet,
    }) = swap
    else {
        // Settled already (by this node or another): one outcome per swap, as recorded.
        let settled: Option<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT status, trade_id, error FROM agent_live_swaps WHERE signature = $1",
        )
        .bind(signature)
        .fetch_optional(&mut *tx)
        .await?;
        return match settled {
            Some((status, Some(trade_id), _)) if status == "filled" => {
                Ok(Settled::Filled { trade_id })
            }
            Some((_, _, error)) => Ok(Settled::Refused(error.unwrap_or_default())),
            None => Err(LiveError::Internal(format!(
                "{signature} is not a recorded swap"
            ))),
        };
    };
    let direction = if side == "buy" {
        Direction::SellUsdc
    } else {
        Direction::SellSol
    };
    let (amount_in, amount_out) =
        route
            .amounts(transaction, &wallet, direction)
            .ok_or_else(|| {
                LiveError::Internal(format!(
                    "{signature} is confirmed but shows no swap of {wallet}"
                ))
            })?;
    let trade_id = new_id("trd");
    let updated = sqlx::query(
        "UPDATE agent_live_swaps SET status = 'filled', trade_id = $1, resolved_at = $2
         WHERE signature = $3 AND status = 'pending'",
    )
    .bind(&trade_id)
    .bind(now_ms)
    .bind(signature)
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() != 1 {
        return Ok(Settled::Filled { trade_id });
    }
    let (lamports, usdc_raw) = if side == "buy" {
        (amount_out, amount_in)
    } else {
        (amount_in, amount_out)
    };
    // The trade table's units: 6 decimals for both tokens (USDC's own on simnet).
    let base_raw = to_i64(lamports / 1_000);
    let notional = to_i64(usdc_raw);
    let fee = to_i64(usdc_raw * pool::FEE_BPS / 10_000);
    let price = if lamports > 0 {
        (usdc_raw as f64 / UNIT) / (lamports as f64 / LAMPORTS_PER_SOL)
    } else {
        0.0
    };
    trades::record(
        &mut tx,
        &NewTrade {
            id: &trade_id,
            agent_id,
            account_id: &account_id,
            executed_at: now,
            market_ts,
            side: &side,
            base_token: &base,
            quote_token: &quote,
            base_raw,
            amount: lamports as f64 / LAMPORTS_PER_SOL,
            notional_raw: notional,
            fee_raw: fee,
            price,
            realized_pnl_raw: None,
            closed_trip: false,
            won_trip: false,
            reason: reason.as_deref(),
            tx_hash: signature,
            is_paper: false,
        },
    )
    .await?;
    tx.commit().await?;
    tracing::info!(agent_id, signature, trade_id, "live trade recorded");
    Ok(Settled::Filled { trade_id })
}

/// A pending swap and its agent, as a fill needs them.
#[derive(sqlx::FromRow)]
struct PendingRow {
    side: String,
    reason: Option<String>,
    market_ts: i64,
    account_id: String,
    base_token: String,
    quote_token: String,
    wallet_address: String,
}
