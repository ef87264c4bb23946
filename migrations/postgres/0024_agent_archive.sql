-- Unfunded agents nobody funded within CRUCIBLE_UNFUNDED_AGENT_ARCHIVE_DAYS are archived: hidden
-- from lists, skipped by funding checks, not counted against the per-account cap of unfunded
-- agents. Starting one (once funded) brings it back.
ALTER TABLE agents ADD COLUMN archived_at BIGINT;
