//! The Crucible pool program: a constant-product (x·y = k) SOL/USDC market that runs on the
//! embedded simnet. This module owns what clients and the simnet share: the program id, the
//! addresses of the pool and its vaults, the instruction byte layout (builders and decoder),
//! the pool state's account data layout, the fee and the swap / liquidity arithmetic. The
//! simnet executes the instructions (`simnet::amm`); the CLI quotes and builds them.
//!
//! Custody: the pool holds native SOL as the lamports of its SOL vault (an account owned by the
//! pool program, no rent reserve: every lamport in it is reserve) and USDC in an SPL token
//! account whose owner is the pool state address. All pool addresses are program-derived (off
//! the ed25519 curve), so no key can sign for them: only the program moves their funds.
//!
//! Instruction layout (like SPL's: a 1-byte tag, then little-endian fields):
//! - `0` Initialize — no fields. Accounts: `[payer (signer, writable), pool (w), sol vault (w),
//!   usdc vault (w), lp mint (w), usdc mint, token program]`. Creates the empty pool; the payer
//!   pays the rent of the state account, the USDC vault and the LP mint.
//! - `1` Swap — `direction u8` (0 = sell SOL for USDC, 1 = sell USDC for SOL), `amount_in u64`,
//!   `minimum_out u64`. Accounts: `[user (signer, writable), pool, sol vault (w), usdc vault (w),
//!   user usdc account (w)]`. Exact-in; fails with `SlippageExceeded` when the
//!   output would be below `minimum_out`.
//! - `2` AddLiquidity — `sol_amount u64`, `max_usdc u64`. Accounts: `[user (signer, writable),
//!   pool (w), sol vault (w), usdc vault (w), lp mint (w), user usdc account (w), user lp
//!   account (w)]`. The first deposit sets the price and mints `isqrt(sol·usdc)` LP tokens;
//!   later deposits add USDC in the current ratio (rounded up) and mint LP pro rata (rounded
//!   down), so depositing can never take value from existing providers.

use crucible_solana::tx::message::{AccountMeta, Instruction};
use crucible_solana::tx::{self, Pubkey};
use serde_json::{Value, json};

/// The pool program's id (a fixed, valid base58 32-byte address).
pub const POOL_PROGRAM: &str = "CrucibLeAmm11111111111111111111111111111111";
/// The program's name in parsed (`jsonParsed`) instructions.
pub const PROGRAM_NAME: &str = "crucible-pool";
/// The fee, in basis points of the input amount (0.30 %). It stays in the pool.
pub const FEE_BPS: u64 = 30;
const BPS: u64 = 10_000;
/// Decimals of SOL (lamports).
pub const SOL_DECIMALS: u8 = 9;
/// Decimals of the pool's LP token.
pub(crate) const LP_DECIMALS: u8 = 9;
/// Rent-exempt balances the initializer pays (state account, LP mint).
pub(crate) const POOL_STATE_RENT: u64 = 1_969_920;
pub(crate) const MINT_RENT: u64 = 1_461_600;
/// Bytes of the pool state account's data (see [`PoolState::to_bytes`]).
pub(crate) const POOL_STATE_LEN: usize = 1 + 32 * 4 + 8 + 2;
const STATE_VERSION: u8 = 1;

const TAG_INITIALIZE: u8 = 0;
const TAG_SWAP: u8 = 1;
const TAG_ADD_LIQUIDITY: u8 = 2;

pub(crate) fn program_id() -> Pubkey {
    POOL_PROGRAM.parse().unwrap_or_default()
}

fn derive(seeds: &[&[u8]]) -> Pubkey {
    // 256 consecutive on-curve hashes have probability 2^-256; treat it as impossible.
    tx::find_program_address(seeds, &program_id())
        .map(|(address, _)| address)
        .unwrap_or_default()
}

/// The addresses of the one SOL/USDC pool (independent of the USDC mint, which the pool state
/// records, so a client needs only the program id to find it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolAddresses {
    pub pool: Pubkey,
    pub sol_vault: Pubkey,
    pub usdc_vault: Pubkey,
    pub lp_mint: Pubkey,
}

