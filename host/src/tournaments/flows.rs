//! What one transaction did to one wallet's holdings, and which part of that came from or went
//! to someone else (an external flow), decided from the balance deltas `getTransaction`
//! (jsonParsed) reports, as any node returns them. Pure: the tracker ([`super::tracking`])
//! fetches, this decides. The rules are in docs/tournaments.md ("Trade or flow").
//!
//! The holdings are what the valuation counts: the wallet's lamports, the lamports of every
//! token account it owns (rent and wrapped SOL are its SOL too), and the stablecoin in those
//! accounts. A transaction's effect on them is read from `meta.pre/postBalances` and
//! `meta.pre/postTokenBalances` by owner, so it does not matter which program moved the money
//! or which address the transaction was found under. From that change two parts are taken out:
//! the fee the wallet paid (a cost of trading) and the legs of a swap the wallet signed (a
//! trade). Whatever is left came from or went to another wallet: a flow.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::chain::jupiter::{JUPITER_PROGRAM, WRAPPED_SOL_MINT};
use crate::chain::pool::PoolAddresses;

/// What one transaction did to one wallet: the change of its holdings and the external flow
/// within it, SOL in lamports and stablecoin in raw units, signed (positive = into the wallet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Effect {
    pub lamports: i128,
    pub stable_raw: i128,
    pub flow_lamports: i128,
    pub flow_stable_raw: i128,
}

impl Effect {
    pub(crate) fn is_flow(&self) -> bool {
        self.flow_lamports != 0 || self.flow_stable_raw != 0
    }
}

/// Where a trade can happen: the simnet pool's vaults (whose deltas are a swap's legs) and
/// Jupiter on a real cluster.
#[derive(Debug, Clone)]
pub(crate) struct Venues {
    pool_sol_vault: String,
    pool_usdc_vault: String,
}

impl Venues {
    pub(crate) fn known() -> Venues {
        let pool = PoolAddresses::sol_usdc();
        Venues {
            pool_sol_vault: pool.sol_vault.to_string(),
            pool_usdc_vault: pool.usdc_vault.to_string(),
        }
    }
}

/// Every account key of a jsonParsed transaction, in index order (static keys, then the
/// writable and read-only keys loaded from lookup tables), with whether it signed.
fn account_keys(tx: &Value) -> Vec<(String, bool)> {
    let key = |v: &Value| {
        let address = v
            .get("pubkey")
            .and_then(Value::as_str)
            .or_else(|| v.as_str())
            .unwrap_or_default()
            .to_owned();
        (address, v["signer"].as_bool() == Some(true))
    };
    let mut keys: Vec<(String, bool)> = tx["transaction"]["message"]["accountKeys"]
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

fn invokes(tx: &Value, program: &str) -> bool {
    let hit = |ix: &Value| ix["programId"].as_str() == Some(program);
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

/// The token balances of one side (`preTokenBalances` or `postTokenBalances`).
fn token_balances<'a>(tx: &'a Value, side: &str) -> impl Iterator<Item = &'a Value> {
    tx["meta"][side].as_array().into_iter().flatten()
}

fn lamports_at(tx: &Value, side: &str, index: usize) -> i128 {
    tx["meta"][side]
        .get(index)
        .and_then(Value::as_u64)
        .map_or(0, i128::from)
}

fn lamport_delta(tx: &Value, index: usize) -> i128 {
    lamports_at(tx, "postBalances", index) - lamports_at(tx, "preBalances", index)
}

/// The raw token amount of the account at `index` on one side (0 when it is not a token
/// account there).
fn token_at(tx: &Value, side: &str, index: usize) -> i128 {
    token_balances(tx, side)
        .find(|b| b["accountIndex"].as_u64() == Some(index as u64))
        .map_or(0, raw_amount)
}

/// Only an exchange is a swap: one asset in, the other out.
fn opposite(lamports: i128, stable_raw: i128) -> bool {
    (lamports > 0 && stable_raw < 0) || (lamports < 0 && stable_raw > 0)
}

