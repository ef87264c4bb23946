-- Why a payout is owed when its kind alone does not say it: a refund names the cancellation it
-- pays back, or the registration an agent's paid entry could not complete (docs/payouts.md,
-- "Refunds"). NULL for prizes and for rows written before this column.
ALTER TABLE payouts ADD COLUMN reason TEXT;
