-- A live swap is looked up by agent only while it is pending (a tick settles what an earlier
-- one left). The index on (agent_id, status) held every swap ever made; this one holds the
-- pending swaps only, which a tick's swaps keep to a handful: a settled swap leaves it, and
-- nothing reads swaps by another status. (On PostgreSQL the old index also made a fill read
-- the whole history: migrations/postgres/0049.) Every query of pending swaps says
-- `status = 'pending'`, which lets SQLite use a partial index.
DROP INDEX agent_live_swaps_by_agent;
CREATE INDEX agent_live_swaps_pending ON agent_live_swaps (agent_id, created_at, signature)
    WHERE status = 'pending';
