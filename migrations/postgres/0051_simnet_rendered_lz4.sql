-- A landed transaction's rendered JSON (what `getTransaction` answers, 2-3 KB for a swap) is
-- compressed as it is stored, and PostgreSQL's own compressor (pglz) was 3.5 % of the
-- database's CPU under live swaps (`perf` across the machine). lz4 does it for a fraction of
-- that, as for the dungeon's snapshots (0046). It applies to transactions landed from now on.
-- PostgreSQL built without lz4 keeps pglz: nothing else depends on it.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE simnet_transactions ALTER COLUMN rendered SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    RAISE NOTICE 'lz4 compression is not available here; simnet transactions keep pglz';
END
$$;
