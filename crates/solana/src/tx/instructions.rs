//! The instructions Crucible builds and the simnet understands: System `Transfer` and
//! `CreateAccount`, SPL Token `Transfer`/`TransferChecked`, `InitializeAccount` (1, 2 and 3) and
//! `CloseAccount` (Token and Token-2022 share the layouts), associated-token-account
//! `Create`/`CreateIdempotent`, and Memo. Builders produce [`Instruction`]s; `decode_*` read the
//! data bytes back.

use super::message::{AccountMeta, Instruction};
use super::{
    Pubkey, associated_token_address, associated_token_program, memo_program, system_program,
};

/// System program instruction index of `Transfer` (a little-endian u32 enum tag).
const SYSTEM_TRANSFER: u32 = 2;
const SYSTEM_CREATE_ACCOUNT: u32 = 0;
const TOKEN_INITIALIZE_ACCOUNT: u8 = 1;
const TOKEN_TRANSFER: u8 = 3;
const TOKEN_CLOSE_ACCOUNT: u8 = 9;
const TOKEN_TRANSFER_CHECKED: u8 = 12;
const TOKEN_INITIALIZE_ACCOUNT_2: u8 = 16;
const TOKEN_INITIALIZE_ACCOUNT_3: u8 = 18;

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

/// `CreateAccount`: `from` (signer) funds a new account `new` (signer) with `lamports` and
/// `space` bytes of zeroed data owned by `owner`.
pub fn system_create_account(
    from: &Pubkey,
    new: &Pubkey,
    lamports: u64,
    space: u64,
    owner: &Pubkey,
) -> Instruction {
    let mut data = SYSTEM_CREATE_ACCOUNT.to_le_bytes().to_vec();
    data.extend(lamports.to_le_bytes());
    data.extend(space.to_le_bytes());
    data.extend(owner.0);
    Instruction {
        program_id: system_program(),
        accounts: vec![
            AccountMeta::writable(*from, true),
            AccountMeta::writable(*new, true),
        ],
        data,
    }
}

/// `InitializeAccount3`: accounts `[account, mint]`, data `[18, owner]`; makes a created
/// account a token account of `mint` owned by `owner` (any address, not only an associated one).
pub fn token_initialize_account3(
    token_program: &Pubkey,
    account: &Pubkey,
    mint: &Pubkey,
    owner: &Pubkey,
) -> Instruction {
    let mut data = vec![TOKEN_INITIALIZE_ACCOUNT_3];
    data.extend(owner.0);
    Instruction {
        program_id: *token_program,
        accounts: vec![
            AccountMeta::writable(*account, false),
            AccountMeta::readonly(*mint, false),
        ],
        data,
    }
}

