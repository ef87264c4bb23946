-- Quota held by strategy uploads still being compiled and dry-ticked (docs/strategies.md,
-- "Quota"): reserved, in the account's turn, before the compile, and deleted once the upload is
-- stored or refused, so concurrent uploads cannot all pass one check. A reservation older than
-- ten minutes (a node that died mid-upload) no longer counts. Times are Unix milliseconds.
CREATE TABLE strategy_upload_reservations (
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    strategy_id  TEXT NOT NULL,
    size_bytes   BIGINT NOT NULL,
    reserved_at  BIGINT NOT NULL,
    PRIMARY KEY (account_id, strategy_id)
);
