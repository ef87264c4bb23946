//! The agent ticker: every active agent is ticked on its interval. An agent row is
//! its own job row: `next_tick_at` says when. On PostgreSQL, where several nodes share the
//! agents, a batch's rows are locked by the transaction that will store its ticks, or, when a
//! tick may wait on a model, leased (`tick_lease_owner`, `tick_lease_until`): so each tick runs
//! once, and a node that dies mid-tick loses its claim, not the tick. On SQLite one node
//! ticks, and a pass claims its agents in memory ([`PaperClaims`]). A batch of agents is claimed,
//! ticked on a blocking thread, and stored in one transaction: per agent the new ledger and
//! state, its trades, an equity mark and the `agent.trade` webhooks — all or nothing, and only
//! while the claim's [`Fence`] holds.
//! Live agents are claimed under a lease on both back ends, after the paper ones are stored, and
//! ticked by [`super::live`], whose swaps take network round trips outside any transaction.
//!
//! A strategy that faults [`FAULT_LIMIT`] ticks in a row moves its agent to `error` (circuit
//! breaker); the reason is in the agent list, and start clears it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use serde_json::json;

use futures_util::stream::{self, StreamExt};

use super::thinking::{self, Briefing, ProviderOracle, Question, Thought};
use super::tick::{self, DueAgent, Prepared, TickResult};
use super::trades::{self, NewTrade};
use crate::agents::Runtime;
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::{rfc3339, to_millis};
use crate::config::Config;
use crate::crypto::Sealer;
use crate::crypto::ordered_id;
use crate::db::Backend;
use crate::db::Store;
use crate::market::MarketFeed;
use crate::metrics::Metrics;
use crate::models::Models;
use crate::paper::Side;
use crate::sandbox::{AgentSettings, LoadedStrategy};
use crucible_sql::{LONG_TEXT, Rows};

/// What ticking agents touches: their rows, the clock, the sandbox and the loaded strategies,
/// the market their strategies read, the models they ask (with keys the sealer opens), the
/// chain live agents swap on, the node's settings and its tick counters. Nothing else of the
/// node (no bus, no caches, no streams). Cloned into each batch's task.
#[derive(Clone)]
pub struct Ticking {
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub chain: Arc<Chain>,
    pub sealer: Arc<Sealer>,
    pub config: Arc<Config>,
    pub agents: Arc<Runtime>,
    pub market: Arc<dyn MarketFeed>,
    pub models: Arc<Models>,
    pub(crate) metrics: Arc<Metrics>,
}

impl Ticking {
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// What asking an account's model touches.
    pub(crate) fn providers(&self) -> thinking::Providers {
        thinking::Providers {
            store: self.store.clone(),
            sealer: self.sealer.clone(),
            models: self.models.clone(),
        }
    }
}

/// Agents claimed per round trip: a live claim's, and a paper claim's on SQLite, where a
/// batch's store holds the one write lock every HTTP write waits for (a bigger batch holds it
/// longer).
pub(crate) const BATCH: i64 = 256;

/// Paper agents claimed per round trip on PostgreSQL. PostgreSQL spends about as much CPU per
/// tick as the sandbox and twice the runtime's, and part of it goes per statement (the claim's
/// function call, each statement's planning, JSON and commit): with batches four times as large
/// a pass ran at 52–58 % of the sandbox-only rate where it ran at 45–48 % (docs/benchmarks.md,
/// "Agent ticks"). The cost: up to [`BATCHES_IN_FLIGHT`] × this many agents are locked at once,
/// and a stop or a start of one of them waits for its batch's commit (a batch ticks in about
/// 20 ms when the sandbox is free).
const POSTGRES_PAPER_BATCH: i64 = 1024;

/// Faulted ticks in a row after which an agent is moved to `error`.
pub const FAULT_LIMIT: i64 = 5;

/// What a pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TickPass {
    pub ticked: usize,
    pub faulted: usize,
    pub trades: usize,
    /// Agents moved to `error` by the circuit breaker.
    pub broken: usize,
    /// Orders of live agents refused (before sending or by the chain); not faults.
    pub refused: usize,
}

impl TickPass {
    fn add(&mut self, other: &TickPass) {
        self.ticked += other.ticked;
        self.faulted += other.faulted;
        self.trades += other.trades;
        self.broken += other.broken;
        self.refused += other.refused;
    }
}

/// The columns a tick reads, as claimed.
struct DueRow {
    id: String,
    account_id: String,
    class: String,
    strategy_component: Option<String>,
    base_token: String,
    quote_token: String,
    time_interval: String,
    max_allocation: f64,
    personality: String,
    model_id: String,
    ledger: String,
    strategy_state: Option<Vec<u8>>,
    consecutive_faults: i64,
    clock_origin_wall: Option<i64>,
    clock_origin_market: Option<i64>,
    next_tick_at: Option<i64>,
    wallet_address: String,
    time_scale: Option<i64>,
    model_tokens_per_day: Option<i64>,
    model_tokens_day: Option<String>,
    model_tokens_used: i64,
    strategy_params: Option<String>,
    last_tick_at: Option<i64>,
    started_at: Option<i64>,
}

crucible_sql::from_row!(DueRow {
    id,
    account_id,
    class,
    strategy_component,
    base_token,
    quote_token,
    time_interval,
    max_allocation,
    personality,
    model_id,
    ledger,
    strategy_state,
    consecutive_faults,
    clock_origin_wall,
    clock_origin_market,
    next_tick_at,
    wallet_address,
    time_scale,
    model_tokens_per_day,
    model_tokens_day,
    model_tokens_used,
    strategy_params,
    last_tick_at,
    started_at,
});

/// Batches ticked at once. Most of a batch's time is spent waiting for its agents' models
/// (up to the model timeout); with batches in flight side by side, slow models do not add up
/// across batches (2,000 agents whose model takes 2 s: 16.6 s one batch at a time, 3.1 s with
/// eight; `benches/agent_models.rs`), at a cost of a few per cent of ticks/s when no model is
/// asked (`benches/agent_ticks.rs`). Each batch's agents stay claimed while it is in flight.
const BATCHES_IN_FLIGHT: usize = 8;

