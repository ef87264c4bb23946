//! Live agents (`isPaperTrading: false`): every order is a real swap from the agent's own
//! custodial wallet — through the simnet pool, or Jupiter on a real cluster
//! ([`crate::chain::trader`]) — and the strategy sees that wallet's on-chain balances valued at
//! the route's price (SOL above the fee reserve: the reserve is never traded). This module owns
//! the live tick (sizing, the strategy call, storing the tick); [`swaps`] owns one swap's
//! recording, sending and settling.
//!
//! Exactly once across crashes: a swap is built, signed and recorded (`agent_live_swaps`,
//! status `pending`, with its signature and when its blockhash was issued) in its own small
//! write BEFORE it is sent. Nothing holds a database transaction across a network round trip.
//! A tick first settles what an earlier tick left pending by asking the chain
//! (`getSignatureStatuses`, `getTransaction`) and never sends a recorded transaction again; one
//! the chain never saw whose blockhash can no longer land is a refused order. Settling is a
//! conditional update (`WHERE status = 'pending'`) in the same transaction as the trade, so a
//! swap becomes at most one trade. The agent's tick lease keeps two nodes off one agent.
//!
//! A swap that cannot be made (sizing, the SOL fee reserve, maxAllocation) or that the chain
//! refuses (slippage, balance, expired blockhash) is a refused order with its reason, counted
//! on the agent, never a strategy fault. Live agents are ticked after the paper agents of a
//! pass are stored, several at a time, each by its own task.

mod swaps;

pub use swaps::{prepare, send_and_settle};
use swaps::{prepare_with, settle_pending, settle_sent};

use std::sync::Arc;
use std::time::Duration as StdDuration;

use futures_util::stream::{self, StreamExt};
use serde_json::json;

use super::tick::{self, DueAgent};
use super::ticker::{self, TickPass};
use crate::agents::Runtime;
use crate::agents::ticker::Ticking;
use crate::chain::Chain;
use crate::chain::ChainError;
use crate::chain::jupiter::{JupiterConfig, SwapApiError};
use crate::chain::pool::Direction;
use crate::chain::swap::SwapError;
use crate::chain::trader::{JupiterRoute, Market, PoolRoute, SwapRoute, TradeError};
use crate::chain::tx::{self, Pubkey};
use crate::clock::Clock;
use crate::clock::{rfc3339, to_millis};
use crate::config::Config;
use crate::db::Store;
use crate::paper::{OrderRequest, OrderSize, PortfolioView, Side};
use crate::sandbox::LoadedStrategy;

/// Live agents ticked at the same time.
const CONCURRENCY: usize = 16;
/// How long a tick waits for one of its swaps to confirm before leaving it to the next tick.
const CONFIRM_TIMEOUT: StdDuration = StdDuration::from_secs(20);
/// After this long a transaction the chain never saw cannot land any more: a blockhash is
/// valid for 150 blocks (about 60 to 90 s); two minutes leaves a margin.
pub(crate) const BLOCKHASH_LIFETIME_MS: i64 = 120_000;
/// Smallest swap, raw USDC (0.01): dust is refused, not sent.
const MIN_NOTIONAL_RAW: f64 = 10_000.0;
/// The signature fee of a one-signer transaction.
const TX_FEE_LAMPORTS: u64 = 5_000;
/// Rent of the USDC account created by the first sell of SOL.
const TOKEN_ACCOUNT_RENT: u64 = 2_039_280;
const LAMPORTS_PER_SOL: f64 = 1e9;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("agent {0} not found")]
    NoAgent(String),
    #[error("the custodial key of {0} is missing")]
    NoKey(String),
    #[error("{0}")]
    Chain(#[from] ChainError),
    #[error("{0}")]
    Swap(#[from] SwapError),
    #[error("{0}")]
    Trade(#[from] TradeError),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
    /// Another node took the agent's tick over (this claim's lease ran out): nothing of this
    /// tick may be written any more.
    #[error("agent {0}'s tick was taken over by another node")]
    LeaseLost(String),
    #[error("{0}")]
    Internal(String),
}

/// A swap an order became, before it is signed.
#[derive(Debug, Clone, PartialEq)]
pub struct SwapOrder {
    pub direction: Direction,
    pub amount_in: u64,
    /// Least accepted out; `None` for the quote less the default slippage.
    pub minimum_out: Option<u64>,
    pub reason: Option<String>,
    pub market_ts: i64,
}

/// A signed swap recorded as pending and not yet known to be sent.
#[derive(Debug, Clone)]
pub struct PendingSwap {
    pub signature: String,
    pub wire: Vec<u8>,
    /// What its fill records besides the chain's amounts, as read and decided when it was
    /// signed: settling it then needs no read of the swap's row.
    recorded: swaps::PendingRow,
}

/// How a recorded swap ended, or that the chain does not say yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Filled { trade_id: String },
    Refused(String),
    Unknown,
}

/// The wallet as read on chain, raw units.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Wallet {
    lamports: u64,
    usdc_raw: u64,
    has_usdc_account: bool,
}

