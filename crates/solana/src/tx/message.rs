//! Messages and transactions on the wire: `[shortvec n][n × 64-byte signatures][message]`, where
//! a legacy message is `header(3) · shortvec keys · blockhash(32) · shortvec instructions` and a
//! v0 message is the same behind a `0x80` prefix, followed by address-table lookups.
//! Signatures cover the serialized message bytes, version prefix included.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

use super::{Pubkey, decode_shortvec, encode_shortvec};

/// Largest transaction a Solana node accepts (an IPv6 MTU minus headers).
pub const PACKET_DATA_SIZE: usize = 1232;

/// Why bytes are not a well-formed (or verified) transaction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("the transaction ends early")]
    Truncated,
    #[error("a compact length is malformed")]
    BadShortvec,
    #[error("a length does not fit a compact-u16")]
    TooLong,
    #[error("`{0}` is not a base58 32-byte address")]
    BadAddress(String),
    #[error("the transaction is {0} bytes; at most {PACKET_DATA_SIZE} are accepted")]
    TooLarge(usize),
    #[error("{0} bytes are left after the message")]
    TrailingBytes(usize),
    #[error("unsupported message version {0}")]
    UnsupportedVersion(u8),
    #[error("address lookup tables are not supported")]
    LookupTables,
    #[error("the message header is inconsistent with its {0} account keys")]
    BadHeader(usize),
    #[error("an instruction refers to account index {0}, beyond the account keys")]
    BadAccountIndex(u8),
    #[error("{signatures} signatures for {required} required signers")]
    SignatureCount { signatures: usize, required: usize },
    #[error("the signature of {0} does not verify")]
    BadSignature(Pubkey),
    #[error("account {0} appears twice in the account keys")]
    DuplicateKey(Pubkey),
    #[error("no key given for signer {0}")]
    MissingSigner(Pubkey),
}

/// The message format: legacy, or v0 (behind a `0x80` prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageVersion {
    Legacy,
    V0,
}

/// The three header counts of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MessageHeader {
    pub num_required_signatures: u8,
    pub num_readonly_signed: u8,
    pub num_readonly_unsigned: u8,
}

/// An instruction as it sits in a message: indices into the account keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledInstruction {
    pub program_id_index: u8,
    pub accounts: Vec<u8>,
    pub data: Vec<u8>,
}

/// A message: what the signatures cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub version: MessageVersion,
    /// How many keys sign and how many of the signed and unsigned ones are read-only.
    pub header: MessageHeader,
    pub account_keys: Vec<Pubkey>,
    pub recent_blockhash: [u8; 32],
    pub instructions: Vec<CompiledInstruction>,
}

/// An instruction before compilation: program, accounts with their roles, data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    pub program_id: Pubkey,
    pub accounts: Vec<AccountMeta>,
    pub data: Vec<u8>,
}

/// An account an instruction names, with its roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountMeta {
    pub pubkey: Pubkey,
    pub is_signer: bool,
    pub is_writable: bool,
}

impl AccountMeta {
    /// A writable account (signer or not).
    pub fn writable(pubkey: Pubkey, is_signer: bool) -> Self {
        AccountMeta {
            pubkey,
            is_signer,
            is_writable: true,
        }
    }
    /// A read-only account (signer or not).
    pub fn readonly(pubkey: Pubkey, is_signer: bool) -> Self {
        AccountMeta {
            pubkey,
            is_signer,
            is_writable: false,
        }
    }
}

