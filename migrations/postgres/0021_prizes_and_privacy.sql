-- Prizes exactly once (docs/payouts.md): a payout being sent is leased to one worker, and every
-- write that worker makes is fenced by the token it took the lease with, so a worker that
-- stalled past its lease can never overwrite the one that took over. The signed transaction is
-- kept with its last valid block height: a retry resends those very bytes (which can land at
-- most once) and signs a new transfer only once the old one can no longer land.
ALTER TABLE payouts ADD COLUMN lease_owner TEXT;
ALTER TABLE payouts ADD COLUMN lease_until BIGINT;
ALTER TABLE payouts ADD COLUMN fence BIGINT NOT NULL DEFAULT 0;
ALTER TABLE payouts ADD COLUMN signed_wire TEXT;
ALTER TABLE payouts ADD COLUMN last_valid_block_height BIGINT;

-- Private tournaments: the SHA-256 of their invite code (the code itself is shown once, to the
-- host who creates the tournament). A private tournament without it is invisible.
ALTER TABLE tournaments ADD COLUMN invite_code_hash TEXT;
