-- Live agents: every order is a real swap from the agent's own wallet. A swap is recorded
-- here, signed, BEFORE it is sent, so a node that dies after sending leaves a row whose
-- outcome the next tick asks the chain for (never sending again). `wire` is the signed
-- transaction (base64), kept for audit; `issued_at` is when its blockhash was fetched, after
-- which (plus the blockhash lifetime) a transaction the chain never saw can no longer land.
CREATE TABLE agent_live_swaps (
    signature               TEXT PRIMARY KEY,
    agent_id                TEXT NOT NULL REFERENCES agents (id),
    status                  TEXT NOT NULL CHECK (status IN ('pending', 'filled', 'refused')),
    side                    TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
    amount_in               BIGINT NOT NULL,
    minimum_out             BIGINT NOT NULL,
    reason                  TEXT,                -- the strategy's reason for the order
    market_ts               BIGINT NOT NULL,
    wire                    TEXT NOT NULL,
    last_valid_block_height BIGINT NOT NULL,
    issued_at               BIGINT NOT NULL,
    error                   TEXT,                -- why it was refused
    trade_id                TEXT,                -- the agent_trades row once filled
    created_at              BIGINT NOT NULL,
    resolved_at             BIGINT
);
CREATE INDEX agent_live_swaps_by_agent ON agent_live_swaps (agent_id, status);

-- The live wallet as last read on chain (raw units) and its value in USDC at the pool price;
-- the first value read is the base of the agent's PnL. Refused orders are counted, the last
-- reason kept.
ALTER TABLE agents ADD COLUMN live_sol_lamports BIGINT;
ALTER TABLE agents ADD COLUMN live_usdc_raw BIGINT;
ALTER TABLE agents ADD COLUMN live_equity DOUBLE PRECISION;
ALTER TABLE agents ADD COLUMN live_initial_equity DOUBLE PRECISION;
ALTER TABLE agents ADD COLUMN refused_orders BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN last_refusal TEXT;