impl Message {
    /// Compile instructions into a legacy message paid by `payer`: keys ordered as the runtime
    /// expects (writable signers, readonly signers, writable, readonly), roles merged per key.
    pub fn new_legacy(instructions: &[Instruction], payer: &Pubkey, blockhash: [u8; 32]) -> Self {
        // (key, signer, writable) in first-seen order, payer first.
        let mut metas: Vec<(Pubkey, bool, bool)> = vec![(*payer, true, true)];
        let mut note = |key: Pubkey, signer: bool, writable: bool| {
            if let Some(entry) = metas.iter_mut().find(|(k, _, _)| *k == key) {
                entry.1 |= signer;
                entry.2 |= writable;
            } else {
                metas.push((key, signer, writable));
            }
        };
        for ix in instructions {
            for meta in &ix.accounts {
                note(meta.pubkey, meta.is_signer, meta.is_writable);
            }
            note(ix.program_id, false, false);
        }
        let group = |signer: bool, writable: bool| -> Vec<Pubkey> {
            metas
                .iter()
                .filter(|(_, s, w)| *s == signer && *w == writable)
                .map(|(k, _, _)| *k)
                .collect()
        };
        let (ws, rs, wu, ru) = (
            group(true, true),
            group(true, false),
            group(false, true),
            group(false, false),
        );
        let header = MessageHeader {
            num_required_signatures: (ws.len() + rs.len()) as u8,
            num_readonly_signed: rs.len() as u8,
            num_readonly_unsigned: ru.len() as u8,
        };
        let account_keys: Vec<Pubkey> = ws.into_iter().chain(rs).chain(wu).chain(ru).collect();
        let index_of = |key: &Pubkey| -> u8 {
            account_keys
                .iter()
                .position(|k| k == key)
                .map_or(0, |i| i as u8)
        };
        let instructions = instructions
            .iter()
            .map(|ix| CompiledInstruction {
                program_id_index: index_of(&ix.program_id),
                accounts: ix.accounts.iter().map(|m| index_of(&m.pubkey)).collect(),
                data: ix.data.clone(),
            })
            .collect();
        Message {
            version: MessageVersion::Legacy,
            header,
            account_keys,
            recent_blockhash: blockhash,
            instructions,
        }
    }

    /// Whether account key `index` must sign.
    pub fn is_signer(&self, index: usize) -> bool {
        index < usize::from(self.header.num_required_signatures)
    }

    /// Whether account key `index` may be written, by the header's counts.
    pub fn is_writable(&self, index: usize) -> bool {
        let signers = usize::from(self.header.num_required_signatures);
        if index < signers {
            index < signers - usize::from(self.header.num_readonly_signed)
        } else {
            index < self.account_keys.len() - usize::from(self.header.num_readonly_unsigned)
        }
    }

    /// The keys that must sign, in signature order.
    pub fn signers(&self) -> &[Pubkey] {
        let n = usize::from(self.header.num_required_signatures).min(self.account_keys.len());
        &self.account_keys[..n]
    }

    /// The message bytes the signatures cover (version prefix included).
    pub fn serialize(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::with_capacity(256);
        if self.version == MessageVersion::V0 {
            out.push(0x80);
        }
        out.extend([
            self.header.num_required_signatures,
            self.header.num_readonly_signed,
            self.header.num_readonly_unsigned,
        ]);
        encode_shortvec(self.account_keys.len(), &mut out)?;
        for key in &self.account_keys {
            out.extend(key.0);
        }
        out.extend(self.recent_blockhash);
        encode_shortvec(self.instructions.len(), &mut out)?;
        for ix in &self.instructions {
            out.push(ix.program_id_index);
            encode_shortvec(ix.accounts.len(), &mut out)?;
            out.extend(&ix.accounts);
            encode_shortvec(ix.data.len(), &mut out)?;
            out.extend(&ix.data);
        }
        if self.version == MessageVersion::V0 {
            encode_shortvec(0, &mut out)?;
        }
        Ok(out)
    }

