//! Splitting a wallet's transactions into trades and external flows, from `getTransaction`
//! (jsonParsed) as any node returns it. Pure: the tracker ([`super::tracking`]) fetches, this
//! decides.
//!
//! A transaction that invokes a known swap program (the simnet pool, or Jupiter on a real
//! cluster) is a trade: whatever it moved stays inside the wallet's performance. A failed
//! transaction moved nothing but its fee, which is a cost of trading too. Any other transaction
//! that changed the wallet's SOL or stablecoin is an external flow: a deposit (positive) or a
//! withdrawal (negative). The fee the wallet paid and the rent it moved into its own token
//! accounts are not flows: they never went to another wallet.

use serde_json::Value;

use crate::chain::jupiter::JUPITER_PROGRAM;
use crate::chain::pool;

/// What one transaction did to one wallet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Movement {
    /// A swap through a known program, or a failed transaction.
    Trade,
    /// Nothing the valuation sees changed.
    Untouched,
    /// Money from or to another wallet: SOL in lamports and stablecoin in raw units, signed
    /// (positive = into the wallet).
    Flow { lamports: i128, stable_raw: i128 },
}

/// The programs whose instructions make a transaction a trade.
pub(crate) fn swap_programs() -> Vec<String> {
    vec![pool::program_id().to_string(), JUPITER_PROGRAM.to_owned()]
}

