-- Flows found through every account a wallet holds (docs/tournaments.md, "Snapshot rounds"):
-- per registration, the newest slot whose transactions a round has accounted for, and the
-- holdings that round saw (lamports of the wallet and of its token accounts, stablecoin raw
-- units), so the next round can reconcile the change no transaction explains. A registration
-- tracked before this (these still NULL) re-anchors at its next round without a flow.
ALTER TABLE tournament_registrations ADD COLUMN flow_slot BIGINT;
ALTER TABLE tournament_registrations ADD COLUMN held_lamports BIGINT;
ALTER TABLE tournament_registrations ADD COLUMN held_stable_raw BIGINT;
