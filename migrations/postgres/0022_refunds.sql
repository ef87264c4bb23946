-- Refunds (docs/payouts.md, "Refunds"): a cancelled paid tournament pays every entry back to the
-- wallet that paid it, through the same exactly-once machinery as prizes, so a refund is a
-- `payouts` row with `source_kind = 'refund'`.
ALTER TABLE payouts DROP CONSTRAINT IF EXISTS payouts_source_kind_check;
ALTER TABLE payouts ADD CONSTRAINT payouts_source_kind_check
    CHECK (source_kind IN ('tournament', 'dungeon', 'refund'));

-- A paid tournament that reaches its start with fewer registered wallets than this is cancelled
-- and refunded; 0 turns the rule off. Tournaments created before this rule keep it off.
ALTER TABLE tournaments ADD COLUMN min_participants BIGINT NOT NULL DEFAULT 0;

-- Why a tournament was cancelled (by its host, or too few participants at its start).
ALTER TABLE tournaments ADD COLUMN cancellation_reason TEXT;
