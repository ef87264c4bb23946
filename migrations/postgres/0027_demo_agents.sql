-- A tournament's live trade feed finds the agents behind its registered wallets.
CREATE INDEX agents_by_wallet ON agents (wallet_address);
-- An agent's own time scale (NULL: the node's). The demo agents of a fresh embedded install run
-- their market clock faster, so a newcomer sees them trade within a minute.
ALTER TABLE agents ADD COLUMN time_scale BIGINT;
