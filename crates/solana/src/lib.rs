//! Solana as Crucible speaks it, with no node and no server in sight: the wire format
//! ([`tx`]: public keys, shortvec lengths, legacy and v0 messages, signed transactions,
//! program-derived and associated token addresses, the instructions Crucible builds), keypairs
//! in the Solana CLI file format ([`keypair`]), the parsed wallet address ([`address`]), the
//! pure payment check over a `getTransaction` answer ([`verify`]) and the typed JSON-RPC
//! answers a client reads ([`rpc`]).
//!
//! Everything here is pure and synchronous: it encodes, decodes, signs and checks. Talking to a
//! node (the server's JSON-RPC client) and executing transactions (the `crucible-simnet` crate)
//! are elsewhere. See `docs/architecture.md` ("Crates").

#![warn(unreachable_pub)]

pub mod address;
pub mod base58;
pub mod keypair;
pub mod rpc;
pub mod tx;
pub mod verify;

pub use address::WalletAddress;
pub use keypair::{Keypair, KeypairError};
pub use tx::Pubkey;
