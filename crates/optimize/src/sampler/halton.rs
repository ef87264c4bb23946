//! The scrambled Halton sequence: a low-discrepancy sequence that fills the unit cube evenly
//! from its first points on, which a search of a few dozen trials needs more than randomness.

use super::params_at;
use crate::params::{Param, ParamSpec};
use crate::rng::{Rng, derive};

/// The first primes, one base per dimension (enough for [`crate::params::MAX_PARAMS`]).
const PRIMES: [u64; 32] = [
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
    101, 103, 107, 109, 113, 127, 131,
];

/// Salt so Halton's streams never coincide with TPE's.
const HALTON_SALT: u64 = 0x4841_4C54_4F4E; // "HALTON"

/// The Halton point of sequence index `index`, scrambled by `seed`: per dimension `d`, the
/// digits of `index` in base `p_d` go through a random permutation that keeps 0 fixed (so the
/// expansion stays finite), are mirrored about the radix point, and the result is shifted by a
/// random amount modulo 1 (Cranley–Patterson). Permuting digits breaks the strong correlation
/// between the high-prime dimensions of a plain Halton sequence; the shift means the sequence
/// does not start at the corner of the cube.
pub fn halton_units(dims: usize, seed: u64, index: u64) -> Vec<f64> {
    (0..dims)
        .map(|d| {
            let base = PRIMES[d % PRIMES.len()];
            // Dimensions past the table reuse a base with a different scramble.
            let mut rng = Rng::new(derive(seed ^ HALTON_SALT, d as u64));
            let mut perm: Vec<u64> = (0..base).collect();
            // Fisher–Yates over 1..base, 0 stays put.
            for i in (2..base as usize).rev() {
                let j = 1 + rng.below(i as u64) as usize;
                perm.swap(i, j);
            }
            let shift = rng.next_f64();
            let inv = 1.0 / base as f64;
            let (mut f, mut x, mut i) = (inv, 0.0, index);
            while i > 0 {
                x += perm[(i % base) as usize] as f64 * f;
                i /= base;
                f *= inv;
            }
            let u = x + shift;
            if u >= 1.0 { u - 1.0 } else { u }
        })
        .collect()
}

pub(super) fn halton_point(space: &[ParamSpec], seed: u64, index: u64) -> Vec<Param> {
    params_at(space, &halton_units(space.len(), seed, index))
}
