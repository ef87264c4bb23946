//! The simnet runtime: executes a decoded message against an in-memory set of accounts, the way
//! the Solana runtime and the programs Crucible uses would. Pure (no storage, no clock), so the
//! rules are unit-tested directly: fee payment, System transfer and createAccount, SPL Token
//! transfer, transferChecked, initializeAccount (1, 2, 3) and closeAccount (Token and
//! Token-2022), associated-token-account creation, Memo, and the Crucible pool program
//! (`amm.rs`). An account a transaction closes is absent from its post accounts.

use std::collections::HashMap;

use crucible_solana::tx::instructions::{
    self, AtaInstruction, InitializeVariant, SystemInstruction, TokenInstruction,
};
use crucible_solana::tx::{self, Message, Pubkey};
use serde_json::{Value, json};

use crate::compute_budget::{self, BudgetError};
use crate::pool;
use crate::rent::{self, InsufficientFundsForRent};

/// Lamports per signature, as on mainnet.
pub(crate) const FEE_PER_SIGNATURE: u64 = 5_000;
/// Rent-exempt balance of a 165-byte token account, moved from the payer on creation.
pub const TOKEN_ACCOUNT_RENT: u64 = 2_039_280;

/// What an account is, and the state its program keeps in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A system-owned account (a wallet).
    Wallet,
    /// An SPL mint.
    Mint {
        program: Pubkey,
        decimals: u8,
        /// Raw units in circulation.
        supply: u64,
        /// Who may mint (`None`: the supply is fixed).
        authority: Option<Pubkey>,
    },
    /// An SPL token account: `owner`'s balance of `mint`, in raw units.
    Token {
        program: Pubkey,
        mint: Pubkey,
        owner: Pubkey,
        amount: u64,
        decimals: u8,
    },
    /// The state account of a pool of the Crucible pool program ([`crate::pool`]); its reserves
    /// are the balances of its vaults.
    Pool { usdc_mint: Pubkey, lp_supply: u64 },
    /// A pool's SOL vault: lamports owned by the pool program, debited only by the program.
    Vault { pool: Pubkey },
    /// An account `CreateAccount` made for `program` and no instruction has initialized yet:
    /// `space` zero bytes.
    Uninitialized { program: Pubkey, space: u64 },
}

/// An account on the ledger: its lamports and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub lamports: u64,
    pub kind: Kind,
}

impl Account {
    /// A system-owned account holding `lamports`.
    pub fn wallet(lamports: u64) -> Self {
        Account {
            lamports,
            kind: Kind::Wallet,
        }
    }
}

/// Accounts by address; an absent address is an empty wallet that does not exist yet.
pub type Accounts = HashMap<Pubkey, Account>;

/// Why a transaction cannot run at all (refused at submission, never lands, no fee).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error(
        "unsupported program {0}: simnet runs System, SPL Token, Token-2022, associated token accounts, Memo, ComputeBudget and the Crucible pool"
    )]
    UnsupportedProgram(Pubkey),
    #[error(
        "Attempt to debit an account but found no record of a prior credit (the fee payer {0} cannot pay the fee)"
    )]
    InsufficientFundsForFee(Pubkey),
    #[error(transparent)]
    Budget(#[from] BudgetError),
}

impl Refusal {
    /// The `err` a node's preflight reports for a transaction it will not run.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Refusal::UnsupportedProgram(_) => json!("ProgramAccountNotFound"),
            Refusal::InsufficientFundsForFee(_) => json!("InsufficientFundsForFee"),
            Refusal::Budget(BudgetError::InvalidInstructionData(i)) => {
                json!({"InstructionError": [i, "InvalidInstructionData"]})
            }
            Refusal::Budget(BudgetError::DuplicateInstruction(i)) => {
                json!({ "DuplicateInstruction": i })
            }
        }
    }
}

/// An instruction failed: the transaction lands as failed (fee charged, nothing else moves).
/// `error` is the runtime's JSON form, e.g. `{"Custom": 1}` or `"InvalidAccountData"`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InstructionFailure {
    pub index: usize,
    pub error: Value,
    pub reason: String,
}

impl InstructionFailure {
    /// `meta.err` as a real node reports it.
    pub(crate) fn to_json(&self) -> Value {
        json!({"InstructionError": [self.index, self.error]})
    }
}