    /// Decode a message occupying the whole of `bytes`, checking its internal consistency.
    pub fn deserialize(bytes: &[u8]) -> Result<Self, WireError> {
        let mut pos = 0;
        let take = |pos: &mut usize, n: usize| -> Result<&[u8], WireError> {
            let end = pos.checked_add(n).ok_or(WireError::Truncated)?;
            let slice = bytes.get(*pos..end).ok_or(WireError::Truncated)?;
            *pos = end;
            Ok(slice)
        };
        let first = *bytes.first().ok_or(WireError::Truncated)?;
        let version = if first & 0x80 != 0 {
            let v = first & 0x7f;
            if v != 0 {
                return Err(WireError::UnsupportedVersion(v));
            }
            pos += 1;
            MessageVersion::V0
        } else {
            MessageVersion::Legacy
        };
        let h = take(&mut pos, 3)?;
        let header = MessageHeader {
            num_required_signatures: h[0],
            num_readonly_signed: h[1],
            num_readonly_unsigned: h[2],
        };
        let key_count = decode_shortvec(bytes, &mut pos)?;
        let mut account_keys = Vec::with_capacity(key_count.min(64));
        for _ in 0..key_count {
            let mut key = [0u8; 32];
            key.copy_from_slice(take(&mut pos, 32)?);
            let key = Pubkey(key);
            if account_keys.contains(&key) {
                return Err(WireError::DuplicateKey(key));
            }
            account_keys.push(key);
        }
        let mut recent_blockhash = [0u8; 32];
        recent_blockhash.copy_from_slice(take(&mut pos, 32)?);
        let ix_count = decode_shortvec(bytes, &mut pos)?;
        let mut instructions = Vec::with_capacity(ix_count.min(64));
        for _ in 0..ix_count {
            let program_id_index = take(&mut pos, 1)?[0];
            let n = decode_shortvec(bytes, &mut pos)?;
            let accounts = take(&mut pos, n)?.to_vec();
            let n = decode_shortvec(bytes, &mut pos)?;
            let data = take(&mut pos, n)?.to_vec();
            instructions.push(CompiledInstruction {
                program_id_index,
                accounts,
                data,
            });
        }
        if version == MessageVersion::V0 && decode_shortvec(bytes, &mut pos)? != 0 {
            return Err(WireError::LookupTables);
        }
        if pos != bytes.len() {
            return Err(WireError::TrailingBytes(bytes.len() - pos));
        }
        let message = Message {
            version,
            header,
            account_keys,
            recent_blockhash,
            instructions,
        };
        message.check()?;
        Ok(message)
    }

    /// The sanity rules of the runtime: a fee payer that signs and is writable, header counts
    /// within the keys, every index in range, programs never the fee payer.
    fn check(&self) -> Result<(), WireError> {
        let keys = self.account_keys.len();
        let h = self.header;
        let signers = usize::from(h.num_required_signatures);
        if signers == 0
            || signers > keys
            || usize::from(h.num_readonly_signed) >= signers
            || usize::from(h.num_readonly_unsigned) > keys - signers
        {
            return Err(WireError::BadHeader(keys));
        }
        for ix in &self.instructions {
            for &index in std::iter::once(&ix.program_id_index).chain(&ix.accounts) {
                if usize::from(index) >= keys {
                    return Err(WireError::BadAccountIndex(index));
                }
            }
            if ix.program_id_index == 0 {
                return Err(WireError::BadAccountIndex(0));
            }
        }
        Ok(())
    }
}

/// A signed (or partially signed) transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    pub signatures: Vec<[u8; 64]>,
    pub message: Message,
}