/// Tick every agent due now, batches side by side, until none is due.
pub async fn run_due(ticking: &Ticking, owner: &str) -> anyhow::Result<TickPass> {
    let mut pass = TickPass::default();
    // The strategies' ticks of one batch at a time: in parallel they only contend for the same
    // cores, and a batch whose ticks are done can go on to its models and its store.
    let sandbox_turn = Arc::new(tokio::sync::Semaphore::new(1));
    // Each batch is a task of its own, so a batch holding the write connection in its store
    // transaction always progresses while this loop waits to claim the next.
    let mut in_flight = tokio::task::JoinSet::new();
    let mut claims = PaperClaims::for_backend(ticking.store.backend());
    let mut drained = false;
    loop {
        while !drained && in_flight.len() < BATCHES_IN_FLIGHT {
            let claim = claims.next(ticking).await?;
            if claim.due.is_empty() {
                drained = true;
            } else {
                let (ticking, turn, owner) =
                    (ticking.clone(), sandbox_turn.clone(), owner.to_owned());
                in_flight.spawn(async move { tick_batch(&ticking, &owner, claim, &turn).await });
            }
        }
        match in_flight.join_next().await {
            Some(done) => pass.add(&done??),
            None => break,
        }
    }
    // Live agents after the paper ones are stored: their swaps take round trips to the chain
    // and must not hold up (or share a transaction with) paper ticks.
    super::live::run_due(ticking, owner, &mut pass).await?;
    Ok(pass)
}

/// How a pass claims its paper agents (docs/architecture.md, "A tick"): batch after batch of
/// the due agents in `(next_tick_at, id)` order, each past the last agent the pass took, so a
/// claim reads the due agents (SQLite's due index, PostgreSQL's due queue) from where the last
/// one stopped (from the range's start, each claim went through every agent the pass had
/// already stored, as index entries of their old versions: the pass was quadratic in its
/// agents). The pass waits for every batch it started, so the next pass starts again from the
/// beginning and finds their agents stored.
struct PaperClaims {
    /// On PostgreSQL, where several nodes share the agents, lock each batch's rows, reading them
    /// `FOR NO KEY UPDATE SKIP LOCKED` in a transaction of the batch's own, which its store then
    /// commits: another node's claim skips the batch's agents, a stop or a start waits for
    /// its commit, and a node that dies or is cut off loses its locks with its session. Writing
    /// a lease instead rewrote every claimed agent's row and paid a commit of its own. A batch
    /// that may wait on anything slower than the built-in classes (a model, an uploaded
    /// component) trades its locks for a lease before it ticks ([`Claim::lease_if_slow`]): no
    /// transaction stays open across a model's answer.
    ///
    /// On SQLite, a batch is read without writing anything: one node ticks (the data dir's
    /// lock), and a claim's row rewrites and commit were half of a batch's database work. A
    /// second ticker on the same file would only tick twice what it stores once ([`Fence`]).
    backend: Backend,
    /// The last agent the pass took.
    after: Option<(i64, String)>,
}

/// What a batch's store is conditioned on, per agent: that the agent is still active and ...
enum Fence {
    /// ... still held by this claim's lease token.
    Lease(String),
    /// ... still due at the time it was claimed at (`next_tick_at` unchanged): storing a tick
    /// moves it on, stopping an agent clears it and starting one sets it to the start's time
    /// (after the claim, unless the two fall in one millisecond), so a tick whose agent was
    /// ticked, stopped or restarted since the claim is dropped whole, whoever claimed it. Two
    /// passes that read the same agent store it once: the second store finds it moved. (Under
    /// a locked claim nothing can move it: the check always holds.)
    Unmoved,
}

impl Fence {
    /// The lease's owner, which [`update_agents_sql`] takes as `$2`.
    fn owner(&self) -> Option<&str> {
        match self {
            Fence::Lease(owner) => Some(owner),
            Fence::Unmoved => None,
        }
    }

    /// How many parameters [`update_agents_sql`] takes before the batch's rows: `$1` the
    /// store's time and, under a lease, `$2` its owner.
    fn binds(&self) -> usize {
        1 + usize::from(self.owner().is_some())
    }
}

/// A claimed batch of paper agents: what its store is fenced on and, for a locked claim, the
/// transaction holding the agents' rows, in which the store runs.
struct Claim {
    due: Vec<DueAgent>,
    fence: Fence,
    holding: Option<crucible_sql::Transaction>,
}

impl PaperClaims {
    fn for_backend(backend: Backend) -> Self {
        PaperClaims {
            backend,
            after: None,
        }
    }

    /// Agents a claim takes at most.
    fn batch(&self) -> i64 {
        match self.backend {
            Backend::Postgres => POSTGRES_PAPER_BATCH,
            Backend::Sqlite => BATCH,
        }
    }

    /// The next batch; an empty batch when none is due.
    async fn next(&mut self, ticking: &Ticking) -> anyhow::Result<Claim> {
        let now = to_millis(ticking.clock.now());
        let (after_at, after_id) = self
            .after
            .as_ref()
            .map_or((i64::MIN, ""), |(at, id)| (*at, id.as_str()));
        let sql = due_after_sql(self.backend);
        let query = crucible_sql::query(&sql)
            .bind(now)
            .bind(after_at)
            .bind(after_id)
            .bind(self.batch());
        let (rows, holding): (Vec<DueRow>, _) = if self.backend == Backend::Postgres {
            let mut tx = ticking.store.begin_in_place().await?;
            let rows = query.fetch_all(&mut tx.conn()?).await?;
            if rows.is_empty() {
                tx.rollback().await?;
                (rows, None)
            } else {
                (rows, Some(tx))
            }
        } else {
            let mut reader = ticking.store.reader().await?;
            (query.fetch_all(&mut reader.conn()?).await?, None)
        };
        if let Some(last) = rows.last() {
            self.after = Some((last.next_tick_at.unwrap_or(now), last.id.clone()));
        }
        Ok(Claim {
            due: rows.into_iter().map(|row| due_agent(row, now)).collect(),
            fence: Fence::Unmoved,
            holding,
        })
    }
}

impl Claim {
    /// Trade a locked claim for a lease of `owner`'s (committed now, releasing the locks)
    /// when one of its ticks may wait on something slower than a built-in class: a model's
    /// answer or an uploaded component, which may take seconds. A transaction kept open that
    /// long would hold a pooled connection, keep a stop waiting, and run into PostgreSQL's
    /// idle-in-transaction limit (`db::POSTGRES_SESSION`).
    async fn lease_if_slow(
        &mut self,
        ticking: &Ticking,
        owner: &str,
        loaded: &HashMap<String, Result<Arc<LoadedStrategy>, String>>,
    ) -> anyhow::Result<()> {
        let slow = |agent: &DueAgent| {
            agent.strategy_component.is_some()
                || matches!(loaded.get(&strategy_key(agent)), Some(Ok(s)) if s.uses_model())
                || may_ask_model(ticking, agent)
        };
        // Only a locked claim has anything to trade (and the check reads the clock per agent).
        let Some(mut tx) = self.holding.take_if(|_| self.due.iter().any(slow)) else {
            return Ok(());
        };
        let lease = crate::leases::token(owner);
        let until = to_millis(ticking.clock.now() + ticking.config.leases.ticks);
        let mut conn = tx.conn()?;
        let mut ids = Rows::new(&conn, &["text"]);
        for agent in &self.due {
            ids.push([agent.id.as_str().into()]);
        }
        let sql = format!(
            "UPDATE agents SET tick_lease_owner = $1, tick_lease_until = $2
             WHERE id = ANY(ARRAY(SELECT v.column1 FROM {} AS v))",
            ids.table(2)
        );
        ids.bind(crucible_sql::query(&sql).bind(lease.as_str()).bind(until))
            .execute(&mut conn)
            .await?;
        tx.commit().await?;
        self.fence = Fence::Lease(lease);
        Ok(())
    }
}

