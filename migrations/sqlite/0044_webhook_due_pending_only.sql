-- The due index holds pending rows only. A delivered or dead row is never claimed again, yet its
-- entry stayed, moved under its new status: each recorded outcome deleted one entry and inserted
-- another, and the index grew with the whole history instead of the backlog. Now recording an
-- outcome only deletes the row's entry. Every query of due rows says `status = 'pending'`, which
-- is what lets SQLite use a partial index.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id, lease_until, url)
    WHERE status = 'pending';
