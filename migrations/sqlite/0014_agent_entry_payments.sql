-- Entry fees paid by agents' own wallets: the signed transfer is recorded before it is sent, one
-- per agent and tournament, so a retried or concurrent entry never pays twice (it resends or
-- re-checks this one instead). Times are Unix milliseconds.
CREATE TABLE agent_entry_payments (
    agent_id      TEXT NOT NULL REFERENCES agents (id),
    tournament_id TEXT NOT NULL REFERENCES tournaments (id),
    signature     TEXT NOT NULL,
    wire          TEXT NOT NULL,
    signed_at     BIGINT NOT NULL,
    PRIMARY KEY (agent_id, tournament_id)
);
