-- One on-chain payment pays for one thing: the signature is the key. Shared by tournament
-- registrations and dungeon entries.
CREATE TABLE payment_claims (
    signature  TEXT PRIMARY KEY,
    purpose    TEXT NOT NULL,
    reference  TEXT NOT NULL,
    payer      TEXT NOT NULL,
    amount_raw BIGINT NOT NULL,
    claimed_at BIGINT NOT NULL
);
