//! Funding: an agent leaves `unfunded` once its wallet holds the SOL fee reserve on chain
//!. Checked by a recurring job for every unfunded agent, and at once on start.

use super::{Agent, AgentError};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::config::Config;
use crate::db::Store;

/// Unfunded agents read per query of the job.
const PAGE: i64 = 500;

/// Whether the agent's wallet holds the reserve; moves it to `idle` when it does.
async fn check(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
    agent_id: &str,
    wallet: &str,
) -> anyhow::Result<(bool, u64)> {
    let lamports = chain.rpc().get_balance(wallet).await?;
    let funded = lamports >= config.agent_fee_reserve_lamports;
    if funded {
        mark_funded(store, agent_id, to_millis(clock.now())).await?;
    }
    Ok((funded, lamports))
}

async fn mark_funded(store: &Store, agent_id: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE agents SET status = 'idle', status_reason = NULL, updated_at = $1
         WHERE id = $2 AND status = 'unfunded'",
    )
    .bind(now)
    .bind(agent_id)
    .execute(store.write())
    .await?;
    Ok(())
}

/// On start of an unfunded agent: refused unless the wallet holds the reserve.
pub(crate) async fn require_reserve(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
    agent: &Agent,
) -> Result<(), AgentError> {
    let (funded, lamports) = check(
        store,
        clock,
        chain,
        config,
        &agent.id,
        &agent.wallet_address,
    )
    .await
    .map_err(|error| {
        tracing::warn!(agent_id = agent.id, error = %format!("{error:#}"), "funding check failed");
        AgentError::BalanceUnavailable
    })?;
    if funded {
        return Ok(());
    }
    let sol = |lamports: u64| lamports as f64 / 1e9;
    Err(AgentError::InsufficientFunds {
        wallet: agent.wallet_address.clone(),
        held_sol: sol(lamports),
        reserve_sol: sol(config.agent_fee_reserve_lamports),
    })
}

/// The job: check every unfunded agent, a page at a time, reading the page's balances with
/// one `getMultipleAccounts` call per 100 wallets rather than a call per agent (thousands of
/// unfunded agents must not keep the scheduler's lifecycle work waiting).
pub async fn check_unfunded(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
) -> anyhow::Result<()> {
    let mut after = String::new();
    let mut funded = 0;
    loop {
        let page: Vec<(String, String)> = sqlx::query_as(
            "SELECT id, wallet_address FROM agents
             WHERE status = 'unfunded' AND archived_at IS NULL AND id > $1 ORDER BY id LIMIT $2",
        )
        .bind(&after)
        .bind(PAGE)
        .fetch_all(store.read())
        .await?;
        let Some((last, _)) = page.last() else { break };
        after = last.clone();
        let wallets: Vec<&str> = page.iter().map(|(_, wallet)| wallet.as_str()).collect();
        let balances = match chain.rpc().get_balances(&wallets).await {
            Ok(balances) => balances,
            Err(error) => {
                tracing::warn!(error = %error, "funding check failed; the next run retries");
                continue;
            }
        };
        let now = to_millis(clock.now());
        for ((agent_id, _), lamports) in page.iter().zip(balances) {
            if lamports >= config.agent_fee_reserve_lamports {
                mark_funded(store, agent_id, now).await?;
                funded += 1;
            }
        }
    }
    if funded > 0 {
        tracing::info!(funded, "agents funded");
    }
    Ok(())
}