/// One claimed batch: the strategies' ticks, the models' decisions, stored in one transaction.
async fn tick_batch(
    ticking: &Ticking,
    owner: &str,
    mut claim: Claim,
    sandbox_turn: &tokio::sync::Semaphore,
) -> anyhow::Result<TickPass> {
    let mut pass = TickPass::default();
    let turn = sandbox_turn.acquire().await?;
    let strategies = strategies_for(&ticking.store, &ticking.agents, &mut claim.due).await;
    claim.lease_if_slow(ticking, owner, &strategies).await?;
    let Claim {
        due,
        fence,
        holding,
    } = claim;
    let now = to_millis(ticking.now());
    let scale = ticking.config.time_scale;
    // Every agent of the batch at once, however large the backend's batches are.
    let at_once = due.len().max(1);
    // Components that ask the model tick on the async engine, waiting on no thread; the
    // rest tick on a blocking thread, as fast as the sandbox goes.
    let (asking, plain): (Vec<DueAgent>, Vec<DueAgent>) = due.into_iter().partition(
        |agent| matches!(strategies.get(&strategy_key(agent)), Some(Ok(s)) if s.uses_model()),
    );
    let strategies = Arc::new(strategies);
    let worker_state = ticking.clone();
    let loaded = strategies.clone();
    let mut prepared = tokio::task::spawn_blocking(move || {
        let sandbox = worker_state.agents.sandbox().ok();
        plain
            .into_iter()
            .map(|agent| {
                let market_ts = tick::market_now(&agent, now, scale);
                let prepared = tick::prepare(
                    sandbox,
                    strategy_of(&loaded, &agent),
                    worker_state.market.as_ref(),
                    &agent,
                    market_ts,
                );
                (agent, prepared)
            })
            .collect::<Vec<_>>()
    })
    .await?;
    drop(turn);
    // Let the next batch take the sandbox before this one stores: the store's statements run
    // in place on this thread without yielding, so on a runtime of one thread the next
    // batch's ticks would otherwise reach the blocking pool only once they are done.
    tokio::task::yield_now().await;
    let sandbox = ticking.agents.sandbox().ok();
    let asked: Vec<(DueAgent, Prepared)> = stream::iter(asking)
        .map(|agent| {
            let strategies = &strategies;
            async move {
                let market_ts = tick::market_now(&agent, now, scale);
                let port = Arc::new(port_for(ticking, &agent));
                let prepared = tick::prepare_asking(
                    sandbox,
                    strategy_of(strategies, &agent),
                    ticking.market.as_ref(),
                    &agent,
                    market_ts,
                    port,
                )
                .await;
                (agent, prepared)
            }
        })
        .buffer_unordered(at_once)
        .collect()
        .await;
    prepared.extend(asked);
    // Every agent of the batch asks its model at once: a slow model holds up its batch,
    // never a thread.
    let results: Vec<(DueAgent, TickResult)> = stream::iter(prepared)
        .map(|(agent, prepared)| async move {
            let thought = match &prepared.decision {
                Ok(decision) => consider(ticking, &agent, decision).await,
                Err(_) => None,
            };
            let (orders, decision) = match thought {
                Some(Thought { orders, record }) => (Some(orders), Some(record)),
                None => (None, None),
            };
            let mut result = tick::finish(&agent, prepared, orders);
            result.decision = decision;
            (agent, result)
        })
        .buffered(at_once)
        .collect()
        .await;
    store(
        &ticking.store,
        &*ticking.clock,
        &ticking.config,
        &ticking.metrics,
        &fence,
        holding,
        results,
        &mut pass,
    )
    .await?;
    Ok(pass)
}

/// Claim a batch of due live agents under the lease token `lease` (a fresh one per claim,
/// `leases::token`): every write of their ticks is conditioned on it, so a node whose claim ran
/// out and was taken over writes nothing. A live tick's swaps take round trips to the chain, so
/// it holds a lease, never a transaction ([`PaperClaims`] for paper agents).
pub(super) async fn claim_live(ticking: &Ticking, lease: &str) -> anyhow::Result<Vec<DueAgent>> {
    let store = &ticking.store;
    let now = ticking.clock.now();
    let sql = live_claim_sql(store.backend());
    // In place on a SQLite file: a claim returns a row per agent, each a hand-off through sqlx
    // (docs/architecture.md, "Statements in place").
    let mut tx = store.begin_in_place().await?;
    let rows: Vec<DueRow> = crucible_sql::query(&sql)
        .bind(lease)
        .bind(to_millis(now + ticking.config.leases.ticks))
        .bind(to_millis(now))
        .bind(BATCH)
        .fetch_all(&mut tx.conn()?)
        .await?;
    tx.commit().await?;
    let now = to_millis(now);
    Ok(rows.into_iter().map(|row| due_agent(row, now)).collect())
}

/// The statement of a live claim ([`claim_live`]): `$1` the lease, `$2` its end, `$3` now,
/// `$4` the batch. The due agents are read as a paper claim reads them ([`due_after_sql`]).
fn live_claim_sql(backend: Backend) -> String {
    let which = match backend {
        // Each agent by its primary key, whatever the planner makes of the claim's rows.
        Backend::Postgres => {
            "id = ANY(ARRAY(SELECT id FROM agent_due_claim(0, $3, '-9223372036854775808'::BIGINT,
                                                           '', $4)))"
        }
        Backend::Sqlite => {
            "id IN (SELECT id FROM agents
                    WHERE status = 'active' AND next_tick_at <= $3 AND is_paper_trading = 0
                      AND (tick_lease_until IS NULL OR tick_lease_until <= $3)
                    ORDER BY next_tick_at, id LIMIT $4)"
        }
    };
    format!(
        "UPDATE agents SET tick_lease_owner = $1, tick_lease_until = $2 WHERE {which}
         RETURNING {DUE_COLUMNS}"
    )
}

