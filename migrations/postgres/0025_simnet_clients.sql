-- Simnet for real clients: a mint now records its supply (in `amount`, as a token account
-- records its balance) and its mint authority (in `owner`), because getMint, getTokenSupply
-- and the SPL mint layout carry both. Mints created before this held neither: their supply is
-- what their token accounts hold, the only way supply was ever created (faucet mints and LP
-- deposits); the stablecoin's authority is set again when the simnet opens.
UPDATE simnet_accounts
SET amount = (
    SELECT COALESCE(SUM(t.amount), 0) FROM simnet_accounts t
    WHERE t.kind = 'token' AND t.mint = simnet_accounts.address
)
WHERE kind = 'mint';

-- getRecentPrioritizationFees reads the newest slots.
CREATE INDEX simnet_transactions_by_slot ON simnet_transactions (slot);
