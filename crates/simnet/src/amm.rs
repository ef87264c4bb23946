//! The Crucible pool program as the simnet runs it: Initialize, Swap (exact-in with a minimum
//! out) and AddLiquidity against the accounts of one transaction. Layout, addresses and
//! arithmetic live in `chain::pool`; this module applies them to ledger accounts and enforces
//! the rules: the derived addresses, who must sign, who owns which token account, enough funds,
//! the slippage guard, and the constant-product invariant re-checked from the resulting vault
//! balances after every swap. Pure, like the rest of the executor.

use crucible_solana::tx::{self, Pubkey};
use serde_json::{Value, json};

use crate::executor::{Account, Accounts, Kind, Meta, TOKEN_ACCOUNT_RENT, account, err};
use crate::pool::{
    self, Direction, MINT_RENT, POOL_STATE_RENT, PoolAddresses, PoolError, PoolInstruction,
};

type Failure = (Value, String);
type Step<T> = Result<T, Failure>;

fn fail<T>(error: PoolError, reason: impl Into<String>) -> Step<T> {
    Err((json!({ "Custom": error.code() }), reason.into()))
}

/// Run one pool instruction; a swap returns the amount it paid out.
pub(super) fn process(metas: &[Meta], data: &[u8], accounts: &mut Accounts) -> Step<Option<u64>> {
    let Some(instruction) = pool::decode(data) else {
        return Err((
            json!("InvalidInstructionData"),
            "not a Crucible pool instruction (tag 0 initialize, 1 swap, 2 addLiquidity)".into(),
        ));
    };
    match instruction {
        PoolInstruction::Initialize => initialize(metas, accounts).map(|()| None),
        PoolInstruction::Swap {
            direction,
            amount_in,
            minimum_out,
        } => swap(metas, accounts, direction, amount_in, minimum_out).map(Some),
        PoolInstruction::AddLiquidity {
            sol_amount,
            max_usdc,
        } => add_liquidity(metas, accounts, sol_amount, max_usdc).map(|()| None),
    }
}

fn signer(meta: &Meta) -> Step<()> {
    if !meta.signer || !meta.writable {
        err(
            "MissingRequiredSignature",
            format!("{} must sign and be writable", meta.key),
        )?;
    }
    Ok(())
}

fn writable(metas: &[&Meta]) -> Step<()> {
    if let Some(meta) = metas.iter().find(|m| !m.writable) {
        err("InvalidArgument", format!("{} must be writable", meta.key))?;
    }
    Ok(())
}

fn expect(meta: &Meta, expected: Pubkey, what: &str) -> Step<()> {
    if meta.key != expected {
        return fail(
            PoolError::WrongAccount,
            format!("{} is not the pool's {what} ({expected})", meta.key),
        );
    }
    Ok(())
}

fn lamports(accounts: &Accounts, key: &Pubkey) -> u64 {
    accounts.get(key).map_or(0, |a| a.lamports)
}

/// `(mint, owner, amount)` of an SPL Token (classic) account.
fn token(accounts: &Accounts, key: &Pubkey) -> Option<(Pubkey, Pubkey, u64)> {
    match accounts.get(key).map(|a| &a.kind) {
        Some(Kind::Token {
            program,
            mint,
            owner,
            amount,
            ..
        }) if *program == tx::token_program() => Some((*mint, *owner, *amount)),
        _ => None,
    }
}

fn set_token(accounts: &mut Accounts, key: &Pubkey, new: u64) {
    if let Some(Account {
        kind: Kind::Token { amount, .. },
        ..
    }) = accounts.get_mut(key)
    {
        *amount = new;
    }
}

fn add_lamports(accounts: &mut Accounts, key: &Pubkey, delta: u64) -> Step<()> {
    let account = accounts.entry(*key).or_insert(Account::wallet(0));
    account.lamports = account
        .lamports
        .checked_add(delta)
        .ok_or_else(|| (json!("ArithmeticOverflow"), format!("{key} would overflow")))?;
    Ok(())
}