/// The statement of a paper claim ([`PaperClaims`]): `$1` now, `$2` and `$3` the last agent the
/// pass took, `$4` the batch. Read in `(next_tick_at, id)` order past `($2, $3)`, never the
/// agents before it. On SQLite, off the agents' due index. On PostgreSQL, off the due queue
/// (docs/architecture.md, "The due queue"), each entry's agent checked (still active, still due
/// at the entry's time, no lease of a slow batch's running, [`Claim::lease_if_slow`]) and locked
/// as it is read, agents another batch holds passed by: the queue is read entry by entry until
/// the batch is full, as the index was, so an empty batch still means none is due.
fn due_after_sql(backend: Backend) -> String {
    match backend {
        Backend::Sqlite => format!(
            "SELECT {DUE_COLUMNS} FROM agents
             WHERE status = 'active' AND is_paper_trading = 1 AND next_tick_at <= $1
               AND (tick_lease_until IS NULL OR tick_lease_until <= $1)
               AND (next_tick_at, id) > ($2, $3)
             ORDER BY next_tick_at, id LIMIT $4"
        ),
        Backend::Postgres => format!(
            "SELECT {DUE_COLUMNS} FROM agent_due_claim(1, $1, $2, $3, $4)
             ORDER BY next_tick_at, id"
        ),
    }
}

/// The columns of [`DueRow`], as a claim returns them.
const DUE_COLUMNS: &str = "id, account_id, class, strategy_component, base_token, quote_token,
    time_interval, max_allocation, personality, model_id, ledger, strategy_state,
    consecutive_faults, clock_origin_wall, clock_origin_market, next_tick_at, wallet_address,
    time_scale, model_tokens_per_day, model_tokens_day, model_tokens_used, strategy_params,
    last_tick_at, started_at";

/// The sandbox's share of a pass, for benchmarks: every active paper agent's strategy ticked
/// as [`run_due`] ticks it (the same market and inputs, on one blocking thread), with nothing
/// claimed, asked or stored. The agents ticked and the time their ticks took.
pub async fn tick_without_storing(
    ticking: &Ticking,
) -> anyhow::Result<(usize, std::time::Duration)> {
    let mut reader = ticking.store.reader().await?;
    let rows: Vec<DueRow> = crucible_sql::query(&format!(
        "SELECT {DUE_COLUMNS} FROM agents WHERE status = 'active' AND is_paper_trading = 1"
    ))
    .fetch_all(&mut reader.conn()?)
    .await?;
    drop(reader);
    let now = to_millis(ticking.now());
    let mut due: Vec<DueAgent> = rows.into_iter().map(|row| due_agent(row, now)).collect();
    let strategies = strategies_for(&ticking.store, &ticking.agents, &mut due).await;
    let worker_state = ticking.clone();
    let scale = ticking.config.time_scale;
    let started = std::time::Instant::now();
    let ticked = tokio::task::spawn_blocking(move || {
        let sandbox = worker_state.agents.sandbox().ok();
        for agent in &due {
            let market_ts = tick::market_now(agent, now, scale);
            std::hint::black_box(tick::prepare(
                sandbox,
                strategy_of(&strategies, agent),
                worker_state.market.as_ref(),
                agent,
                market_ts,
            ));
        }
        due.len()
    })
    .await?;
    Ok((ticked, started.elapsed()))
}

fn due_agent(row: DueRow, now: i64) -> DueAgent {
    DueAgent {
        id: row.id,
        account_id: row.account_id,
        settings: AgentSettings {
            class: row.class,
            base: row.base_token,
            quote: row.quote_token,
            interval: row.time_interval,
            max_allocation: row.max_allocation,
            personality: row.personality,
            model_id: row.model_id,
            // Filled in against the component's declaration once it is loaded (`with_params`).
            params: Vec::new(),
        },
        chosen_params: super::params::stored(row.strategy_params.as_deref()),
        strategy_component: row.strategy_component,
        ledger: row.ledger,
        state: row.strategy_state.unwrap_or_default(),
        marked_hour: super::history::surely_marked_hour(
            row.last_tick_at,
            row.started_at,
            row.consecutive_faults,
        ),
        consecutive_faults: row.consecutive_faults,
        clock_origin_wall: row.clock_origin_wall.unwrap_or(now),
        clock_origin_market: row.clock_origin_market.unwrap_or(now),
        next_tick_at: row.next_tick_at.unwrap_or(now),
        wallet_address: row.wallet_address,
        time_scale: row.time_scale.and_then(|scale| u32::try_from(scale).ok()),
        model_tokens_per_day: row.model_tokens_per_day,
        model_tokens_day: row.model_tokens_day,
        model_tokens_used: row.model_tokens_used,
    }
}

/// The decision of a built-in class's tick that reached the strategy: the model's if it can be
/// asked and answers, else the rule's (see [`thinking`]). An uploaded component decides alone;
/// if it asked the model, its calls are the decision's record.
pub(super) async fn consider(
    ticking: &Ticking,
    agent: &DueAgent,
    decision: &tick::Decision,
) -> Option<Thought> {
    if agent.strategy_component.is_some() {
        let verdict = thinking::proposal_of(&decision.orders, &decision.portfolio, decision.price);
        let record = decision.model_use.as_ref()?.record(verdict)?;
        return Some(Thought {
            orders: decision.orders.clone(),
            record,
        });
    }
    Some(think_for(ticking, agent, decision).await)
}

/// The loaded strategy of `agent`, or why it is not.
fn strategy_of<'a>(
    loaded: &'a HashMap<String, Result<Arc<LoadedStrategy>, String>>,
    agent: &DueAgent,
) -> Result<&'a LoadedStrategy, String> {
    match loaded.get(&strategy_key(agent)) {
        Some(Ok(strategy)) => Ok(strategy.as_ref()),
        Some(Err(reason)) => Err(reason.clone()),
        None => Err("strategy not loaded".to_owned()),
    }
}

/// The model port of `agent`'s tick: its model, personality, key and what is left of its day's
/// token budget.
pub(super) fn port_for(ticking: &Ticking, agent: &DueAgent) -> thinking::AgentPort {
    thinking::AgentPort::new(
        ticking.providers(),
        &agent.account_id,
        &agent.settings.model_id,
        &agent.settings.personality,
        tokens_left(&*ticking.clock, agent),
    )
}

/// What is left of `agent`'s token budget today.
fn tokens_left(clock: &dyn Clock, agent: &DueAgent) -> u64 {
    agent
        .token_budget()
        .left_on(&thinking::budget_day(to_millis(clock.now())))
}

/// Whether a tick of `agent`'s built-in class may ask its model: the host serves its vendor and
/// its day's tokens are not spent (else [`thinking::think`] decides by the rule at once).
fn may_ask_model(ticking: &Ticking, agent: &DueAgent) -> bool {
    tokens_left(&*ticking.clock, agent) > 0
        && crate::models::ModelRequest::split_model_id(&agent.settings.model_id)
            .is_some_and(|(vendor, _)| ticking.models.endpoints().get(vendor).is_some())
}

