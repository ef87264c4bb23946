-- Accounts, their wallets, sessions, wallet-proof nonces, API keys, and the account-facing
-- lists (tournament registrations, payouts). Timestamps are Unix milliseconds; money is raw
-- token units; flags are 0/1 integers (one schema shape for SQLite and PostgreSQL).

CREATE TABLE accounts (
    id                  TEXT PRIMARY KEY,
    email               TEXT UNIQUE,
    password_hash       TEXT,
    display_name        TEXT,
    avatar_url          TEXT,
    bio                 TEXT,
    terms_accepted_at   BIGINT NOT NULL,
    privacy_accepted_at BIGINT NOT NULL,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);

-- A wallet belongs to at most one account: the proven set is `allChainWallets`.
CREATE TABLE account_wallets (
    address    TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    kind       TEXT NOT NULL CHECK (kind IN ('custodial', 'linked')),
    linked_at  BIGINT NOT NULL
);
CREATE INDEX account_wallets_by_account ON account_wallets (account_id, linked_at);

-- Keys the server holds for wallets it created (accounts' embedded wallets, agents, escrow).
CREATE TABLE custodial_wallets (
    address       TEXT PRIMARY KEY,
    owner_kind    TEXT NOT NULL,
    owner_id      TEXT NOT NULL,
    secret_sealed TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX custodial_wallets_by_owner ON custodial_wallets (owner_kind, owner_id);

CREATE TABLE sessions (
    token_hash   TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX sessions_by_account ON sessions (account_id);

CREATE TABLE wallet_nonces (
    nonce      TEXT PRIMARY KEY,
    wallet     TEXT NOT NULL,
    message    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);

-- Account keys (`family = 'account'`, scopes read/write) and v1 keys (`family = 'v1'`,
-- permissions agents:*). Only the SHA-256 of the secret is kept.
CREATE TABLE api_keys (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts (id),
    family                TEXT NOT NULL CHECK (family IN ('account', 'v1')),
    name                  TEXT NOT NULL,
    key_prefix            TEXT NOT NULL,
    key_hash              TEXT NOT NULL UNIQUE,
    scopes                TEXT NOT NULL,
    webhook_url           TEXT,
    webhook_secret_sealed TEXT,
    created_at            BIGINT NOT NULL,
    expires_at            BIGINT,
    last_used_at          BIGINT,
    revoked_at            BIGINT
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, family, created_at);

CREATE TABLE tournaments (
    id                    TEXT PRIMARY KEY,
    name                  TEXT NOT NULL,
    description           TEXT NOT NULL DEFAULT '',
    type                  TEXT NOT NULL,
    visibility            TEXT NOT NULL CHECK (visibility IN ('public', 'private')),
    status                TEXT NOT NULL CHECK (status IN ('upcoming', 'live', 'ended', 'cancelled')),
    entry_fee_raw         BIGINT NOT NULL,
    max_participants      BIGINT NOT NULL,
    current_participants  BIGINT NOT NULL DEFAULT 0,
    escrow_wallet         TEXT NOT NULL,
    payout_split          TEXT NOT NULL,
    rake_bps              BIGINT NOT NULL DEFAULT 0,
    series                TEXT,
    cancelled_at          BIGINT,
    last_snapshot_at      BIGINT,
    is_paper_trading      BIGINT NOT NULL DEFAULT 0,
    start_date            BIGINT NOT NULL,
    end_date              BIGINT NOT NULL,
    registration_deadline BIGINT,
    created_at            BIGINT NOT NULL
);
CREATE INDEX tournaments_by_status ON tournaments (status, start_date);

CREATE TABLE tournament_registrations (
    tournament_id     TEXT NOT NULL REFERENCES tournaments (id),
    wallet            TEXT NOT NULL,
    account_id        TEXT REFERENCES accounts (id),
    tx_signature      TEXT,
    registered_at     BIGINT NOT NULL,
    start_value_usd   DOUBLE PRECISION,
    current_value_usd DOUBLE PRECISION,
    snapshot_at       BIGINT,
    final_rank        BIGINT,
    final_pnl         DOUBLE PRECISION,
    prize_awarded_raw BIGINT,
    PRIMARY KEY (tournament_id, wallet)
);
CREATE INDEX tournament_registrations_by_account ON tournament_registrations (account_id, registered_at);

-- Prizes owed and paid (tournaments and the daily dungeon). One row per winner and source.
CREATE TABLE payouts (
    id           TEXT PRIMARY KEY,
    account_id   TEXT REFERENCES accounts (id),
    wallet       TEXT NOT NULL,
    source_kind  TEXT NOT NULL CHECK (source_kind IN ('tournament', 'dungeon')),
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
    UNIQUE (source_kind, source_id, wallet)
);
CREATE INDEX payouts_by_account ON payouts (account_id, created_at);
