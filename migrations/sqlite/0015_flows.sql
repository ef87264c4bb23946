-- Simnet's address index: every account key of every landed transaction, so
-- `getSignaturesForAddress` answers newest first (slots are unique per transaction).
CREATE TABLE simnet_address_signatures (
    address   TEXT NOT NULL,
    slot      BIGINT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (address, signature)
);
CREATE INDEX simnet_address_signatures_by_slot ON simnet_address_signatures (address, slot);

-- Fair tournaments: how a tournament treats money moved in or out of a registered wallet, and
-- what ranks its board (see docs/tournaments.md).
ALTER TABLE tournaments ADD COLUMN transfer_policy TEXT NOT NULL DEFAULT 'adjust';
ALTER TABLE tournaments ADD COLUMN evaluation_metric TEXT NOT NULL DEFAULT 'pnl_percent';

-- Per registration: when its baseline was taken, the newest signature already accounted for,
-- the net external flows since the baseline (USD, deposits positive), their time-weighted sum
-- (each flow times milliseconds after the baseline, for Modified Dietz), and why it is off the
-- board under the `disqualify` policy.
ALTER TABLE tournament_registrations ADD COLUMN baseline_at BIGINT;
ALTER TABLE tournament_registrations ADD COLUMN flow_cursor TEXT;
ALTER TABLE tournament_registrations ADD COLUMN net_flows_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE tournament_registrations ADD COLUMN flow_time_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE tournament_registrations ADD COLUMN disqualified_reason TEXT;

-- Net flows up to each snapshot, so the series can be flow-adjusted period by period.
ALTER TABLE portfolio_snapshots ADD COLUMN net_flows_usd REAL NOT NULL DEFAULT 0;

-- Every external flow seen, once per tournament, wallet and transaction: a restart or a
-- repeated round never counts one twice.
CREATE TABLE tournament_flows (
    tournament_id TEXT NOT NULL REFERENCES tournaments (id),
    wallet        TEXT NOT NULL,
    signature     TEXT NOT NULL,
    slot          BIGINT NOT NULL,
    occurred_at   BIGINT NOT NULL,
    lamports      BIGINT NOT NULL,
    stable_raw    BIGINT NOT NULL,
    value_usd     REAL NOT NULL,
    PRIMARY KEY (tournament_id, wallet, signature)
);

-- Values generated once per deployment and kept with the data (e.g. the market seed).
CREATE TABLE deployment_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