/// Ask `agent`'s model about `decision` (paper and live ticks alike).
pub(super) async fn think_for(
    ticking: &Ticking,
    agent: &DueAgent,
    decision: &tick::Decision,
) -> Thought {
    let settings = &agent.settings;
    let tokens_left = tokens_left(&*ticking.clock, agent);
    // Earlier decisions only matter if the model can be asked at all.
    let recent = if may_ask_model(ticking, agent) {
        thinking::decisions::recent(&ticking.store, &agent.id)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(agent_id = agent.id, %error, "cannot read earlier decisions");
                Vec::new()
            })
    } else {
        Vec::new()
    };
    let proposal = thinking::proposal_of(&decision.orders, &decision.portfolio, decision.price);
    let question = Question {
        account_id: &agent.account_id,
        model_id: &settings.model_id,
        personality: &settings.personality,
        tokens_left,
        briefing: Briefing {
            class: &settings.class,
            base: &settings.base,
            quote: &settings.quote,
            interval: &settings.interval,
            max_allocation: settings.max_allocation,
            candles: &decision.candles,
            portfolio: decision.portfolio,
            proposal: &proposal,
            recent: &recent,
        },
        rule_orders: &decision.orders,
    };
    thinking::think(&ProviderOracle(&ticking.providers()), question).await
}

/// What a tick's decision does to the agent's token count and last model error: the UTC day,
/// the tokens spent that day, and the error to keep (`Some(None)` clears it, `None` keeps it).
pub(super) fn model_usage(
    agent: &DueAgent,
    decision: Option<&thinking::DecisionRecord>,
    now_ms: i64,
) -> (String, i64, Option<Option<String>>) {
    let today = thinking::budget_day(now_ms);
    let spent = agent.token_budget().spent_on(&today);
    let tokens = decision.map_or(0, thinking::DecisionRecord::tokens);
    let last_error = decision.and_then(|record| match (&record.decided_by, &record.why) {
        (thinking::DecidedBy::Model, _) => Some(None),
        (_, Some((why, detail)))
            if matches!(
                *why,
                "timeout" | "refused" | "malformed" | "key_unavailable"
            ) =>
        {
            Some(Some(format!("{why}: {detail}")))
        }
        _ => None,
    });
    (today, (spent + tokens) as i64, last_error)
}

pub(super) fn strategy_key(agent: &DueAgent) -> String {
    match &agent.strategy_component {
        Some(id) => format!("custom:{id}"),
        None => format!("builtin:{}", agent.settings.class),
    }
}

/// Load (or take from memory) every component the batch needs; a failure is that agents' fault.
/// Each agent's parameters are made whole against its component's declaration.
pub(super) async fn strategies_for(
    store: &Store,
    agents: &Arc<Runtime>,
    due: &mut [DueAgent],
) -> HashMap<String, Result<Arc<LoadedStrategy>, String>> {
    let mut loaded = HashMap::new();
    for agent in due.iter_mut() {
        let strategy = match loaded.entry(strategy_key(agent)) {
            Entry::Occupied(slot) => slot.into_mut(),
            Entry::Vacant(slot) => {
                let strategy = super::strategies::load(
                    store,
                    agents,
                    &agent.settings.class,
                    agent.strategy_component.as_deref(),
                )
                .await;
                slot.insert(strategy.map(Arc::new))
            }
        };
        if let Ok(strategy) = strategy {
            super::params::fill(agent, strategy);
        }
    }
    loaded
}

/// Columns the agents' `UPDATE` binds per agent (after the batch's time, `$1`).
const AGENT_COLUMNS: usize = 17;

/// One agent's row after its tick, as the batch's `UPDATE` writes it.
struct Stored<'a> {
    agent: &'a DueAgent,
    result: &'a TickResult,
    after: tick::AfterTick,
    ledger: String,
    tokens_day: String,
    tokens_used: i64,
    model_error: Option<Option<String>>,
}

