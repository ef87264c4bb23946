-- A claim writes only the lease (`tick_lease_owner`, `tick_lease_until`). With the lease in the
-- due index, and the agents' pages packed full, every claim wrote a whole new version of each
-- agent's row and an entry in each of the table's five indexes, and the store that follows did
-- it again: the claim's `UPDATE` was a third of PostgreSQL's work per tick. With the lease out of
-- every index and room left on each page, a claim is a heap-only update (the row's new version
-- beside the old one, no index touched). A claim now checks the lease of each due agent it skips
-- in the row instead of the index: at most the batches in flight, a few thousand rows.
-- The fill factor applies to pages written from now on; `VACUUM FULL agents` repacks old ones.
ALTER TABLE agents SET (fillfactor = 60);
DROP INDEX agents_due;
CREATE INDEX agents_due ON agents (status, is_paper_trading, next_tick_at, id);
