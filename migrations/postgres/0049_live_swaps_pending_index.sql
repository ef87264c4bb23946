-- A live swap is looked up by agent only while it is pending (a tick settles what an earlier
-- one left), and a fill finds its swap by signature with `status = 'pending'`. The index on
-- (agent_id, status) held every swap ever made, and a fill's plan read it by its second column
-- alone: every entry of the whole history, for each fill (0.3 ms a fill at a few thousand
-- swaps, growing with the table). This index holds the pending swaps only, which a tick's
-- swaps keep to a handful: a settled swap leaves it, and nothing reads it by another status.
DROP INDEX agent_live_swaps_by_agent;
CREATE INDEX agent_live_swaps_pending ON agent_live_swaps (agent_id, created_at, signature)
    WHERE status = 'pending';