impl PoolAddresses {
    /// The pool's program-derived addresses (seeds `["pool", "SOL/USDC"]`, then each account's
    /// name and the pool).
    pub fn sol_usdc() -> Self {
        let pool = derive(&[b"pool", b"SOL/USDC"]);
        PoolAddresses {
            pool,
            sol_vault: derive(&[b"sol_vault", &pool.0]),
            usdc_vault: derive(&[b"usdc_vault", &pool.0]),
            lp_mint: derive(&[b"lp_mint", &pool.0]),
        }
    }
}

/// Which token the user sells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    SellSol,
    SellUsdc,
}

impl Direction {
    /// The direction's name in the pool's parsed instructions and logs.
    pub fn name(self) -> &'static str {
        match self {
            Direction::SellSol => "solToUsdc",
            Direction::SellUsdc => "usdcToSol",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PoolInstruction {
    Initialize,
    Swap {
        direction: Direction,
        amount_in: u64,
        minimum_out: u64,
    },
    AddLiquidity {
        sol_amount: u64,
        max_usdc: u64,
    },
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// Read an instruction's data; `None` for anything not in the layout (wrong tag or length).
pub(crate) fn decode(data: &[u8]) -> Option<PoolInstruction> {
    match (data.first()?, data.len()) {
        (&TAG_INITIALIZE, 1) => Some(PoolInstruction::Initialize),
        (&TAG_SWAP, 18) => Some(PoolInstruction::Swap {
            direction: match data[1] {
                0 => Direction::SellSol,
                1 => Direction::SellUsdc,
                _ => return None,
            },
            amount_in: u64_at(data, 2)?,
            minimum_out: u64_at(data, 10)?,
        }),
        (&TAG_ADD_LIQUIDITY, 17) => Some(PoolInstruction::AddLiquidity {
            sol_amount: u64_at(data, 1)?,
            max_usdc: u64_at(data, 9)?,
        }),
        _ => None,
    }
}

pub(crate) fn encode(instruction: &PoolInstruction) -> Vec<u8> {
    match *instruction {
        PoolInstruction::Initialize => vec![TAG_INITIALIZE],
        PoolInstruction::Swap {
            direction,
            amount_in,
            minimum_out,
        } => {
            let mut data = vec![TAG_SWAP, u8::from(direction == Direction::SellUsdc)];
            data.extend(amount_in.to_le_bytes());
            data.extend(minimum_out.to_le_bytes());
            data
        }
        PoolInstruction::AddLiquidity {
            sol_amount,
            max_usdc,
        } => {
            let mut data = vec![TAG_ADD_LIQUIDITY];
            data.extend(sol_amount.to_le_bytes());
            data.extend(max_usdc.to_le_bytes());
            data
        }
    }
}

/// Create the SOL/USDC pool (its state, SOL vault, USDC vault and LP mint), paid by `payer`.
pub fn initialize(payer: &Pubkey, usdc_mint: &Pubkey) -> Instruction {
    let a = PoolAddresses::sol_usdc();
    Instruction {
        program_id: program_id(),
        accounts: vec![
            AccountMeta::writable(*payer, true),
            AccountMeta::writable(a.pool, false),
            AccountMeta::writable(a.sol_vault, false),
            AccountMeta::writable(a.usdc_vault, false),
            AccountMeta::writable(a.lp_mint, false),
            AccountMeta::readonly(*usdc_mint, false),
            AccountMeta::readonly(tx::token_program(), false),
        ],
        data: encode(&PoolInstruction::Initialize),
    }
}

/// A swap by `user`, whose USDC is (or is paid to) `user_usdc`.
pub fn swap(
    user: &Pubkey,
    user_usdc: &Pubkey,
    direction: Direction,
    amount_in: u64,
    minimum_out: u64,
) -> Instruction {
    let a = PoolAddresses::sol_usdc();
    Instruction {
        program_id: program_id(),
        accounts: vec![
            AccountMeta::writable(*user, true),
            AccountMeta::readonly(a.pool, false),
            AccountMeta::writable(a.sol_vault, false),
            AccountMeta::writable(a.usdc_vault, false),
            AccountMeta::writable(*user_usdc, false),
        ],
        data: encode(&PoolInstruction::Swap {
            direction,
            amount_in,
            minimum_out,
        }),
    }
}

/// Deposit `sol_amount` lamports and at most `max_usdc` raw USDC (at the pool's ratio) from
/// `user`, minting LP tokens into `user_lp`.
pub fn add_liquidity(
    user: &Pubkey,
    user_usdc: &Pubkey,
    user_lp: &Pubkey,
    sol_amount: u64,
    max_usdc: u64,
) -> Instruction {
    let a = PoolAddresses::sol_usdc();
    Instruction {
        program_id: program_id(),
        accounts: vec![
            AccountMeta::writable(*user, true),
            AccountMeta::writable(a.pool, false),
            AccountMeta::writable(a.sol_vault, false),
            AccountMeta::writable(a.usdc_vault, false),
            AccountMeta::writable(a.lp_mint, false),
            AccountMeta::writable(*user_usdc, false),
            AccountMeta::writable(*user_lp, false),
        ],
        data: encode(&PoolInstruction::AddLiquidity {
            sol_amount,
            max_usdc,
        }),
    }
}

/// The pool state account's data: `version u8 (1)`, `usdc_mint [32]`, `sol_vault [32]`,
/// `usdc_vault [32]`, `lp_mint [32]`, `lp_supply u64 LE`, `fee_bps u16 LE` (139 bytes).
/// The reserves are not copied here: they are the vault balances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolState {
    pub usdc_mint: Pubkey,
    pub sol_vault: Pubkey,
    pub usdc_vault: Pubkey,
    pub lp_mint: Pubkey,
    pub lp_supply: u64,
    pub fee_bps: u16,
}

impl PoolState {
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(POOL_STATE_LEN);
        out.push(STATE_VERSION);
        for key in [
            self.usdc_mint,
            self.sol_vault,
            self.usdc_vault,
            self.lp_mint,
        ] {
            out.extend(key.0);
        }
        out.extend(self.lp_supply.to_le_bytes());
        out.extend(self.fee_bps.to_le_bytes());
        out
    }

    /// Read a state account's data (`None`: not a pool state of this version).
    pub fn from_bytes(data: &[u8]) -> Option<Self> {
        if data.len() != POOL_STATE_LEN || data[0] != STATE_VERSION {
            return None;
        }
        let key = |i: usize| -> Option<Pubkey> {
            Some(Pubkey(data.get(1 + 32 * i..33 + 32 * i)?.try_into().ok()?))
        };
        Some(PoolState {
            usdc_mint: key(0)?,
            sol_vault: key(1)?,
            usdc_vault: key(2)?,
            lp_mint: key(3)?,
            lp_supply: u64_at(data, 129)?,
            fee_bps: u16::from_le_bytes(data.get(137..139)?.try_into().ok()?),
        })
    }
}

/// The program's errors, reported as `{"Custom": code}` like any Solana program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PoolError {
    #[error("the pool already exists")]
    AlreadyInitialized,
    #[error("insufficient funds")]
    InsufficientFunds,
    #[error("slippage exceeded: the output is below the minimum")]
    SlippageExceeded,
    #[error("the constant-product invariant would decrease")]
    InvariantViolated,
    #[error("an account is not the one the pool expects")]
    WrongAccount,
    #[error("the pool has no liquidity, or the amount is too small to trade")]
    ZeroAmount,
    #[error("the token account is not owned by the signer")]
    NotOwner,
}

