-- Refunds (docs/payouts.md, "Refunds"): a cancelled paid tournament pays every entry back to the
-- wallet that paid it, through the same exactly-once machinery as prizes, so a refund is a
-- `payouts` row with `source_kind = 'refund'`. SQLite cannot alter a CHECK constraint: the table
-- is rebuilt with every column and index it had.
CREATE TABLE payouts_new (
    id           TEXT PRIMARY KEY,
    account_id   TEXT REFERENCES accounts (id),
    wallet       TEXT NOT NULL,
    source_kind  TEXT NOT NULL CHECK (source_kind IN ('tournament', 'dungeon', 'refund')),
    source_id    TEXT NOT NULL,
    rank         BIGINT,
    amount_raw   BIGINT NOT NULL,
    mint         TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    tx_signature TEXT,
    attempts     BIGINT NOT NULL DEFAULT 0,
    last_attempt_at BIGINT,
    last_error   TEXT,
    created_at   BIGINT NOT NULL,
    sent_at      BIGINT,
    lease_owner  TEXT,
    lease_until  BIGINT,
    fence        BIGINT NOT NULL DEFAULT 0,
    signed_wire  TEXT,
    last_valid_block_height BIGINT,
    UNIQUE (source_kind, source_id, wallet)
);
INSERT INTO payouts_new (id, account_id, wallet, source_kind, source_id, rank, amount_raw, mint, status,
                         tx_signature, attempts, last_attempt_at, last_error, created_at, sent_at,
                         lease_owner, lease_until, fence, signed_wire, last_valid_block_height)
SELECT id, account_id, wallet, source_kind, source_id, rank, amount_raw, mint, status,
       tx_signature, attempts, last_attempt_at, last_error, created_at, sent_at,
       lease_owner, lease_until, fence, signed_wire, last_valid_block_height
FROM payouts;
DROP TABLE payouts;
ALTER TABLE payouts_new RENAME TO payouts;
CREATE INDEX payouts_by_account ON payouts (account_id, created_at);

-- A paid tournament that reaches its start with fewer registered wallets than this is cancelled
-- and refunded; 0 turns the rule off. Tournaments created before this rule keep it off.
ALTER TABLE tournaments ADD COLUMN min_participants BIGINT NOT NULL DEFAULT 0;

-- Why a tournament was cancelled (by its host, or too few participants at its start).
ALTER TABLE tournaments ADD COLUMN cancellation_reason TEXT;