fn take_lamports(accounts: &mut Accounts, key: &Pubkey, delta: u64) -> Step<()> {
    match accounts.get_mut(key) {
        Some(account) if account.lamports >= delta => {
            account.lamports -= delta;
            Ok(())
        }
        _ => fail(
            PoolError::InsufficientFunds,
            format!("{key} has fewer than {delta} lamports"),
        ),
    }
}

/// The user's wallet must be a system account holding `needed` lamports.
fn user_wallet(accounts: &Accounts, user: &Pubkey, needed: u64) -> Step<()> {
    let account = accounts.get(user).cloned().unwrap_or(Account::wallet(0));
    if account.kind != Kind::Wallet {
        err("InvalidArgument", format!("{user} is not a system account"))?;
    }
    if account.lamports < needed {
        return fail(
            PoolError::InsufficientFunds,
            format!("{user} has {} lamports, needs {needed}", account.lamports),
        );
    }
    Ok(())
}

/// The pool's state and current reserves `(lamports, usdc raw)`, after checking the vaults.
fn pool_and_reserves(
    accounts: &Accounts,
    pool: &Meta,
    sol_vault: &Meta,
    usdc_vault: &Meta,
) -> Step<(Pubkey, u64, u64, u64)> {
    let a = PoolAddresses::sol_usdc();
    expect(pool, a.pool, "state account")?;
    expect(sol_vault, a.sol_vault, "SOL vault")?;
    expect(usdc_vault, a.usdc_vault, "USDC vault")?;
    let Some(Kind::Pool {
        usdc_mint,
        lp_supply,
    }) = accounts.get(&a.pool).map(|p| p.kind.clone())
    else {
        return fail(
            PoolError::WrongAccount,
            format!("{} is not initialized", a.pool),
        );
    };
    let Some((mint, owner, usdc)) = token(accounts, &a.usdc_vault) else {
        return fail(
            PoolError::WrongAccount,
            "the USDC vault is not a token account",
        );
    };
    if mint != usdc_mint || owner != a.pool {
        return fail(PoolError::WrongAccount, "the USDC vault is not the pool's");
    }
    Ok((usdc_mint, lamports(accounts, &a.sol_vault), usdc, lp_supply))
}

/// The user's USDC account: a classic token account of `usdc_mint`; when `must_own`, owned
/// by `user` (it is debited on the user's signature).
fn user_usdc(
    accounts: &Accounts,
    meta: &Meta,
    usdc_mint: &Pubkey,
    user: &Pubkey,
    must_own: bool,
) -> Step<u64> {
    match token(accounts, &meta.key) {
        Some((mint, owner, amount)) if mint == *usdc_mint => {
            if must_own && owner != *user {
                return fail(
                    PoolError::NotOwner,
                    format!("{} is not owned by {user}", meta.key),
                );
            }
            Ok(amount)
        }
        _ => fail(
            PoolError::WrongAccount,
            format!(
                "{} is not a token account of {usdc_mint} (create it first)",
                meta.key
            ),
        ),
    }
}