/// The trader's side of the simnet pool's legs in `tx` (the negated deltas of its two vaults),
/// when they are a swap. Adding or removing liquidity moves both vaults the same way and is no
/// swap. A swap never gains its trader value at the pool's own price before it (the constant
/// product only grows), so legs that would are not a swap either (liquidity removed in the same
/// transaction as a swap).
fn pool_legs(tx: &Value, keys: &[(String, bool)], venues: &Venues) -> Option<(i128, i128)> {
    let index = |wanted: &str| keys.iter().position(|(k, _)| k == wanted);
    let sol = index(&venues.pool_sol_vault)?;
    let usdc = index(&venues.pool_usdc_vault)?;
    let vault_lamports = lamport_delta(tx, sol);
    let vault_stable =
        token_at(tx, "postTokenBalances", usdc) - token_at(tx, "preTokenBalances", usdc);
    if !opposite(vault_lamports, vault_stable) {
        return None;
    }
    let (trader_lamports, trader_stable) = (-vault_lamports, -vault_stable);
    let (reserve_lamports, reserve_stable) = (
        lamports_at(tx, "preBalances", sol),
        token_at(tx, "preTokenBalances", usdc),
    );
    // Value at the price before: trader_lamports × (reserve_stable / reserve_lamports) +
    // trader_stable, compared with 0 without dividing.
    let gained = trader_lamports
        .saturating_mul(reserve_stable)
        .saturating_add(trader_stable.saturating_mul(reserve_lamports));
    (gained <= 0).then_some((trader_lamports, trader_stable))
}

/// The trader's side of a Jupiter route in `tx`: the negated deltas of the wrapped-SOL and
/// stablecoin token accounts whose owner is neither the wallet nor a signer (the routed pools'
/// vaults), when they are an exchange.
fn jupiter_legs(
    tx: &Value,
    keys: &[(String, bool)],
    wallet: &str,
    stable_mint: &str,
) -> Option<(i128, i128)> {
    if !invokes(tx, JUPITER_PROGRAM) {
        return None;
    }
    let signers: BTreeSet<&str> = keys
        .iter()
        .filter(|(_, signer)| *signer)
        .map(|(k, _)| k.as_str())
        .collect();
    let (mut lamports, mut stable) = (0i128, 0i128);
    for (side, sign) in [("preTokenBalances", -1), ("postTokenBalances", 1)] {
        for balance in token_balances(tx, side) {
            let owner = balance["owner"].as_str().unwrap_or_default();
            if owner == wallet || signers.contains(owner) {
                continue;
            }
            match balance["mint"].as_str() {
                Some(WRAPPED_SOL_MINT) => lamports += sign * raw_amount(balance),
                Some(mint) if mint == stable_mint => stable += sign * raw_amount(balance),
                _ => {}
            }
        }
    }
    opposite(lamports, stable).then_some((-lamports, -stable))
}

