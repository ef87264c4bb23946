-- A run's `state` is a snapshot taken every few turns (and when the run ends), no longer
-- rewritten on every turn: `state_seq` is the event sequence number it was taken at, and the
-- turns after it are replayed from their events' `action` (the action as it was sent).
ALTER TABLE dungeon_runs ADD COLUMN state_seq BIGINT NOT NULL DEFAULT 0;
UPDATE dungeon_runs SET state_seq = last_seq;
ALTER TABLE dungeon_run_events ADD COLUMN action TEXT;
