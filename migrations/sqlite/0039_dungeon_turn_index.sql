-- A turn's record is read back only when a client sends a turn again (`turnNumber` at or below
-- the run's): rare, and found along the primary key from `seq >= turnNumber` (a legal turn N is
-- at least the run's Nth event). Every turn wrote to this index, a page scattered by run in each
-- batch, for that rare read.
DROP INDEX dungeon_run_events_turn;
