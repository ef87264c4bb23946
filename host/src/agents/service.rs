//! Creating, listing, starting and stopping agents. Each change and the
//! webhook it causes commit together: an `agent.started` exists if and only if the agent started.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::AgentError;
use super::model::{AgentStatus, COLUMNS, PAPER_CAPITAL};
use super::new_agent::{NewAgent, StrategyChoice};
use super::{Agent, Runtime, funding, strategies};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::{rfc3339, to_millis};
use crate::config::Config;
use crate::crypto::Sealer;
use crate::crypto::new_id;
use crate::db::OnUnique;
use crate::db::Store;
use crate::events::Bus;
use crate::paper::{Ledger, PaperConfig};
use std::sync::Arc;

/// Create an agent for the account: a custodial wallet, a fresh paper account, status
/// `unfunded` until the wallet holds the fee reserve.
pub(crate) async fn create(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    sealer: &Sealer,
    config: &Config,
    agents: &Arc<Runtime>,
    account_id: &str,
    new: NewAgent,
) -> Result<Agent, AgentError> {
    let component = match &new.strategy {
        StrategyChoice::Builtin => None,
        StrategyChoice::Custom(id) => {
            if !strategies::owned_by(store, account_id, id).await? {
                return Err(AgentError::invalid(
                    "strategy.type",
                    format!(
                        "no uploaded strategy `{id}` on this account: upload it with POST /api/v1/public/strategies"
                    ),
                ));
            }
            Some(id.clone())
        }
    };
    let params =
        super::params::check_chosen(store, agents, &new.class, &new.strategy, &new.params).await?;
    let now = clock.now();
    let agent_id = new_id("agt");
    let ledger = Ledger::new(
        PAPER_CAPITAL,
        PaperConfig {
            max_allocation_pct: new.max_allocation,
            ..PaperConfig::default()
        },
    );
    let ledger = serde_json::to_string(&ledger).map_err(AgentError::internal)?;

    let mut tx = store.begin().await?;
    // The account row's lock orders concurrent creations, so the cap holds exactly.
    sqlx::query("UPDATE accounts SET updated_at = updated_at WHERE id = $1")
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
    let (unfunded,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM agents WHERE account_id = $1 AND status = 'unfunded' AND archived_at IS NULL",
    )
    .bind(account_id)
    .fetch_one(&mut *tx)
    .await?;
    let cap = config.max_unfunded_agents;
    if u64::try_from(unfunded).unwrap_or(0) >= cap {
        return Err(AgentError::QuotaExceeded(format!(
            "this account already has {unfunded} unfunded agents (at most {cap}): fund one (send SOL to its wallet)              or wait until unfunded agents are archived, then create another"
        )));
    }
    let wallet = crate::custodial::create(&mut tx, clock, sealer, "agent", &agent_id).await?;
    sqlx::query(
        "INSERT INTO agents (id, account_id, name, username, username_key, class, model_id, strategy_type,
                             strategy_component, base_token, quote_token, time_interval, max_allocation,
                             personality, is_paper_trading, avatar_url, wallet_address, status, ledger,
                             created_at, updated_at, model_tokens_per_day, strategy_params)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $19, $15, $16, 'unfunded', $17, $18, $18, $20, $21)",
    )
    .bind(&agent_id)
    .bind(account_id)
    .bind(&new.name)
    .bind(&new.username)
    .bind(new.username.to_ascii_lowercase())
    .bind(&new.class)
    .bind(&new.model_id)
    .bind(new.strategy.type_name())
    .bind(component.as_deref())
    .bind(&new.pair.base)
    .bind(&new.pair.quote)
    .bind(new.interval.as_str())
    .bind(new.max_allocation)
    .bind(&new.personality)
    .bind(new.avatar_url.as_deref())
    .bind(wallet.as_str())
    .bind(&ledger)
    .bind(to_millis(now))
    .bind(i64::from(new.is_paper_trading))
    .bind(new.tokens_per_day.map(|tokens| tokens as i64))
    .bind(params.as_deref())
    .execute(&mut *tx)
    .await
    .on_unique(|| AgentError::UsernameTaken(new.username.clone()))?;
    tx.commit().await?;
    // The agent's wallet is one of the account's wallets now.
    crate::account::changed(events, account_id);
    tracing::info!(
        account_id,
        agent_id,
        username = new.username,
        "agent created"
    );
    find(store, account_id, &agent_id)
        .await?
        .ok_or_else(|| AgentError::internal(anyhow::anyhow!("agent {agent_id} vanished")))
}

