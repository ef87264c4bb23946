//! The due queue's repair on PostgreSQL (docs/architecture.md, "The due queue").
//!
//! Triggers and the ticker's store keep `agent_due` exact, and a claim only trusts an entry whose
//! agent agrees with it. What they cannot cover is a write from outside them: a node of a version
//! before the queue still running against the migrated database (its ticks move agents and not
//! their entries), or an agent's schedule edited by hand with triggers off. An active agent whose
//! entry is missing or stale would never be claimed again, so every node puts the queue back in
//! step with the agents when it starts.

use sqlx::AnyPool;

/// Delete the entries no agent agrees with, then add the missing ones; how many entries of each
/// kind were wrong. The queue is locked against writes meanwhile (its writers wait, milliseconds
/// for thousands of agents; its readers do not), so a tick or a start that commits during the
/// repair cannot have its entry judged by an agent read before it: nothing the repair writes is
/// out of date when it commits.
pub(crate) async fn repair(pool: &AnyPool) -> sqlx::Result<(u64, u64)> {
    let mut tx = pool.begin().await?;
    sqlx::query("LOCK TABLE agent_due IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let stale = sqlx::query(
        "DELETE FROM agent_due d
         WHERE NOT EXISTS (SELECT 1 FROM agents a
                           WHERE a.id = d.agent_id AND a.status = 'active'
                             AND a.next_tick_at = d.next_tick_at
                             AND a.is_paper_trading = d.is_paper_trading)",
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let missing = sqlx::query(
        "INSERT INTO agent_due (is_paper_trading, next_tick_at, agent_id)
         SELECT a.is_paper_trading, a.next_tick_at, a.id FROM agents a
         WHERE a.status = 'active' AND a.next_tick_at IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM agent_due d
                           WHERE d.is_paper_trading = a.is_paper_trading
                             AND d.next_tick_at = a.next_tick_at AND d.agent_id = a.id)
         ON CONFLICT DO NOTHING",
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok((stale, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue that lost an entry, kept one for a stopped agent and one at a time its agent has
    /// moved past (as an old node's tick leaves it) is put back exactly; a second repair finds
    /// nothing to do.
    #[tokio::test]
    async fn a_repair_puts_the_queue_back_in_step_with_the_agents() {
        let Some(store) = crate::db::postgres_test_store().await else {
            return;
        };
        let pool = store.write();
        for statement in [
            "INSERT INTO accounts (id, email, terms_accepted_at, privacy_accepted_at, created_at,
                                   updated_at)
             VALUES ('acc_due', 'due@example.com', 0, 0, 0, 0)",
            "INSERT INTO agents (id, account_id, name, username, username_key, class, model_id,
                                 strategy_type, base_token, quote_token, time_interval,
                                 max_allocation, wallet_address, status, ledger, next_tick_at,
                                 created_at, updated_at)
             SELECT 'agt_' || n, 'acc_due', 'a' || n, 'a' || n, 'a' || n, 'fighter', 'm',
                    'builtin', 'SOL', 'USDC', '5m', 100, 'w' || n,
                    CASE WHEN n = 4 THEN 'idle' ELSE 'active' END, '{}',
                    CASE WHEN n = 4 THEN NULL ELSE n END, 0, 0
             FROM generate_series(1, 4) AS n",
            "DELETE FROM agent_due WHERE agent_id = 'agt_1'",
            "INSERT INTO agent_due VALUES (1, 99, 'agt_4')",
            "UPDATE agent_due SET next_tick_at = 50 WHERE agent_id = 'agt_2'",
        ] {
            sqlx::query(statement).execute(pool).await.expect(statement);
        }
        assert_eq!(repair(pool).await.expect("repair"), (2, 2));
        let queued: Vec<(i64, i64, String)> = sqlx::query_as(
            "SELECT is_paper_trading, next_tick_at, agent_id FROM agent_due ORDER BY agent_id",
        )
        .fetch_all(pool)
        .await
        .expect("queue");
        let expected: Vec<(i64, i64, String)> =
            (1..=3).map(|n| (1, n, format!("agt_{n}"))).collect();
        assert_eq!(queued, expected);
        assert_eq!(repair(pool).await.expect("again"), (0, 0));
    }
}