/// `CloseAccount`: accounts `[account, destination, owner(signer)]`, data `[9]`; every lamport
/// of an empty token account goes to `destination` and the account is gone.
pub fn token_close_account(
    token_program: &Pubkey,
    account: &Pubkey,
    destination: &Pubkey,
    owner: &Pubkey,
) -> Instruction {
    Instruction {
        program_id: *token_program,
        accounts: vec![
            AccountMeta::writable(*account, false),
            AccountMeta::writable(*destination, false),
            AccountMeta::readonly(*owner, true),
        ],
        data: vec![TOKEN_CLOSE_ACCOUNT],
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
pub fn create_associated_token_account_idempotent(
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

/// A decoded System program instruction (`Transfer` and `CreateAccount` are supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemInstruction {
    /// `Transfer`: move lamports from the first account to the second.
    Transfer { lamports: u64 },
    /// `CreateAccount`: fund a new account with `space` bytes owned by `owner`.
    CreateAccount {
        lamports: u64,
        space: u64,
        owner: Pubkey,
    },
}

/// Read a System instruction's data (`None`: not one of the supported ones).
pub fn decode_system(data: &[u8]) -> Option<SystemInstruction> {
    let tag = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    let u64_at = |at: usize| {
        data.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    match (tag, data.len()) {
        (SYSTEM_TRANSFER, 12) => Some(SystemInstruction::Transfer {
            lamports: u64_at(4)?,
        }),
        (SYSTEM_CREATE_ACCOUNT, 52) => Some(SystemInstruction::CreateAccount {
            lamports: u64_at(4)?,
            space: u64_at(12)?,
            owner: Pubkey(data[20..52].try_into().ok()?),
        }),
        _ => None,
    }
}

/// Which `InitializeAccount` variant: where the owner is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitializeVariant {
    /// `InitializeAccount`: accounts `[account, mint, owner, rent sysvar]`.
    One,
    /// `InitializeAccount2`: accounts `[account, mint, rent sysvar]`, the owner in the data.
    Two,
    /// `InitializeAccount3`: accounts `[account, mint]`, the owner in the data.
    Three,
}

/// A decoded SPL Token instruction (the two transfers, account initialization and closing are
/// supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenInstruction {
    /// `Transfer` (no decimals check).
    Transfer { amount: u64 },
    /// `TransferChecked`: the mint and its decimals are named and checked.
    TransferChecked { amount: u64, decimals: u8 },
    /// `owner` is `None` for the first variant, which names the owner as an account.
    InitializeAccount {
        variant: InitializeVariant,
        owner: Option<Pubkey>,
    },
    /// `CloseAccount`: its lamports go to the destination.
    CloseAccount,
}

/// Read an SPL Token instruction's data (`None`: not one of the supported ones).
pub fn decode_token(data: &[u8]) -> Option<TokenInstruction> {
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
        (&TOKEN_INITIALIZE_ACCOUNT, 1) => Some(TokenInstruction::InitializeAccount {
            variant: InitializeVariant::One,
            owner: None,
        }),
        (&TOKEN_INITIALIZE_ACCOUNT_2, 33) | (&TOKEN_INITIALIZE_ACCOUNT_3, 33) => {
            let variant = if data[0] == TOKEN_INITIALIZE_ACCOUNT_2 {
                InitializeVariant::Two
            } else {
                InitializeVariant::Three
            };
            Some(TokenInstruction::InitializeAccount {
                variant,
                owner: Some(Pubkey(data[1..33].try_into().ok()?)),
            })
        }
        (&TOKEN_CLOSE_ACCOUNT, 1) => Some(TokenInstruction::CloseAccount),
        _ => None,
    }
}

/// An associated-token-account instruction: empty data or `[0]` is `Create`, `[1]` is
/// `CreateIdempotent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtaInstruction {
    /// Fails if the account exists.
    Create,
    /// Succeeds if the account exists with the expected mint and owner.
    CreateIdempotent,
}

/// Read an associated-token-account instruction's data.
pub fn decode_ata(data: &[u8]) -> Option<AtaInstruction> {
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
        let token = super::super::token_program();
        let ix = system_create_account(&a, &b, 2_039_280, 165, &token);
        assert_eq!(ix.data.len(), 52);
        assert_eq!(
            decode_system(&ix.data),
            Some(SystemInstruction::CreateAccount {
                lamports: 2_039_280,
                space: 165,
                owner: token
            })
        );
        let ix = token_initialize_account3(&token, &a, &b, &a);
        assert_eq!(ix.data[0], 18);
        assert_eq!(
            decode_token(&ix.data),
            Some(TokenInstruction::InitializeAccount {
                variant: InitializeVariant::Three,
                owner: Some(a)
            })
        );
        assert_eq!(
            decode_token(&token_close_account(&token, &a, &b, &a).data),
            Some(TokenInstruction::CloseAccount)
        );
        assert_eq!(decode_ata(&[]), Some(AtaInstruction::Create));
        assert_eq!(decode_ata(&[1]), Some(AtaInstruction::CreateIdempotent));
        assert_eq!(decode_ata(&[2]), None);
    }
}