/// One page of the account's agents, oldest first, and how many it has.
pub(crate) async fn list(
    store: &Store,
    account_id: &str,
    page: i64,
    page_size: i64,
) -> Result<(Vec<Agent>, i64), AgentError> {
    let agents: Vec<Agent> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM agents WHERE account_id = $1 AND archived_at IS NULL
         ORDER BY created_at, id LIMIT $2 OFFSET $3"
    ))
    .bind(account_id)
    .bind(page_size)
    .bind(page.saturating_mul(page_size))
    .fetch_all(store.read())
    .await?;
    let (total,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM agents WHERE account_id = $1 AND archived_at IS NULL")
            .bind(account_id)
            .fetch_one(store.read())
            .await?;
    Ok((agents, total))
}

/// The account's agent `agent_id`; `None` also when it belongs to another account.
pub(crate) async fn find(
    store: &Store,
    account_id: &str,
    agent_id: &str,
) -> Result<Option<Agent>, AgentError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM agents WHERE id = $1 AND account_id = $2"
    ))
    .bind(agent_id)
    .bind(account_id)
    .fetch_optional(store.read())
    .await?)
}

async fn owned(store: &Store, account_id: &str, agent_id: &str) -> Result<Agent, AgentError> {
    find(store, account_id, agent_id)
        .await?
        .ok_or_else(|| AgentError::NotFound(agent_id.to_owned()))
}

/// Start an agent: from `idle` or `error`, or from `unfunded` once its wallet holds the fee
/// reserve (checked on chain now). Starting an active agent changes nothing.
pub(crate) async fn start(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
    account_id: &str,
    agent_id: &str,
) -> Result<Agent, AgentError> {
    let agent = owned(store, account_id, agent_id).await?;
    if let Some(component) = agent.strategy_component.as_deref()
        && let Some(reason) = crate::admin::service::ban_of(store, component).await?
    {
        return Err(AgentError::Banned(format!(
            "this agent's strategy component was banned by the service's admins: {reason}"
        )));
    }
    match agent.status() {
        AgentStatus::Active => return Ok(agent),
        AgentStatus::Unfunded => {
            funding::require_reserve(store, clock, chain, config, &agent).await?
        }
        AgentStatus::Idle | AgentStatus::Error => {}
    }
    let now = clock.now();
    let mut tx = store.begin().await?;
    let started = sqlx::query(
        "UPDATE agents SET status = 'active', status_reason = NULL, consecutive_faults = 0, archived_at = NULL,
                started_at = $1, clock_origin_wall = $1, clock_origin_market = $1, next_tick_at = $1,
                tick_lease_owner = NULL, tick_lease_until = NULL, updated_at = $1
         WHERE id = $2 AND account_id = $3 AND status <> 'active'",
    )
    .bind(to_millis(now))
    .bind(agent_id)
    .bind(account_id)
    .execute(&mut *tx)
    .await?;
    if started.rows_affected() == 1 {
        crate::webhooks::enqueue(
            &mut tx,
            account_id,
            crate::webhooks::Event::AgentStarted,
            json!({ "agentId": agent_id, "startedAt": rfc3339(now) }),
            now,
        )
        .await?;
    }
    tx.commit().await?;
    if started.rows_affected() == 1 {
        tracing::info!(account_id, agent_id, "agent started");
    }
    owned(store, account_id, agent_id).await
}

/// Stop an active agent (it becomes `idle`); a tick in flight is discarded whole. Stopping an
/// agent that is not active changes nothing.
pub(crate) async fn stop(
    store: &Store,
    clock: &dyn Clock,
    account_id: &str,
    agent_id: &str,
) -> Result<Agent, AgentError> {
    let agent = owned(store, account_id, agent_id).await?;
    if agent.status() != AgentStatus::Active {
        return Ok(agent);
    }
    let now = clock.now();
    let mut tx = store.begin().await?;
    let stopped = mark_stopped(&mut tx, agent_id, account_id, now).await?;
    if stopped {
        crate::webhooks::enqueue(
            &mut tx,
            account_id,
            crate::webhooks::Event::AgentStopped,
            json!({ "agentId": agent_id, "stoppedAt": rfc3339(now) }),
            now,
        )
        .await?;
    }
    tx.commit().await?;
    if stopped {
        tracing::info!(account_id, agent_id, "agent stopped");
    }
    owned(store, account_id, agent_id).await
}

async fn mark_stopped(
    conn: &mut sqlx::AnyConnection,
    agent_id: &str,
    account_id: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<bool> {
    let stopped = sqlx::query(
        "UPDATE agents SET status = 'idle', stopped_at = $1, next_tick_at = NULL,
                tick_lease_owner = NULL, tick_lease_until = NULL, updated_at = $1
         WHERE id = $2 AND account_id = $3 AND status = 'active'",
    )
    .bind(to_millis(now))
    .bind(agent_id)
    .bind(account_id)
    .execute(conn)
    .await?;
    Ok(stopped.rows_affected() == 1)
}
