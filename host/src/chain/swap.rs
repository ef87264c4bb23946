//! A swap through the simnet pool as any client would make it: read the pool's state and
//! reserves over JSON-RPC, quote, apply a slippage bound, sign a real transaction from the
//! user's keypair, send it, wait for confirmation and read back what it paid. Used by
//! `crucible wallet swap`; works against any node, and says so clearly when the node has no
//! Crucible pool (a real cluster).

use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use super::ChainError;
use super::keypair::Keypair;
use super::pool::{self, Direction, PoolAddresses, PoolState};
use super::rpc::RpcClient;
use super::tx::{self, Message, Transaction};

/// Slippage allowed when the caller gives no minimum: 1 %.
pub(crate) const DEFAULT_SLIPPAGE_BPS: u64 = 100;
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    #[error("no Crucible pool on this cluster ({url}): {detail}")]
    NoPool { url: String, detail: String },
    #[error("{0}")]
    BadAmount(String),
    #[error("the swap transaction {signature} failed: {error}")]
    Failed { signature: String, error: Value },
    #[error("the swap transaction {0} was not confirmed within 30 s")]
    Unconfirmed(String),
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// The pool as read over RPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolView {
    pub state: PoolState,
    pub lamports: u64,
    pub usdc_raw: u64,
    pub usdc_decimals: u8,
}

impl PoolView {
    /// `(reserve_in, reserve_out)` for a swap in `direction`.
    pub(crate) fn reserves(&self, direction: Direction) -> (u64, u64) {
        match direction {
            Direction::SellSol => (self.lamports, self.usdc_raw),
            Direction::SellUsdc => (self.usdc_raw, self.lamports),
        }
    }

    /// Decimals of the token sold and of the token bought.
    pub(crate) fn decimals(&self, direction: Direction) -> (u8, u8) {
        match direction {
            Direction::SellSol => (pool::SOL_DECIMALS, self.usdc_decimals),
            Direction::SellUsdc => (self.usdc_decimals, pool::SOL_DECIMALS),
        }
    }
}

/// Read the pool's state account and its vaults: one `getMultipleAccounts` for the three at one
/// slot (the vaults where the pool program derives them); a pool whose state names other vaults
/// has them read by a second call.
pub(crate) async fn read_pool(rpc: &RpcClient) -> Result<PoolView, SwapError> {
    let a = PoolAddresses::sol_usdc();
    let no_pool = |detail: String| SwapError::NoPool {
        url: rpc.url().to_owned(),
        detail,
    };
    let (pool, sol_vault, usdc_vault) = (
        a.pool.to_string(),
        a.sol_vault.to_string(),
        a.usdc_vault.to_string(),
    );
    let mut accounts = match rpc
        .get_multiple_accounts(&[&pool, &sol_vault, &usdc_vault], "jsonParsed")
        .await
    {
        Ok(accounts) => accounts.into_iter(),
        Err(ChainError::Rpc { message, .. }) => return Err(no_pool(message)),
        Err(other) => return Err(other.into()),
    };
    let Some(info) = accounts.next().flatten() else {
        return Err(no_pool(format!(
            "the pool account {} does not exist",
            a.pool
        )));
    };
    if info["owner"].as_str() != Some(pool::POOL_PROGRAM) {
        return Err(no_pool(format!(
            "{} is not owned by the pool program {}",
            a.pool,
            pool::POOL_PROGRAM
        )));
    }
    // An account nobody parses comes back in base64 under `jsonParsed`, as from a node.
    let state = info["data"][0]
        .as_str()
        .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
        .and_then(|bytes| PoolState::from_bytes(&bytes))
        .ok_or_else(|| no_pool(format!("{} does not hold a pool state", a.pool)))?;
    let (sol, vault) = if state.sol_vault == a.sol_vault && state.usdc_vault == a.usdc_vault {
        (accounts.next().flatten(), accounts.next().flatten())
    } else {
        let (sol_vault, usdc_vault) = (state.sol_vault.to_string(), state.usdc_vault.to_string());
        let mut vaults = rpc
            .get_multiple_accounts(&[&sol_vault, &usdc_vault], "jsonParsed")
            .await?
            .into_iter();
        (vaults.next().flatten(), vaults.next().flatten())
    };
    // A vault that does not exist holds nothing, as `getBalance` would say.
    let lamports = sol
        .as_ref()
        .and_then(|account| account["lamports"].as_u64())
        .unwrap_or(0);
    let vault = vault.ok_or_else(|| no_pool("the pool's USDC vault does not exist".to_owned()))?;
    let amount = &vault["data"]["parsed"]["info"]["tokenAmount"];
    let usdc_raw = amount["amount"].as_str().and_then(|a| a.parse().ok());
    let decimals = amount["decimals"]
        .as_u64()
        .and_then(|d| u8::try_from(d).ok());
    let (Some(usdc_raw), Some(usdc_decimals)) = (usdc_raw, decimals) else {
        return Err(SwapError::Chain(ChainError::Decode {
            method: "getMultipleAccounts".to_owned(),
            detail: "the USDC vault is not a parsed token account".to_owned(),
        }));
    };
    Ok(PoolView {
        state,
        lamports,
        usdc_raw,
        usdc_decimals,
    })
}

/// What a swap is expected to pay, and the minimum it will accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quote {
    pub expected_out: u64,
    pub minimum_out: u64,
}

