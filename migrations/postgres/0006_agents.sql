-- Agents of the `v1/public` family, the strategy components authors upload,
-- and what agents' ticks produce. An agent row is also its own tick job: `next_tick_at` and the
-- tick lease make the scheduler durable and safe with several nodes.

CREATE TABLE strategy_components (
    id          TEXT PRIMARY KEY,          -- SHA-256 of the bytes, hex: content-addressed
    size_bytes  BIGINT NOT NULL,
    bytes       BYTEA NOT NULL,
    created_at  BIGINT NOT NULL
);

-- Who may use which uploaded component: the accounts that uploaded it.
CREATE TABLE account_strategies (
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    strategy_id  TEXT NOT NULL REFERENCES strategy_components (id),
    name         TEXT NOT NULL,
    uploaded_at  BIGINT NOT NULL,
    PRIMARY KEY (account_id, strategy_id)
);

CREATE TABLE agents (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id),
    name                TEXT NOT NULL,
    username            TEXT NOT NULL,
    username_key        TEXT NOT NULL UNIQUE,   -- lower-cased: handles are unique ignoring case
    class               TEXT NOT NULL,
    model_id            TEXT NOT NULL,
    strategy_type       TEXT NOT NULL,
    strategy_component  TEXT,                   -- uploaded component id, NULL for the class built-in
    base_token          TEXT NOT NULL,
    quote_token         TEXT NOT NULL,
    time_interval       TEXT NOT NULL,
    max_allocation      DOUBLE PRECISION NOT NULL,
    personality         TEXT NOT NULL DEFAULT '',
    is_paper_trading    BIGINT NOT NULL DEFAULT 1,
    avatar_url          TEXT,
    wallet_address      TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('unfunded', 'idle', 'active', 'error')),
    status_reason       TEXT,
    ledger              TEXT NOT NULL,          -- paper::Ledger as JSON
    strategy_state      BYTEA,
    consecutive_faults  BIGINT NOT NULL DEFAULT 0,
    ticks               BIGINT NOT NULL DEFAULT 0,
    faults              BIGINT NOT NULL DEFAULT 0,
    last_fault          TEXT,
    last_tick_at        BIGINT,
    last_price          DOUBLE PRECISION,
    clock_origin_wall   BIGINT,                 -- market clock = origin_market + (now - origin_wall) × scale
    clock_origin_market BIGINT,
    next_tick_at        BIGINT,
    tick_lease_owner    TEXT,
    tick_lease_until    BIGINT,
    started_at          BIGINT,
    stopped_at          BIGINT,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);
CREATE INDEX agents_by_account ON agents (account_id, created_at);
CREATE INDEX agents_due ON agents (status, next_tick_at);

CREATE TABLE agent_trades (
    id              TEXT PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents (id),
    executed_at     BIGINT NOT NULL,           -- wall clock
    market_ts       BIGINT NOT NULL,           -- the agent's market clock
    side            TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
    base_token      TEXT NOT NULL,
    base_raw        BIGINT NOT NULL,
    notional_raw    BIGINT NOT NULL,
    fee_raw         BIGINT NOT NULL,
    price           DOUBLE PRECISION NOT NULL,
    realized_pnl_raw BIGINT,
    closed_trip     BIGINT NOT NULL DEFAULT 0,
    won_trip        BIGINT NOT NULL DEFAULT 0,
    reason          TEXT,
    tx_hash         TEXT NOT NULL
);
CREATE INDEX agent_trades_by_agent ON agent_trades (agent_id, executed_at);

-- Equity at the first tick of each hour: the start value of a performance period.
CREATE TABLE agent_equity (
    agent_id    TEXT NOT NULL REFERENCES agents (id),
    hour_bucket BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    equity      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (agent_id, hour_bucket)
);