/// Store a batch's results in one transaction (`holding`, the locked claim's own, when there is
/// one), a few statements per table
/// (each as many rows as `db::rows_per_statement` allows):
/// the agents' rows (each guarded by this claim's lease and the agent still being active), then,
/// for the agents whose rows were written, their equity marks, trades, decisions and webhooks.
async fn store(
    store: &Store,
    clock: &dyn Clock,
    config: &Config,
    metrics: &Metrics,
    fence: &Fence,
    holding: Option<crucible_sql::Transaction>,
    results: Vec<(DueAgent, TickResult)>,
    pass: &mut TickPass,
) -> anyhow::Result<()> {
    let now = clock.now();
    let now_ms = to_millis(now);
    let rows = results
        .iter()
        .map(|(agent, result)| {
            let after = tick::after_tick(agent, result.fault.as_deref(), now_ms, config.time_scale);
            let (tokens_day, tokens_used, model_error) =
                model_usage(agent, result.decision.as_ref(), now_ms);
            Ok(Stored {
                agent,
                result,
                after,
                ledger: serde_json::to_string(&result.ledger)?,
                tokens_day,
                tokens_used,
                model_error,
            })
        })
        .collect::<serde_json::Result<Vec<_>>>()?;
    // A locked claim's own transaction; else one in place on a SQLite file
    // (docs/architecture.md, "Statements in place").
    let mut tx = match holding {
        Some(tx) => tx,
        None => store.begin_in_place().await?,
    };
    let written = update_agents(&mut tx.conn()?, fence, now_ms, &rows).await?;
    let mut marks: Vec<(&str, f64)> = Vec::new();
    let mut trade_ids: Vec<String> = Vec::new();
    let mut fills: Vec<(&Stored<'_>, &tick::TradeFill)> = Vec::new();
    let mut events: Vec<crate::webhooks::Queued<'_>> = Vec::new();
    let mut decided: Vec<thinking::decisions::NewDecision<'_>> = Vec::new();
    for row in &rows {
        let (agent, result) = (row.agent, row.result);
        if !written.contains(agent.id.as_str()) {
            // Stopped, or taken over by another node once this claim ran out (its token no
            // longer holds the agent), while ticking: the tick is dropped whole.
            metrics
                .ticks_dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            continue;
        }
        pass.ticked += 1;
        let counted = match result.fault {
            Some(_) => &metrics.ticks_failed,
            None => &metrics.ticks_ok,
        };
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(fault) = &result.fault {
            pass.faulted += 1;
            tracing::warn!(agent_id = agent.id, fault, "tick faulted");
        }
        if row.after.next_tick_at.is_none() {
            pass.broken += 1;
            events.push(crate::webhooks::Queued {
                account_id: &agent.account_id,
                event: crate::webhooks::Event::AgentError,
                data: json!({ "agentId": agent.id, "reason": row.after.reason, "at": rfc3339(now) }),
                at: now,
            });
        }
        if let Some(equity) = result.equity
            && agent.marks_equity_at(now_ms)
        {
            marks.push((&agent.id, equity));
        }
        for trade in &result.fills {
            trade_ids.push(ordered_id("trd", now_ms));
            fills.push((row, trade));
        }
        if let Some(decision) = &result.decision {
            decided.push(thinking::decisions::NewDecision {
                agent_id: &agent.id,
                model_id: &agent.settings.model_id,
                decided_at: now_ms,
                market_ts: result.market_ts,
                record: decision,
            });
        }
    }
    let tx_hashes: Vec<String> = trade_ids.iter().map(|id| format!("paper_{id}")).collect();
    let trades: Vec<NewTrade<'_>> = fills
        .iter()
        .zip(trade_ids.iter().zip(&tx_hashes))
        .map(|((row, trade), (trade_id, tx_hash))| {
            let (agent, fill) = (row.agent, &trade.fill);
            NewTrade {
                id: trade_id,
                agent_id: &agent.id,
                account_id: &agent.account_id,
                executed_at: now,
                market_ts: row.result.market_ts,
                side: side_name(fill.side),
                base_token: &agent.settings.base,
                quote_token: &agent.settings.quote,
                base_raw: fill.base,
                amount: trades::whole_tokens(fill.base),
                notional_raw: fill.notional,
                fee_raw: fill.fee,
                price: fill.price,
                realized_pnl_raw: fill.realized_pnl,
                closed_trip: trade.closed_trip,
                won_trip: trade.won_trip,
                reason: fill.reason.as_deref(),
                tx_hash,
                is_paper: true,
            }
        })
        .collect();
    pass.trades += trades.len();
    super::history::mark_equities(&mut tx.conn()?, &marks, now_ms).await?;
    trades::insert_all(&mut tx.conn()?, &trades).await?;
    events.extend(trades.iter().map(trades::announcement));
    crate::webhooks::enqueue_all(&mut tx.conn()?, events).await?;
    thinking::decisions::insert_all(&mut tx.conn()?, &decided).await?;
    tx.commit().await?;
    Ok(())
}

/// Write the agents' rows of a batch, each only while it is still active and the claim's
/// `fence` holds; the ids of those written.
async fn update_agents<'a>(
    conn: &mut crucible_sql::Conn<'_>,
    fence: &Fence,
    now_ms: i64,
    rows: &[Stored<'a>],
) -> sqlx::Result<std::collections::HashSet<String>> {
    let mut written = std::collections::HashSet::with_capacity(rows.len());
    let per_statement = crate::db::rows_per_statement(AGENT_COLUMNS);
    for chunk in rows.chunks(Rows::per_statement(conn, per_statement)) {
        let mut values = Rows::new(conn, &AGENT_TYPES);
        // The state in hex and the rest; the ledgers as they come.
        values.reserve(
            chunk
                .iter()
                .map(|row| row.result.state.len() * 2 + 256)
                .sum(),
            chunk.iter().map(|row| row.ledger.len()).sum(),
        );
        for row in chunk {
            let result = row.result;
            values.push([
                row.agent.id.as_str().into(),
                row.agent.next_tick_at.into(),
                row.ledger.as_str().into(),
                result.state.as_slice().into(),
                result.price.into(),
                result.fault.is_some().into(),
                row.after.consecutive_faults.into(),
                result.fault.as_deref().into(),
                row.after.status.into(),
                row.after.reason.as_deref().into(),
                row.after.next_tick_at.into(),
                (result.refusals.len() as i64).into(),
                result.refusals.last().map(String::as_str).into(),
                row.tokens_day.as_str().into(),
                row.tokens_used.into(),
                row.model_error.is_some().into(),
                row.model_error.clone().flatten().into(),
            ]);
        }
        let sql = update_agents_sql(fence, &values.table(fence.binds()), conn.is_postgres());
        let mut query = crucible_sql::query(&sql).bind(now_ms);
        if let Some(owner) = fence.owner() {
            query = query.bind(owner);
        }
        let query = values.bind(query);
        let ids: Vec<(String,)> = query.fetch_all(conn).await?;
        written.extend(ids.into_iter().map(|(id,)| id));
    }
    Ok(written)
}

/// The PostgreSQL types of an agent's row in [`update_agents`]: the second column is the
/// `next_tick_at` the claim read. The ledger (half a kilobyte of JSON, most of a row) travels
/// beside the batch's rows ([`LONG_TEXT`]).
const AGENT_TYPES: [&str; AGENT_COLUMNS] = [
    "text", "int8", LONG_TEXT, "bytea", "float8", "int8", "int8", "text", "text", "text", "int8",
    "int8", "text", "text", "int8", "int8", "text",
];

/// The statement [`update_agents`] runs for the agents of `rows` (a table, [`Rows::table`]):
/// each found by its id (the row's first column), written only while it is active and `fence`
/// holds.
///
/// On PostgreSQL a batch's rows are JSON, which the planner takes for 100 rows whatever it
/// holds, and before the agents table's statistics exist (a fresh batch of agents, autovacuum
/// not yet by) it takes "status = 'active'" for a handful of agents: it then read every active
/// agent off an index of the status and hashed them, per statement (28 ms a batch of 256 among
/// 20,000 agents, growing with them, against 6 ms by id). So the status is written as no index
/// can answer (`|| ''`) and, on PostgreSQL, the batch's ids come again as an array, which the
/// primary key answers: each agent is found by its id with statistics or without. The rows are
/// read once for both (a materialized `WITH`): named twice, PostgreSQL parsed the batch's JSON
/// twice.
///
/// On PostgreSQL the same statement moves each written agent's entry in the due queue from the
/// time the claim read (the row's second column) to its next tick: the queue's trigger leaves a
/// paper tick's move to it (docs/architecture.md, "The due queue"), so that the agents' rewrite
/// stays heap-only and the queue's move costs one index entry, not a trigger call. A tick that
/// breaks its agent changes its status, and the trigger takes the entry out.
fn update_agents_sql(fence: &Fence, rows: &str, postgres: bool) -> String {
    let held = match fence {
        Fence::Lease(_) => "agents.tick_lease_owner = $2 AND (agents.status || '') = 'active'",
        // `+`: neither is a key to search by. With them, SQLite would read the batch off the due
        // index (status, kind, `next_tick_at`), one scan of every active agent per statement,
        // instead of finding each agent by its id.
        Fence::Unmoved if postgres => {
            "agents.next_tick_at = v.column2 AND (agents.status || '') = 'active'"
        }
        Fence::Unmoved => "+agents.next_tick_at = v.column2 AND +agents.status = 'active'",
    };
    let (batch, source, keys, returning) = if postgres {
        (
            format!("WITH v AS MATERIALIZED {rows}, moved AS ("),
            "v".to_owned(),
            " AND agents.id = ANY(ARRAY(SELECT k.column1 FROM v AS k))",
            "agents.id, agents.next_tick_at, v.column2 AS due_was)
             , queued AS (UPDATE agent_due SET next_tick_at = m.next_tick_at FROM moved AS m
                          WHERE agent_due.is_paper_trading = 1
                            AND agent_due.next_tick_at = m.due_was AND agent_due.agent_id = m.id
                            AND m.next_tick_at IS NOT NULL)
             SELECT id FROM moved",
        )
    } else {
        (String::new(), format!("{rows} AS v"), "", "agents.id")
    };
    format!(
        "{batch}UPDATE agents SET ledger = v.column3, strategy_state = v.column4,
                last_price = COALESCE(v.column5, last_price), last_tick_at = $1, ticks = ticks + 1,
                faults = faults + v.column6, consecutive_faults = v.column7,
                last_fault = COALESCE(v.column8, last_fault), status = v.column9,
                status_reason = v.column10, next_tick_at = v.column11, tick_lease_owner = NULL,
                tick_lease_until = NULL, updated_at = $1,
                refused_orders = refused_orders + v.column12,
                last_refusal = COALESCE(v.column13, last_refusal),
                model_tokens_day = v.column14, model_tokens_used = v.column15,
                model_last_error = CASE WHEN v.column16 = 1 THEN v.column17 ELSE model_last_error END
         FROM {source}
         WHERE agents.id = v.column1 AND {held}{keys}
         RETURNING {returning}"
    )
}

pub(super) fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite plans for `sql` on a migrated database: the plan's lines.
    async fn plan(sql: &str, binds: usize) -> Vec<String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::connect(&crate::config::sqlite_url_in(dir.path()))
            .await
            .expect("open");
        store.migrate().await.expect("migrate");
        let explain = format!("EXPLAIN QUERY PLAN {sql}");
        let mut query = sqlx::query_as::<_, (i64, i64, i64, String)>(&explain);
        for _ in 0..binds {
            query = query.bind(0_i64);
        }
        let rows = query.fetch_all(store.read()).await.expect("plan");
        rows.into_iter().map(|(.., detail)| detail).collect()
    }

    /// `count` active paper agents due at 0 (`agt_1` …), in a table autovacuum leaves alone, so
    /// it has no statistics of them; `lease` their lease owner, as SQL.
    async fn unanalysed_agents(conn: &mut crucible_sql::Conn<'_>, count: i64, lease: &str) {
        crucible_sql::query(
            "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at, created_at,
                                   updated_at)
             VALUES ('acc_plan', 'plan@example.com', 0, 0, 0, 0)",
        )
        .execute(&mut *conn)
        .await
        .expect("account");
        crucible_sql::query("ALTER TABLE agents SET (autovacuum_enabled = false)")
            .execute(&mut *conn)
            .await
            .expect("no statistics");
        let agents = format!(
            "INSERT INTO agents (id, account_id, name, username, username_key, class, model_id,
                                 strategy_type, base_token, quote_token, time_interval,
                                 max_allocation, wallet_address, status, ledger, next_tick_at,
                                 tick_lease_owner, created_at, updated_at)
             SELECT 'agt_' || n, 'acc_plan', 'a' || n, 'a' || n, 'a' || n, 'fighter', 'm',
                    'builtin', 'SOL', 'USDC', '5m', 100, 'w' || n, 'active', '{{}}', 0, {lease},
                    0, 0
             FROM generate_series(1, $1) AS n"
        );
        crucible_sql::query(&agents)
            .bind(count)
            .execute(&mut *conn)
            .await
            .expect("agents");
    }

    /// A batch's store finds each agent by its id, whatever the fence: driven from the due
    /// index instead, each statement would read every active agent (10,000 agents: 10x slower).
    #[tokio::test]
    async fn the_store_finds_each_agent_by_its_id() {
        for fence in [Fence::Lease("node:ticker:x".into()), Fence::Unmoved] {
            let binds = fence.binds();
            let rows = format!(
                "(VALUES {})",
                crate::db::value_rows(3, AGENT_COLUMNS, binds)
            );
            let details = plan(
                &update_agents_sql(&fence, &rows, false),
                binds + 3 * AGENT_COLUMNS,
            )
            .await;
            assert!(
                details
                    .iter()
                    .any(|detail| detail.contains("sqlite_autoindex_agents_1 (id=?)")),
                "{details:?}"
            );
            assert!(
                !details.iter().any(|detail| detail.contains("agents_due")),
                "{details:?}"
            );
        }
    }

    /// On PostgreSQL too, a batch's store (leased or locked) finds each agent by its id among
    /// thousands of active ones, before the table has statistics (autovacuum held off): a plan
    /// it had read every active agent off the due index ([`update_agents_sql`]), which is gone
    /// from PostgreSQL now, and a scan of the agents would be as bad. It moves each agent's
    /// entry in the due queue by the entry's key. On SQLite the test above holds it.
    #[tokio::test]
    async fn a_store_on_postgres_finds_each_agent_by_its_id() {
        let Some(store) = crate::db::postgres_test_store().await else {
            return;
        };
        let mut tx = store.begin_in_place().await.expect("tx");
        let mut conn = tx.conn().expect("conn");
        unanalysed_agents(&mut conn, 5_000, "'lease'").await;
        for fence in [Fence::Lease("lease".into()), Fence::Unmoved] {
            let mut rows = Rows::new(&conn, &AGENT_TYPES);
            for n in 1..=256_i64 {
                let id = format!("agt_{n}");
                rows.push([
                    id.into(),
                    0_i64.into(),
                    "{}".into(),
                    (&[][..]).into(),
                    Some(1.0).into(),
                    false.into(),
                    0_i64.into(),
                    None::<&str>.into(),
                    "active".into(),
                    None::<&str>.into(),
                    Some(300_000_i64).into(),
                    0_i64.into(),
                    None::<&str>.into(),
                    "2026-01-01".into(),
                    0_i64.into(),
                    false.into(),
                    None::<&str>.into(),
                ]);
            }
            let sql = update_agents_sql(&fence, &rows.table(fence.binds()), true);
            let explain = format!("EXPLAIN {sql}");
            let mut query = crucible_sql::query(&explain).bind(0_i64);
            if let Some(owner) = fence.owner() {
                query = query.bind(owner);
            }
            let plan: Vec<(String,)> = rows.bind(query).fetch_all(&mut conn).await.expect("plan");
            let lines: Vec<&str> = plan.iter().map(|(line,)| line.as_str()).collect();
            // The agents by their ids, and each one's entry in the due queue by its key.
            for index in ["agents_pkey", "agent_due_pkey"] {
                assert!(lines.iter().any(|line| line.contains(index)), "{lines:#?}");
            }
            assert!(
                !lines.iter().any(|line| line.contains("Seq Scan")),
                "{lines:#?}"
            );
        }
    }

    /// On PostgreSQL a claim locks its batch and nothing more, and one that finds due agents
    /// held by another batch passes them by and fills its own, before the due queue has
    /// statistics (a plan that sorted the due range first locked every due agent, so the pass's
    /// next claims found none: docs/architecture.md, "The due queue"). A live claim takes only
    /// live agents, and leases them.
    #[tokio::test]
    async fn a_claim_on_postgres_locks_its_batch_only_and_passes_held_agents_by() {
        let Some(store) = crate::db::postgres_test_store().await else {
            return;
        };
        let mut setup = store.begin_in_place().await.expect("tx");
        unanalysed_agents(&mut setup.conn().expect("conn"), 5_000, "NULL").await;
        crucible_sql::query(
            "UPDATE agents SET is_paper_trading = 0 WHERE id IN ('agt_7', 'agt_8', 'agt_9')",
        )
        .execute(&mut setup.conn().expect("conn"))
        .await
        .expect("live agents");
        setup.commit().await.expect("commit");

        let claim = due_after_sql(Backend::Postgres);
        let mut claimed = Vec::new();
        let mut holding = Vec::new();
        for _ in 0..2 {
            let mut tx = store.begin_in_place().await.expect("tx");
            let rows: Vec<DueRow> = crucible_sql::query(&claim)
                .bind(1_i64)
                .bind(i64::MIN)
                .bind("")
                .bind(BATCH)
                .fetch_all(&mut tx.conn().expect("conn"))
                .await
                .expect("claim");
            assert_eq!(rows.len(), BATCH as usize);
            claimed.extend(rows.into_iter().map(|row| row.id));
            holding.push(tx);
        }
        let mut in_order = claimed.clone();
        in_order.sort();
        assert_eq!(claimed, in_order, "the second batch follows the first");
        in_order.dedup();
        assert_eq!(in_order.len(), 2 * BATCH as usize, "no agent claimed twice");
        assert!(
            !claimed
                .iter()
                .any(|id| ["agt_7", "agt_8", "agt_9"].contains(&id.as_str()))
        );

        let mut tx = store.begin_in_place().await.expect("tx");
        let (free,): (i64,) = crucible_sql::query(
            "SELECT COUNT(*) FROM (SELECT id FROM agents FOR NO KEY UPDATE SKIP LOCKED) AS f",
        )
        .fetch_one(&mut tx.conn().expect("conn"))
        .await
        .expect("free agents");
        assert_eq!(free, 5_000 - 2 * BATCH, "only the two batches are held");
        tx.rollback().await.expect("rollback");

        let mut tx = store.begin_in_place().await.expect("tx");
        let live: Vec<DueRow> = crucible_sql::query(&live_claim_sql(Backend::Postgres))
            .bind("lease")
            .bind(60_000_i64)
            .bind(1_i64)
            .bind(BATCH)
            .fetch_all(&mut tx.conn().expect("conn"))
            .await
            .expect("live claim");
        let mut ids: Vec<String> = live.into_iter().map(|row| row.id).collect();
        ids.sort();
        assert_eq!(ids, ["agt_7", "agt_8", "agt_9"]);
        tx.commit().await.expect("commit");
        drop(holding);
    }

    /// The due queue's triggers keep it to exactly the active agents with a next tick, whatever
    /// a write other than a paper tick's store changes: an insert, the status, the next tick,
    /// the kind (paper or live), a live tick, a delete, one row or many in one statement. (A
    /// paper tick's store moves its entries itself; the integration tests compare the queue
    /// with the agents after ticks, `TestApp::due_agents`.)
    #[tokio::test]
    async fn the_due_queue_follows_every_kind_of_write() {
        let Some(store) = crate::db::postgres_test_store().await else {
            return;
        };
        let mut tx = store.begin_in_place().await.expect("tx");
        let mut conn = tx.conn().expect("conn");
        unanalysed_agents(&mut conn, 6, "NULL").await;
        let writes = [
            "UPDATE agents SET next_tick_at = 10 WHERE id = 'agt_1'",
            "UPDATE agents SET status = 'idle', next_tick_at = NULL WHERE id = 'agt_2'",
            "UPDATE agents SET status = 'error' WHERE id = 'agt_3'",
            "UPDATE agents SET is_paper_trading = 0 WHERE id = 'agt_4'",
            "UPDATE agents SET ledger = '{\"x\":1}', ticks = ticks + 1",
            "UPDATE agents SET status = 'active', next_tick_at = 20 WHERE id IN ('agt_2', 'agt_3')",
            "UPDATE agents SET next_tick_at = next_tick_at + 5",
            // A live tick: only a paper tick's store moves its own entry.
            "UPDATE agents SET next_tick_at = next_tick_at + 7, ticks = ticks + 1 WHERE id = 'agt_4'",
            "UPDATE agents SET next_tick_at = NULL WHERE id = 'agt_5'",
            "DELETE FROM agents WHERE id = 'agt_6'",
            "UPDATE agents SET status = 'active', next_tick_at = 1 WHERE id = 'agt_5'",
        ];
        for write in writes {
            crucible_sql::query(write)
                .execute(&mut conn)
                .await
                .expect(write);
            let scheduled: Vec<(i64, i64, String)> = crucible_sql::query(
                "SELECT is_paper_trading, next_tick_at, id FROM agents
                 WHERE status = 'active' AND next_tick_at IS NOT NULL ORDER BY id",
            )
            .fetch_all(&mut conn)
            .await
            .expect("agents");
            let queued: Vec<(i64, i64, String)> = crucible_sql::query(
                "SELECT is_paper_trading, next_tick_at, agent_id FROM agent_due ORDER BY agent_id",
            )
            .fetch_all(&mut conn)
            .await
            .expect("queue");
            assert_eq!(queued, scheduled, "after {write}");
        }
        let queued: Vec<(String,)> =
            crucible_sql::query("SELECT agent_id FROM agent_due ORDER BY agent_id")
                .fetch_all(&mut conn)
                .await
                .expect("queue");
        let ids: Vec<&str> = queued.iter().map(|(id,)| id.as_str()).collect();
        assert_eq!(ids, ["agt_1", "agt_2", "agt_3", "agt_4", "agt_5"]);
    }

    /// A claim in the pass reads its batch off the due index, past the last agent taken.
    #[tokio::test]
    async fn a_claim_in_the_pass_reads_the_due_index_past_the_last_agent() {
        let details = plan(&due_after_sql(Backend::Sqlite), 4).await;
        assert!(
            details.iter().any(|detail| detail.contains("agents_due")
                && detail.contains("(next_tick_at,id)>(?,?)")),
            "{details:?}"
        );
        assert!(
            !details.iter().any(|detail| detail.contains("TEMP B-TREE")),
            "{details:?}"
        );
    }
}
