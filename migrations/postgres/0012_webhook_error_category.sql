-- What kind of failure the last attempt of a delivery met (timeout, connection, http_status, …),
-- shown to its owner beside a short sentence of ours; the receiver's body is never kept.
ALTER TABLE webhook_deliveries ADD COLUMN last_error_category TEXT;
