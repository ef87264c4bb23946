-- Each delivery updates its row twice: the claim's lease, then the outcome. On PostgreSQL an
-- update that changes an indexed column (or one an index's predicate reads) writes a new entry
-- into every index of the table, and the index pages then fill with dead entries to clear; an
-- update that changes none of them, and finds room on its row's page, is heap-only: no index
-- entry at all. So:
-- * the due index holds pending rows only: a recorded outcome no longer adds an entry to it
--   (nor does a delivered row stay in it for good);
-- * the lease (`lease_owner`, `lease_until`) is no longer in it: taking or renewing a lease
--   changes no indexed column, and a claim checks the lease on the row it reads;
-- * new pages are filled to half, so the lease's new version of each row of a page finds room
--   on that page (a claim leases the rows of a page together).
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) INCLUDE (url)
    WHERE status = 'pending';
ALTER TABLE webhook_deliveries SET (fillfactor = 50);
