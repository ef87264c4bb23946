-- Paying from the embedded wallet with an account key, within limits (docs/api.md, "Paying from
-- the embedded wallet"). Amounts are raw stablecoin units, times Unix milliseconds.

-- A key's spend limits: both NULL for a key that can never move funds (every key before this).
ALTER TABLE api_keys ADD COLUMN spend_max_per_day_raw BIGINT;
ALTER TABLE api_keys ADD COLUMN spend_max_per_entry_raw BIGINT;

-- Payments the server signs from a wallet whose key it holds (an agent's entry fee, an account's
-- embedded wallet paying a registration or a dungeon entry). The signed transfer is recorded
-- before it is sent, one per purpose and subject (an agent and tournament, a registration memo,
-- a dungeon quote), so a retried or concurrent call re-sends or re-checks this one instead of
-- paying twice. `reference` is the tournament or the dungeon day; `detail` (JSON) is what
-- settling it needs (the wallets it registers, the run's class). Replaces agent_entry_payments.
CREATE TABLE custodial_payments (
    purpose    TEXT NOT NULL,
    subject    TEXT NOT NULL,
    signature  TEXT NOT NULL UNIQUE,
    wire       TEXT NOT NULL,
    payer      TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    reference  TEXT NOT NULL,
    detail     TEXT NOT NULL,
    amount_raw BIGINT NOT NULL,
    signed_at  BIGINT NOT NULL,
    PRIMARY KEY (purpose, subject)
);
INSERT INTO custodial_payments (purpose, subject, signature, wire, payer, account_id, reference,
                                detail, amount_raw, signed_at)
SELECT 'agent_entry', p.agent_id || ':' || p.tournament_id, p.signature, p.wire, a.wallet_address,
       a.account_id, p.tournament_id, '{}', t.entry_fee_raw, p.signed_at
FROM agent_entry_payments p
JOIN agents a ON a.id = p.agent_id
JOIN tournaments t ON t.id = p.tournament_id;
DROP TABLE agent_entry_payments;

-- What each key spent: one row per payment it authorised, written in the transaction that
-- records the signed payment. `released_at` is set when the payment is refunded or can never
-- land; a released spend no longer counts against the day.
CREATE TABLE key_spends (
    signature   TEXT PRIMARY KEY,
    key_id      TEXT NOT NULL REFERENCES api_keys (id),
    amount_raw  BIGINT NOT NULL,
    spent_at    BIGINT NOT NULL,
    released_at BIGINT
);
CREATE INDEX key_spends_by_key ON key_spends (key_id, spent_at);