/// The pool's price and how to value a wallet with it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Valuation {
    /// USDC per SOL.
    price: f64,
    /// Raw USDC units per USDC.
    usdc_unit: f64,
}

impl Valuation {
    fn sol(&self, wallet: &Wallet) -> f64 {
        wallet.lamports as f64 / LAMPORTS_PER_SOL
    }
    fn usdc(&self, wallet: &Wallet) -> f64 {
        wallet.usdc_raw as f64 / self.usdc_unit
    }
    fn equity(&self, wallet: &Wallet) -> f64 {
        self.sol(wallet) * self.price + self.usdc(wallet)
    }
}

/// What ticking one live agent did.
#[derive(Debug, Default, Clone, Copy)]
struct Outcome {
    ticked: bool,
    faulted: bool,
    broken: bool,
    trades: usize,
    refused: usize,
}

/// Tick every live agent due now, a batch at a time, [`CONCURRENCY`] agents at once.
pub(crate) async fn run_due(
    ticking: &Ticking,
    owner: &str,
    pass: &mut TickPass,
) -> anyhow::Result<()> {
    loop {
        let lease = crate::leases::token(owner);
        let mut due = ticker::claim_live(ticking, &lease).await?;
        if due.is_empty() {
            return Ok(());
        }
        let lease = lease.as_str();
        let strategies = ticker::strategies_for(&ticking.store, &ticking.agents, &mut due).await;
        let outcomes: Vec<(String, Result<Outcome, LiveError>)> = stream::iter(due)
            .map(|agent| {
                let strategy = strategies
                    .get(&ticker::strategy_key(&agent))
                    .cloned()
                    .unwrap_or_else(|| Err("strategy not loaded".to_owned()));
                async move {
                    let id = agent.id.clone();
                    (id, tick_agent(ticking, lease, agent, strategy).await)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for (agent_id, outcome) in outcomes {
            match outcome {
                Ok(outcome) => {
                    pass.ticked += usize::from(outcome.ticked);
                    pass.faulted += usize::from(outcome.faulted);
                    pass.broken += usize::from(outcome.broken);
                    pass.trades += outcome.trades;
                    pass.refused += outcome.refused;
                }
                // The lease runs out and a later pass retries the tick (pending swaps are
                // settled from the chain then, never sent twice).
                Err(error) => tracing::warn!(agent_id, %error, "live tick failed"),
            }
        }
    }
}

async fn tick_agent(
    ticking: &Ticking,
    owner: &str,
    agent: DueAgent,
    strategy: Result<Arc<LoadedStrategy>, String>,
) -> Result<Outcome, LiveError> {
    let mut outcome = Outcome::default();
    let mut refusals = Vec::new();
    let unsettled = settle_pending(ticking, &agent.id, &mut outcome).await?;
    let wallet_key: Pubkey = agent
        .wallet_address
        .parse()
        .map_err(|e| LiveError::Internal(format!("wallet {}: {e}", agent.wallet_address)))?;
    let rpc = ticking.chain.rpc();
    let route = route_for(
        &ticking.clock,
        &ticking.chain,
        &ticking.config,
        &ticking.agents,
    )?;
    let mut market = route.market(rpc).await?;
    let mut valuation = valuation(&market);
    let mut wallet = read_wallet(&ticking.chain, &wallet_key, &market).await?;
    let equity_before = valuation.equity(&wallet);
    let now_ms = to_millis(ticking.now());
    let market_ts = tick::market_now(&agent, now_ms, ticking.config.time_scale);

    let mut new_state = agent.state.clone();
    let mut fault = None;
    let mut thought = None;
    if unsettled == 0 {
        // The strategy manages what it may trade: SOL above the fee reserve (a wallet holding
        // only the reserve is flat, not long) and the USDC.
        let tradable = Wallet {
            lamports: tradable_lamports(wallet.lamports, ticking.config.agent_fee_reserve_lamports),
            ..wallet
        };
        let portfolio = PortfolioView {
            base: valuation.sol(&tradable),
            quote: valuation.usdc(&tradable),
            avg_entry_price: None,
            equity: valuation.equity(&tradable),
        };
        let decision = match &strategy {
            // A component that asks the model ticks on the async engine, holding no thread.
            Ok(loaded) if loaded.uses_model() => {
                let port = Arc::new(ticker::port_for(ticking, &agent));
                let sandbox = ticking.agents.sandbox().ok();
                tick::decide_asking(
                    sandbox,
                    Ok(loaded.as_ref()),
                    ticking.market.as_ref(),
                    &agent,
                    market_ts,
                    &|_| portfolio,
                    port,
                )
                .await
            }
            _ => {
                let worker = ticking.clone();
                let ticked = agent.clone();
                tokio::task::spawn_blocking(move || {
                    let sandbox = worker.agents.sandbox().ok();
                    let strategy = match &strategy {
                        Ok(strategy) => Ok(strategy.as_ref()),
                        Err(reason) => Err(reason.clone()),
                    };
                    tick::decide(
                        sandbox,
                        strategy,
                        worker.market.as_ref(),
                        &ticked,
                        market_ts,
                        &|_| portfolio,
                    )
                })
                .await
                .map_err(|e| LiveError::Internal(e.to_string()))?
            }
        };
        match decision {
            Ok(decision) => {
                // A built-in class's model decides (or its rule, recorded with why); an
                // uploaded component's own calls are its record.
                let orders = match ticker::consider(ticking, &agent, &decision).await {
                    Some(decided) => {
                        thought = Some(decided.record);
                        decided.orders
                    }
                    None => decision.orders,
                };
                new_state = decision.state;
                for order in &orders {
                    // Each swap can take a confirmation timeout: keep the lease, and stop if
                    // another node has taken the agent over meanwhile.
                    if !renew_lease(ticking, owner, &agent.id).await? {
                        tracing::warn!(agent_id = agent.id, "lease lost mid-tick");
                        break;
                    }
                    let sized = size(
                        order,
                        &wallet,
                        &valuation,
                        agent.settings.max_allocation,
                        ticking.config.agent_fee_reserve_lamports,
                    );
                    let direction_amount = match sized {
                        Ok(sized) => sized,
                        Err(reason) => {
                            refusals.push(reason);
                            continue;
                        }
                    };
                    let order = SwapOrder {
                        direction: direction_amount.0,
                        amount_in: direction_amount.1,
                        minimum_out: None,
                        reason: order.reason.clone(),
                        market_ts,
                    };
                    let pending = match prepare_with(
                        &ticking.store,
                        &*ticking.clock,
                        &ticking.chain,
                        &ticking.sealer,
                        route.as_ref(),
                        &agent.id,
                        &order,
                        Some(owner),
                    )
                    .await
                    {
                        Ok(pending) => pending,
                        Err(error) => match refusal(&error) {
                            Some(reason) => {
                                refusals.push(reason);
                                continue;
                            }
                            None => return Err(error),
                        },
                    };
                    let settled = settle_sent(
                        &ticking.store,
                        &*ticking.clock,
                        &ticking.chain,
                        route.as_ref(),
                        &agent.id,
                        &pending,
                    )
                    .await?;
                    match settled {
                        Settled::Filled { .. } => outcome.trades += 1,
                        // Already counted on the agent by `refuse`.
                        Settled::Refused(_) => outcome.refused += 1,
                        // Its fate is for the next tick to learn: place nothing more now.
                        Settled::Unknown => break,
                    }
                    market = route.market(rpc).await?;
                    valuation = self::valuation(&market);
                    wallet = read_wallet(&ticking.chain, &wallet_key, &market).await?;
                }
            }
            Err(error) => fault = Some(error.message),
        }
    }
    outcome.refused += refusals.len();
    let wallet = read_wallet(&ticking.chain, &wallet_key, &market).await?;
    store(
        &ticking.store,
        &*ticking.clock,
        &ticking.config,
        owner,
        &agent,
        Stored {
            state: new_state,
            fault,
            wallet,
            valuation,
            equity_before,
            refusals,
            now_ms,
            market_ts,
            decision: thought,
        },
        &mut outcome,
    )
    .await?;
    Ok(outcome)
}

/// Extend this claim's lease on the agent; `false` if it no longer holds it.
async fn renew_lease(ticking: &Ticking, owner: &str, agent_id: &str) -> Result<bool, LiveError> {
    let renewed = sqlx::query(
        "UPDATE agents SET tick_lease_until = $1
         WHERE id = $2 AND tick_lease_owner = $3 AND status = 'active'",
    )
    .bind(to_millis(ticking.clock.now() + ticking.config.leases.ticks))
    .bind(agent_id)
    .bind(owner)
    .execute(ticking.store.write())
    .await?;
    Ok(renewed.rows_affected() == 1)
}

/// An order sized against the wallet: the direction and raw amount sold, or why not.
fn size(
    order: &OrderRequest,
    wallet: &Wallet,
    valuation: &Valuation,
    max_allocation_pct: f64,
    fee_reserve: u64,
) -> Result<(Direction, u64), String> {
    let price = valuation.price;
    let sol_value = valuation.sol(wallet) * price;
    let equity = valuation.equity(wallet);
    match order.side {
        Side::Buy => {
            if wallet.lamports < fee_reserve + TX_FEE_LAMPORTS {
                return Err("not enough SOL above the fee reserve to pay the fee".to_owned());
            }
            let desired = match order.size {
                OrderSize::FractionOfEquity(f) => f * equity,
                OrderSize::BaseAmount(a) => a * price,
                OrderSize::All => return Err("`all` is only valid for a sell".to_owned()),
            };
            let cap = max_allocation_pct.clamp(0.0, 100.0) / 100.0 * equity - sol_value;
            if cap * valuation.usdc_unit < MIN_NOTIONAL_RAW {
                return Err(format!(
                    "maxAllocation of {max_allocation_pct}% already reached"
                ));
            }
            if (wallet.usdc_raw as f64) < MIN_NOTIONAL_RAW {
                return Err("not enough USDC".to_owned());
            }
            let amount = ((desired.min(cap) * valuation.usdc_unit).floor().max(0.0) as u64)
                .min(wallet.usdc_raw);
            if (amount as f64) < MIN_NOTIONAL_RAW {
                return Err("order below the minimum size".to_owned());
            }
            Ok((Direction::SellUsdc, amount))
        }
        Side::Sell => {
            let rent = if wallet.has_usdc_account {
                0
            } else {
                TOKEN_ACCOUNT_RENT
            };
            let spendable = tradable_lamports(wallet.lamports, fee_reserve).saturating_sub(rent);
            if spendable == 0 {
                return Err("no SOL to sell above the fee reserve".to_owned());
            }
            let wanted = match order.size {
                OrderSize::All => spendable,
                OrderSize::BaseAmount(a) => (a * LAMPORTS_PER_SOL).floor().max(0.0) as u64,
                OrderSize::FractionOfEquity(f) => {
                    (f * equity / price * LAMPORTS_PER_SOL).floor().max(0.0) as u64
                }
            };
            let amount = wanted.min(spendable);
            let notional = amount as f64 / LAMPORTS_PER_SOL * price * valuation.usdc_unit;
            if notional < MIN_NOTIONAL_RAW {
                return Err("order below the minimum size".to_owned());
            }
            Ok((Direction::SellSol, amount))
        }
    }
}

/// SOL a sell may spend: all above the fee reserve, less this sell's fee and the next buy's
/// (so a wallet that sold everything can still pay to buy back).
fn tradable_lamports(lamports: u64, fee_reserve: u64) -> u64 {
    lamports.saturating_sub(fee_reserve + 2 * TX_FEE_LAMPORTS)
}

fn valuation(market: &Market) -> Valuation {
    Valuation {
        price: market.sol_usdc,
        usdc_unit: 10f64.powi(i32::from(market.usdc_decimals)),
    }
}

/// How this server's live swaps are made: through the simnet pool, or through Jupiter on a
/// real cluster (`SOLANA_RPC_URL`). Built once per server, so the price client's cache lives
/// across ticks.
pub(crate) fn route_for(
    clock: &Arc<dyn Clock>,
    chain: &Chain,
    config: &Config,
    agents: &Arc<Runtime>,
) -> Result<Arc<dyn SwapRoute>, LiveError> {
    if let Some(route) = agents.live_route() {
        return Ok(route);
    }
    let route = build_route(clock, chain, config)?;
    Ok(agents.remember_live_route(route))
}

fn build_route(
    clock: &Arc<dyn Clock>,
    chain: &Chain,
    config: &Config,
) -> Result<Arc<dyn SwapRoute>, LiveError> {
    if chain.simnet().is_some() {
        return Ok(Arc::new(PoolRoute));
    }
    let usdc_mint: Pubkey = chain
        .stablecoin_mint()
        .parse()
        .map_err(|e| LiveError::Internal(format!("stablecoin mint: {e}")))?;
    let jupiter = JupiterConfig {
        base_url: config.swap_api_url.clone(),
        api_key: config.swap_api_key.clone(),
    };
    let hermes = crate::chain::hermes::HermesConfig::from_config(config);
    let route = JupiterRoute::new(jupiter, hermes, usdc_mint, clock.clone())
        .map_err(|e| LiveError::Internal(e.to_string()))?;
    Ok(Arc::new(route))
}

/// Whether a failure to build a swap refuses the order (the route will not do this swap)
/// rather than the tick (the services could not be reached).
fn refusal(error: &LiveError) -> Option<String> {
    match error {
        LiveError::Swap(SwapError::BadAmount(reason))
        | LiveError::Trade(TradeError::Swap(SwapError::BadAmount(reason))) => Some(reason.clone()),
        LiveError::Trade(TradeError::Jupiter(
            error @ (SwapApiError::Refused(_)
            | SwapApiError::Unsafe(_)
            | SwapApiError::Malformed(_)),
        )) => Some(error.to_string()),
        _ => None,
    }
}

async fn read_wallet(chain: &Chain, owner: &Pubkey, market: &Market) -> Result<Wallet, LiveError> {
    let rpc = chain.rpc();
    let lamports = rpc.get_balance(&owner.to_string()).await?;
    let account = tx::associated_token_address(owner, &market.usdc_mint, &tx::token_program());
    let info = rpc
        .get_account_info(&account.to_string(), "jsonParsed")
        .await?;
    let usdc_raw = info.as_ref().and_then(|info| {
        info["data"]["parsed"]["info"]["tokenAmount"]["amount"]
            .as_str()?
            .parse()
            .ok()
    });
    Ok(Wallet {
        lamports,
        usdc_raw: usdc_raw.unwrap_or(0),
        has_usdc_account: info.is_some(),
    })
}

/// What a live tick stores on its agent.
struct Stored {
    state: Vec<u8>,
    fault: Option<String>,
    wallet: Wallet,
    valuation: Valuation,
    equity_before: f64,
    refusals: Vec<String>,
    now_ms: i64,
    market_ts: i64,
    decision: Option<super::thinking::DecisionRecord>,
}

/// The tick's end on the agent row (and its equity mark), in one transaction; dropped whole if
/// the agent was stopped or taken over meanwhile (its swaps are recorded regardless).
async fn store(
    store: &Store,
    clock: &dyn Clock,
    config: &Config,
    owner: &str,
    agent: &DueAgent,
    stored: Stored,
    outcome: &mut Outcome,
) -> Result<(), LiveError> {
    let now = clock.now();
    let now_ms = stored.now_ms;
    let tick::AfterTick {
        consecutive_faults: faults,
        status,
        reason,
        next_tick_at: next,
    } = tick::after_tick(agent, stored.fault.as_deref(), now_ms, config.time_scale);
    let broken = next.is_none();
    let equity = stored.valuation.equity(&stored.wallet);
    let (tokens_day, tokens_used, last_error) =
        ticker::model_usage(agent, stored.decision.as_ref(), now_ms);
    let mut tx = store.begin().await.map_err(store_error)?;
    let updated = sqlx::query(
        "UPDATE agents SET strategy_state = $1, last_price = $2, last_tick_at = $3, ticks = ticks + 1,
                faults = faults + $4, consecutive_faults = $5, last_fault = COALESCE($6, last_fault),
                status = $7, status_reason = $8, next_tick_at = $9, tick_lease_owner = NULL,
                tick_lease_until = NULL, updated_at = $3, live_sol_lamports = $10, live_usdc_raw = $11,
                live_equity = $12, live_initial_equity = COALESCE(live_initial_equity, $13),
                refused_orders = refused_orders + $14, last_refusal = COALESCE($15, last_refusal),
                model_tokens_day = $18, model_tokens_used = $19,
                model_last_error = CASE WHEN $20 = 1 THEN $21 ELSE model_last_error END
         WHERE id = $16 AND tick_lease_owner = $17 AND status = 'active'",
    )
    .bind(stored.state)
    .bind(stored.valuation.price)
    .bind(now_ms)
    .bind(i64::from(stored.fault.is_some()))
    .bind(faults)
    .bind(stored.fault.as_deref())
    .bind(status)
    .bind(reason.as_deref())
    .bind(next)
    .bind(to_i64(stored.wallet.lamports))
    .bind(to_i64(stored.wallet.usdc_raw))
    .bind(equity)
    .bind(stored.equity_before)
    .bind(stored.refusals.len() as i64)
    .bind(stored.refusals.last().map(String::as_str))
    .bind(&agent.id)
    .bind(owner)
    .bind(tokens_day)
    .bind(tokens_used)
    .bind(i64::from(last_error.is_some()))
    .bind(last_error.flatten())
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(());
    }
    if let Some(record) = &stored.decision {
        let decision = super::thinking::decisions::NewDecision {
            agent_id: &agent.id,
            model_id: &agent.settings.model_id,
            decided_at: now_ms,
            market_ts: stored.market_ts,
            record,
        };
        super::thinking::decisions::insert_all(&mut crucible_sql::Conn::Any(&mut tx), &[decision])
            .await?;
    }
    outcome.ticked = true;
    if let Some(fault) = &stored.fault {
        outcome.faulted = true;
        tracing::warn!(agent_id = agent.id, fault, "live tick faulted");
    }
    for reason in &stored.refusals {
        tracing::debug!(
            agent_id = agent.id,
            reason,
            "live order refused before sending"
        );
    }
    if broken {
        outcome.broken = true;
        crate::webhooks::enqueue(
            &mut tx,
            &agent.account_id,
            crate::webhooks::Event::AgentError,
            json!({ "agentId": agent.id, "reason": reason, "at": rfc3339(now) }),
            now,
        )
        .await
        .map_err(|e| LiveError::Internal(format!("{e:#}")))?;
    }
    if agent.marks_equity_at(now_ms) {
        super::history::mark_equity(&mut tx, &agent.id, now_ms, equity).await?;
    }
    tx.commit().await?;
    Ok(())
}

fn to_i64(raw: u64) -> i64 {
    i64::try_from(raw).unwrap_or(i64::MAX)
}

fn store_error(error: impl std::fmt::Display) -> LiveError {
    LiveError::Internal(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(side: Side, size: OrderSize) -> OrderRequest {
        OrderRequest {
            side,
            size,
            reason: None,
        }
    }

    const VALUATION: Valuation = Valuation {
        price: 100.0,
        usdc_unit: 1e6,
    };

    #[test]
    fn sells_never_touch_the_fee_reserve() {
        let wallet = Wallet {
            lamports: 1_000_000_000,
            usdc_raw: 0,
            has_usdc_account: true,
        };
        let reserve = 10_000_000;
        let (direction, amount) = size(
            &order(Side::Sell, OrderSize::All),
            &wallet,
            &VALUATION,
            100.0,
            reserve,
        )
        .expect("sized");
        assert_eq!(direction, Direction::SellSol);
        assert_eq!(amount, 1_000_000_000 - reserve - 2 * TX_FEE_LAMPORTS);
        let poor = Wallet {
            lamports: reserve + 2 * TX_FEE_LAMPORTS,
            ..wallet
        };
        assert!(
            size(
                &order(Side::Sell, OrderSize::All),
                &poor,
                &VALUATION,
                100.0,
                reserve
            )
            .is_err()
        );
        assert!(
            size(
                &order(Side::Buy, OrderSize::FractionOfEquity(0.5)),
                &Wallet {
                    lamports: reserve,
                    usdc_raw: 1_000_000_000,
                    has_usdc_account: true
                },
                &VALUATION,
                100.0,
                reserve
            )
            .is_err(),
            "a buy needs the fee above the reserve"
        );
    }

    #[test]
    fn buys_are_capped_by_max_allocation_of_the_wallet_value() {
        // 1 SOL (100 USDC) and 900 USDC: equity 1000, at 30 % at most 200 more of SOL.
        let wallet = Wallet {
            lamports: 1_000_000_000,
            usdc_raw: 900_000_000,
            has_usdc_account: true,
        };
        let (direction, amount) = size(
            &order(Side::Buy, OrderSize::FractionOfEquity(1.0)),
            &wallet,
            &VALUATION,
            30.0,
            0,
        )
        .expect("sized");
        assert_eq!(direction, Direction::SellUsdc);
        assert_eq!(amount, 200_000_000);
        let full = size(
            &order(Side::Buy, OrderSize::FractionOfEquity(1.0)),
            &wallet,
            &VALUATION,
            10.0,
            0,
        );
        assert_eq!(full, Err("maxAllocation of 10% already reached".to_owned()));
    }
}
