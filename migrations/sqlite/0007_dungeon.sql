-- The daily dungeon: entry quotes, runs and every run's stored events.
-- Timestamps are Unix milliseconds; money is raw token units (one schema for SQLite and PostgreSQL).

-- A per-deployment secret salting the daily map seeds (sealed with the master key), so
-- tomorrow's map cannot be computed from the open-source generator.
CREATE TABLE dungeon_secrets (
    name   TEXT PRIMARY KEY,
    sealed TEXT NOT NULL
);

-- A price quote for one entry: the memo the payment must carry, valid until `expires_at`.
CREATE TABLE dungeon_quotes (
    id         TEXT PRIMARY KEY,
    dungeon_id TEXT NOT NULL,
    payer      TEXT NOT NULL,
    amount_raw BIGINT NOT NULL,
    memo       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- One paid run. `state` is the serialized game run, a cache of the actions stored in
-- `dungeon_run_events` (the source of truth, replayable); `version` orders concurrent turns.
-- The run key is stored as its SHA-256 (lookup) and sealed (the credential endpoint shows it).
CREATE TABLE dungeon_runs (
    id             TEXT PRIMARY KEY,
    dungeon_id     TEXT NOT NULL,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    wallet         TEXT NOT NULL,
    class          TEXT NOT NULL,
    quote_id       TEXT NOT NULL UNIQUE,
    tx_signature   TEXT NOT NULL UNIQUE,
    amount_raw     BIGINT NOT NULL,
    key_hash       TEXT NOT NULL UNIQUE,
    key_sealed     TEXT NOT NULL,
    status         TEXT NOT NULL,
    score          BIGINT NOT NULL,
    deepest_floor  BIGINT NOT NULL,
    turn_number    BIGINT NOT NULL,
    version        BIGINT NOT NULL,
    last_seq       BIGINT NOT NULL,
    state          TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    last_action_at BIGINT NOT NULL,
    ended_at       BIGINT
);
CREATE INDEX dungeon_runs_day ON dungeon_runs (dungeon_id, score);
CREATE INDEX dungeon_runs_account ON dungeon_runs (account_id, created_at);
CREATE INDEX dungeon_runs_active ON dungeon_runs (status, last_action_at);

-- Everything a watcher sees, in order: `run:turn`, `run:broadcast`, `run:ended`. `seq` is the
-- per-run sequence number (the SSE event id); `turn_number` is set on legal turns, whose
-- stored payload answers a retried turn.
CREATE TABLE dungeon_run_events (
    run_id      TEXT NOT NULL REFERENCES dungeon_runs (id),
    seq         BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    turn_number BIGINT,
    payload     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX dungeon_run_events_turn ON dungeon_run_events (run_id, turn_number);
CREATE INDEX dungeon_run_events_kind ON dungeon_run_events (run_id, kind, created_at);

-- A day whose prize has been settled (at most once), with what was decided.
CREATE TABLE dungeon_days (
    dungeon_id    TEXT PRIMARY KEY,
    entries       BIGINT NOT NULL,
    pot_raw       BIGINT NOT NULL,
    winner_run_id TEXT,
    settled_at    BIGINT NOT NULL
);
