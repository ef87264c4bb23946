-- A run's game state (about 14 KB of JSON) moves out of its row into a snapshot taken every
-- few turns (and when the run ends): a turn rewrites only the small row of counters and appends
-- its event, and the turns after the snapshot (`seq`, the event sequence number it was taken
-- at) are replayed from their events' `action` (the action as it was sent).
CREATE TABLE dungeon_run_snapshots (
    run_id TEXT PRIMARY KEY REFERENCES dungeon_runs (id),
    seq    BIGINT NOT NULL,
    state  TEXT NOT NULL
);
INSERT INTO dungeon_run_snapshots (run_id, seq, state) SELECT id, last_seq, state FROM dungeon_runs;
ALTER TABLE dungeon_runs DROP COLUMN state;
ALTER TABLE dungeon_run_events ADD COLUMN action TEXT;
