-- Admissions of the rate limits that hold exactly across nodes (PostgreSQL deployments with
-- several nodes; a single SQLite node counts in memory and leaves this table empty).
CREATE TABLE rate_limit_hits (
    limiter TEXT NOT NULL,
    client TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX rate_limit_hits_by_key ON rate_limit_hits (limiter, client, at);
CREATE INDEX rate_limit_hits_by_age ON rate_limit_hits (at);
