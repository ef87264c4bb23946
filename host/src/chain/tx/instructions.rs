//! The instructions Crucible builds and the simnet understands: System transfer, SPL Token
//! `Transfer`/`TransferChecked` (Token and Token-2022 share the layout), associated-token-account
//! `Create`/`CreateIdempotent`, and Memo. Builders produce [`Instruction`]s; `decode_*` read the
//! data bytes back.

use super::message::{AccountMeta, Instruction};
use super::{
    Pubkey, associated_token_address, associated_token_program, memo_program, system_program,
};

/// System program instruction index of `Transfer` (a little-endian u32 enum tag).
const SYSTEM_TRANSFER: u32 = 2;
const TOKEN_TRANSFER: u8 = 3;
const TOKEN_TRANSFER_CHECKED: u8 = 12;

/// Move `lamports` of SOL from `from` (signer) to `to`.
pub fn system_transfer(from: &Pubkey, to: &Pubkey, lamports: u64) -> Instruction {
    let mut data = SYSTEM_TRANSFER.to_le_bytes().to_vec();
    data.extend(lamports.to_le_bytes());
    Instruction {
        program_id: system_program(),
        accounts: vec![
            AccountMeta::writable(*from, true),
            AccountMeta::writable(*to, false),
        ],
        data,
    }
}

/// `TransferChecked`: accounts `[source, mint, destination, owner(signer)]`, data
/// `[12, amount u64 LE, decimals u8]`.
pub fn token_transfer_checked(
    token_program: &Pubkey,
    source: &Pubkey,
    mint: &Pubkey,
    destination: &Pubkey,
    owner: &Pubkey,
    amount: u64,
    decimals: u8,
) -> Instruction {
    let mut data = vec![TOKEN_TRANSFER_CHECKED];
    data.extend(amount.to_le_bytes());
    data.push(decimals);
    Instruction {
        program_id: *token_program,
        accounts: vec![
            AccountMeta::writable(*source, false),
            AccountMeta::readonly(*mint, false),
            AccountMeta::writable(*destination, false),
            AccountMeta::readonly(*owner, true),
        ],
        data,
    }
}

/// `CreateIdempotent` of the associated token account of `owner` for `mint`, paid by `payer`.
pub(crate) fn create_associated_token_account_idempotent(
    payer: &Pubkey,
    owner: &Pubkey,
    mint: &Pubkey,
    token_program: &Pubkey,
) -> Instruction {
    Instruction {
        program_id: associated_token_program(),
        accounts: vec![
            AccountMeta::writable(*payer, true),
            AccountMeta::writable(associated_token_address(owner, mint, token_program), false),
            AccountMeta::readonly(*owner, false),
            AccountMeta::readonly(*mint, false),
            AccountMeta::readonly(system_program(), false),
            AccountMeta::readonly(*token_program, false),
        ],
        data: vec![1],
    }
}

/// An SPL Memo (v2) instruction; every listed signer must sign the transaction.
pub fn memo(text: &str, signers: &[Pubkey]) -> Instruction {
    Instruction {
        program_id: memo_program(),
        accounts: signers
            .iter()
            .map(|s| AccountMeta::readonly(*s, true))
            .collect(),
        data: text.as_bytes().to_vec(),
    }
}

/// A decoded System program instruction (only `Transfer` is supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SystemInstruction {
    Transfer { lamports: u64 },
}

pub(crate) fn decode_system(data: &[u8]) -> Option<SystemInstruction> {
    let tag = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    match (tag, data.len()) {
        (SYSTEM_TRANSFER, 12) => Some(SystemInstruction::Transfer {
            lamports: u64::from_le_bytes(data[4..12].try_into().ok()?),
        }),
        _ => None,
    }
}

/// A decoded SPL Token instruction (only the two transfers are supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenInstruction {
    Transfer { amount: u64 },
    TransferChecked { amount: u64, decimals: u8 },
}

pub(crate) fn decode_token(data: &[u8]) -> Option<TokenInstruction> {
    let amount = || {
        data.get(1..9)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    match (data.first()?, data.len()) {
        (&TOKEN_TRANSFER, 9) => Some(TokenInstruction::Transfer { amount: amount()? }),
        (&TOKEN_TRANSFER_CHECKED, 10) => Some(TokenInstruction::TransferChecked {
            amount: amount()?,
            decimals: data[9],
        }),
        _ => None,
    }
}

/// An associated-token-account instruction: empty data or `[0]` is `Create`, `[1]` is
/// `CreateIdempotent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtaInstruction {
    Create,
    CreateIdempotent,
}

pub(crate) fn decode_ata(data: &[u8]) -> Option<AtaInstruction> {
    match data {
        [] | [0] => Some(AtaInstruction::Create),
        [1] => Some(AtaInstruction::CreateIdempotent),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_layouts_match_the_programs() {
        let a = Pubkey([1; 32]);
        let b = Pubkey([2; 32]);
        let ix = system_transfer(&a, &b, 1_000_000_000);
        assert_eq!(ix.data, [2, 0, 0, 0, 0, 0xca, 0x9a, 0x3b, 0, 0, 0, 0]);
        assert_eq!(
            decode_system(&ix.data),
            Some(SystemInstruction::Transfer {
                lamports: 1_000_000_000
            })
        );
        let ix = token_transfer_checked(&super::super::token_program(), &a, &b, &a, &b, 5, 6);
        assert_eq!(ix.data, [12, 5, 0, 0, 0, 0, 0, 0, 0, 6]);
        assert_eq!(
            decode_token(&ix.data),
            Some(TokenInstruction::TransferChecked {
                amount: 5,
                decimals: 6
            })
        );
        assert_eq!(
            decode_token(&[3, 9, 0, 0, 0, 0, 0, 0, 0]),
            Some(TokenInstruction::Transfer { amount: 9 })
        );
        assert_eq!(decode_token(&[7, 1]), None);
        assert_eq!(decode_system(&[0, 0, 0, 0]), None);
        assert_eq!(decode_ata(&[]), Some(AtaInstruction::Create));
        assert_eq!(decode_ata(&[1]), Some(AtaInstruction::CreateIdempotent));
        assert_eq!(decode_ata(&[2]), None);
    }
}