fn supported(program: &Pubkey) -> bool {
    *program == tx::system_program()
        || tx::is_token_program(program)
        || *program == tx::associated_token_program()
        || *program == tx::memo_program()
        || *program == tx::memo_v1_program()
        || *program == tx::compute_budget_program()
        || *program == pool::program_id()
}

/// The fee `message` pays: 5,000 lamports per signature plus the priority fee its compute
/// budget asks for (what `getFeeForMessage` answers).
pub(crate) fn fee(message: &Message) -> Result<u64, BudgetError> {
    let budget = compute_budget::of(message)?;
    Ok(FEE_PER_SIGNATURE
        .saturating_mul(u64::from(message.header.num_required_signatures))
        .saturating_add(budget.priority_fee()))
}

/// Check the programs and the compute budget, and charge the fee. Returns the fee.
pub(crate) fn charge_fee(message: &Message, accounts: &mut Accounts) -> Result<u64, Refusal> {
    for ix in &message.instructions {
        let program = message.account_keys[usize::from(ix.program_id_index)];
        if !supported(&program) {
            return Err(Refusal::UnsupportedProgram(program));
        }
    }
    let fee = fee(message)?;
    let payer = message.account_keys[0];
    match accounts.get_mut(&payer) {
        Some(account) if account.kind == Kind::Wallet && account.lamports >= fee => {
            account.lamports -= fee;
            Ok(fee)
        }
        _ => Err(Refusal::InsufficientFundsForFee(payer)),
    }
}

/// Why a transaction that ran did not succeed: an instruction failed, or it would leave an
/// account below rent exemption. It lands failed (fee charged, nothing else moves).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TransactionFailure {
    Instruction(InstructionFailure),
    Rent(InsufficientFundsForRent),
}

impl TransactionFailure {
    /// `meta.err` as a node reports it.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            TransactionFailure::Instruction(f) => f.to_json(),
            TransactionFailure::Rent(r) => r.to_json(),
        }
    }

    /// The text after "Transaction simulation failed: " in a node's preflight error.
    pub(crate) fn message(&self) -> String {
        match self {
            TransactionFailure::Instruction(f) => {
                format!(
                    "Error processing Instruction {}: {}",
                    f.index,
                    error_text(&f.error)
                )
            }
            TransactionFailure::Rent(r) => r.message(),
        }
    }
}

/// A whole transaction run against `pre`: the fee, the accounts after it (only the fee moved
/// when it failed), its failure if any, and its program log and compute units.
#[derive(Debug, Clone)]
pub(crate) struct Processed {
    pub fee: u64,
    pub post: Accounts,
    pub failure: Option<TransactionFailure>,
    pub trace: Trace,
}

/// Run `message` the way the bank does: refuse what cannot run at all, charge the fee,
/// execute every instruction, then apply the rent rule to whatever changed.
pub(crate) fn process(message: &Message, pre: &Accounts) -> Result<Processed, Refusal> {
    let mut after_fee = pre.clone();
    let fee = charge_fee(message, &mut after_fee)?;
    let budget = compute_budget::of(message)?;
    let mut post = after_fee.clone();
    let mut trace = Trace::default();
    let failure = match run(message, &mut post, budget.unit_limit, &mut trace) {
        Err(failure) => Some(TransactionFailure::Instruction(failure)),
        Ok(()) => rent::check(message, pre, &post)
            .err()
            .map(TransactionFailure::Rent),
    };
    if failure.is_some() {
        post = after_fee;
        trace.outputs.clear();
    }
    Ok(Processed {
        fee,
        post,
        failure,
        trace,
    })
}

/// What execution produced besides account changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// Per instruction, what only execution knew (a pool swap's amount out).
    pub outputs: Vec<Option<u64>>,
    /// The program log a node records (`meta.logMessages`, `simulateTransaction`'s `logs`).
    pub logs: Vec<String>,
    /// Compute units the instructions used.
    pub units_consumed: u64,
}

/// Run every instruction in order; on failure `accounts` is left partly modified and the
/// caller must discard it (it keeps its post-fee copy).
#[cfg(test)]
pub(crate) fn execute(
    message: &Message,
    accounts: &mut Accounts,
) -> Result<(), InstructionFailure> {
    execute_traced(message, accounts).map(|_| ())
}

