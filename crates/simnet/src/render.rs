//! The `jsonParsed` shape of `getTransaction`, as a real node returns it: `transaction.message`
//! with `accountKeys` (`pubkey`, `signer`, `writable`, `source`) and instructions parsed for the
//! known programs (`system`, `spl-token`, `spl-associated-token-account`, `spl-memo`,
//! `crucible-pool`), and `meta`
//! with `err`, `fee`, pre/post lamport balances and pre/post token balances.

use crucible_solana::tx::instructions::{
    self, AtaInstruction, InitializeVariant, SystemInstruction, TokenInstruction,
};
use crucible_solana::tx::{self, CompiledInstruction, Message, MessageVersion, Pubkey};
use serde_json::{Value, json};

use crate::executor::{Accounts, Kind, Trace};
use crate::pool;

/// `uiTokenAmount` for a raw amount: `amount`, `decimals`, `uiAmount` and `uiAmountString`.
pub fn ui_amount(amount: u64, decimals: u8) -> Value {
    let scale = 10u64.pow(u32::from(decimals));
    let whole = amount / scale;
    let fraction = amount % scale;
    let text = if decimals == 0 {
        whole.to_string()
    } else {
        let digits = format!("{fraction:0width$}", width = usize::from(decimals));
        let digits = digits.trim_end_matches('0');
        if digits.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{digits}")
        }
    };
    let ui = text.parse::<f64>().unwrap_or_default();
    json!({"amount": amount.to_string(), "decimals": decimals,
           "uiAmount": ui, "uiAmountString": text})
}

/// `{transaction, meta, version}` of an executed transaction (`err` = `meta.err`). `outputs`
/// holds, per instruction, what only execution knew (a pool swap's amount out); empty for a
/// failed transaction.
pub(crate) fn transaction(
    signatures: &[String],
    message: &Message,
    pre: &Accounts,
    post: &Accounts,
    fee: u64,
    err: Option<&Value>,
    trace: &Trace,
) -> Value {
    let outputs = &trace.outputs;
    let keys = &message.account_keys;
    let account_keys: Vec<Value> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            json!({"pubkey": key.to_string(), "signer": message.is_signer(i),
                   "writable": message.is_writable(i), "source": "transaction"})
        })
        .collect();
    let instructions: Vec<Value> = message
        .instructions
        .iter()
        .enumerate()
        .map(|(i, ix)| instruction(message, ix, outputs.get(i).copied().flatten()))
        .collect();
    let lamports = |set: &Accounts| -> Vec<u64> {
        keys.iter()
            .map(|k| set.get(k).map_or(0, |a| a.lamports))
            .collect()
    };
    let mut message_json = json!({
        "accountKeys": account_keys,
        "instructions": instructions,
        "recentBlockhash": crucible_solana::base58::encode(&message.recent_blockhash),
    });
    let version = match message.version {
        MessageVersion::Legacy => json!("legacy"),
        MessageVersion::V0 => {
            message_json["addressTableLookups"] = json!([]);
            json!(0)
        }
    };
    let status = match err {
        None => json!({"Ok": null}),
        Some(e) => json!({ "Err": e }),
    };
    json!({
        "transaction": {"signatures": signatures, "message": message_json},
        "meta": {
            "err": err,
            "status": status,
            "fee": fee,
            "preBalances": lamports(pre),
            "postBalances": lamports(post),
            "preTokenBalances": token_balances(keys, pre),
            "postTokenBalances": token_balances(keys, post),
            "innerInstructions": [],
            "logMessages": trace.logs,
            "rewards": [],
            "loadedAddresses": {"readonly": [], "writable": []},
            "computeUnitsConsumed": trace.units_consumed,
        },
        "version": version,
    })
}

pub(crate) fn token_balances(keys: &[Pubkey], set: &Accounts) -> Vec<Value> {
    keys.iter()
        .enumerate()
        .filter_map(|(i, key)| match &set.get(key)?.kind {
            Kind::Token {
                program,
                mint,
                owner,
                amount,
                decimals,
            } => Some(json!({
                "accountIndex": i,
                "mint": mint.to_string(),
                "owner": owner.to_string(),
                "programId": program.to_string(),
                "uiTokenAmount": ui_amount(*amount, *decimals),
            })),
            _ => None,
        })
        .collect()
}

