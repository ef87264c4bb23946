-- The ticker claims the due agents of one kind (paper or live) in `(next_tick_at, id)` order,
-- skipping those another batch holds (`tick_lease_until`). Indexed by `(status, next_tick_at)`
-- alone, every claim read the row of every due agent to check its kind and lease, then sorted
-- them all to take the first batch: with 10,000 agents due, a pass read ~200,000 rows. With
-- the kind, the order's tie-break and the lease in the index, a claim reads the index in order
-- and stops at its batch.
DROP INDEX agents_due;
CREATE INDEX agents_due ON agents (status, is_paper_trading, next_tick_at, id, tick_lease_until);