/// What `tx` did to `wallet`'s holdings (SOL and `stable_mint`), and the flow within it.
pub(crate) fn effect(tx: &Value, wallet: &str, stable_mint: &str, venues: &Venues) -> Effect {
    let keys = account_keys(tx);
    let wallet_index = keys.iter().position(|(k, _)| k == wallet);
    // The wallet and every token account it owns on either side of the transaction (one it
    // closes is only on the pre side, one opened for it only on the post side).
    let mut held: BTreeSet<usize> = wallet_index.into_iter().collect();
    let mut stable_raw: i128 = 0;
    for (side, sign) in [("preTokenBalances", -1), ("postTokenBalances", 1)] {
        for balance in token_balances(tx, side) {
            if balance["owner"].as_str() != Some(wallet) {
                continue;
            }
            if let Some(index) = balance["accountIndex"]
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
            {
                held.insert(index);
            }
            if balance["mint"].as_str() == Some(stable_mint) {
                stable_raw += sign * raw_amount(balance);
            }
        }
    }
    let lamports: i128 = held.iter().map(|&index| lamport_delta(tx, index)).sum();
    // The fee payer is the first key; its fee is a cost of trading, not money sent away.
    let fee = if wallet_index == Some(0) {
        tx["meta"]["fee"].as_u64().map_or(0, i128::from)
    } else {
        0
    };
    // A swap is the wallet's trade only when the wallet signed it: a swap paid by someone else
    // whose output lands in the wallet's account is that someone's gift.
    let signed = wallet_index.is_some_and(|index| keys[index].1);
    let (trade_lamports, trade_stable) = if signed && tx["meta"]["err"].is_null() {
        jupiter_legs(tx, &keys, wallet, stable_mint)
            .or_else(|| pool_legs(tx, &keys, venues))
            .unwrap_or((0, 0))
    } else {
        (0, 0)
    };
    Effect {
        lamports,
        stable_raw,
        flow_lamports: lamports + fee - trade_lamports,
        flow_stable_raw: stable_raw - trade_stable,
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

    /// A successful transaction: `keys` as (address, signer), lamports before and after.
    fn tx(keys: &[(&str, bool)], pre: &[u64], post: &[u64], fee: u64) -> Value {
        json!({
            "transaction": {"message": {
                "accountKeys": keys.iter().map(|(k, s)| json!({"pubkey": k, "signer": s})).collect::<Vec<_>>(),
                "instructions": [],
            }},
            "meta": {"err": null, "fee": fee, "preBalances": pre, "postBalances": post,
                     "preTokenBalances": [], "postTokenBalances": [], "innerInstructions": []},
        })
    }

    fn balance(index: usize, mint: &str, owner: &str, amount: u64) -> Value {
        json!({"accountIndex": index, "mint": mint, "owner": owner,
               "uiTokenAmount": {"amount": amount.to_string(), "decimals": 6}})
    }

    fn flow(lamports: i128, stable_raw: i128) -> (i128, i128) {
        (lamports, stable_raw)
    }

    fn flow_of(tx: &Value) -> (i128, i128) {
        let e = effect(tx, W, MINT, &Venues::known());
        (e.flow_lamports, e.flow_stable_raw)
    }

    #[test]
    fn lamports_in_are_a_deposit_and_out_a_withdrawal_without_the_fee() {
        let deposit = tx(
            &[("Other", true), (W, false)],
            &[10_000, 0],
            &[3_000, 2_000],
            5_000,
        );
        assert_eq!(flow_of(&deposit), flow(2_000, 0));
        let withdrawal = tx(
            &[(W, true), ("Other", false)],
            &[10_000, 0],
            &[3_000, 2_000],
            5_000,
        );
        assert_eq!(flow_of(&withdrawal), flow(-2_000, 0));
        let memo = tx(&[(W, true)], &[10_000], &[5_000], 5_000);
        let e = effect(&memo, W, MINT, &Venues::known());
        assert_eq!((e.lamports, e.is_flow()), (-5_000, false));
        let mut failed = tx(
            &[(W, true), ("Other", false)],
            &[10_000, 0],
            &[5_000, 0],
            5_000,
        );
        failed["meta"]["err"] = json!({"InstructionError": [0, {"Custom": 1}]});
        assert!(!effect(&failed, W, MINT, &Venues::known()).is_flow());
    }

    #[test]
    fn a_bare_token_transfer_names_no_wallet_and_is_still_a_deposit() {
        // [funder, funder's account, mint, the wallet's account]: the wallet is not a key.
        let mut bare = tx(
            &[
                ("Funder", true),
                ("FunderAta", false),
                (MINT, false),
                ("WalletAta", false),
            ],
            &[10_000, 2_039_280, 1, 2_039_280],
            &[5_000, 2_039_280, 1, 2_039_280],
            5_000,
        );
        bare["meta"]["preTokenBalances"] = json!([
            balance(1, MINT, "Funder", 1_000_000_000),
            balance(3, MINT, W, 6_000_000)
        ]);
        bare["meta"]["postTokenBalances"] = json!([
            balance(1, MINT, "Funder", 0),
            balance(3, MINT, W, 1_006_000_000)
        ]);
        assert_eq!(flow_of(&bare), flow(0, 1_000_000_000));
    }

    #[test]
    fn opening_an_account_is_internal_for_its_owner_and_a_deposit_from_someone_else() {
        let opened_by = |payer: &str| {
            let mut opened = tx(
                &[(payer, true), ("Ata", false)],
                &[10_000_000, 0],
                &[7_955_720, 2_039_280],
                5_000,
            );
            opened["meta"]["postTokenBalances"] = json!([balance(1, MINT, W, 0)]);
            opened
        };
        assert_eq!(flow_of(&opened_by(W)), flow(0, 0));
        assert_eq!(flow_of(&opened_by("Funder")), flow(2_039_280, 0));
        // Closing one's own account into oneself moves nothing in or out.
        let mut closed = tx(
            &[(W, true), ("Ata", false)],
            &[1_000_000, 5_002_039_280],
            &[5_003_034_280, 0],
            5_000,
        );
        closed["meta"]["preTokenBalances"] = json!([balance(1, MINT, W, 0)]);
        assert_eq!(flow_of(&closed), flow(0, 0));
    }

    #[test]
    fn a_mint_the_tournament_does_not_value_is_no_holding() {
        let mut other = tx(
            &[
                ("Funder", true),
                ("FunderBonk", false),
                ("WalletBonk", false),
            ],
            &[10_000, 2_039_280, 2_039_280],
            &[5_000, 2_039_280, 2_039_280],
            5_000,
        );
        other["meta"]["preTokenBalances"] =
            json!([balance(1, "Bonk", "Funder", 500), balance(2, "Bonk", W, 0)]);
        other["meta"]["postTokenBalances"] =
            json!([balance(1, "Bonk", "Funder", 0), balance(2, "Bonk", W, 500)]);
        assert_eq!(flow_of(&other), flow(0, 0));
    }

    /// A pool transaction: [wallet, pool state, SOL vault, USDC vault, wallet's USDC, extra…].
    fn pool_tx(
        signer: &str,
        wallet_lamports: (u64, u64),
        sol_vault: (u64, u64),
        usdc_vault: (u64, u64),
        wallet_usdc: (u64, u64),
    ) -> Value {
        let pool = PoolAddresses::sol_usdc();
        let (sol, usdc) = (pool.sol_vault.to_string(), pool.usdc_vault.to_string());
        let mut t = tx(
            &[
                (signer, true),
                ("PoolState", false),
                (&sol, false),
                (&usdc, false),
                ("WalletAta", false),
            ],
            &[wallet_lamports.0, 1, sol_vault.0, 2_039_280, 2_039_280],
            &[wallet_lamports.1, 1, sol_vault.1, 2_039_280, 2_039_280],
            5_000,
        );
        t["meta"]["preTokenBalances"] = json!([
            balance(3, MINT, "PoolAuthority", usdc_vault.0),
            balance(4, MINT, W, wallet_usdc.0)
        ]);
        t["meta"]["postTokenBalances"] = json!([
            balance(3, MINT, "PoolAuthority", usdc_vault.1),
            balance(4, MINT, W, wallet_usdc.1)
        ]);
        t
    }

    const SOL: u64 = 1_000_000_000;
    const USDC: u64 = 1_000_000;

    #[test]
    fn a_swap_is_a_trade_and_a_deposit_beside_it_is_still_a_flow() {
        // Sell 1 SOL for 148 USDC at a 150 pool.
        let swap = pool_tx(
            W,
            (10 * SOL, 9 * SOL - 5_000),
            (100 * SOL, 101 * SOL),
            (15_000 * USDC, 14_852 * USDC),
            (0, 148 * USDC),
        );
        assert_eq!(flow_of(&swap), flow(0, 0));
        // The same swap, and 1,000 USDC from a funder into the same account in one transaction.
        let bundled = pool_tx(
            W,
            (10 * SOL, 9 * SOL - 5_000),
            (100 * SOL, 101 * SOL),
            (15_000 * USDC, 14_852 * USDC),
            (0, 1_148 * USDC),
        );
        assert_eq!(flow_of(&bundled), flow(0, 1_000 * USDC as i128));
        // Someone else's swap whose output lands in the wallet's account is a gift.
        let gift = pool_tx(
            "Funder",
            (10 * SOL, 9 * SOL - 5_000),
            (100 * SOL, 101 * SOL),
            (15_000 * USDC, 14_852 * USDC),
            (0, 148 * USDC),
        );
        assert_eq!(flow_of(&gift), flow(0, 148 * USDC as i128));
    }

    #[test]
    fn legs_that_are_no_swap_explain_nothing() {
        // Both vaults fall (liquidity removed): what reached the wallet is a deposit.
        let removed = pool_tx(
            W,
            (10 * SOL, 11 * SOL - 5_000),
            (100 * SOL, 99 * SOL),
            (15_000 * USDC, 14_850 * USDC),
            (0, 150 * USDC),
        );
        assert_eq!(flow_of(&removed), flow(SOL as i128, 150 * USDC as i128));
        // Opposite legs that pay the trader more than the pool's price (a removal hidden in a
        // swap): no swap gains at the price before it.
        let too_good = pool_tx(
            W,
            (10 * SOL, 13 * SOL - 5_000),
            (100 * SOL, 97 * SOL),
            (15_000 * USDC, 15_140 * USDC),
            (140 * USDC, 0),
        );
        assert_eq!(
            flow_of(&too_good),
            flow(3 * SOL as i128, -140 * USDC as i128)
        );
    }

    #[test]
    fn a_jupiter_route_is_a_trade_through_its_vaults_only() {
        let mut route = tx(
            &[
                (W, true),
                ("WalletAta", false),
                ("VaultA", false),
                ("VaultB", false),
            ],
            &[10 * SOL, 2_039_280, 2_039_280, 2_039_280],
            &[9 * SOL - 5_000, 2_039_280, 2_039_280, 2_039_280],
            5_000,
        );
        route["transaction"]["message"]["instructions"] = json!([{"programId": JUPITER_PROGRAM}]);
        route["meta"]["preTokenBalances"] = json!([
            balance(1, MINT, W, 0),
            balance(2, WRAPPED_SOL_MINT, "Amm", 100 * SOL),
            balance(3, MINT, "Amm", 15_000 * USDC)
        ]);
        route["meta"]["postTokenBalances"] = json!([
            balance(1, MINT, W, 148 * USDC),
            balance(2, WRAPPED_SOL_MINT, "Amm", 101 * SOL),
            balance(3, MINT, "Amm", 14_852 * USDC)
        ]);
        assert_eq!(flow_of(&route), flow(0, 0));
        assert!((value_usd(-1_500_000_000, 2_000_000, 100.0) - -148.0).abs() < 1e-9);
    }
}