impl Transaction {
    /// Sign `message` with every key it requires; `keys` may come in any order.
    pub fn sign(message: Message, keys: &[&SigningKey]) -> Result<Self, WireError> {
        let bytes = message.serialize()?;
        let signatures = message
            .signers()
            .iter()
            .map(|signer| {
                keys.iter()
                    .find(|k| k.verifying_key().to_bytes() == signer.0)
                    .map(|k| k.sign(&bytes).to_bytes())
                    .ok_or(WireError::MissingSigner(*signer))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Transaction {
            signatures,
            message,
        })
    }

    /// The transaction's id: its first signature, in base58.
    pub fn signature(&self) -> String {
        self.signatures
            .first()
            .map(|s| crate::base58::encode(s))
            .unwrap_or_default()
    }

    /// The wire bytes a node accepts (refused above [`PACKET_DATA_SIZE`]).
    pub fn serialize(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::with_capacity(512);
        encode_shortvec(self.signatures.len(), &mut out)?;
        for signature in &self.signatures {
            out.extend(signature);
        }
        out.extend(self.message.serialize()?);
        if out.len() > PACKET_DATA_SIZE {
            return Err(WireError::TooLarge(out.len()));
        }
        Ok(out)
    }

    /// Decode wire bytes and return the transaction with its exact message bytes (what the
    /// signatures cover).
    pub fn deserialize(bytes: &[u8]) -> Result<(Self, Vec<u8>), WireError> {
        if bytes.len() > PACKET_DATA_SIZE {
            return Err(WireError::TooLarge(bytes.len()));
        }
        let mut pos = 0;
        let count = decode_shortvec(bytes, &mut pos)?;
        let mut signatures = Vec::with_capacity(count.min(16));
        for _ in 0..count {
            let end = pos + 64;
            let mut signature = [0u8; 64];
            signature.copy_from_slice(bytes.get(pos..end).ok_or(WireError::Truncated)?);
            signatures.push(signature);
            pos = end;
        }
        let message_bytes = bytes[pos..].to_vec();
        let message = Message::deserialize(&message_bytes)?;
        let required = usize::from(message.header.num_required_signatures);
        if signatures.len() != required {
            return Err(WireError::SignatureCount {
                signatures: signatures.len(),
                required,
            });
        }
        Ok((
            Transaction {
                signatures,
                message,
            },
            message_bytes,
        ))
    }

    /// Check every signature against its signer with `verify_strict` (no malleable or
    /// small-order forms).
    pub fn verify(&self, message_bytes: &[u8]) -> Result<(), WireError> {
        for (signature, signer) in self.signatures.iter().zip(self.message.signers()) {
            let key = VerifyingKey::from_bytes(&signer.0)
                .map_err(|_| WireError::BadSignature(*signer))?;
            key.verify_strict(message_bytes, &Signature::from_bytes(signature))
                .map_err(|_| WireError::BadSignature(*signer))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::instructions;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn pubkey(k: &SigningKey) -> Pubkey {
        Pubkey(k.verifying_key().to_bytes())
    }

    #[test]
    fn a_signed_transfer_round_trips_and_verifies() {
        let payer = key(1);
        let to = pubkey(&key(2));
        let ix = instructions::system_transfer(&pubkey(&payer), &to, 42);
        let message = Message::new_legacy(&[ix], &pubkey(&payer), [7; 32]);
        assert_eq!(message.account_keys.len(), 3);
        assert!(message.is_writable(0) && message.is_signer(0));
        assert!(message.is_writable(1) && !message.is_signer(1));
        assert!(!message.is_writable(2));
        let tx = Transaction::sign(message, &[&payer]).expect("sign");
        let wire = tx.serialize().expect("serialize");
        let (decoded, message_bytes) = Transaction::deserialize(&wire).expect("decode");
        assert_eq!(decoded, tx);
        decoded.verify(&message_bytes).expect("verifies");

        let mut tampered = wire.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        let (decoded, message_bytes) = Transaction::deserialize(&tampered).expect("decode");
        assert!(decoded.verify(&message_bytes).is_err());
    }

    #[test]
    fn v0_messages_round_trip_and_lookup_tables_are_refused() {
        let payer = key(3);
        let ix = instructions::memo("hello", &[]);
        let mut message = Message::new_legacy(&[ix], &pubkey(&payer), [1; 32]);
        message.version = MessageVersion::V0;
        let tx = Transaction::sign(message, &[&payer]).expect("sign");
        let wire = tx.serialize().expect("serialize");
        assert_eq!(wire[65], 0x80);
        let (decoded, bytes) = Transaction::deserialize(&wire).expect("decode");
        decoded.verify(&bytes).expect("verifies");
        assert_eq!(decoded.message.version, MessageVersion::V0);

        let mut with_lookup = wire.clone();
        let last = with_lookup.len() - 1;
        with_lookup[last] = 1;
        assert_eq!(
            Transaction::deserialize(&with_lookup).err(),
            Some(WireError::LookupTables)
        );
    }

    #[test]
    fn malformed_transactions_are_refused() {
        assert!(Transaction::deserialize(&[]).is_err());
        assert!(Transaction::deserialize(&[1, 0, 0]).is_err());
        assert!(matches!(
            Transaction::deserialize(&vec![0u8; PACKET_DATA_SIZE + 1]),
            Err(WireError::TooLarge(_))
        ));
        let payer = key(4);
        let tx = Transaction::sign(
            Message::new_legacy(&[instructions::memo("x", &[])], &pubkey(&payer), [0; 32]),
            &[&payer],
        )
        .expect("sign");
        let mut wire = tx.serialize().expect("serialize");
        wire.push(0);
        assert!(matches!(
            Transaction::deserialize(&wire),
            Err(WireError::TrailingBytes(1))
        ));
        assert!(matches!(
            Transaction::sign(tx.message.clone(), &[&key(5)]),
            Err(WireError::MissingSigner(_))
        ));
    }
}
