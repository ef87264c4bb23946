//! The only source of randomness in the game: a small, seedable SplitMix64 generator.
//!
//! Hand-written rather than taken from `rand` so the sequence is fixed by this file alone: a
//! dependency upgrade can never change a stored run's replay.

use serde::{Deserialize, Serialize};

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijective 64-bit mixer.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable 64-bit seed from text (FNV-1a, then mixed), e.g. a run id or a deployment salt.
pub fn seed_from_str(text: &str) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01B3);
    }
    mix(hash)
}

/// A deterministic pseudo-random generator (SplitMix64).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator whose stream depends on every part, in order (e.g. dungeon seed, run seed,
    /// action index), so each turn draws from its own stream and replays are independent of how
    /// many numbers an earlier turn happened to consume.
    pub(crate) fn derive(parts: &[u64]) -> Self {
        let mut state = GOLDEN_GAMMA;
        for part in parts {
            state = mix(state ^ mix(part.wrapping_add(GOLDEN_GAMMA)));
        }
        Self::new(state)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// Uniform in `0..n` (0 when `n` is 0), by multiply-shift so there is no modulo bias worth
    /// mentioning at these sizes.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi` (returns `lo` when the range is empty).
    pub(crate) fn range(&mut self, lo: i32, hi: i32) -> i32 {
        if hi <= lo {
            return lo;
        }
        let span = u64::from((hi - lo) as u32) + 1;
        lo + self.below(span) as i32
    }

    /// True with probability `percent`/100 (clamped to 0..=100).
    pub(crate) fn percent(&mut self, percent: i32) -> bool {
        (self.below(100) as i32) < percent.clamp(0, 100)
    }

    /// A uniformly chosen element, `None` for an empty slice.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len() as u64) as usize)
    }

    /// Fisher–Yates shuffle.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_different_seeds_differ() {
        let a: Vec<u64> = (0..8)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..8)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let c = Rng::new(8).next_u64();
        assert_eq!(a, b);
        assert_ne!(a[0], c);
    }

    #[test]
    fn derive_depends_on_every_part_and_its_order() {
        let base = Rng::derive(&[1, 2, 3]).next_u64();
        assert_eq!(base, Rng::derive(&[1, 2, 3]).next_u64());
        assert_ne!(base, Rng::derive(&[1, 2, 4]).next_u64());
        assert_ne!(base, Rng::derive(&[3, 2, 1]).next_u64());
    }

    #[test]
    fn ranges_stay_inside_their_bounds_and_cover_them() {
        let mut rng = Rng::new(42);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = rng.range(-2, 2);
            assert!((-2..=2).contains(&v));
            seen[(v + 2) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(rng.range(5, 5), 5);
        assert_eq!(rng.range(5, 1), 5);
        assert_eq!(rng.below(0), 0);
        assert!(!rng.percent(0));
        assert!(rng.percent(100));
        assert_eq!(rng.pick::<u8>(&[]), None);
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..20).collect();
        Rng::new(3).shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn text_seeds_are_stable() {
        assert_eq!(seed_from_str("run-1"), seed_from_str("run-1"));
        assert_ne!(seed_from_str("run-1"), seed_from_str("run-2"));
    }
}
