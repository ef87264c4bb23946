-- The values an agent's operator chose for its strategy's tunable parameters (a JSON object,
-- name to value), as given at creation and checked then against the component's declaration.
-- NULL: none chosen. Each tick fills in the declared defaults for the rest (docs/strategies.md).
ALTER TABLE agents ADD COLUMN strategy_params TEXT;
