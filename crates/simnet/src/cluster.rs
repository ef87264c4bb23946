//! What the simnet says about itself as a cluster: its genesis hash and node identity (fixed
//! values, the same on every install, so a client can tell it is talking to a simnet), and
//! its epochs (mainnet's schedule: 432,000 slots an epoch, no warm-up).

use crucible_solana::tx::Pubkey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub(crate) const SLOTS_PER_EPOCH: u64 = 432_000;

/// `getGenesisHash`.
pub(crate) fn genesis_hash() -> String {
    crucible_solana::base58::encode(&Sha256::digest(b"crucible simnet genesis"))
}

/// `getIdentity`: the simnet's one (and leader) node.
pub(crate) fn identity() -> Pubkey {
    Pubkey(Sha256::digest(b"crucible simnet identity").into())
}

/// `getEpochInfo` at `slot` (also the block height: the simnet skips no slot).
pub(crate) fn epoch_info(slot: u64, transaction_count: u64) -> Value {
    json!({
        "absoluteSlot": slot,
        "blockHeight": slot,
        "epoch": slot / SLOTS_PER_EPOCH,
        "slotIndex": slot % SLOTS_PER_EPOCH,
        "slotsInEpoch": SLOTS_PER_EPOCH,
        "transactionCount": transaction_count,
    })
}

/// `getEpochSchedule`.
pub(crate) fn epoch_schedule() -> Value {
    json!({
        "firstNormalEpoch": 0,
        "firstNormalSlot": 0,
        "leaderScheduleSlotOffset": SLOTS_PER_EPOCH,
        "slotsPerEpoch": SLOTS_PER_EPOCH,
        "warmup": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_split_slots_like_mainnet() {
        let info = epoch_info(SLOTS_PER_EPOCH + 5, 9);
        assert_eq!(info["epoch"], 1);
        assert_eq!(info["slotIndex"], 5);
        assert_eq!(info["transactionCount"], 9);
        assert_eq!(genesis_hash().len(), 44, "a base58 32-byte hash");
    }
}
