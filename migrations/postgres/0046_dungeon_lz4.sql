-- A run's snapshot (about 14 KB of JSON every 32 turns) is compressed as it is stored, and with
-- PostgreSQL's own compressor (pglz) that was 7 % of the database's CPU under a turn load
-- (`perf` across the machine). lz4 compresses JSON like this about as well at a fraction of
-- the cost; events long enough to be compressed (past ~2 KB) get it too. It applies to values
-- stored from now on. PostgreSQL built without lz4 keeps pglz: nothing else depends on it.
DO $$
BEGIN
    -- As text run here, so a server too old for the syntax lands in the handler too.
    EXECUTE 'ALTER TABLE dungeon_run_snapshots ALTER COLUMN state SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE dungeon_run_events ALTER COLUMN payload SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    RAISE NOTICE 'lz4 compression is not available here; dungeon snapshots keep pglz';
END
$$;