/// [`execute`], also returning per instruction what only execution knows (a pool swap's
/// output amount), for the parsed rendering of the transaction.
#[cfg(test)]
pub(crate) fn execute_traced(
    message: &Message,
    accounts: &mut Accounts,
) -> Result<Vec<Option<u64>>, InstructionFailure> {
    let mut trace = Trace::default();
    run(message, accounts, compute_budget::MAX_UNITS, &mut trace)?;
    Ok(trace.outputs)
}

/// The units each program uses per instruction on simnet: fixed figures close to what the
/// real programs use for these instructions (the simnet does not meter bytecode).
fn units(program: &Pubkey, data: &[u8]) -> u64 {
    if *program == tx::system_program() || *program == tx::compute_budget_program() {
        150
    } else if tx::is_token_program(program) {
        match data.first() {
            Some(12) => 6_200,
            _ => 4_650,
        }
    } else if *program == tx::associated_token_program() {
        21_000
    } else if *program == tx::memo_program() || *program == tx::memo_v1_program() {
        // The memo program's cost grows with the text it checks and logs.
        2_000 + 30 * data.len() as u64
    } else {
        30_000
    }
}

/// Programs the runtime runs natively log no "consumed" line.
fn is_builtin(program: &Pubkey) -> bool {
    *program == tx::system_program() || *program == tx::compute_budget_program()
}

fn run(
    message: &Message,
    accounts: &mut Accounts,
    unit_limit: u32,
    trace: &mut Trace,
) -> Result<(), InstructionFailure> {
    let mut remaining = u64::from(unit_limit);
    for (index, ix) in message.instructions.iter().enumerate() {
        let program = message.account_keys[usize::from(ix.program_id_index)];
        let metas: Vec<Meta> = ix
            .accounts
            .iter()
            .map(|&i| Meta {
                key: message.account_keys[usize::from(i)],
                signer: message.is_signer(usize::from(i)),
                writable: message.is_writable(usize::from(i)),
            })
            .collect();
        trace.logs.push(format!("Program {program} invoke [1]"));
        trace.logs.extend(program_logs(&program, &ix.data));
        let cost = units(&program, &ix.data);
        let mut output = None;
        let outcome = if cost > remaining {
            err(
                "ComputationalBudgetExceeded",
                format!("exceeded CUs meter at BPF instruction (limit {unit_limit})"),
            )
        } else if program == tx::system_program() {
            system(&metas, &ix.data, accounts)
        } else if program == pool::program_id() {
            crate::amm::process(&metas, &ix.data, accounts).map(|out| output = out)
        } else if tx::is_token_program(&program) {
            token(&program, &metas, &ix.data, accounts)
        } else if program == tx::associated_token_program() {
            associated_token(&metas, &ix.data, accounts)
        } else if program == tx::memo_program() || program == tx::memo_v1_program() {
            memo(&program, &metas, &ix.data)
        } else {
            // ComputeBudget: read before execution (`compute_budget::of`); nothing to run.
            Ok(())
        };
        let used = cost.min(remaining);
        remaining -= used;
        trace.units_consumed += used;
        if !is_builtin(&program) {
            trace.logs.push(format!(
                "Program {program} consumed {used} of {} compute units",
                remaining + used
            ));
        }
        if let Err((error, reason)) = outcome {
            trace.logs.push(format!("Program log: Error: {reason}"));
            trace
                .logs
                .push(format!("Program {program} failed: {}", error_text(&error)));
            return Err(InstructionFailure {
                index,
                error,
                reason,
            });
        }
        trace.logs.push(format!("Program {program} success"));
        trace.outputs.push(output);
    }
    Ok(())
}

/// What a program logs about an instruction before running it, as the real programs do.
fn program_logs(program: &Pubkey, data: &[u8]) -> Vec<String> {
    if tx::is_token_program(program) {
        let name = match data.first() {
            Some(1) => "InitializeAccount",
            Some(3) => "Transfer",
            Some(9) => "CloseAccount",
            Some(12) => "TransferChecked",
            Some(16) => "InitializeAccount2",
            Some(18) => "InitializeAccount3",
            _ => return vec![],
        };
        return vec![format!("Program log: Instruction: {name}")];
    }
    if *program == tx::associated_token_program() {
        let name = match data.first() {
            None | Some(0) => "Create",
            Some(1) => "CreateIdempotent",
            _ => return vec![],
        };
        return vec![format!("Program log: {name}")];
    }
    if (*program == tx::memo_program() || *program == tx::memo_v1_program())
        && let Ok(text) = std::str::from_utf8(data)
    {
        return vec![format!("Program log: Memo (len {}): {text:?}", data.len())];
    }
    vec![]
}