fn initialize(metas: &[Meta], accounts: &mut Accounts) -> Step<()> {
    let payer = account(metas, 0)?;
    let (pool, sol_vault, usdc_vault, lp_mint) = (
        account(metas, 1)?,
        account(metas, 2)?,
        account(metas, 3)?,
        account(metas, 4)?,
    );
    let (usdc_mint, token_program) = (account(metas, 5)?, account(metas, 6)?);
    signer(payer)?;
    writable(&[pool, sol_vault, usdc_vault, lp_mint])?;
    let a = PoolAddresses::sol_usdc();
    expect(pool, a.pool, "state account")?;
    expect(sol_vault, a.sol_vault, "SOL vault")?;
    expect(usdc_vault, a.usdc_vault, "USDC vault")?;
    expect(lp_mint, a.lp_mint, "LP mint")?;
    if token_program.key != tx::token_program() {
        err(
            "IncorrectProgramId",
            "the pool's tokens live under the SPL Token program",
        )?;
    }
    let decimals = match accounts.get(&usdc_mint.key).map(|m| &m.kind) {
        Some(Kind::Mint {
            program, decimals, ..
        }) if *program == tx::token_program() => *decimals,
        _ => {
            return Err((
                json!("InvalidAccountData"),
                format!("{} is not an SPL Token mint", usdc_mint.key),
            ));
        }
    };
    if [a.pool, a.sol_vault, a.usdc_vault, a.lp_mint]
        .iter()
        .any(|k| accounts.contains_key(k))
    {
        return fail(PoolError::AlreadyInitialized, "the SOL/USDC pool exists");
    }
    let rent = POOL_STATE_RENT + TOKEN_ACCOUNT_RENT + MINT_RENT;
    user_wallet(accounts, &payer.key, rent)?;
    take_lamports(accounts, &payer.key, rent)?;
    accounts.insert(
        a.pool,
        Account {
            lamports: POOL_STATE_RENT,
            kind: Kind::Pool {
                usdc_mint: usdc_mint.key,
                lp_supply: 0,
            },
        },
    );
    accounts.insert(
        a.sol_vault,
        Account {
            lamports: 0,
            kind: Kind::Vault { pool: a.pool },
        },
    );
    accounts.insert(
        a.usdc_vault,
        Account {
            lamports: TOKEN_ACCOUNT_RENT,
            kind: Kind::Token {
                program: tx::token_program(),
                mint: usdc_mint.key,
                owner: a.pool,
                amount: 0,
                decimals,
            },
        },
    );
    accounts.insert(
        a.lp_mint,
        Account {
            lamports: MINT_RENT,
            kind: Kind::Mint {
                program: tx::token_program(),
                decimals: pool::LP_DECIMALS,
                supply: 0,
                authority: Some(a.pool),
            },
        },
    );
    Ok(())
}

fn swap(
    metas: &[Meta],
    accounts: &mut Accounts,
    direction: Direction,
    amount_in: u64,
    minimum_out: u64,
) -> Step<u64> {
    let user = account(metas, 0)?;
    let (pool, sol_vault, usdc_vault, user_usdc_meta) = (
        account(metas, 1)?,
        account(metas, 2)?,
        account(metas, 3)?,
        account(metas, 4)?,
    );
    signer(user)?;
    writable(&[sol_vault, usdc_vault, user_usdc_meta])?;
    let (usdc_mint, sol_reserve, usdc_reserve, _) =
        pool_and_reserves(accounts, pool, sol_vault, usdc_vault)?;
    if user_usdc_meta.key == usdc_vault.key {
        return fail(
            PoolError::WrongAccount,
            "the user's USDC account cannot be the vault",
        );
    }
    let selling_usdc = direction == Direction::SellUsdc;
    let user_balance = user_usdc(
        accounts,
        user_usdc_meta,
        &usdc_mint,
        &user.key,
        selling_usdc,
    )?;
    let (reserve_in, reserve_out) = match direction {
        Direction::SellSol => (sol_reserve, usdc_reserve),
        Direction::SellUsdc => (usdc_reserve, sol_reserve),
    };
    let Some(out) = pool::quote(amount_in, reserve_in, reserve_out) else {
        return fail(
            PoolError::ZeroAmount,
            format!("selling {amount_in} into reserves {reserve_in}/{reserve_out} pays nothing"),
        );
    };
    if out < minimum_out {
        return fail(
            PoolError::SlippageExceeded,
            format!("the swap pays {out}, below the minimum {minimum_out}"),
        );
    }
    match direction {
        Direction::SellSol => {
            user_wallet(accounts, &user.key, amount_in)?;
            take_lamports(accounts, &user.key, amount_in)?;
            add_lamports(accounts, &sol_vault.key, amount_in)?;
            set_token(accounts, &usdc_vault.key, usdc_reserve - out);
            let credited = token(accounts, &user_usdc_meta.key).map_or(0, |t| t.2);
            let Some(credited) = credited.checked_add(out) else {
                return fail(
                    PoolError::InsufficientFunds,
                    "the USDC balance would overflow",
                );
            };
            set_token(accounts, &user_usdc_meta.key, credited);
        }
        Direction::SellUsdc => {
            if user_balance < amount_in {
                return fail(
                    PoolError::InsufficientFunds,
                    format!(
                        "{} holds {user_balance}, needs {amount_in}",
                        user_usdc_meta.key
                    ),
                );
            }
            let Some(vault_after) = usdc_reserve.checked_add(amount_in) else {
                return fail(PoolError::InsufficientFunds, "the vault would overflow");
            };
            set_token(accounts, &user_usdc_meta.key, user_balance - amount_in);
            set_token(accounts, &usdc_vault.key, vault_after);
            take_lamports(accounts, &sol_vault.key, out)?;
            add_lamports(accounts, &user.key, out)?;
        }
    }
    // The invariant, from the balances the swap actually left (not from the formula).
    let after = (
        lamports(accounts, &sol_vault.key),
        token(accounts, &usdc_vault.key).map_or(0, |t| t.2),
    );
    check_invariant((sol_reserve, usdc_reserve), after)?;
    Ok(out)
}

