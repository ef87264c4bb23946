-- Durable work for the scheduler: one-off jobs with leases, and recurring schedules.

CREATE TABLE jobs (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    subject     TEXT NOT NULL,
    due_at      BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    attempts    BIGINT NOT NULL DEFAULT 0,
    last_error  TEXT,
    done_at     BIGINT,
    created_at  BIGINT NOT NULL
);
CREATE INDEX jobs_pending ON jobs (done_at, due_at);

-- A recurring task runs when `next_run_at` has passed; whoever moves `next_run_at` forward
-- (compare-and-set) runs it, so each occurrence runs once across nodes.
CREATE TABLE schedules (
    name        TEXT PRIMARY KEY,
    next_run_at BIGINT NOT NULL,
    last_run_at BIGINT
);
