-- Simnet's address index: every account key of every landed transaction, so
-- `getSignaturesForAddress` answers newest first (slots are unique per transaction).
CREATE TABLE simnet_address_signatures (
    address   TEXT NOT NULL,
    slot      BIGINT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (address, signature)
);
CREATE INDEX simnet_address_signatures_by_slot ON simnet_address_signatures (address, slot);
