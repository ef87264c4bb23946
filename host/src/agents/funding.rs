//! Funding: an agent leaves `unfunded` once its wallet holds the SOL fee reserve on chain
//!. Checked by a recurring job for every unfunded agent, and at once on start.

use super::{Agent, AgentError};
use crate::clock::to_millis;
use crate::state::AppState;

/// Unfunded agents read per query of the job.
const PAGE: i64 = 500;

/// Whether the agent's wallet holds the reserve; moves it to `idle` when it does.
async fn check(state: &AppState, agent_id: &str, wallet: &str) -> anyhow::Result<(bool, u64)> {
    let lamports = state.chain.rpc().get_balance(wallet).await?;
    let funded = lamports >= state.config.agent_fee_reserve_lamports;
    if funded {
        sqlx::query(
            "UPDATE agents SET status = 'idle', status_reason = NULL, updated_at = $1
             WHERE id = $2 AND status = 'unfunded'",
        )
        .bind(to_millis(state.now()))
        .bind(agent_id)
        .execute(state.store.write())
        .await?;
    }
    Ok((funded, lamports))
}

/// On start of an unfunded agent: refused unless the wallet holds the reserve.
pub async fn require_reserve(state: &AppState, agent: &Agent) -> Result<(), AgentError> {
    let (funded, lamports) = check(state, &agent.id, &agent.wallet_address)
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
        reserve_sol: sol(state.config.agent_fee_reserve_lamports),
    })
}

/// The job: check every unfunded agent, a page at a time.
pub async fn check_unfunded(state: &AppState) -> anyhow::Result<()> {
    let mut after = String::new();
    let mut funded = 0;
    loop {
        let page: Vec<(String, String)> = sqlx::query_as(
            "SELECT id, wallet_address FROM agents
             WHERE status = 'unfunded' AND archived_at IS NULL AND id > $1 ORDER BY id LIMIT $2",
        )
        .bind(&after)
        .bind(PAGE)
        .fetch_all(state.store.read())
        .await?;
        let Some((last, _)) = page.last() else { break };
        after = last.clone();
        for (agent_id, wallet) in page {
            match check(state, &agent_id, &wallet).await {
                Ok((true, _)) => funded += 1,
                Ok((false, _)) => {}
                Err(error) => {
                    tracing::warn!(agent_id, error = %format!("{error:#}"), "funding check failed")
                }
            }
        }
    }
    if funded > 0 {
        tracing::info!(funded, "agents funded");
    }
    Ok(())
}
