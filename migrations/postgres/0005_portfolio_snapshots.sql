-- Portfolio values of registered wallets over a tournament, in USD, for leaderboards and charts.
CREATE TABLE portfolio_snapshots (
    tournament_id TEXT NOT NULL REFERENCES tournaments (id),
    wallet        TEXT NOT NULL,
    taken_at      BIGINT NOT NULL,
    value_usd     DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tournament_id, wallet, taken_at)
);