/// Every account key of a jsonParsed transaction, in index order (static keys, then the
/// writable and read-only keys loaded from lookup tables).
fn account_keys(tx: &Value) -> Vec<String> {
    let key = |v: &Value| {
        v.get("pubkey")
            .and_then(Value::as_str)
            .or_else(|| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let mut keys: Vec<String> = tx["transaction"]["message"]["accountKeys"]
        .as_array()
        .map(|all| all.iter().map(key).collect())
        .unwrap_or_default();
    for side in ["writable", "readonly"] {
        if let Some(loaded) = tx["meta"]["loadedAddresses"][side].as_array() {
            keys.extend(loaded.iter().map(key));
        }
    }
    keys
}

fn invokes_any(tx: &Value, programs: &[String]) -> bool {
    let hit = |ix: &Value| {
        ix["programId"]
            .as_str()
            .is_some_and(|p| programs.iter().any(|known| known == p))
    };
    let outer = tx["transaction"]["message"]["instructions"]
        .as_array()
        .is_some_and(|all| all.iter().any(hit));
    let inner = tx["meta"]["innerInstructions"]
        .as_array()
        .is_some_and(|all| {
            all.iter().any(|group| {
                group["instructions"]
                    .as_array()
                    .is_some_and(|ixs| ixs.iter().any(hit))
            })
        });
    outer || inner
}

fn raw_amount(balance: &Value) -> i128 {
    balance["uiTokenAmount"]["amount"]
        .as_str()
        .and_then(|a| a.parse::<i128>().ok())
        .unwrap_or(0)
}

/// What `tx` did to `wallet`'s SOL and `stable_mint` balance.
pub(crate) fn classify(
    tx: &Value,
    wallet: &str,
    stable_mint: &str,
    swap_programs: &[String],
) -> Movement {
    let meta = &tx["meta"];
    if !meta["err"].is_null() {
        return Movement::Trade;
    }
    if invokes_any(tx, swap_programs) {
        return Movement::Trade;
    }
    let keys = account_keys(tx);
    let lamports_at = |side: &str, index: usize| -> i128 {
        meta[side]
            .get(index)
            .and_then(Value::as_u64)
            .map_or(0, i128::from)
    };
    let delta =
        |index: usize| lamports_at("postBalances", index) - lamports_at("preBalances", index);
    let mut lamports: i128 = 0;
    let wallet_index = keys.iter().position(|k| k == wallet);
    if let Some(index) = wallet_index {
        lamports += delta(index);
        if index == 0 {
            // The fee payer is the first key; its fee is a cost, not money sent away.
            lamports += meta["fee"].as_u64().map_or(0, i128::from);
        }
    }
    // Token accounts the wallet owns: rent moved into them stays the owner's, and their
    // stablecoin is the wallet's.
    let mut own_token_accounts: Vec<usize> = Vec::new();
    let mut stable_raw: i128 = 0;
    for (side, sign) in [("preTokenBalances", -1), ("postTokenBalances", 1)] {
        for balance in meta[side].as_array().into_iter().flatten() {
            if balance["owner"].as_str() != Some(wallet) {
                continue;
            }
            if let Some(index) = balance["accountIndex"]
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                && !own_token_accounts.contains(&index)
            {
                own_token_accounts.push(index);
            }
            if balance["mint"].as_str() == Some(stable_mint) {
                stable_raw += sign * raw_amount(balance);
            }
        }
    }
    // Rent only the wallet itself can have paid (it signed): what others put into its token
    // accounts is never valued, so it is no flow either.
    let signed = wallet_index.is_some_and(|index| {
        index == 0
            || tx["transaction"]["message"]["accountKeys"][index]["signer"].as_bool() == Some(true)
    });
    if signed {
        for index in own_token_accounts {
            if keys.get(index).is_some_and(|k| k != wallet) {
                lamports += delta(index);
            }
        }
    }
    if lamports == 0 && stable_raw == 0 {
        Movement::Untouched
    } else {
        Movement::Flow {
            lamports,
            stable_raw,
        }
    }
}

/// The USD value of a flow at `sol_usd`.
pub(crate) fn value_usd(lamports: i128, stable_raw: i128, sol_usd: f64) -> f64 {
    lamports as f64 / 1e9 * sol_usd + stable_raw as f64 / crate::usdc::UNIT as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const W: &str = "Wallet1111111111111111111111111111111111111";
    const MINT: &str = "Mint11111111111111111111111111111111111111";

    fn tx(keys: &[&str], pre: &[u64], post: &[u64], fee: u64, programs: &[&str]) -> Value {
        json!({
            "transaction": {"message": {
                "accountKeys": keys.iter().map(|k| json!({"pubkey": k})).collect::<Vec<_>>(),
                "instructions": programs.iter().map(|p| json!({"programId": p})).collect::<Vec<_>>(),
            }},
            "meta": {"err": null, "fee": fee, "preBalances": pre, "postBalances": post,
                     "preTokenBalances": [], "postTokenBalances": [], "innerInstructions": []},
        })
    }

    #[test]
    fn a_transfer_in_is_a_deposit_and_out_a_withdrawal_without_the_fee() {
        let programs = swap_programs();
        let deposit = tx(
            &["Other", W],
            &[10_000, 0],
            &[3_000, 2_000],
            5_000,
            &["11111111111111111111111111111111"],
        );
        assert_eq!(
            classify(&deposit, W, MINT, &programs),
            Movement::Flow {
                lamports: 2_000,
                stable_raw: 0
            }
        );
        let withdrawal = tx(&[W, "Other"], &[10_000, 0], &[3_000, 2_000], 5_000, &[]);
        assert_eq!(
            classify(&withdrawal, W, MINT, &programs),
            Movement::Flow {
                lamports: -2_000,
                stable_raw: 0
            }
        );
    }

    #[test]
    fn swaps_and_failures_are_trades_and_a_fee_alone_is_nothing() {
        let programs = swap_programs();
        let pool = pool::program_id().to_string();
        let swap = tx(
            &[W, "Vault"],
            &[10_000, 0],
            &[1_000, 4_000],
            5_000,
            &[&pool],
        );
        assert_eq!(classify(&swap, W, MINT, &programs), Movement::Trade);
        let mut failed = tx(&[W, "Other"], &[10_000, 0], &[5_000, 0], 5_000, &[]);
        failed["meta"]["err"] = json!({"InstructionError": [0, {"Custom": 1}]});
        assert_eq!(classify(&failed, W, MINT, &programs), Movement::Trade);
        let memo = tx(&[W], &[10_000], &[5_000], 5_000, &[]);
        assert_eq!(classify(&memo, W, MINT, &programs), Movement::Untouched);
        let jupiter = tx(&[W], &[10_000], &[5_000], 5_000, &[]);
        let mut inner = jupiter.clone();
        inner["meta"]["innerInstructions"] =
            json!([{"index": 0, "instructions": [{"programId": JUPITER_PROGRAM}]}]);
        assert_eq!(classify(&inner, W, MINT, &programs), Movement::Trade);
    }

    #[test]
    fn stablecoin_moves_count_and_rent_into_own_accounts_does_not() {
        let programs = swap_programs();
        let mut received = tx(
            &["Payer", W, "Ata"],
            &[10_000_000, 0, 0],
            &[7_955_720, 0, 2_039_280],
            5_000,
            &[],
        );
        let balance = |amount: &str| {
            json!({"accountIndex": 2, "mint": MINT, "owner": W,
            "uiTokenAmount": {"amount": amount, "decimals": 6}})
        };
        received["meta"]["postTokenBalances"] = json!([balance("25000000")]);
        assert_eq!(
            classify(&received, W, MINT, &programs),
            Movement::Flow {
                lamports: 0,
                stable_raw: 25_000_000
            }
        );
        // The wallet opening its own token account: rent stays with it.
        let mut opened = tx(
            &[W, "Ata"],
            &[10_000_000, 0],
            &[7_955_720, 2_039_280],
            5_000,
            &[],
        );
        opened["meta"]["postTokenBalances"] = json!([balance("0")]);
        opened["meta"]["postTokenBalances"][0]["accountIndex"] = json!(1);
        assert_eq!(classify(&opened, W, MINT, &programs), Movement::Untouched);
        assert!((value_usd(-1_500_000_000, 2_000_000, 100.0) - -148.0).abs() < 1e-9);
    }
}
