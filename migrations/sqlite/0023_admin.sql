-- Host operations (docs/admin.md): the admin role, suspensions, banned components, manual
-- disqualifications and the audit log.
ALTER TABLE accounts ADD COLUMN is_admin BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN suspended_at BIGINT;
ALTER TABLE accounts ADD COLUMN suspension_reason TEXT;

-- A strategy component no agent may run and nobody may upload again, by its SHA-256.
CREATE TABLE banned_components (
    sha256    TEXT PRIMARY KEY,
    reason    TEXT NOT NULL,
    banned_by TEXT NOT NULL,
    banned_at BIGINT NOT NULL
);

-- Who took a wallet off a board: `flow` (the disqualify transfer policy) or `admin` (by hand,
-- which an admin may undo before the end).
ALTER TABLE tournament_registrations ADD COLUMN disqualified_by TEXT;
-- Bumped by every manual (dis)qualification: cached boards on every node see the change.
ALTER TABLE tournaments ADD COLUMN standings_revision BIGINT NOT NULL DEFAULT 0;

-- Every admin action, key mint and revoke, suspension, ban, disqualification, cancellation and
-- refund: who (`actor`: `account:<id>`, `host` for the command line, `system`), what, on which
-- subject, whose account it concerns, and the state before and after where it applies (JSON).
CREATE TABLE audit_log (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,   -- the order entries were written in
    id           TEXT NOT NULL UNIQUE,
    at           BIGINT NOT NULL,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    subject_kind TEXT NOT NULL,
    subject_id   TEXT NOT NULL,
    account_id   TEXT,
    before_state TEXT,
    after_state  TEXT,
    detail       TEXT
);
CREATE INDEX audit_log_by_time ON audit_log (at);
CREATE INDEX audit_log_by_account ON audit_log (account_id, at);
CREATE INDEX audit_log_by_action ON audit_log (action, at);