/// How a node words an instruction error in logs and preflight messages.
pub(crate) fn error_text(error: &Value) -> String {
    if let Some(code) = error.get("Custom").and_then(Value::as_u64) {
        return format!("custom program error: {code:#x}");
    }
    match error.as_str().unwrap_or_default() {
        "InvalidArgument" => "invalid program argument".to_owned(),
        "InvalidInstructionData" => "invalid instruction data".to_owned(),
        "InvalidAccountData" => "invalid account data for instruction".to_owned(),
        "MissingRequiredSignature" => "missing required signature for instruction".to_owned(),
        "NotEnoughAccountKeys" => "insufficient account keys for instruction".to_owned(),
        "IncorrectProgramId" => "incorrect program id for instruction".to_owned(),
        "InvalidSeeds" => "Provided seeds do not result in a valid address".to_owned(),
        "ArithmeticOverflow" => "Program arithmetic overflowed".to_owned(),
        "ComputationalBudgetExceeded" => "Computational budget exceeded".to_owned(),
        other => other.to_owned(),
    }
}

/// An instruction's account as the program sees it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    pub key: Pubkey,
    pub signer: bool,
    pub writable: bool,
}

pub(super) type Outcome = Result<(), (Value, String)>;

pub(super) fn err(code: &str, reason: impl Into<String>) -> Outcome {
    Err((json!(code), reason.into()))
}

pub(super) fn custom(code: u32, reason: impl Into<String>) -> Outcome {
    Err((json!({ "Custom": code }), reason.into()))
}

pub(super) fn account(metas: &[Meta], i: usize) -> Result<&Meta, (Value, String)> {
    metas.get(i).ok_or_else(|| {
        (
            json!("NotEnoughAccountKeys"),
            "the instruction lists too few accounts".to_owned(),
        )
    })
}

/// The largest account `CreateAccount` may allocate (10 MiB, as on Solana).
const MAX_ACCOUNT_SPACE: u64 = 10 * 1024 * 1024;

fn system(metas: &[Meta], data: &[u8], accounts: &mut Accounts) -> Outcome {
    let lamports = match instructions::decode_system(data) {
        Some(SystemInstruction::Transfer { lamports }) => lamports,
        Some(SystemInstruction::CreateAccount {
            lamports,
            space,
            owner,
        }) => return create_account(metas, accounts, lamports, space, owner),
        None => {
            return err(
                "InvalidInstructionData",
                "only the System Transfer and CreateAccount instructions are supported",
            );
        }
    };
    let (from, to) = (account(metas, 0)?, account(metas, 1)?);
    if !from.signer {
        return err(
            "MissingRequiredSignature",
            format!("{} must sign the transfer", from.key),
        );
    }
    if !from.writable || !to.writable {
        return err("InvalidArgument", "both transfer accounts must be writable");
    }
    spend_lamports(accounts, &from.key, lamports)?;
    credit(accounts, &to.key, lamports).map_err(|r| (json!("ArithmeticOverflow"), r))
}

/// Take `lamports` from the system account `from`, as the System program does before a
/// transfer or a new account: it must be a plain wallet holding enough
/// (SystemError::ResultWithNegativeLamports otherwise).
fn spend_lamports(accounts: &mut Accounts, from: &Pubkey, lamports: u64) -> Outcome {
    let source = accounts.get(from).cloned().unwrap_or(Account::wallet(0));
    if source.kind != Kind::Wallet {
        return err("InvalidArgument", format!("{from} is not a system account"));
    }
    if source.lamports < lamports {
        return custom(
            1,
            format!("{from} has {} lamports, needs {lamports}", source.lamports),
        );
    }
    debit(accounts, from, lamports);
    Ok(())
}

