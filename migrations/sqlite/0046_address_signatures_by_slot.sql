-- The simnet's address index is only ever read by address and slot (`getSignaturesForAddress`,
-- a snapshot round's flows, a pool's last trade), and every transaction lands in a slot of its
-- own, so (address, slot) is as unique as (address, signature) was. It becomes the key of a
-- table without rowids: one B-tree, written at the end of each address's entries, where a
-- landing wrote each address into three (the rows, the key on a random signature, the index by
-- slot). SQLite cannot change a table's key in place, so the rows move to a new table.
CREATE TABLE simnet_address_signatures_keyed (
    address   TEXT NOT NULL,
    slot      BIGINT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (address, slot)
) WITHOUT ROWID;
INSERT INTO simnet_address_signatures_keyed (address, slot, signature)
    SELECT address, slot, signature FROM simnet_address_signatures;
DROP TABLE simnet_address_signatures;
ALTER TABLE simnet_address_signatures_keyed RENAME TO simnet_address_signatures;
