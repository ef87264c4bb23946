//! Property tests of the simnet runtime: any sequence of instructions for the programs it runs
//! (with random accounts, flags and data) is executed or refused, never a panic, and a
//! transaction that executes neither creates nor destroys lamports.

use crucible_solana::tx::message::{AccountMeta, Instruction};
use crucible_solana::tx::{self, Message, Pubkey};
use proptest::prelude::*;

use crate::executor::{self, Account, Accounts, Kind};
use crate::pool::{self, PoolAddresses};

/// The accounts every case starts from: two wallets, a mint, a token account each, and the
/// pool with its vaults and LP mint, so pool instructions reach real state.
fn world() -> (Vec<Pubkey>, Accounts) {
    let mint = Pubkey([30; 32]);
    let program = tx::token_program();
    let a = Pubkey([10; 32]);
    let b = Pubkey([11; 32]);
    let p = PoolAddresses::sol_usdc();
    let token = |owner: Pubkey, amount: u64| Account {
        lamports: executor::TOKEN_ACCOUNT_RENT,
        kind: Kind::Token {
            program,
            mint,
            owner,
            amount,
            decimals: 6,
        },
    };
    let mut accounts = Accounts::new();
    accounts.insert(a, Account::wallet(5_000_000_000));
    accounts.insert(b, Account::wallet(1_000_000));
    accounts.insert(
        mint,
        Account {
            lamports: 1_461_600,
            kind: Kind::Mint {
                program,
                decimals: 6,
                supply: 0,
                authority: None,
            },
        },
    );
    let a_token = tx::associated_token_address(&a, &mint, &program);
    let b_token = tx::associated_token_address(&b, &mint, &program);
    accounts.insert(a_token, token(a, 50_000_000));
    accounts.insert(b_token, token(b, 0));
    accounts.insert(
        p.pool,
        Account {
            lamports: 1_000_000,
            kind: Kind::Pool {
                usdc_mint: mint,
                lp_supply: 1_000_000,
            },
        },
    );
    accounts.insert(
        p.sol_vault,
        Account {
            lamports: 10_000_000_000,
            kind: Kind::Vault { pool: p.pool },
        },
    );
    accounts.insert(p.usdc_vault, token(p.pool, 1_500_000_000));
    accounts.insert(
        p.lp_mint,
        Account {
            lamports: 1_461_600,
            kind: Kind::Mint {
                program,
                decimals: 9,
                supply: 0,
                authority: None,
            },
        },
    );
    let keys = vec![
        a,
        b,
        mint,
        a_token,
        b_token,
        p.pool,
        p.sol_vault,
        p.usdc_vault,
        p.lp_mint,
        Pubkey([99; 32]), // an account nobody created
        tx::system_program(),
        tx::token_program(),
    ];
    (keys, accounts)
}

fn programs() -> Vec<Pubkey> {
    vec![
        tx::system_program(),
        tx::token_program(),
        tx::token_2022_program(),
        tx::associated_token_program(),
        tx::memo_program(),
        tx::compute_budget_program(),
        pool::program_id(),
    ]
}

prop_compose! {
    fn instruction()(
        program in 0usize..7,
        metas in proptest::collection::vec((0usize..12, any::<bool>(), any::<bool>()), 0..7),
        // A small first byte reaches the programs' real instruction tags.
        tag in 0u8..20,
        data in proptest::collection::vec(any::<u8>(), 0..48),
    ) -> (usize, Vec<(usize, bool, bool)>, Vec<u8>) {
        let mut bytes = vec![tag];
        bytes.extend(data);
        (program, metas, bytes)
    }
}

fn total_lamports(accounts: &Accounts) -> u128 {
    accounts.values().map(|a| u128::from(a.lamports)).sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn any_instructions_execute_or_fail_and_lamports_are_conserved(
        raw in proptest::collection::vec(instruction(), 1..5),
    ) {
        let (keys, before) = world();
        let programs = programs();
        let instructions: Vec<Instruction> = raw
            .into_iter()
            .map(|(program, metas, data)| Instruction {
                program_id: programs[program],
                accounts: metas
                    .into_iter()
                    .map(|(key, signer, writable)| {
                        // The payer is the only key whose signature the message carries.
                        let signer = signer && key == 0;
                        if writable {
                            AccountMeta::writable(keys[key], signer)
                        } else {
                            AccountMeta::readonly(keys[key], signer)
                        }
                    })
                    .collect(),
                data,
            })
            .collect();
        let message = Message::new_legacy(&instructions, &keys[0], [1; 32]);
        let mut accounts = before.clone();
        if executor::charge_fee(&message, &mut accounts).is_err() {
            return Ok(());
        }
        let after_fee = total_lamports(&accounts);
        if executor::execute_traced(&message, &mut accounts).is_ok() {
            prop_assert_eq!(total_lamports(&accounts), after_fee, "no lamports created or destroyed");
        }
    }
}
