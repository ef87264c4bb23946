-- A claim reads a few due rows per row it takes (to spread a claim over receivers) and needs
-- each one's lease and URL: with both in the due index the read never visits the table, where it
-- looked up every row it read. A lease taken or released moves the row's entry, once per attempt.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at, id, lease_until, url);
