-- When each payment signature was first presented while the node did not know it yet. A
-- transaction takes a moment to reach every RPC node, so an unknown signature is answered
-- "retry" until its blockhash could no longer land; keeping the first sighting in the database
-- means a restart or another node counts from the same moment.
CREATE TABLE payment_sightings (
    signature     TEXT PRIMARY KEY,
    first_seen_at BIGINT NOT NULL
);

-- Dungeon entry quotes are now signed and self-contained (nothing is stored when one is
-- issued), so their table is no longer used.
DROP TABLE dungeon_quotes;