impl PoolError {
    pub(crate) fn code(self) -> u32 {
        match self {
            PoolError::AlreadyInitialized => 0,
            PoolError::InsufficientFunds => 1,
            PoolError::SlippageExceeded => 2,
            PoolError::InvariantViolated => 3,
            PoolError::WrongAccount => 4,
            PoolError::ZeroAmount => 5,
            PoolError::NotOwner => 6,
        }
    }
}

/// Output of an exact-in swap of `amount_in` against reserves `(reserve_in, reserve_out)`:
/// the fee is taken from the input, the rest trades on x·y = k, rounded down (in the pool's
/// favour). `None` when a reserve is empty or the output would be zero.
pub fn quote(amount_in: u64, reserve_in: u64, reserve_out: u64) -> Option<u64> {
    if reserve_in == 0 || reserve_out == 0 {
        return None;
    }
    let after_fee = u128::from(amount_in) * u128::from(BPS - FEE_BPS);
    let out = after_fee * u128::from(reserve_out)
        / (u128::from(reserve_in) * u128::from(BPS) + after_fee);
    u64::try_from(out).ok().filter(|&out| out > 0)
}

/// The USDC needed and LP minted when depositing `sol_amount` into a pool with reserves
/// `(sol, usdc)` and `lp_supply` LP tokens. `max_usdc` is the deposit itself for an empty pool.
pub(crate) fn deposit(
    sol_amount: u64,
    max_usdc: u64,
    reserves: (u64, u64),
    lp_supply: u64,
) -> Option<(u64, u64)> {
    let (sol, usdc) = reserves;
    if sol == 0 || usdc == 0 || lp_supply == 0 {
        let lp = isqrt(u128::from(sol_amount) * u128::from(max_usdc));
        return u64::try_from(lp)
            .ok()
            .filter(|&lp| lp > 0)
            .map(|lp| (max_usdc, lp));
    }
    let usdc_in = (u128::from(sol_amount) * u128::from(usdc)).div_ceil(u128::from(sol));
    let lp = u128::from(sol_amount) * u128::from(lp_supply) / u128::from(sol);
    Some((u64::try_from(usdc_in).ok()?, u64::try_from(lp).ok()?)).filter(|&(_, lp)| lp > 0)
}

