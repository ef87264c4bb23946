-- The delivery worker's claim reads due rows in (next_attempt_at, id) order and stops after a
-- bounded number of them, so a claim costs what it takes, not the whole backlog: the index
-- carries the id, so the order comes from the index alone and no sort over ties is needed.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at, id);
