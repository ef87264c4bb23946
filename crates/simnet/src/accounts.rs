//! Accounts as a node serves them (`getAccountInfo`, `getMultipleAccounts`, account
//! notifications): `{lamports, owner, executable, rentEpoch, space, data}` with the data in
//! the byte layouts the programs define, so client libraries decode them unchanged
//! (`@solana/spl-token`'s `getMint` and `getAccount`, solana-py's layouts):
//!
//! - an SPL Token mint, 82 bytes: mint authority (`COption<Pubkey>`: a 4-byte tag then 32
//!   bytes), supply (u64), decimals (u8), initialized (u8), freeze authority (`COption`);
//! - an SPL Token account, 165 bytes: mint, owner, amount (u64), delegate (`COption`), state
//!   (u8, 1 = initialized), is-native (`COption<u64>`), delegated amount (u64), close
//!   authority (`COption`);
//! - the pool program's state ([`crate::pool::PoolState`]);
//! - wallets and the pool's SOL vault: no data.
//!
//! Encodings: `base64`, `base58` (at most 129 bytes, as on a node) and `jsonParsed`, which
//! parses token accounts and mints and falls back to base64 for anything else, like a node.
//! `dataSlice` cuts the binary encodings.

use base64::Engine;
use crucible_solana::tx::{self, Pubkey};
use serde_json::{Value, json};

use crate::SimnetError;
use crate::executor::{Account, Kind};
use crate::pool;
use crate::render::ui_amount;

/// The encodings a node offers for account data that the simnet serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Base58,
    Base64,
    JsonParsed,
}

/// The most bytes a node encodes as base58.
const MAX_BASE58_BYTES: usize = 128;

/// `{encoding, dataSlice}` from a request's config object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct View {
    pub encoding: Encoding,
    pub slice: Option<(usize, usize)>,
}

impl View {
    /// Read `encoding` (default `default`) and `dataSlice` from `config`.
    pub(crate) fn from_config(config: &Value, default: Encoding) -> Result<View, SimnetError> {
        let encoding = match config.get("encoding").and_then(Value::as_str) {
            None => default,
            Some("base64") => Encoding::Base64,
            Some("base58") | Some("binary") => Encoding::Base58,
            Some("jsonParsed") => Encoding::JsonParsed,
            Some(other) => {
                return Err(SimnetError::params(format!(
                    "Invalid params: encoding `{other}` is not served by simnet (base58, base64, jsonParsed)"
                )));
            }
        };
        let slice = match config.get("dataSlice") {
            None | Some(Value::Null) => None,
            Some(s) => {
                let field = |name: &str| s.get(name).and_then(Value::as_u64).map(|v| v as usize);
                match (field("offset"), field("length")) {
                    (Some(offset), Some(length)) => Some((offset, length)),
                    _ => {
                        return Err(SimnetError::params(
                            "Invalid params: dataSlice needs an offset and a length",
                        ));
                    }
                }
            }
        };
        if slice.is_some() && encoding == Encoding::JsonParsed {
            return Err(SimnetError::params(
                "Invalid params: dataSlice is not supported with jsonParsed",
            ));
        }
        Ok(View { encoding, slice })
    }
}

/// The program that owns an account of this kind.
pub(crate) fn owner(kind: &Kind) -> Pubkey {
    match kind {
        Kind::Wallet => tx::system_program(),
        Kind::Vault { .. } | Kind::Pool { .. } => pool::program_id(),
        Kind::Mint { program, .. }
        | Kind::Token { program, .. }
        | Kind::Uninitialized { program, .. } => *program,
    }
}

/// The account's data in its program's byte layout.
pub(crate) fn data(kind: &Kind) -> Vec<u8> {
    match kind {
        Kind::Wallet | Kind::Vault { .. } => Vec::new(),
        Kind::Uninitialized { space, .. } => vec![0; usize::try_from(*space).unwrap_or(0)],
        Kind::Mint {
            decimals,
            supply,
            authority,
            ..
        } => {
            let mut out = Vec::with_capacity(82);
            option_key(&mut out, authority.as_ref());
            out.extend(supply.to_le_bytes());
            out.push(*decimals);
            out.push(1);
            option_key(&mut out, None);
            out
        }
        Kind::Token {
            mint,
            owner,
            amount,
            ..
        } => {
            let mut out = Vec::with_capacity(165);
            out.extend(mint.0);
            out.extend(owner.0);
            out.extend(amount.to_le_bytes());
            option_key(&mut out, None);
            out.push(1);
            out.extend([0u8; 12]);
            out.extend(0u64.to_le_bytes());
            option_key(&mut out, None);
            out
        }
        Kind::Pool {
            usdc_mint,
            lp_supply,
        } => {
            let a = pool::PoolAddresses::sol_usdc();
            pool::PoolState {
                usdc_mint: *usdc_mint,
                sol_vault: a.sol_vault,
                usdc_vault: a.usdc_vault,
                lp_mint: a.lp_mint,
                lp_supply: *lp_supply,
                fee_bps: u16::try_from(pool::FEE_BPS).unwrap_or(u16::MAX),
            }
            .to_bytes()
        }
    }
}

/// `COption<Pubkey>`: a little-endian u32 tag, then the key or 32 zero bytes.
fn option_key(out: &mut Vec<u8>, key: Option<&Pubkey>) {
    match key {
        Some(key) => {
            out.extend(1u32.to_le_bytes());
            out.extend(key.0);
        }
        None => {
            out.extend(0u32.to_le_bytes());
            out.extend([0u8; 32]);
        }
    }
}

