//! Solana's wire format, written from the published specification: public keys, compact-u16
//! ("shortvec") lengths, legacy and v0 messages, signed transactions, program-derived and
//! associated token addresses, and the few instructions Crucible builds.
//!
//! This module only encodes, decodes and signs; it never talks to a node and never decides
//! whether a transaction is acceptable (the simnet's executor and [`crate::verify`] do that).

mod derived;
pub mod instructions;
pub mod message;

#[cfg(test)]
mod proptests;

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

pub use message::{CompiledInstruction, Message, MessageVersion, Transaction, WireError};

/// A 32-byte Solana address (an ed25519 public key or a program-derived address).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Pubkey(pub [u8; 32]);

impl Pubkey {
    /// The key of these 32 bytes.
    pub const fn new(bytes: [u8; 32]) -> Self {
        Pubkey(bytes)
    }

    /// True when the bytes are a point on the ed25519 curve, i.e. could have a private key.
    /// Program-derived addresses are exactly the hashes that are *not* on the curve.
    pub fn is_on_curve(&self) -> bool {
        curve25519_dalek::edwards::CompressedEdwardsY(self.0)
            .decompress()
            .is_some()
    }
}

impl fmt::Display for Pubkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::base58::encode(&self.0))
    }
}

impl fmt::Debug for Pubkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pubkey({self})")
    }
}

impl FromStr for Pubkey {
    type Err = WireError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::base58::decode_32(s.trim())
            .map(Pubkey)
            .ok_or_else(|| WireError::BadAddress(s.to_owned()))
    }
}

/// Parse one of the well-known base58 program ids below; they are constants, so a failure
/// would be a typo caught by the unit tests, and the default key is never used in practice.
fn known(address: &str) -> Pubkey {
    address.parse().unwrap_or_default()
}

/// The System program (transfers, account creation).
pub const SYSTEM_PROGRAM: &str = "11111111111111111111111111111111";
/// The classic SPL Token program.
pub const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
/// The SPL Token-2022 program (same instructions as Token for what Crucible uses).
pub const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
/// The associated-token-account program.
pub const ASSOCIATED_TOKEN_PROGRAM: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
/// The first SPL Memo program (memos that need no signer check).
pub const MEMO_V1_PROGRAM: &str = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
/// The SPL Memo program (v2, what wallets send).
pub const MEMO_PROGRAM: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
/// The Compute Budget program (unit limit and price).
pub const COMPUTE_BUDGET_PROGRAM: &str = "ComputeBudget111111111111111111111111111111";
/// The mainnet USDC mint (6 decimals).
pub const MAINNET_USDC_MINT: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

/// [`SYSTEM_PROGRAM`] as a key.
pub fn system_program() -> Pubkey {
    known(SYSTEM_PROGRAM)
}
/// [`TOKEN_PROGRAM`] as a key.
pub fn token_program() -> Pubkey {
    known(TOKEN_PROGRAM)
}
/// [`TOKEN_2022_PROGRAM`] as a key.
pub fn token_2022_program() -> Pubkey {
    known(TOKEN_2022_PROGRAM)
}
/// [`ASSOCIATED_TOKEN_PROGRAM`] as a key.
pub fn associated_token_program() -> Pubkey {
    known(ASSOCIATED_TOKEN_PROGRAM)
}
/// [`MEMO_PROGRAM`] as a key.
pub fn memo_program() -> Pubkey {
    known(MEMO_PROGRAM)
}
/// [`MEMO_V1_PROGRAM`] as a key.
pub fn memo_v1_program() -> Pubkey {
    known(MEMO_V1_PROGRAM)
}
/// [`COMPUTE_BUDGET_PROGRAM`] as a key.
pub fn compute_budget_program() -> Pubkey {
    known(COMPUTE_BUDGET_PROGRAM)
}

/// True for the classic SPL Token program and Token-2022.
pub fn is_token_program(program: &Pubkey) -> bool {
    *program == token_program() || *program == token_2022_program()
}

/// `find_program_address`: the first bump from 255 down whose hash is off the curve.
///
/// Remembered per seeds and program ([`derived`]): each bump tried costs a square root on the
/// curve (the test that the hash is not a public key), and the same few addresses — a pool's,
/// its vaults', each wallet's token accounts — are derived for every swap.
pub fn find_program_address(seeds: &[&[u8]], program: &Pubkey) -> Option<(Pubkey, u8)> {
    derived::remembered(seeds, program, derive_program_address)
}

