-- Broadcasts are rate-limited per run and window; that count is the only query that needs an
-- index on an event's kind. A partial index holding broadcasts alone serves it, and a turn's
-- event, which is nearly every row the table receives, no longer writes to a third index.
DROP INDEX dungeon_run_events_kind;
CREATE INDEX dungeon_run_events_broadcasts ON dungeon_run_events (run_id, created_at)
    WHERE kind = 'run:broadcast';
