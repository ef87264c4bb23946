-- The simnet's tables (see storage.rs): the same columns and indexes the server's migrations
-- create, for databases those migrations do not manage. Money is raw units in BIGINT; times
-- are Unix milliseconds. Comment lines are dropped before statements are split on semicolons.

-- Every account: a wallet, a mint, a token account, the pool's state and vault, or an
-- uninitialized account.
CREATE TABLE IF NOT EXISTS simnet_accounts (
    address TEXT PRIMARY KEY,
    lamports BIGINT NOT NULL,
    kind TEXT NOT NULL,
    program TEXT,
    mint TEXT,
    owner TEXT,
    amount BIGINT NOT NULL DEFAULT 0,
    decimals BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS simnet_accounts_owner ON simnet_accounts (owner);

-- Issued blockhashes; `seq` orders them.
CREATE TABLE IF NOT EXISTS simnet_blockhashes (
    hash TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    slot BIGINT NOT NULL,
    issued_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS simnet_blockhashes_seq ON simnet_blockhashes (seq);

-- Landed transactions; `rendered` is the jsonParsed `{transaction, meta, version}`.
CREATE TABLE IF NOT EXISTS simnet_transactions (
    signature TEXT PRIMARY KEY,
    slot BIGINT NOT NULL,
    executed_at BIGINT NOT NULL,
    err TEXT,
    rendered TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS simnet_transactions_by_slot ON simnet_transactions (slot);

-- Named counters: 'slot', 'blockhash_seq'.
CREATE TABLE IF NOT EXISTS simnet_counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

-- Every account key of every landed transaction (`getSignaturesForAddress`), read by address
-- and slot only; every transaction has a slot of its own.
CREATE TABLE IF NOT EXISTS simnet_address_signatures (
    address   TEXT NOT NULL,
    slot      BIGINT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (address, slot)
) WITHOUT ROWID
