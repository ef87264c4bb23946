-- The simnet's address index is only ever read by address and slot (`getSignaturesForAddress`,
-- a snapshot round's flows, a pool's last trade), and every transaction lands in a slot of its
-- own, so (address, slot) is as unique as (address, signature) was. It becomes the key and the
-- second index goes: a landing writes each of its addresses (about eight for a swap) into one
-- index instead of two, and at the end of that address's entries instead of at a random
-- signature's place among them. On a live swap that was a fifth of PostgreSQL's WAL
-- (docs/simnet.md, "Few statements per landing").
ALTER TABLE simnet_address_signatures DROP CONSTRAINT simnet_address_signatures_pkey;
DROP INDEX simnet_address_signatures_by_slot;
ALTER TABLE simnet_address_signatures ADD PRIMARY KEY (address, slot);
