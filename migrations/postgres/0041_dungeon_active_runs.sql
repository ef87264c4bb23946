-- Every turn moves its run's `last_action_at`, and indexed by it each turn moved an index entry
-- (a page to delete from, one to insert into) for a query the idle sweep makes once a minute.
-- The sweep finds the active runs through an index that changes only when a run starts or ends,
-- and reads their `last_action_at` from the rows: a day's active runs are few enough to sort.
DROP INDEX dungeon_runs_active;
CREATE INDEX dungeon_runs_active ON dungeon_runs (id) WHERE status = 'active';