/// An account as a node renders it in `view`.
pub(crate) fn render(account: &Account, view: View) -> Result<Value, SimnetError> {
    let bytes = data(&account.kind);
    let space = bytes.len();
    let data = match view.encoding {
        Encoding::JsonParsed => match parsed(&account.kind) {
            Some(parsed) => parsed,
            None => binary(&bytes, Encoding::Base64, None)?,
        },
        encoding => binary(&bytes, encoding, view.slice)?,
    };
    Ok(json!({
        "lamports": account.lamports,
        "owner": owner(&account.kind).to_string(),
        "executable": false,
        "rentEpoch": u64::MAX,
        "space": space,
        "data": data,
    }))
}

fn binary(
    bytes: &[u8],
    encoding: Encoding,
    slice: Option<(usize, usize)>,
) -> Result<Value, SimnetError> {
    let cut = match slice {
        Some((offset, length)) => {
            let start = offset.min(bytes.len());
            &bytes[start..start.saturating_add(length).min(bytes.len())]
        }
        None => bytes,
    };
    Ok(match encoding {
        Encoding::Base58 => {
            if cut.len() > MAX_BASE58_BYTES {
                return Err(SimnetError::params(
                    "Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.",
                ));
            }
            json!([crucible_solana::base58::encode(cut), "base58"])
        }
        _ => json!([
            base64::engine::general_purpose::STANDARD.encode(cut),
            "base64"
        ]),
    })
}

/// `jsonParsed` data for the accounts a node can parse (token accounts and mints).
fn parsed(kind: &Kind) -> Option<Value> {
    match kind {
        Kind::Token {
            program,
            mint,
            owner,
            amount,
            decimals,
        } => Some(token_account_parsed(
            program, mint, owner, *amount, *decimals,
        )),
        Kind::Mint {
            program,
            decimals,
            supply,
            authority,
        } => Some(
            json!({"program": token_name(program), "space": 82, "parsed": {"type": "mint",
            "info": {"decimals": decimals, "freezeAuthority": null, "isInitialized": true,
                     "mintAuthority": authority.map(|a| a.to_string()),
                     "supply": supply.to_string()}}}),
        ),
        _ => None,
    }
}

/// A token account's `data` in `jsonParsed`, as a node renders it.
pub(crate) fn token_account_parsed(
    program: &Pubkey,
    mint: &Pubkey,
    owner: &Pubkey,
    amount: u64,
    decimals: u8,
) -> Value {
    json!({"program": token_name(program), "space": 165, "parsed": {"type": "account", "info": {
        "isNative": false,
        "mint": mint.to_string(),
        "owner": owner.to_string(),
        "state": "initialized",
        "tokenAmount": ui_amount(amount, decimals),
    }}})
}

/// How `jsonParsed` names a token program.
pub(crate) fn token_name(program: &Pubkey) -> &'static str {
    if *program == tx::token_program() {
        "spl-token"
    } else {
        "spl-token-2022"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_layouts_have_the_programs_sizes_and_offsets() {
        let (mint, owner) = (Pubkey([7; 32]), Pubkey([9; 32]));
        let account = data(&Kind::Token {
            program: tx::token_program(),
            mint,
            owner,
            amount: 1_500_000,
            decimals: 6,
        });
        assert_eq!(account.len(), 165);
        assert_eq!(&account[0..32], &mint.0);
        assert_eq!(&account[32..64], &owner.0);
        assert_eq!(account[64..72], 1_500_000u64.to_le_bytes());
        assert_eq!(account[108], 1, "state: initialized");

        let authority = Pubkey([5; 32]);
        let m = data(&Kind::Mint {
            program: tx::token_program(),
            decimals: 6,
            supply: 42,
            authority: Some(authority),
        });
        assert_eq!(m.len(), 82);
        assert_eq!(m[0..4], 1u32.to_le_bytes());
        assert_eq!(&m[4..36], &authority.0);
        assert_eq!(m[36..44], 42u64.to_le_bytes());
        assert_eq!((m[44], m[45]), (6, 1), "decimals, initialized");
        assert_eq!(m[46..50], 0u32.to_le_bytes(), "no freeze authority");
    }

    #[test]
    fn encodings_slices_and_fallbacks_match_a_node() {
        let wallet = Account::wallet(890_880);
        let plain = View {
            encoding: Encoding::JsonParsed,
            slice: None,
        };
        // Nothing to parse: a node falls back to base64.
        assert_eq!(
            render(&wallet, plain).expect("render")["data"],
            json!(["", "base64"])
        );
        let token = Account {
            lamports: 2_039_280,
            kind: Kind::Token {
                program: tx::token_program(),
                mint: Pubkey([1; 32]),
                owner: Pubkey([2; 32]),
                amount: 5,
                decimals: 6,
            },
        };
        let sliced = View {
            encoding: Encoding::Base58,
            slice: Some((0, 32)),
        };
        let value = render(&token, sliced).expect("render");
        assert_eq!(value["data"][0], bs58::encode([1u8; 32]).into_string());
        assert_eq!(value["space"], 165);
        let whole = View {
            encoding: Encoding::Base58,
            slice: None,
        };
        assert!(
            render(&token, whole).is_err(),
            "165 bytes is too long for base58"
        );
    }
}