/// [`find_program_address`] computed afresh.
fn derive_program_address(seeds: &[&[u8]], program: &Pubkey) -> Option<(Pubkey, u8)> {
    (0..=255u8).rev().find_map(|bump| {
        let mut hasher = Sha256::new();
        for seed in seeds {
            hasher.update(seed);
        }
        hasher.update([bump]);
        hasher.update(program.0);
        hasher.update(b"ProgramDerivedAddress");
        let candidate = Pubkey(hasher.finalize().into());
        (!candidate.is_on_curve()).then_some((candidate, bump))
    })
}

/// The associated token account of `owner` for `mint` under `token_program`: the PDA of
/// `[owner, token_program, mint]` under the associated-token-account program.
pub fn associated_token_address(owner: &Pubkey, mint: &Pubkey, token_program: &Pubkey) -> Pubkey {
    find_program_address(
        &[&owner.0, &token_program.0, &mint.0],
        &associated_token_program(),
    )
    // 256 consecutive on-curve hashes have probability 2^-256; treat it as impossible.
    .map(|(address, _)| address)
    .unwrap_or_default()
}

/// Compact-u16 length prefix: 7 bits per byte, high bit = "more", at most 3 bytes.
pub fn encode_shortvec(len: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
    let mut rest = u16::try_from(len).map_err(|_| WireError::TooLong)?;
    loop {
        let mut byte = (rest & 0x7f) as u8;
        rest >>= 7;
        if rest == 0 {
            out.push(byte);
            return Ok(());
        }
        byte |= 0x80;
        out.push(byte);
    }
}

/// Decode a compact-u16 at `bytes[*pos..]`, refusing non-canonical and overlong encodings.
pub fn decode_shortvec(bytes: &[u8], pos: &mut usize) -> Result<usize, WireError> {
    let mut value: u32 = 0;
    for index in 0..3 {
        let byte = *bytes.get(*pos).ok_or(WireError::Truncated)?;
        *pos += 1;
        value |= u32::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            // A zero continuation byte means the same value had a shorter spelling.
            if index > 0 && byte == 0 {
                return Err(WireError::BadShortvec);
            }
            if value > u32::from(u16::MAX) {
                return Err(WireError::BadShortvec);
            }
            return Ok(value as usize);
        }
        if index == 2 {
            return Err(WireError::BadShortvec);
        }
    }
    Err(WireError::BadShortvec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_ids_parse() {
        for id in [
            SYSTEM_PROGRAM,
            TOKEN_PROGRAM,
            TOKEN_2022_PROGRAM,
            ASSOCIATED_TOKEN_PROGRAM,
            MEMO_V1_PROGRAM,
            MEMO_PROGRAM,
            COMPUTE_BUDGET_PROGRAM,
            MAINNET_USDC_MINT,
        ] {
            let key: Pubkey = id.parse().expect(id);
            assert_eq!(key.to_string(), id);
        }
        assert_eq!(system_program().0, [0u8; 32]);
    }

    #[test]
    fn shortvec_round_trips_and_refuses_bad_spellings() {
        for (value, bytes) in [
            (0usize, vec![0x00]),
            (0x7f, vec![0x7f]),
            (0x80, vec![0x80, 0x01]),
            (0x3fff, vec![0xff, 0x7f]),
            (0x4000, vec![0x80, 0x80, 0x01]),
            (0xffff, vec![0xff, 0xff, 0x03]),
        ] {
            let mut out = Vec::new();
            encode_shortvec(value, &mut out).expect("encode");
            assert_eq!(out, bytes, "{value}");
            let mut pos = 0;
            assert_eq!(decode_shortvec(&bytes, &mut pos).expect("decode"), value);
            assert_eq!(pos, bytes.len());
        }
        assert!(encode_shortvec(0x10000, &mut Vec::new()).is_err());
        for bad in [
            vec![0x80, 0x00],
            vec![0xff, 0xff, 0x04],
            vec![0x80, 0x80, 0x80],
            vec![0x80],
        ] {
            assert!(decode_shortvec(&bad, &mut 0).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn associated_token_address_matches_a_published_derivation() {
        // Published by independent SDK test suites: this wallet's USDC account.
        let owner: Pubkey = "3h1zGmCwsRJnVk5BuRNMLsPaQu1y2aqXqXDWYCgrp5UG"
            .parse()
            .expect("owner");
        let mint: Pubkey = MAINNET_USDC_MINT.parse().expect("mint");
        let ata = associated_token_address(&owner, &mint, &token_program());
        assert_eq!(
            ata.to_string(),
            "3uetDDizgTtadDHZzyy9BqxrjQcozMEkxzbKhfZF4tG3"
        );
        assert!(!ata.is_on_curve());
        assert!(owner.is_on_curve());
        // Token-2022 accounts live at a different address for the same owner and mint.
        assert_ne!(
            associated_token_address(&owner, &mint, &token_2022_program()),
            ata
        );
    }
}