fn instruction(message: &Message, ix: &CompiledInstruction, output: Option<u64>) -> Value {
    let program = message.account_keys[usize::from(ix.program_id_index)];
    let key = |i: usize| -> String {
        ix.accounts
            .get(i)
            .map(|&k| message.account_keys[usize::from(k)].to_string())
            .unwrap_or_default()
    };
    let parsed = |name: &str, kind: &str, info: Value| {
        json!({"program": name, "programId": program.to_string(),
               "parsed": {"type": kind, "info": info}, "stackHeight": null})
    };
    if program == tx::system_program() {
        match instructions::decode_system(&ix.data) {
            Some(SystemInstruction::Transfer { lamports }) => {
                return parsed(
                    "system",
                    "transfer",
                    json!({"source": key(0), "destination": key(1), "lamports": lamports}),
                );
            }
            Some(SystemInstruction::CreateAccount {
                lamports,
                space,
                owner,
            }) => {
                return parsed(
                    "system",
                    "createAccount",
                    json!({"source": key(0), "newAccount": key(1), "lamports": lamports,
                           "space": space, "owner": owner.to_string()}),
                );
            }
            None => {}
        }
    }
    if tx::is_token_program(&program) {
        let name = if program == tx::token_program() {
            "spl-token"
        } else {
            "spl-token-2022"
        };
        match instructions::decode_token(&ix.data) {
            Some(TokenInstruction::Transfer { amount }) => {
                return parsed(
                    name,
                    "transfer",
                    json!({"source": key(0), "destination": key(1), "authority": key(2),
                           "amount": amount.to_string()}),
                );
            }
            Some(TokenInstruction::TransferChecked { amount, decimals }) => {
                return parsed(
                    name,
                    "transferChecked",
                    json!({"source": key(0), "mint": key(1), "destination": key(2),
                           "authority": key(3), "tokenAmount": ui_amount(amount, decimals)}),
                );
            }
            Some(TokenInstruction::InitializeAccount { variant, owner }) => {
                let owner = owner.map_or_else(|| key(2), |o| o.to_string());
                let (kind, info) = match variant {
                    InitializeVariant::One => (
                        "initializeAccount",
                        json!({"account": key(0), "mint": key(1), "owner": owner,
                               "rentSysvar": key(3)}),
                    ),
                    InitializeVariant::Two => (
                        "initializeAccount2",
                        json!({"account": key(0), "mint": key(1), "owner": owner,
                               "rentSysvar": key(2)}),
                    ),
                    InitializeVariant::Three => (
                        "initializeAccount3",
                        json!({"account": key(0), "mint": key(1), "owner": owner}),
                    ),
                };
                return parsed(name, kind, info);
            }
            Some(TokenInstruction::CloseAccount) => {
                return parsed(
                    name,
                    "closeAccount",
                    json!({"account": key(0), "destination": key(1), "owner": key(2)}),
                );
            }
            None => {}
        }
    }
    if program == tx::associated_token_program()
        && let Some(kind) = instructions::decode_ata(&ix.data)
    {
        let kind = match kind {
            AtaInstruction::Create => "create",
            AtaInstruction::CreateIdempotent => "createIdempotent",
        };
        return parsed(
            "spl-associated-token-account",
            kind,
            json!({"source": key(0), "account": key(1), "wallet": key(2), "mint": key(3),
                   "systemProgram": key(4), "tokenProgram": key(5)}),
        );
    }
    if program == pool::program_id()
        && let Some(decoded) = pool::decode(&ix.data)
    {
        let keys: Vec<String> = (0..ix.accounts.len()).map(key).collect();
        let (kind, info) = pool::parsed_info(&decoded, &keys, output);
        return parsed(pool::PROGRAM_NAME, kind, info);
    }
    if (program == tx::memo_program() || program == tx::memo_v1_program())
        && let Ok(text) = std::str::from_utf8(&ix.data)
    {
        return json!({"program": "spl-memo", "programId": program.to_string(),
                      "parsed": text, "stackHeight": null});
    }
    json!({
        "programId": program.to_string(),
        "accounts": (0..ix.accounts.len()).map(key).collect::<Vec<_>>(),
        "data": crucible_solana::base58::encode(&ix.data),
        "stackHeight": null,
    })
}

/// The compute-unit price (micro-lamports) a rendered transaction's Compute Budget
/// instruction set, 0 without one.
pub(crate) fn compute_unit_price(tx: &Value) -> u64 {
    let budget = tx::COMPUTE_BUDGET_PROGRAM;
    tx["transaction"]["message"]["instructions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|ix| ix["programId"] == budget)
        .filter_map(|ix| bs58::decode(ix["data"].as_str()?).into_vec().ok())
        .find_map(|data| match data.as_slice() {
            [3, price @ ..] => Some(u64::from_le_bytes(price.try_into().ok()?)),
            _ => None,
        })
        .unwrap_or(0)
}

/// The SOL vault's lamports and the stablecoin vault's raw amount and decimals after a rendered
/// transaction that touched both (the pool's reserves then).
pub(crate) fn post_reserves(
    tx: &Value,
    sol_vault: &Pubkey,
    usdc_vault: &Pubkey,
) -> Option<(u64, u64, u8)> {
    let keys = tx["transaction"]["message"]["accountKeys"].as_array()?;
    let index_of = |wanted: &Pubkey| {
        let wanted = wanted.to_string();
        keys.iter().position(|key| {
            key.get("pubkey")
                .and_then(Value::as_str)
                .or_else(|| key.as_str())
                == Some(wanted.as_str())
        })
    };
    let sol_index = index_of(sol_vault)?;
    let usdc_index = index_of(usdc_vault)?;
    let lamports = tx["meta"]["postBalances"][sol_index].as_u64()?;
    let usdc = tx["meta"]["postTokenBalances"]
        .as_array()?
        .iter()
        .find(|balance| balance["accountIndex"].as_u64() == Some(usdc_index as u64))?;
    let amount = usdc["uiTokenAmount"]["amount"].as_str()?.parse().ok()?;
    let decimals = u8::try_from(usdc["uiTokenAmount"]["decimals"].as_u64()?).ok()?;
    Some((lamports, amount, decimals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_amounts_match_the_node() {
        assert_eq!(ui_amount(1_500_000, 6)["uiAmountString"], "1.5");
        assert_eq!(ui_amount(1_500_000, 6)["uiAmount"], 1.5);
        assert_eq!(ui_amount(25_000_000, 6)["uiAmountString"], "25");
        assert_eq!(ui_amount(1, 6)["uiAmountString"], "0.000001");
        assert_eq!(ui_amount(7, 0)["uiAmountString"], "7");
        assert_eq!(ui_amount(1_500_000, 6)["amount"], "1500000");
    }
}
