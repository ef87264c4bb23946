-- The webhook outbox: one row per event and API key with a webhook URL, written in
-- the transaction of the change that caused the event, then delivered by the workers under a
-- lease. `payload` holds the signed bytes `{"event","timestamp","data"}` exactly as they are
-- sent, so every retry sends the same body. Timestamps are Unix milliseconds.
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    key_id           TEXT NOT NULL REFERENCES api_keys (id),
    event            TEXT NOT NULL,
    url              TEXT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         BIGINT NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT NOT NULL,
    lease_owner      TEXT,
    lease_until      BIGINT,
    last_attempt_at  BIGINT,
    last_status_code BIGINT,
    last_error       TEXT,
    created_at       BIGINT NOT NULL,
    delivered_at     BIGINT,
    dead_at          BIGINT
);
-- The workers' question: which pending rows are due?
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
-- The owner's question: what happened to my recent deliveries?
CREATE INDEX webhook_deliveries_by_account ON webhook_deliveries (account_id, created_at);