fn isqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    // Newton's method from above converges to the floor of the root.
    let mut x = n;
    let mut y = x.div_ceil(2);
    while y < x {
        x = y;
        y = (x + n / x) / 2;
    }
    x
}

/// SOL's price in USDC at reserves `(lamports, usdc raw)`, in UI units.
pub fn price(sol_reserve: u64, usdc_reserve: u64, usdc_decimals: u8) -> Option<f64> {
    if sol_reserve == 0 || usdc_reserve == 0 {
        return None;
    }
    let sol = sol_reserve as f64 / 10f64.powi(i32::from(SOL_DECIMALS));
    let usdc = usdc_reserve as f64 / 10f64.powi(i32::from(usdc_decimals));
    Some(usdc / sol)
}

/// The parsed form of a pool instruction for `getTransaction` (jsonParsed); `keys` are the
/// instruction's accounts in order, `amount_out` what a swap paid (known after execution).
pub(crate) fn parsed_info(
    instruction: &PoolInstruction,
    keys: &[String],
    amount_out: Option<u64>,
) -> (&'static str, Value) {
    let key = |i: usize| keys.get(i).cloned().unwrap_or_default();
    match *instruction {
        PoolInstruction::Initialize => (
            "initialize",
            json!({"payer": key(0), "pool": key(1), "solVault": key(2), "usdcVault": key(3),
                   "lpMint": key(4), "usdcMint": key(5), "tokenProgram": key(6)}),
        ),
        PoolInstruction::Swap {
            direction,
            amount_in,
            minimum_out,
        } => (
            "swap",
            json!({"user": key(0), "pool": key(1), "solVault": key(2), "usdcVault": key(3),
                   "userUsdcAccount": key(4), "direction": direction.name(),
                   "amountIn": amount_in.to_string(), "minimumAmountOut": minimum_out.to_string(),
                   "amountOut": amount_out.map(|a| a.to_string()),
                   "feeBps": FEE_BPS}),
        ),
        PoolInstruction::AddLiquidity {
            sol_amount,
            max_usdc,
        } => (
            "addLiquidity",
            json!({"user": key(0), "pool": key(1), "solVault": key(2), "usdcVault": key(3),
                   "lpMint": key(4), "userUsdcAccount": key(5), "userLpAccount": key(6),
                   "solAmount": sol_amount.to_string(), "maxUsdc": max_usdc.to_string()}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_id_is_a_canonical_address_and_pool_addresses_have_no_key() {
        assert_eq!(program_id().to_string(), POOL_PROGRAM);
        let a = PoolAddresses::sol_usdc();
        for key in [a.pool, a.sol_vault, a.usdc_vault, a.lp_mint] {
            assert!(!key.is_on_curve());
            assert_ne!(key, Pubkey::default());
        }
    }

    #[test]
    fn instructions_and_state_round_trip_through_bytes() {
        for ix in [
            PoolInstruction::Initialize,
            PoolInstruction::Swap {
                direction: Direction::SellUsdc,
                amount_in: 5,
                minimum_out: 4,
            },
            PoolInstruction::AddLiquidity {
                sol_amount: 7,
                max_usdc: u64::MAX,
            },
        ] {
            assert_eq!(decode(&encode(&ix)), Some(ix));
        }
        let swap = encode(&PoolInstruction::Swap {
            direction: Direction::SellSol,
            amount_in: 1,
            minimum_out: 2,
        });
        assert_eq!(swap[..2], [1, 0]);
        assert_eq!(swap[2..10], 1u64.to_le_bytes());
        assert_eq!(decode(&[1, 2, 0, 0]), None);
        assert_eq!(decode(&[9]), None);
        let mut bad_direction = swap.clone();
        bad_direction[1] = 7;
        assert_eq!(decode(&bad_direction), None);
        let a = PoolAddresses::sol_usdc();
        let state = PoolState {
            usdc_mint: Pubkey([3; 32]),
            sol_vault: a.sol_vault,
            usdc_vault: a.usdc_vault,
            lp_mint: a.lp_mint,
            lp_supply: 99,
            fee_bps: 30,
        };
        assert_eq!(state.to_bytes().len(), POOL_STATE_LEN);
        assert_eq!(PoolState::from_bytes(&state.to_bytes()), Some(state));
        assert_eq!(PoolState::from_bytes(&[1, 2, 3]), None);
    }

    #[test]
    fn quotes_take_the_fee_from_the_input_and_round_down() {
        // 1 SOL into 100 SOL / 15,000 USDC: 0.997 SOL trades, 15000·0.997/100.997 = 148.0737…
        let out = quote(1_000_000_000, 100_000_000_000, 15_000_000_000).expect("quote");
        assert_eq!(out, 148_073_705);
        assert!(out < 150_000_000);
        assert_eq!(quote(1, 0, 10), None);
        assert_eq!(quote(1, 1_000_000, 1), None);
        // Without a fee the same trade would pay more.
        let no_fee = 15_000_000_000u128 * 1_000_000_000 / 101_000_000_000;
        assert!(u128::from(out) < no_fee);
    }

    #[test]
    fn deposits_keep_the_ratio_and_mint_pro_rata() {
        assert_eq!(deposit(4, 9, (0, 0), 0), Some((9, 6)));
        // Pool 10 SOL : 1,500 USDC with 1,000 LP; 1 SOL needs 150 USDC and mints 100 LP.
        assert_eq!(
            deposit(1_000, 0, (10_000, 1_500_000), 1_000),
            Some((150_000, 100))
        );
        // Rounding: USDC up, LP down.
        assert_eq!(deposit(1, 0, (3, 10), 3), Some((4, 1)));
        assert_eq!(deposit(1, 0, (3, 10), 2), None);
        assert_eq!(
            isqrt(u128::from(u64::MAX) * u128::from(u64::MAX)),
            u128::from(u64::MAX)
        );
    }

    #[test]
    fn the_price_is_usdc_per_sol_in_ui_units() {
        assert_eq!(price(2_000_000_000, 300_000_000, 6), Some(150.0));
        assert_eq!(price(0, 1, 6), None);
    }
}