/// `CreateAccount`: the new account must sign and not exist yet; it receives `lamports` from
/// `from` and `space` zeroed bytes owned by `owner`.
fn create_account(
    metas: &[Meta],
    accounts: &mut Accounts,
    lamports: u64,
    space: u64,
    owner: Pubkey,
) -> Outcome {
    let (from, new) = (account(metas, 0)?, account(metas, 1)?);
    if !from.signer || !new.signer {
        return err(
            "MissingRequiredSignature",
            "the funding and the new account must both sign",
        );
    }
    if !from.writable || !new.writable {
        return err("InvalidArgument", "both accounts must be writable");
    }
    if accounts
        .get(&new.key)
        .is_some_and(|a| a.lamports > 0 || a.kind != Kind::Wallet)
    {
        // SystemError::AccountAlreadyInUse
        return custom(0, format!("{} is already in use", new.key));
    }
    if space > MAX_ACCOUNT_SPACE {
        // SystemError::InvalidAccountDataLength
        return custom(3, format!("{space} bytes is more than an account may hold"));
    }
    spend_lamports(accounts, &from.key, lamports)?;
    let kind = if owner == tx::system_program() && space == 0 {
        Kind::Wallet
    } else {
        Kind::Uninitialized {
            program: owner,
            space,
        }
    };
    accounts.insert(new.key, Account { lamports, kind });
    Ok(())
}

fn debit(accounts: &mut Accounts, key: &Pubkey, lamports: u64) {
    if let Some(account) = accounts.get_mut(key) {
        account.lamports -= lamports.min(account.lamports);
    }
}

fn credit(accounts: &mut Accounts, key: &Pubkey, lamports: u64) -> Result<(), String> {
    let account = accounts.entry(*key).or_insert(Account::wallet(0));
    account.lamports = account
        .lamports
        .checked_add(lamports)
        .ok_or_else(|| format!("{key} would overflow"))?;
    Ok(())
}

fn token(program: &Pubkey, metas: &[Meta], data: &[u8], accounts: &mut Accounts) -> Outcome {
    let Some(instruction) = instructions::decode_token(data) else {
        return err(
            "InvalidInstructionData",
            "only the SPL Token Transfer, TransferChecked, InitializeAccount (1, 2, 3) and CloseAccount instructions are supported",
        );
    };
    let (source, mint_meta, destination, authority, amount, decimals) = match instruction {
        TokenInstruction::InitializeAccount { variant, owner } => {
            return initialize_account(program, metas, variant, owner, accounts);
        }
        TokenInstruction::CloseAccount => return close_account(program, metas, accounts),
        TokenInstruction::Transfer { amount } => (
            account(metas, 0)?,
            None,
            account(metas, 1)?,
            account(metas, 2)?,
            amount,
            None,
        ),
        TokenInstruction::TransferChecked { amount, decimals } => (
            account(metas, 0)?,
            Some(account(metas, 1)?),
            account(metas, 2)?,
            account(metas, 3)?,
            amount,
            Some(decimals),
        ),
    };
    let token_state = |key: &Pubkey| match accounts.get(key).map(|a| &a.kind) {
        Some(Kind::Token {
            program: p,
            mint,
            owner,
            amount,
            decimals,
        }) if p == program => Some((*mint, *owner, *amount, *decimals)),
        _ => None,
    };
    let Some((mint, owner, balance, mint_decimals)) = token_state(&source.key) else {
        return err(
            "InvalidAccountData",
            format!("{} is not a token account of {program}", source.key),
        );
    };
    let Some((dest_mint, _, dest_balance, _)) = token_state(&destination.key) else {
        return err(
            "InvalidAccountData",
            format!(
                "{} is not a token account of {program} (create it first)",
                destination.key
            ),
        );
    };
    if !source.writable || !destination.writable {
        return err("InvalidArgument", "source and destination must be writable");
    }
    if dest_mint != mint {
        return custom(3, "the source and destination hold different mints");
    }
    if let Some(mint_meta) = mint_meta
        && mint_meta.key != mint
    {
        return custom(3, format!("the mint account is not {mint}"));
    }
    if decimals.is_some_and(|d| d != mint_decimals) {
        return custom(18, format!("the mint has {mint_decimals} decimals"));
    }
    if authority.key != owner {
        return custom(4, format!("{} does not own {}", authority.key, source.key));
    }
    if !authority.signer {
        return err(
            "MissingRequiredSignature",
            format!("{} must sign", authority.key),
        );
    }
    if balance < amount {
        return custom(1, format!("{} holds {balance}, needs {amount}", source.key));
    }
    if source.key == destination.key {
        return Ok(());
    }
    let Some(new_dest) = dest_balance.checked_add(amount) else {
        return custom(14, "the destination balance would overflow");
    };
    set_amount(accounts, &source.key, balance - amount);
    set_amount(accounts, &destination.key, new_dest);
    Ok(())
}