/// Fails the instruction when x·y of `after` is below that of `before`.
fn check_invariant(before: (u64, u64), after: (u64, u64)) -> Step<()> {
    let k = |(x, y): (u64, u64)| u128::from(x) * u128::from(y);
    if k(after) < k(before) {
        return fail(
            PoolError::InvariantViolated,
            format!("x·y fell from {} to {}", k(before), k(after)),
        );
    }
    Ok(())
}

fn add_liquidity(
    metas: &[Meta],
    accounts: &mut Accounts,
    sol_amount: u64,
    max_usdc: u64,
) -> Step<()> {
    let user = account(metas, 0)?;
    let (pool, sol_vault, usdc_vault, lp_mint) = (
        account(metas, 1)?,
        account(metas, 2)?,
        account(metas, 3)?,
        account(metas, 4)?,
    );
    let (user_usdc_meta, user_lp) = (account(metas, 5)?, account(metas, 6)?);
    signer(user)?;
    writable(&[
        pool,
        sol_vault,
        usdc_vault,
        lp_mint,
        user_usdc_meta,
        user_lp,
    ])?;
    let (usdc_mint, sol_reserve, usdc_reserve, lp_supply) =
        pool_and_reserves(accounts, pool, sol_vault, usdc_vault)?;
    expect(lp_mint, PoolAddresses::sol_usdc().lp_mint, "LP mint")?;
    let user_balance = user_usdc(accounts, user_usdc_meta, &usdc_mint, &user.key, true)?;
    let Some((lp_mint_of, _, lp_balance)) = token(accounts, &user_lp.key) else {
        return fail(
            PoolError::WrongAccount,
            format!(
                "{} is not an LP token account (create it first)",
                user_lp.key
            ),
        );
    };
    if lp_mint_of != lp_mint.key {
        return fail(PoolError::WrongAccount, "the LP account holds another mint");
    }
    let Some((usdc_in, minted)) =
        pool::deposit(sol_amount, max_usdc, (sol_reserve, usdc_reserve), lp_supply)
    else {
        return fail(PoolError::ZeroAmount, "the deposit is too small to mint LP");
    };
    if usdc_in > max_usdc {
        return fail(
            PoolError::SlippageExceeded,
            format!("the deposit needs {usdc_in} USDC, above the maximum {max_usdc}"),
        );
    }
    if user_balance < usdc_in {
        return fail(
            PoolError::InsufficientFunds,
            format!(
                "{} holds {user_balance}, needs {usdc_in}",
                user_usdc_meta.key
            ),
        );
    }
    user_wallet(accounts, &user.key, sol_amount)?;
    let (Some(usdc_after), Some(supply_after), Some(lp_after)) = (
        usdc_reserve.checked_add(usdc_in),
        lp_supply.checked_add(minted),
        lp_balance.checked_add(minted),
    ) else {
        return fail(PoolError::InsufficientFunds, "a balance would overflow");
    };
    take_lamports(accounts, &user.key, sol_amount)?;
    add_lamports(accounts, &sol_vault.key, sol_amount)?;
    set_token(accounts, &user_usdc_meta.key, user_balance - usdc_in);
    set_token(accounts, &usdc_vault.key, usdc_after);
    set_token(accounts, &user_lp.key, lp_after);
    if let Some(Account {
        kind: Kind::Pool { lp_supply, .. },
        ..
    }) = accounts.get_mut(&pool.key)
    {
        *lp_supply = supply_after;
    }
    // The LP mint's own supply, which `getTokenSupply` and `getMint` read, moves with it.
    if let Some(Account {
        kind: Kind::Mint { supply, .. },
        ..
    }) = accounts.get_mut(&lp_mint.key)
    {
        *supply = supply_after;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::executor::{self, FEE_PER_SIGNATURE, InstructionFailure};
    use crucible_solana::tx::Message;
    use crucible_solana::tx::message::Instruction;

    const SOL: u64 = 1_000_000_000;
    const USDC: u64 = 1_000_000;

    struct World {
        accounts: Accounts,
        mint: Pubkey,
        alice: Pubkey,
        alice_usdc: Pubkey,
        lp: Pubkey,
    }

    fn token_account(mint: Pubkey, owner: Pubkey, amount: u64) -> Account {
        Account {
            lamports: TOKEN_ACCOUNT_RENT,
            kind: Kind::Token {
                program: tx::token_program(),
                mint,
                owner,
                amount,
                decimals: 6,
            },
        }
    }

    fn run(w: &mut World, ixs: &[Instruction]) -> Result<Vec<Option<u64>>, InstructionFailure> {
        let message = Message::new_legacy(ixs, &w.alice, [0; 32]);
        executor::charge_fee(&message, &mut w.accounts).expect("fee");
        // Like the simnet: a failed transaction keeps only the fee.
        let mut post = w.accounts.clone();
        let trace = executor::execute_traced(&message, &mut post)?;
        w.accounts = post;
        Ok(trace)
    }

    /// Alice holds 1,000 SOL and 100,000 USDC and seeds a 100 SOL / 15,000 USDC pool.
    fn world() -> World {
        let (alice, mint) = (Pubkey([1; 32]), Pubkey([3; 32]));
        let alice_usdc = tx::associated_token_address(&alice, &mint, &tx::token_program());
        let a = PoolAddresses::sol_usdc();
        let lp = tx::associated_token_address(&alice, &a.lp_mint, &tx::token_program());
        let mut accounts = Accounts::new();
        accounts.insert(alice, Account::wallet(1_000 * SOL));
        accounts.insert(
            mint,
            Account {
                lamports: 1,
                kind: Kind::Mint {
                    program: tx::token_program(),
                    decimals: 6,
                    supply: 100_000 * USDC,
                    authority: None,
                },
            },
        );
        accounts.insert(alice_usdc, token_account(mint, alice, 100_000 * USDC));
        let mut w = World {
            accounts,
            mint,
            alice,
            alice_usdc,
            lp,
        };
        let seed = [
            pool::initialize(&alice, &mint),
            tx::instructions::create_associated_token_account_idempotent(
                &alice,
                &alice,
                &a.lp_mint,
                &tx::token_program(),
            ),
            pool::add_liquidity(&alice, &alice_usdc, &lp, 100 * SOL, 15_000 * USDC),
        ];
        run(&mut w, &seed).expect("seed");
        w
    }

    fn tokens(w: &World, key: &Pubkey) -> u64 {
        token(&w.accounts, key).map_or(0, |t| t.2)
    }

    fn reserves(w: &World) -> (u64, u64) {
        let a = PoolAddresses::sol_usdc();
        (
            lamports(&w.accounts, &a.sol_vault),
            tokens(w, &a.usdc_vault),
        )
    }

    fn code(failure: &InstructionFailure) -> Value {
        failure.error.clone()
    }

    #[test]
    fn seeding_creates_the_pool_and_mints_lp() {
        let w = world();
        assert_eq!(reserves(&w), (100 * SOL, 15_000 * USDC));
        let lp = tokens(&w, &w.lp);
        assert_eq!(lp, 38_729_833_462); // isqrt(100e9 · 15,000e6)
        let a = PoolAddresses::sol_usdc();
        assert_eq!(
            w.accounts[&a.pool].kind,
            Kind::Pool {
                usdc_mint: w.mint,
                lp_supply: lp
            }
        );
        // A second initialize is refused: the pool exists.
        let mut w = w;
        let init = pool::initialize(&w.alice, &w.mint);
        let again = run(&mut w, &[init]).expect_err("twice");
        assert_eq!(
            code(&again),
            json!({"Custom": PoolError::AlreadyInitialized.code()})
        );
    }

    #[test]
    fn swaps_in_both_directions_pay_the_quote_and_keep_the_fee_in_the_pool() {
        let mut w = world();
        let lamports_before = w.accounts[&w.alice].lamports;
        let usdc_before = tokens(&w, &w.alice_usdc);
        let ix = pool::swap(&w.alice, &w.alice_usdc, Direction::SellSol, SOL, 0);
        let trace = run(&mut w, &[ix]).expect("sell SOL");
        assert_eq!(trace, vec![Some(148_073_705)]);
        assert_eq!(tokens(&w, &w.alice_usdc), usdc_before + 148_073_705);
        assert_eq!(
            w.accounts[&w.alice].lamports,
            lamports_before - SOL - FEE_PER_SIGNATURE
        );
        assert_eq!(reserves(&w), (101 * SOL, 15_000 * USDC - 148_073_705));
        let k_after_sell = 101 * u128::from(SOL) * u128::from(15_000 * USDC - 148_073_705);
        assert!(k_after_sell > 100 * u128::from(SOL) * u128::from(15_000 * USDC));

        let (sol, usdc) = reserves(&w);
        let expected = pool::quote(148_073_705, usdc, sol).expect("quote");
        let lamports_before = w.accounts[&w.alice].lamports;
        let ix = pool::swap(
            &w.alice,
            &w.alice_usdc,
            Direction::SellUsdc,
            148_073_705,
            expected,
        );
        assert_eq!(run(&mut w, &[ix]).expect("sell USDC"), vec![Some(expected)]);
        assert_eq!(
            w.accounts[&w.alice].lamports,
            lamports_before + expected - FEE_PER_SIGNATURE
        );
        assert_eq!(reserves(&w), (sol - expected, usdc + 148_073_705));
        // A round trip loses the fee twice: less SOL back than went in.
        assert!(expected < SOL);
    }

    #[test]
    fn slippage_funds_and_dust_are_refused_and_change_nothing() {
        let mut w = world();
        let before = w.accounts.clone();
        let payer_after_fee = |w: &World| w.accounts[&w.alice].lamports;
        let greedy = pool::swap(
            &w.alice,
            &w.alice_usdc,
            Direction::SellSol,
            SOL,
            148_073_706,
        );
        let failure = run(&mut w, &[greedy]).expect_err("slippage");
        assert_eq!(
            code(&failure),
            json!({"Custom": PoolError::SlippageExceeded.code()})
        );
        assert_eq!(reserves(&w), (100 * SOL, 15_000 * USDC));
        assert_eq!(
            payer_after_fee(&w),
            before[&w.alice].lamports - FEE_PER_SIGNATURE
        );

        let too_much = pool::swap(
            &w.alice,
            &w.alice_usdc,
            Direction::SellUsdc,
            100_001 * USDC,
            0,
        );
        let failure = run(&mut w, &[too_much]).expect_err("funds");
        assert_eq!(
            code(&failure),
            json!({"Custom": PoolError::InsufficientFunds.code()})
        );
        let too_much = pool::swap(&w.alice, &w.alice_usdc, Direction::SellSol, 10_000 * SOL, 0);
        let failure = run(&mut w, &[too_much]).expect_err("lamports");
        assert_eq!(
            code(&failure),
            json!({"Custom": PoolError::InsufficientFunds.code()})
        );

        let dust = pool::swap(&w.alice, &w.alice_usdc, Direction::SellSol, 1, 0);
        let failure = run(&mut w, &[dust]).expect_err("dust");
        assert_eq!(
            code(&failure),
            json!({"Custom": PoolError::ZeroAmount.code()})
        );
        assert_eq!(reserves(&w), (100 * SOL, 15_000 * USDC));
    }

    #[test]
    fn wrong_accounts_and_missing_signatures_are_refused() {
        let mut w = world();
        let a = PoolAddresses::sol_usdc();
        let mut fake_vault = pool::swap(&w.alice, &w.alice_usdc, Direction::SellUsdc, USDC, 0);
        fake_vault.accounts[2].pubkey = Pubkey([7; 32]);
        assert_eq!(
            code(&run(&mut w, &[fake_vault]).expect_err("vault")),
            json!({"Custom": PoolError::WrongAccount.code()})
        );
        // Paying the pool's own vault as the "user" account is refused.
        let into_vault = pool::swap(&w.alice, &a.usdc_vault, Direction::SellSol, SOL, 0);
        assert_eq!(
            code(&run(&mut w, &[into_vault]).expect_err("vault as user")),
            json!({"Custom": PoolError::WrongAccount.code()})
        );
        // Bob's USDC cannot be sold on Alice's signature.
        let bob = Pubkey([2; 32]);
        let bob_usdc = tx::associated_token_address(&bob, &w.mint, &tx::token_program());
        w.accounts
            .insert(bob_usdc, token_account(w.mint, bob, 500 * USDC));
        let theft = pool::swap(&w.alice, &bob_usdc, Direction::SellUsdc, USDC, 0);
        assert_eq!(
            code(&run(&mut w, &[theft]).expect_err("owner")),
            json!({"Custom": PoolError::NotOwner.code()})
        );
        let mut unsigned = pool::swap(&bob, &bob_usdc, Direction::SellUsdc, USDC, 0);
        unsigned.accounts[0].is_signer = false;
        assert_eq!(
            code(&run(&mut w, &[unsigned]).expect_err("signature")),
            json!("MissingRequiredSignature")
        );
        let mut garbage = pool::swap(&w.alice, &w.alice_usdc, Direction::SellSol, 1, 0);
        garbage.data = vec![1, 0];
        assert_eq!(
            code(&run(&mut w, &[garbage]).expect_err("data")),
            json!("InvalidInstructionData")
        );
        assert_eq!(reserves(&w), (100 * SOL, 15_000 * USDC));
    }

    #[test]
    fn the_invariant_never_decreases_and_its_guard_refuses_a_decrease() {
        let mut w = world();
        for amount in [1, SOL / 3, 7 * SOL, 99 * SOL] {
            let (sol, usdc) = reserves(&w);
            let ix = pool::swap(&w.alice, &w.alice_usdc, Direction::SellSol, amount, 0);
            if run(&mut w, &[ix]).is_ok() {
                let (sol_after, usdc_after) = reserves(&w);
                assert!(check_invariant((sol, usdc), (sol_after, usdc_after)).is_ok());
            }
        }
        // The guard itself: one unit less on either side than x·y allows is refused.
        assert!(check_invariant((100, 100), (200, 50)).is_ok());
        let failure = check_invariant((100, 100), (199, 50)).expect_err("decrease");
        assert_eq!(
            failure.0,
            json!({"Custom": PoolError::InvariantViolated.code()})
        );
    }

    #[test]
    fn liquidity_is_added_in_the_pool_ratio() {
        let mut w = world();
        let lp_before = tokens(&w, &w.lp);
        let usdc_before = tokens(&w, &w.alice_usdc);
        let ix = pool::add_liquidity(&w.alice, &w.alice_usdc, &w.lp, 10 * SOL, 1_500 * USDC);
        run(&mut w, &[ix]).expect("add");
        assert_eq!(reserves(&w), (110 * SOL, 16_500 * USDC));
        assert_eq!(tokens(&w, &w.alice_usdc), usdc_before - 1_500 * USDC);
        assert_eq!(tokens(&w, &w.lp), lp_before + lp_before / 10);
        let stingy = pool::add_liquidity(&w.alice, &w.alice_usdc, &w.lp, 10 * SOL, 1_499 * USDC);
        assert_eq!(
            code(&run(&mut w, &[stingy]).expect_err("max usdc")),
            json!({"Custom": PoolError::SlippageExceeded.code()})
        );
    }
}
