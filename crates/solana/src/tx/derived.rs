//! Program-derived addresses already worked out, kept for the process.
//!
//! A derivation is a pure function of its seeds and program, so a remembered answer is always
//! the right one. What it saves is the search: each bump tried hashes the seeds and then tests
//! that the hash is not a point on the curve, a square root in the field (about as much work as
//! checking half a signature), and half the candidates fail. Live swaps derive the same pool,
//! vault and token-account addresses for every order, on both sides of the simnet.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use super::Pubkey;

/// How many derivations are kept: the token accounts of thousands of live wallets, at about
/// 250 bytes each with the map's own (8 MiB at most).
const KEPT: usize = 32_768;

/// A derivation's inputs, each seed prefixed by its length (seeds are at most 32 bytes), then
/// the program: two different seed lists never give the same key.
type Inputs = Vec<u8>;

/// An address and its bump, or none when no bump gives one off the curve.
type Derived = Option<(Pubkey, u8)>;

/// How an address is worked out when it is not remembered.
type Derive = fn(&[&[u8]], &Pubkey) -> Derived;

static DERIVED: LazyLock<Mutex<HashMap<Inputs, Derived>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn inputs(seeds: &[&[u8]], program: &Pubkey) -> Inputs {
    let mut key = Vec::with_capacity(seeds.iter().map(|s| s.len() + 1).sum::<usize>() + 32);
    for seed in seeds {
        // Longer seeds are invalid on chain; their real length keeps the key unambiguous.
        key.extend_from_slice(&seed.len().to_le_bytes());
        key.extend_from_slice(seed);
    }
    key.extend_from_slice(&program.0);
    key
}

/// `derive(seeds, program)`, from memory when it has been worked out before.
pub(super) fn remembered(seeds: &[&[u8]], program: &Pubkey, derive: Derive) -> Derived {
    let key = inputs(seeds, program);
    // A poisoned lock only means another thread panicked mid-insert of a correct answer.
    if let Some(known) = DERIVED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return *known;
    }
    // Worked out outside the lock: two threads may both derive a new address, never wait.
    let answer = derive(seeds, program);
    let mut kept = DERIVED.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.len() >= KEPT {
        // Every other entry goes: what is used again comes back at the cost of one derivation.
        let mut drop = false;
        kept.retain(|_, _| {
            drop = !drop;
            !drop
        });
    }
    kept.insert(key, answer);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_split_differently_are_different_inputs() {
        let program = Pubkey([7; 32]);
        assert_ne!(
            inputs(&[b"ab", b"c"], &program),
            inputs(&[b"a", b"bc"], &program)
        );
        assert_ne!(
            inputs(&[b"abc"], &program),
            inputs(&[b"abc"], &Pubkey([8; 32]))
        );
    }

    #[test]
    fn a_remembered_derivation_is_the_derivation() {
        let program = Pubkey([3; 32]);
        let direct = super::super::derive_program_address(&[b"pool", &[1; 32]], &program);
        assert!(direct.is_some());
        for _ in 0..2 {
            assert_eq!(
                super::super::find_program_address(&[b"pool", &[1; 32]], &program),
                direct
            );
        }
    }

    #[test]
    fn the_memory_stays_bounded() {
        let program = Pubkey([4; 32]);
        let fake: Derive = |_, _| None;
        for n in 0..(KEPT as u32 + 10) {
            remembered(&[&n.to_le_bytes(), b"bounded"], &program, fake);
        }
        let kept = DERIVED.lock().unwrap_or_else(PoisonError::into_inner).len();
        assert!(kept <= KEPT, "{kept} derivations kept");
    }
}