/// `InitializeAccount` (1, 2 or 3): an account created for this token program becomes an empty
/// token account of the mint, owned by any address (the way a non-associated token account is
/// opened). It must be rent-exempt, as the program requires.
fn initialize_account(
    program: &Pubkey,
    metas: &[Meta],
    variant: InitializeVariant,
    owner: Option<Pubkey>,
    accounts: &mut Accounts,
) -> Outcome {
    let target = account(metas, 0)?;
    let mint = account(metas, 1)?;
    let owner = match (variant, owner) {
        (_, Some(owner)) => owner,
        (_, None) => account(metas, 2)?.key,
    };
    if !target.writable {
        return err("InvalidArgument", "the account must be writable");
    }
    let Some(Kind::Mint {
        program: mint_program,
        decimals,
        ..
    }) = accounts.get(&mint.key).map(|a| a.kind.clone())
    else {
        // TokenError::InvalidMint
        return custom(2, format!("{} is not a mint", mint.key));
    };
    if mint_program != *program {
        return err(
            "IncorrectProgramId",
            format!("{} belongs to {mint_program}", mint.key),
        );
    }
    let lamports = match accounts.get(&target.key) {
        Some(Account {
            lamports,
            kind: Kind::Uninitialized { program: p, space },
        }) if p == program && *space == rent::TOKEN_ACCOUNT_LEN as u64 => *lamports,
        Some(Account {
            kind: Kind::Token { .. },
            ..
        }) => {
            // TokenError::AlreadyInUse
            return custom(6, format!("{} is already initialized", target.key));
        }
        _ => {
            return err(
                "InvalidAccountData",
                format!(
                    "{} is not an uninitialized token account of {program}",
                    target.key
                ),
            );
        }
    };
    if lamports < rent::minimum_balance(rent::TOKEN_ACCOUNT_LEN) {
        // TokenError::NotRentExempt
        return custom(0, format!("{} is not rent-exempt", target.key));
    }
    accounts.insert(
        target.key,
        Account {
            lamports,
            kind: Kind::Token {
                program: *program,
                mint: mint.key,
                owner,
                amount: 0,
                decimals,
            },
        },
    );
    Ok(())
}

/// `CloseAccount`: the owner (signing) closes an empty token account; all its lamports go to the
/// destination and the account no longer exists.
fn close_account(program: &Pubkey, metas: &[Meta], accounts: &mut Accounts) -> Outcome {
    let (target, destination, authority) =
        (account(metas, 0)?, account(metas, 1)?, account(metas, 2)?);
    let Some(Account {
        lamports,
        kind:
            Kind::Token {
                program: p,
                owner,
                amount,
                ..
            },
    }) = accounts.get(&target.key).cloned()
    else {
        return err(
            "InvalidAccountData",
            format!("{} is not a token account of {program}", target.key),
        );
    };
    if p != *program {
        return err(
            "IncorrectProgramId",
            format!("{} belongs to {p}", target.key),
        );
    }
    if !target.writable || !destination.writable {
        return err(
            "InvalidArgument",
            "account and destination must be writable",
        );
    }
    if target.key == destination.key {
        return err(
            "InvalidAccountData",
            "an account cannot be closed into itself",
        );
    }
    if amount != 0 {
        // TokenError::NonNativeHasBalance
        return custom(11, format!("{} still holds {amount}", target.key));
    }
    if authority.key != owner {
        return custom(4, format!("{} does not own {}", authority.key, target.key));
    }
    if !authority.signer {
        return err(
            "MissingRequiredSignature",
            format!("{} must sign", authority.key),
        );
    }
    credit(accounts, &destination.key, lamports).map_err(|r| (json!("ArithmeticOverflow"), r))?;
    accounts.remove(&target.key);
    Ok(())
}

fn set_amount(accounts: &mut Accounts, key: &Pubkey, new: u64) {
    if let Some(Account {
        kind: Kind::Token { amount, .. },
        ..
    }) = accounts.get_mut(key)
    {
        *amount = new;
    }
}

