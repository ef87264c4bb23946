-- A run's events are found along a chain, not through an index by run.
--
-- The primary key `(run_id, seq)` was an index ordered by run: a batch of turns of fifty runs
-- wrote an entry to fifty of its pages, one per run, and each page went to the WAL whole and was
-- copied back by the checkpoint. That was more than half of the pages a turn batch wrote (57 of
-- 98 frames for 50 turns, measured on this schema). Now the table is in the order events are
-- appended (`id`), each event names the one before it in its run (`prev`), and the run's row
-- names its last event (`last_event_id`, moved by the turn's update, which writes that row
-- anyway): a batch appends its events to the table's last pages and to no index by run.
-- A reader walks back from the run's last event (docs/architecture.md, "A run's events").
--
-- PostgreSQL keeps the primary key: its batches write far fewer pages per turn to its WAL.
CREATE TABLE dungeon_run_events_chained (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES dungeon_runs (id),
    seq         BIGINT NOT NULL,
    prev        INTEGER,
    kind        TEXT NOT NULL,
    turn_number BIGINT,
    payload     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    action      TEXT
);
INSERT INTO dungeon_run_events_chained
    (id, run_id, seq, prev, kind, turn_number, payload, created_at, action)
SELECT rowid, run_id, seq, LAG(rowid) OVER (PARTITION BY run_id ORDER BY seq), kind,
       turn_number, payload, created_at, action
FROM dungeon_run_events;

ALTER TABLE dungeon_runs ADD COLUMN last_event_id INTEGER;
-- Found along the old primary key, while it exists.
UPDATE dungeon_runs SET last_event_id =
    (SELECT e.rowid FROM dungeon_run_events e WHERE e.run_id = dungeon_runs.id
     ORDER BY e.seq DESC LIMIT 1);

DROP TABLE dungeon_run_events;
ALTER TABLE dungeon_run_events_chained RENAME TO dungeon_run_events;
CREATE INDEX dungeon_run_events_broadcasts ON dungeon_run_events (run_id, created_at)
    WHERE kind = 'run:broadcast';
-- Every 64th event of a run is marked in a partial index, so a reader who wants a page of a
-- long run's events starts walking at the first mark past that page instead of at the run's
-- last event: a walk is at most the page and 63 events long. A batch writes to it for one
-- turn in 64.
CREATE INDEX dungeon_run_events_marks ON dungeon_run_events (run_id, seq) WHERE seq % 64 = 0;
-- Retention deletes the events of runs that ended long ago: they are all older than that. In
-- time order, like the table, so a batch adds its entries to the index's last page.
CREATE INDEX dungeon_run_events_created ON dungeon_run_events (created_at);
