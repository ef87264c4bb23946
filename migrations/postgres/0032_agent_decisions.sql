-- Agents that think (docs/agents.md): every tick's decision, by the agent's model or by its class
-- rule, with why the rule decided when it did; and each agent's daily token budget.
-- Times are Unix milliseconds. `prompt` is the user message the model was sent (the system
-- message is the agent's personality) and `completion` its answer, each cut to 8 KiB; both are
-- NULL when no model was asked.
CREATE TABLE agent_decisions (
    id                TEXT PRIMARY KEY,
    agent_id          TEXT NOT NULL REFERENCES agents (id),
    decided_at        BIGINT NOT NULL,
    market_ts         BIGINT NOT NULL,
    model_id          TEXT NOT NULL,
    decided_by        TEXT NOT NULL CHECK (decided_by IN ('model', 'rule')),
    why               TEXT,
    why_detail        TEXT,
    action            TEXT NOT NULL CHECK (action IN ('buy', 'sell', 'hold')),
    fraction          DOUBLE PRECISION NOT NULL,
    reason            TEXT,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    latency_ms        BIGINT,
    prompt_hash       TEXT,
    prompt            TEXT,
    completion        TEXT
);
CREATE INDEX agent_decisions_by_agent ON agent_decisions (agent_id, decided_at DESC, id DESC);

-- NULL: the host's default budget. Tokens are counted per UTC day (`model_tokens_day`,
-- `YYYY-MM-DD`); a tick on a new day starts the count again. `model_last_error` is the last
-- model call's failure, cleared by the next answer.
ALTER TABLE agents ADD COLUMN model_tokens_per_day BIGINT;
ALTER TABLE agents ADD COLUMN model_tokens_day TEXT;
ALTER TABLE agents ADD COLUMN model_tokens_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN model_last_error TEXT;