fn associated_token(metas: &[Meta], data: &[u8], accounts: &mut Accounts) -> Outcome {
    let Some(instruction) = instructions::decode_ata(data) else {
        return err(
            "InvalidInstructionData",
            "only Create and CreateIdempotent are supported",
        );
    };
    let payer = account(metas, 0)?;
    let ata = account(metas, 1)?;
    let wallet = account(metas, 2)?;
    let mint = account(metas, 3)?;
    let token_program = account(metas, 5)?;
    let Some(Kind::Mint {
        program, decimals, ..
    }) = accounts.get(&mint.key).map(|a| a.kind.clone())
    else {
        return err("InvalidAccountData", format!("{} is not a mint", mint.key));
    };
    if program != token_program.key {
        return err(
            "IncorrectProgramId",
            format!("{} belongs to {program}", mint.key),
        );
    }
    if tx::associated_token_address(&wallet.key, &mint.key, &program) != ata.key {
        return err(
            "InvalidSeeds",
            format!("{} is not the associated token account", ata.key),
        );
    }
    if let Some(existing) = accounts.get(&ata.key) {
        match (&existing.kind, instruction) {
            (Kind::Token { owner, mint: m, .. }, AtaInstruction::CreateIdempotent)
                if *owner == wallet.key && *m == mint.key =>
            {
                return Ok(());
            }
            (Kind::Token { .. }, _) => {
                return custom(0, format!("{} is already in use", ata.key));
            }
            _ => {}
        }
    }
    if !payer.signer || !payer.writable || !ata.writable {
        return err(
            "MissingRequiredSignature",
            "the payer must sign and both accounts be writable",
        );
    }
    let prefunded = accounts.get(&ata.key).map_or(0, |a| a.lamports);
    let needed = TOKEN_ACCOUNT_RENT.saturating_sub(prefunded);
    let paying = accounts.get(&payer.key).map_or(0, |a| a.lamports);
    if paying < needed {
        return custom(
            1,
            format!("{} cannot pay {needed} lamports of rent", payer.key),
        );
    }
    debit(accounts, &payer.key, needed);
    accounts.insert(
        ata.key,
        Account {
            lamports: prefunded + needed,
            kind: Kind::Token {
                program,
                mint: mint.key,
                owner: wallet.key,
                amount: 0,
                decimals,
            },
        },
    );
    Ok(())
}

