-- Operators' own model provider keys (docs/models.md): one per account and vendor, sealed
-- under the master key (re-sealed by `crucible master-key rotate`, which finds rows by `id`).
-- `key_prefix` is the key's first few characters, shown back so an operator can tell keys
-- apart; the key itself is never returned. Times are Unix milliseconds.
CREATE TABLE model_keys (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    vendor      TEXT NOT NULL,
    key_sealed  TEXT NOT NULL,
    key_prefix  TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (account_id, vendor)
);