/// Quote `amount_in` against `view`; without `minimum_out`, accept [`DEFAULT_SLIPPAGE_BPS`] less.
pub(crate) fn quote(
    view: &PoolView,
    direction: Direction,
    amount_in: u64,
    minimum_out: Option<u64>,
) -> Result<Quote, SwapError> {
    let (reserve_in, reserve_out) = view.reserves(direction);
    let expected_out = pool::quote(amount_in, reserve_in, reserve_out).ok_or_else(|| {
        SwapError::BadAmount(format!(
            "selling {amount_in} raw units into this pool pays nothing"
        ))
    })?;
    let minimum_out = minimum_out.unwrap_or_else(|| {
        let bound = u128::from(expected_out) * u128::from(10_000 - DEFAULT_SLIPPAGE_BPS) / 10_000;
        u64::try_from(bound).unwrap_or(expected_out)
    });
    Ok(Quote {
        expected_out,
        minimum_out,
    })
}

/// A confirmed swap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapReceipt {
    pub signature: String,
    pub amount_in: u64,
    pub amount_out: u64,
    pub minimum_out: u64,
}

/// Swap `amount_in` (raw units of the sold token) from `keypair`'s wallet, refusing less than
/// `quote.minimum_out`; waits for confirmation and returns what the chain says it paid.
pub(crate) async fn swap(
    rpc: &RpcClient,
    keypair: &Keypair,
    view: &PoolView,
    direction: Direction,
    amount_in: u64,
    quote: &Quote,
) -> Result<SwapReceipt, SwapError> {
    let blockhash = rpc.get_latest_blockhash().await?;
    let (signature, wire) = sign_swap(
        keypair,
        view,
        direction,
        amount_in,
        quote.minimum_out,
        blockhash,
    )?;
    let sent = rpc.send_transaction(&wire).await?;
    debug_assert_eq!(sent, signature);
    let amount_out = confirm(rpc, &signature, CONFIRM_TIMEOUT)
        .await?
        .ok_or(SwapError::Unconfirmed(signature.clone()))?
        .1;
    Ok(SwapReceipt {
        signature,
        amount_in,
        amount_out,
        minimum_out: quote.minimum_out,
    })
}

/// Build and sign (without sending) a swap of `amount_in` from `keypair`'s wallet refusing
/// less than `minimum_out`, against `blockhash`: its signature and wire bytes. Split from
/// sending so a caller can record the signed transaction durably before it can land.
pub(crate) fn sign_swap(
    keypair: &Keypair,
    view: &PoolView,
    direction: Direction,
    amount_in: u64,
    minimum_out: u64,
    blockhash: [u8; 32],
) -> Result<(String, Vec<u8>), SwapError> {
    let user = keypair.pubkey();
    let usdc_account =
        tx::associated_token_address(&user, &view.state.usdc_mint, &tx::token_program());
    let mut instructions = Vec::with_capacity(2);
    if direction == Direction::SellSol {
        // Buying USDC: make sure there is an account to receive it.
        instructions.push(
            tx::instructions::create_associated_token_account_idempotent(
                &user,
                &user,
                &view.state.usdc_mint,
                &tx::token_program(),
            ),
        );
    }
    instructions.push(pool::swap(
        &user,
        &usdc_account,
        direction,
        amount_in,
        minimum_out,
    ));
    let message = Message::new_legacy(&instructions, &user, blockhash);
    let transaction =
        Transaction::sign(message, &[keypair.signing_key()]).map_err(ChainError::from)?;
    let wire = transaction.serialize().map_err(ChainError::from)?;
    Ok((transaction.signature(), wire))
}

/// Wait up to `timeout` for `signature` to be confirmed. `Some((amount_in, amount_out))` as
/// the confirmed transaction says, `None` if it is still unknown or unconfirmed at the
/// deadline, [`SwapError::Failed`] if it landed with an error.
pub(crate) async fn confirm(
    rpc: &RpcClient,
    signature: &str,
    timeout: Duration,
) -> Result<Option<(u64, u64)>, SwapError> {
    let Some(transaction) = confirmed(rpc, signature, timeout).await? else {
        return Ok(None);
    };
    let amounts = swap_amount(&transaction, "amountIn").zip(swap_amount(&transaction, "amountOut"));
    amounts.map(Some).ok_or_else(|| {
        SwapError::Chain(ChainError::Decode {
            method: "getTransaction".to_owned(),
            detail: format!("{signature} has no parsed pool swap"),
        })
    })
}

/// Wait up to `timeout` for `signature` to be confirmed: the jsonParsed transaction, `None` if
/// it is still unknown or unconfirmed at the deadline, [`SwapError::Failed`] if it failed.
pub(crate) async fn confirmed(
    rpc: &RpcClient,
    signature: &str,
    timeout: Duration,
) -> Result<Option<Value>, SwapError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        // `getTransaction` at `confirmed` answers only once the transaction is confirmed, and
        // carries its outcome (`meta.err`): one call where a status check and a read were two.
        if let Some(transaction) = rpc.get_transaction(signature, "confirmed").await? {
            let error = &transaction["meta"]["err"];
            if !error.is_null() {
                return Err(SwapError::Failed {
                    signature: signature.to_owned(),
                    error: error.clone(),
                });
            }
            return Ok(Some(transaction));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `amountOut` of the (first) pool swap in a jsonParsed transaction.
pub fn swap_amount_out(transaction: &Value) -> Option<u64> {
    swap_amount(transaction, "amountOut")
}

/// A raw amount (`amountIn`, `amountOut`) of the (first) pool swap in a jsonParsed transaction.
pub fn swap_amount(transaction: &Value, field: &str) -> Option<u64> {
    transaction["transaction"]["message"]["instructions"]
        .as_array()?
        .iter()
        .find(|ix| ix["program"] == pool::PROGRAM_NAME && ix["parsed"]["type"] == "swap")?["parsed"]
        ["info"][field]
        .as_str()?
        .parse()
        .ok()
}