fn memo(program: &Pubkey, metas: &[Meta], data: &[u8]) -> Outcome {
    if std::str::from_utf8(data).is_err() {
        return err("InvalidInstructionData", "a memo must be UTF-8");
    }
    // Memo v2 requires every listed account to sign; v1 ignores accounts.
    if *program == tx::memo_program()
        && let Some(unsigned) = metas.iter().find(|m| !m.signer)
    {
        return err(
            "MissingRequiredSignature",
            format!("memo account {} did not sign", unsigned.key),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crucible_solana::tx::message::Instruction;

    struct World {
        accounts: Accounts,
        mint: Pubkey,
        alice: Pubkey,
        bob: Pubkey,
        alice_ata: Pubkey,
        bob_ata: Pubkey,
    }

    fn world() -> World {
        let (alice, bob, mint) = (Pubkey([1; 32]), Pubkey([2; 32]), Pubkey([3; 32]));
        let program = tx::token_program();
        let alice_ata = tx::associated_token_address(&alice, &mint, &program);
        let bob_ata = tx::associated_token_address(&bob, &mint, &program);
        let token = |owner: Pubkey, amount: u64| Account {
            lamports: TOKEN_ACCOUNT_RENT,
            kind: Kind::Token {
                program,
                mint,
                owner,
                amount,
                decimals: 6,
            },
        };
        let mut accounts = Accounts::new();
        accounts.insert(alice, Account::wallet(10_000_000));
        accounts.insert(
            mint,
            Account {
                lamports: 1,
                kind: Kind::Mint {
                    program,
                    decimals: 6,
                    supply: 0,
                    authority: None,
                },
            },
        );
        accounts.insert(alice_ata, token(alice, 100));
        accounts.insert(bob_ata, token(bob, 0));
        World {
            accounts,
            mint,
            alice,
            bob,
            alice_ata,
            bob_ata,
        }
    }

    fn run(w: &mut World, ixs: &[Instruction]) -> Result<(), InstructionFailure> {
        let message = Message::new_legacy(ixs, &w.alice, [0; 32]);
        charge_fee(&message, &mut w.accounts).expect("fee");
        execute(&message, &mut w.accounts)
    }

    fn amount(w: &World, key: &Pubkey) -> u64 {
        match w.accounts.get(key).map(|a| &a.kind) {
            Some(Kind::Token { amount, .. }) => *amount,
            _ => panic!("not a token account"),
        }
    }

    fn transfer(w: &World, amount: u64, decimals: u8) -> Instruction {
        instructions::token_transfer_checked(
            &tx::token_program(),
            &w.alice_ata,
            &w.mint,
            &w.bob_ata,
            &w.alice,
            amount,
            decimals,
        )
    }

    #[test]
    fn transfer_checked_moves_tokens_and_checks_every_rule() {
        let mut w = world();
        let ix = transfer(&w, 40, 6);
        run(&mut w, &[ix]).expect("transfer");
        assert_eq!((amount(&w, &w.alice_ata), amount(&w, &w.bob_ata)), (60, 40));
        assert_eq!(
            w.accounts[&w.alice].lamports,
            10_000_000 - FEE_PER_SIGNATURE
        );

        let ix = transfer(&w, 61, 6);
        let failure = run(&mut w, &[ix]).expect_err("too much");
        assert_eq!(failure.error, json!({"Custom": 1}));
        let ix = transfer(&w, 1, 9);
        let failure = run(&mut w, &[ix]).expect_err("decimals");
        assert_eq!(failure.error, json!({"Custom": 18}));

        // Bob's account cannot be drained by Alice's signature.
        let mut stolen = transfer(&w, 1, 6);
        stolen.accounts[0].pubkey = w.bob_ata;
        stolen.accounts[2].pubkey = w.alice_ata;
        let failure = run(&mut w, &[stolen]).expect_err("owner");
        assert_eq!(failure.error, json!({"Custom": 4}));

        // The same layout under Token-2022 does not touch Token accounts.
        let mut wrong_program = transfer(&w, 1, 6);
        wrong_program.program_id = tx::token_2022_program();
        let failure = run(&mut w, &[wrong_program]).expect_err("program");
        assert_eq!(failure.error, json!("InvalidAccountData"));
    }

    #[test]
    fn associated_accounts_are_created_once_at_the_derived_address() {
        let mut w = world();
        let carol = Pubkey([4; 32]);
        let create = instructions::create_associated_token_account_idempotent(
            &w.alice,
            &carol,
            &w.mint,
            &tx::token_program(),
        );
        run(&mut w, std::slice::from_ref(&create)).expect("create");
        let ata = tx::associated_token_address(&carol, &w.mint, &tx::token_program());
        assert_eq!(amount(&w, &ata), 0);
        assert_eq!(
            w.accounts[&w.alice].lamports,
            10_000_000 - FEE_PER_SIGNATURE - TOKEN_ACCOUNT_RENT
        );
        run(&mut w, std::slice::from_ref(&create)).expect("idempotent");
        let mut plain = create.clone();
        plain.data = vec![0];
        assert_eq!(
            run(&mut w, &[plain]).expect_err("exists").error,
            json!({"Custom": 0})
        );
        let mut wrong_address = create;
        wrong_address.accounts[1].pubkey = Pubkey([5; 32]);
        assert_eq!(
            run(&mut w, &[wrong_address]).expect_err("seeds").error,
            json!("InvalidSeeds")
        );
    }

    #[test]
    fn fees_programs_and_memo_signers_are_enforced() {
        let mut w = world();
        let memo_by_bob = instructions::memo("hi", &[w.bob]);
        let message = Message::new_legacy(&[memo_by_bob], &w.alice, [0; 32]);
        // Bob is listed as a signer, so the message itself requires his signature.
        assert_eq!(message.header.num_required_signatures, 2);

        let mut unsigned = instructions::memo("hi", &[]);
        unsigned
            .accounts
            .push(tx::message::AccountMeta::readonly(w.bob, false));
        assert_eq!(
            run(&mut w, &[unsigned]).expect_err("unsigned").error,
            json!("MissingRequiredSignature")
        );
        run(&mut w, &[instructions::memo("ok", &[])]).expect("memo");

        let foreign = Instruction {
            program_id: Pubkey([9; 32]),
            accounts: vec![],
            data: vec![],
        };
        let message = Message::new_legacy(&[foreign], &w.alice, [0; 32]);
        assert!(matches!(
            charge_fee(&message, &mut w.accounts),
            Err(Refusal::UnsupportedProgram(_))
        ));
        let broke = Message::new_legacy(&[instructions::memo("x", &[])], &w.bob, [0; 32]);
        assert!(matches!(
            charge_fee(&broke, &mut w.accounts),
            Err(Refusal::InsufficientFundsForFee(_))
        ));
    }
}
