//! Rent as a real cluster charges it today: an account must hold at least the rent-exempt
//! minimum for its data size, or nothing at all. A transaction that would leave an account it
//! touched between the two fails with `InsufficientFundsForRent` (fee charged, nothing else
//! moves), exactly as `solana-test-validator` answers.

use crucible_solana::tx::Message;
use serde_json::{Value, json};

use crate::executor::{Account, Accounts, Kind};
use crate::pool;

/// Bytes the runtime charges for every account on top of its data.
const ACCOUNT_STORAGE_OVERHEAD: u64 = 128;
/// Lamports per byte-year, and the two years of rent that make an account exempt: mainnet's
/// default rent (`getMinimumBalanceForRentExemption(0)` = 890,880).
const LAMPORTS_PER_BYTE_YEAR: u64 = 3_480;
const EXEMPTION_THRESHOLD_YEARS: u64 = 2;

/// The data size of a token account and of a mint under the SPL Token program.
pub(crate) const TOKEN_ACCOUNT_LEN: usize = 165;
pub(crate) const MINT_LEN: usize = 82;

/// `getMinimumBalanceForRentExemption(data_len)`.
pub(crate) fn minimum_balance(data_len: usize) -> u64 {
    let bytes = ACCOUNT_STORAGE_OVERHEAD.saturating_add(data_len as u64);
    bytes
        .saturating_mul(LAMPORTS_PER_BYTE_YEAR)
        .saturating_mul(EXEMPTION_THRESHOLD_YEARS)
}

/// How many bytes of data an account of this kind holds.
pub(crate) fn data_len(kind: &Kind) -> usize {
    match kind {
        Kind::Wallet | Kind::Vault { .. } => 0,
        Kind::Mint { .. } => MINT_LEN,
        Kind::Token { .. } => TOKEN_ACCOUNT_LEN,
        Kind::Pool { .. } => pool::POOL_STATE_LEN,
        Kind::Uninitialized { space, .. } => usize::try_from(*space).unwrap_or(usize::MAX),
    }
}

/// A transaction left account `account_index` with some lamports, but fewer than exempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InsufficientFundsForRent {
    pub account_index: usize,
}

impl InsufficientFundsForRent {
    /// `meta.err` as a node reports it.
    pub(crate) fn to_json(self) -> Value {
        json!({"InsufficientFundsForRent": {"account_index": self.account_index}})
    }

    pub(crate) fn message(self) -> String {
        format!(
            "Transaction results in an account ({}) with insufficient funds for rent",
            self.account_index
        )
    }
}

/// The runtime's rent-state transition rule, for every account of `message` that changed:
/// after the transaction it must hold nothing or be exempt. An account that was already
/// below exemption (created before rent applied) may stay so if it keeps its size and does
/// not gain lamports.
pub(crate) fn check(
    message: &Message,
    pre: &Accounts,
    post: &Accounts,
) -> Result<(), InsufficientFundsForRent> {
    for (index, key) in message.account_keys.iter().enumerate() {
        let after = post.get(key);
        if after == pre.get(key) {
            continue;
        }
        let Some(after) = after else { continue };
        if allowed(pre.get(key), after) {
            continue;
        }
        return Err(InsufficientFundsForRent {
            account_index: index,
        });
    }
    Ok(())
}

fn allowed(before: Option<&Account>, after: &Account) -> bool {
    let exempt = |a: &Account| a.lamports >= minimum_balance(data_len(&a.kind));
    if after.lamports == 0 || exempt(after) {
        return true;
    }
    match before {
        Some(b) if b.lamports > 0 && !exempt(b) => {
            data_len(&b.kind) == data_len(&after.kind) && after.lamports <= b.lamports
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crucible_solana::tx::{Pubkey, instructions};

    #[test]
    fn minimum_balances_match_a_real_cluster() {
        assert_eq!(minimum_balance(0), 890_880);
        assert_eq!(minimum_balance(TOKEN_ACCOUNT_LEN), 2_039_280);
        assert_eq!(minimum_balance(MINT_LEN), 1_461_600);
    }

    #[test]
    fn a_new_account_must_be_exempt_and_a_drained_one_empty() {
        let (alice, bob) = (Pubkey([1; 32]), Pubkey([2; 32]));
        let message = Message::new_legacy(
            &[instructions::system_transfer(&alice, &bob, 1)],
            &alice,
            [0; 32],
        );
        let pre: Accounts = [(alice, Account::wallet(10_000_000))].into();
        let mut post = pre.clone();
        post.insert(bob, Account::wallet(1_000));
        assert_eq!(
            check(&message, &pre, &post),
            Err(InsufficientFundsForRent { account_index: 1 })
        );
        post.insert(bob, Account::wallet(890_880));
        assert_eq!(check(&message, &pre, &post), Ok(()));
        // The payer may empty itself entirely, but not down to dust.
        post.insert(alice, Account::wallet(0));
        assert_eq!(check(&message, &pre, &post), Ok(()));
        post.insert(alice, Account::wallet(5));
        assert_eq!(
            check(&message, &pre, &post),
            Err(InsufficientFundsForRent { account_index: 0 })
        );
    }

    #[test]
    fn an_account_already_below_exemption_may_only_shrink() {
        let (alice, bob) = (Pubkey([1; 32]), Pubkey([2; 32]));
        let message = Message::new_legacy(
            &[instructions::system_transfer(&alice, &bob, 1)],
            &alice,
            [0; 32],
        );
        let pre: Accounts = [(alice, Account::wallet(500_000))].into();
        let mut post = pre.clone();
        post.insert(alice, Account::wallet(400_000));
        assert_eq!(check(&message, &pre, &post), Ok(()));
        post.insert(alice, Account::wallet(600_000));
        assert!(check(&message, &pre, &post).is_err());
    }
}
