//! Simnet: the embedded Solana-compatible ledger, served as JSON-RPC at `/simnet/rpc` when no
//! external `SOLANA_RPC_URL` is configured.
//!
//! It accepts real signed wire transactions, checks every ed25519 signature (`verify_strict`),
//! the recent blockhash (valid while the block height has not passed its
//! `lastValidBlockHeight`, as on Solana) and duplicates, then
//! executes System transfer, SPL Token transfer / transferChecked (Token and Token-2022),
//! associated-token-account creation, Memo ([`executor`]) and the Crucible pool program
//! ([`amm`], a constant-product SOL/USDC market seeded at first start by `chain::liquidity`).
//! Anything else is refused with a JSON-RPC error. A transaction is `confirmed` at once and `finalized` once
//! `CRUCIBLE_SIMNET_FINALITY_MS` have passed since it executed; because that is computed from
//! the stored execution time and the injected clock, it survives restarts.
//!
//! Everything lives in the database ([`ledger`]); this module never keeps ledger state in
//! memory, and it never pretends to be more than a simulator: no real value moves.

pub mod amm;
pub mod executor;
pub mod ledger;
pub mod render;
pub mod rpc;
pub mod signatures;

#[cfg(test)]
mod proptests;

use std::sync::Arc;

use base64::Engine;
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::chain::tx::{self, Message, Pubkey, Transaction, WireError};
use crate::clock::Clock;
use crate::db::{Store, StoreError};
use executor::{Account, Kind};

/// How many blocks a blockhash stays valid for: its `lastValidBlockHeight` is its slot plus this
/// (as on Solana).
pub const RECENT_BLOCKHASHES: i64 = 150;
/// The length of a slot: a blockhash is reused for this long, and an idle simnet's block height
/// still advances one block per slot, so a blockhash expires after about a minute however quiet
/// the simnet is, as on a real cluster.
const SLOT_MS: i64 = 400;
/// Decimals of the simnet stablecoin (as USDC).
pub const STABLECOIN_DECIMALS: u8 = 6;
/// Largest airdrop per request: 1,000 SOL and 1,000,000 stablecoin units.
pub const MAX_AIRDROP_LAMPORTS: u64 = 1_000 * 1_000_000_000;
pub const MAX_AIRDROP_STABLECOIN: u64 = 1_000_000 * 1_000_000;

/// The simnet stablecoin mint when none is configured: a fixed address, the same on every
/// install, so wallets and docs can name it.
pub fn default_stablecoin_mint() -> Pubkey {
    Pubkey(Sha256::digest(b"crucible simnet stablecoin mint").into())
}

fn faucet() -> Pubkey {
    Pubkey(Sha256::digest(b"crucible simnet faucet").into())
}

/// A refusal in JSON-RPC terms (`code`, `message`), or a storage failure.
#[derive(Debug, thiserror::Error)]
pub enum SimnetError {
    #[error("{message}")]
    Rpc { code: i64, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SimnetError {
    pub fn params(message: impl Into<String>) -> Self {
        SimnetError::Rpc {
            code: -32602,
            message: message.into(),
        }
    }

    fn simulation(message: impl std::fmt::Display) -> Self {
        SimnetError::Rpc {
            code: -32002,
            message: format!("Transaction simulation failed: {message}"),
        }
    }
}

impl From<sqlx::Error> for SimnetError {
    fn from(error: sqlx::Error) -> Self {
        SimnetError::Store(StoreError::Query(error))
    }
}

/// What the SOL/USDC pool holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolReserves {
    pub lamports: u64,
    pub usdc_raw: u64,
    pub usdc_decimals: u8,
    pub lp_supply: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commitment {
    Confirmed,
    Finalized,
}

pub struct Simnet {
    store: Store,
    clock: Arc<dyn Clock>,
    finality_ms: i64,
    mint: Pubkey,
    /// One ledger writer at a time in this process (reads of balances and the writes that
    /// follow must not interleave, on PostgreSQL as on SQLite).
    writer: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Simnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simnet")
            .field("finality_ms", &self.finality_ms)
            .field("mint", &self.mint)
            .finish_non_exhaustive()
    }
}

impl Simnet {
    /// Open the ledger in `store`, creating the counters and the stablecoin mint on first use.
    pub async fn open(
        store: Store,
        clock: Arc<dyn Clock>,
        finality_ms: u64,
        mint: Pubkey,
    ) -> Result<Self, SimnetError> {
        let mut tx = store.begin().await?;
        for name in ["slot", "blockhash_seq"] {
            sqlx::query(
                "INSERT INTO simnet_counters (name, value) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .execute(&mut *tx)
            .await?;
        }
        if ledger::load(&mut tx, &[mint]).await?.is_empty() {
            let account = Account {
                lamports: 1_461_600,
                kind: Kind::Mint {
                    program: tx::token_program(),
                    decimals: STABLECOIN_DECIMALS,
                },
            };
            ledger::save(&mut tx, &mint, &account).await?;
        }
        tx.commit().await?;
        Ok(Simnet {
            store,
            clock,
            finality_ms: i64::try_from(finality_ms).unwrap_or(i64::MAX),
            mint,
            writer: tokio::sync::Mutex::new(()),
        })
    }

    pub fn stablecoin_mint(&self) -> Pubkey {
        self.mint
    }

    fn now_ms(&self) -> i64 {
        crate::clock::to_millis(self.clock.now())
    }

    /// The current slot, which is also the block height (the simnet skips no slots).
    pub async fn slot(&self) -> Result<u64, SimnetError> {
        let mut conn = self.store.read().acquire().await?;
        let height = self.block_height(&mut conn).await?;
        Ok(u64::try_from(height).unwrap_or_default())
    }

    /// The block height now: the stored slot counter plus the slots that have passed on the
    /// clock since the newest blockhash was issued. Issuing a blockhash stores those idle
    /// slots (see [`Simnet::latest_blockhash`]), so the height never goes back; a blockhash is
    /// valid while this is at most its `lastValidBlockHeight`.
    async fn block_height(&self, conn: &mut sqlx::AnyConnection) -> Result<i64, SimnetError> {
        let counter = ledger::current(&mut *conn, "slot").await?;
        Ok(counter + self.idle_slots(conn).await?)
    }

    /// Whole slots since the newest blockhash was issued (0 before the first one).
    async fn idle_slots(&self, conn: &mut sqlx::AnyConnection) -> Result<i64, SimnetError> {
        let newest: Option<(i64,)> =
            sqlx::query_as("SELECT issued_at FROM simnet_blockhashes ORDER BY seq DESC LIMIT 1")
                .fetch_optional(&mut *conn)
                .await?;
        Ok(newest.map_or(0, |(issued_at,)| {
            (self.now_ms() - issued_at).max(0) / SLOT_MS
        }))
    }

    /// The newest blockhash (a new one at most every slot) and its last valid block height.
    pub async fn latest_blockhash(&self) -> Result<(String, u64, u64), SimnetError> {
        let _writer = self.writer.lock().await;
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let newest: Option<(String, i64, i64)> = sqlx::query_as(
            "SELECT hash, slot, issued_at FROM simnet_blockhashes ORDER BY seq DESC LIMIT 1",
        )
        .fetch_optional(&mut *tx)
        .await?;
        let (hash, slot) = match newest {
            Some((hash, slot, issued_at)) if (0..SLOT_MS).contains(&(now - issued_at)) => {
                (hash, slot)
            }
            _ => {
                // The slots that passed since the newest blockhash become real (at least the
                // one this blockhash opens), so the height never goes back from what
                // `block_height` reported and moves one block per slot of the clock.
                let passed = self.idle_slots(&mut tx).await?.max(1);
                sqlx::query("UPDATE simnet_counters SET value = value + $1 WHERE name = 'slot'")
                    .bind(passed)
                    .execute(&mut *tx)
                    .await?;
                let seq = ledger::next(&mut tx, "blockhash_seq").await?;
                let slot = ledger::current(&mut tx, "slot").await?;
                let mut salt = [0u8; 16];
                rand::rngs::OsRng.fill_bytes(&mut salt);
                let mut hasher = Sha256::new();
                hasher.update(seq.to_le_bytes());
                hasher.update(now.to_le_bytes());
                hasher.update(salt);
                let hash = bs58::encode(hasher.finalize()).into_string();
                sqlx::query(
                    "INSERT INTO simnet_blockhashes (hash, seq, slot, issued_at) VALUES ($1, $2, $3, $4)",
                )
                .bind(&hash)
                .bind(seq)
                .bind(slot)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                // Keep a margin beyond the validity window; older hashes can never be used.
                sqlx::query("DELETE FROM simnet_blockhashes WHERE seq < $1")
                    .bind(seq - 2 * RECENT_BLOCKHASHES)
                    .execute(&mut *tx)
                    .await?;
                (hash, slot)
            }
        };
        tx.commit().await?;
        let slot = u64::try_from(slot).unwrap_or_default();
        Ok((hash, slot + RECENT_BLOCKHASHES as u64, slot))
    }

    pub async fn balance(&self, address: &Pubkey) -> Result<u64, SimnetError> {
        let mut conn = self.store.read().acquire().await?;
        Ok(ledger::load(&mut conn, &[*address])
            .await?
            .get(address)
            .map_or(0, |a| a.lamports))
    }

    /// One account as stored, `None` when it does not exist.
    pub async fn account(&self, address: &Pubkey) -> Result<Option<Account>, SimnetError> {
        let mut conn = self.store.read().acquire().await?;
        Ok(ledger::load(&mut conn, &[*address]).await?.remove(address))
    }

    /// The SOL/USDC pool's reserves read from one consistent snapshot of the ledger; `None`
    /// until the pool exists.
    pub async fn pool_reserves(&self) -> Result<Option<PoolReserves>, SimnetError> {
        let a = crate::chain::pool::PoolAddresses::sol_usdc();
        let mut tx = self.store.read().begin().await?;
        let accounts = ledger::load(&mut tx, &[a.pool, a.sol_vault, a.usdc_vault]).await?;
        tx.commit().await?;
        let (Some(pool), Some(sol_vault), Some(usdc_vault)) = (
            accounts.get(&a.pool),
            accounts.get(&a.sol_vault),
            accounts.get(&a.usdc_vault),
        ) else {
            return Ok(None);
        };
        match (&pool.kind, &usdc_vault.kind) {
            (
                Kind::Pool { lp_supply, .. },
                Kind::Token {
                    amount, decimals, ..
                },
            ) => Ok(Some(PoolReserves {
                lamports: sol_vault.lamports,
                usdc_raw: *amount,
                usdc_decimals: *decimals,
                lp_supply: *lp_supply,
            })),
            _ => Ok(None),
        }
    }

    /// The pool's reserves as the last pool transaction before `slot` left them (`None` when no
    /// pool transaction had landed yet): what a flow at `slot` is valued against, so a deposit
    /// is worth what SOL was worth when it arrived, not at the next snapshot.
    pub async fn pool_reserves_before(
        &self,
        slot: u64,
    ) -> Result<Option<(u64, u64, u8)>, SimnetError> {
        let a = crate::chain::pool::PoolAddresses::sol_usdc();
        let slot = i64::try_from(slot).unwrap_or(i64::MAX);
        let mut conn = self.store.read().acquire().await?;
        let last: Option<(String,)> = sqlx::query_as(
            "SELECT t.rendered FROM simnet_address_signatures s
             JOIN simnet_transactions t ON t.signature = s.signature
             WHERE s.address = $1 AND s.slot < $2 AND t.err IS NULL
             ORDER BY s.slot DESC LIMIT 1",
        )
        .bind(a.usdc_vault.to_string())
        .bind(slot)
        .fetch_optional(&mut *conn)
        .await?;
        let Some((rendered,)) = last else {
            return Ok(None);
        };
        let tx: Value = serde_json::from_str(&rendered)
            .map_err(|e| SimnetError::params(format!("stored transaction is unreadable: {e}")))?;
        Ok(render::post_reserves(&tx, &a.sol_vault, &a.usdc_vault))
    }

    pub async fn token_accounts(
        &self,
        owner: &Pubkey,
        mint: Option<&Pubkey>,
        program: Option<&Pubkey>,
    ) -> Result<Vec<(Pubkey, Account)>, SimnetError> {
        let mut conn = self.store.read().acquire().await?;
        ledger::token_accounts(&mut conn, owner, mint, program).await
    }

    /// Execute a signed wire transaction. With `skip_preflight`, a transaction whose
    /// instruction fails still lands (fee charged, `meta.err` set), as on a real cluster;
    /// otherwise the failure is returned as a simulation error and nothing is recorded.
    pub async fn send(&self, wire: &[u8], skip_preflight: bool) -> Result<String, SimnetError> {
        let (transaction, message_bytes) = Transaction::deserialize(wire)
            .map_err(|e| SimnetError::params(format!("failed to deserialize transaction: {e}")))?;
        transaction
            .verify(&message_bytes)
            .map_err(|e: WireError| SimnetError::Rpc {
                code: -32003,
                message: format!("Transaction signature verification failure: {e}"),
            })?;
        let signature = transaction.signature();
        let message = &transaction.message;
        let blockhash = bs58::encode(message.recent_blockhash).into_string();

        let _writer = self.writer.lock().await;
        let mut tx = self.store.begin().await?;
        if ledger::transaction(&mut tx, &signature).await?.is_some() {
            return Err(SimnetError::simulation(
                "This transaction has already been processed",
            ));
        }
        let issued: Option<(i64,)> =
            sqlx::query_as("SELECT slot FROM simnet_blockhashes WHERE hash = $1")
                .bind(&blockhash)
                .fetch_optional(&mut *tx)
                .await?;
        let height = self.block_height(&mut tx).await?;
        match issued {
            // The rule a real cluster applies, and the one the `lastValidBlockHeight` of
            // `getLatestBlockhash` promises: once the height has passed it, the transaction can
            // never land, which is what lets a sender safely sign a replacement.
            Some((slot,)) if height <= slot + RECENT_BLOCKHASHES => {}
            _ => return Err(SimnetError::simulation("Blockhash not found")),
        }

        let pre = ledger::load(&mut tx, &message.account_keys).await?;
        let mut after_fee = pre.clone();
        let fee = executor::charge_fee(message, &mut after_fee).map_err(SimnetError::simulation)?;
        let mut post = after_fee.clone();
        let mut outputs = Vec::new();
        let err = match executor::execute_traced(message, &mut post) {
            Ok(trace) => {
                outputs = trace;
                None
            }
            Err(failure) if skip_preflight => {
                post = after_fee;
                Some(failure.to_json())
            }
            Err(failure) => {
                return Err(SimnetError::simulation(format!(
                    "Error processing Instruction {}: {} ({})",
                    failure.index, failure.error, failure.reason
                )));
            }
        };
        let signatures: Vec<String> = transaction
            .signatures
            .iter()
            .map(|s| bs58::encode(s).into_string())
            .collect();
        let rendered = render::transaction(
            &signatures,
            message,
            &pre,
            &post,
            fee,
            err.as_ref(),
            &outputs,
        );
        let slot = ledger::next(&mut tx, "slot").await?;
        ledger::insert_transaction(
            &mut tx,
            &signature,
            slot,
            self.now_ms(),
            err.as_ref().map(Value::to_string),
            &rendered,
        )
        .await?;
        signatures::record(&mut tx, &signature, slot, &message.account_keys).await?;
        ledger::save_changes(&mut tx, &pre, &post).await?;
        tx.commit().await?;
        tracing::debug!(%signature, slot, failed = err.is_some(), "simnet transaction");
        Ok(signature)
    }

    /// Credit `lamports` of SOL and `stablecoin` raw units (into the associated token account,
    /// created if needed) to `address`; recorded as a transaction from the simnet faucet.
    pub async fn airdrop(
        &self,
        address: &Pubkey,
        lamports: u64,
        stablecoin: u64,
    ) -> Result<String, SimnetError> {
        if lamports > MAX_AIRDROP_LAMPORTS || stablecoin > MAX_AIRDROP_STABLECOIN {
            return Err(SimnetError::params(format!(
                "at most {MAX_AIRDROP_LAMPORTS} lamports and {MAX_AIRDROP_STABLECOIN} raw stablecoin units per airdrop"
            )));
        }
        let faucet = faucet();
        let token_program = tx::token_program();
        let ata = tx::associated_token_address(address, &self.mint, &token_program);
        let mut ixs = vec![tx::instructions::system_transfer(
            &faucet, address, lamports,
        )];
        if stablecoin > 0 {
            // SPL Token MintTo (tag 7): [mint, account, authority].
            let mut data = vec![7u8];
            data.extend(stablecoin.to_le_bytes());
            ixs.push(tx::message::Instruction {
                program_id: token_program,
                accounts: vec![
                    tx::message::AccountMeta::writable(self.mint, false),
                    tx::message::AccountMeta::writable(ata, false),
                    tx::message::AccountMeta::readonly(faucet, true),
                ],
                data,
            });
        }
        let _writer = self.writer.lock().await;
        let mut tx = self.store.begin().await?;
        let slot = ledger::next(&mut tx, "slot").await?;
        let (blockhash,): (String,) =
            sqlx::query_as("SELECT hash FROM simnet_blockhashes ORDER BY seq DESC LIMIT 1")
                .fetch_optional(&mut *tx)
                .await?
                .unwrap_or_else(|| (bs58::encode([0u8; 32]).into_string(),));
        let blockhash: [u8; 32] = bs58::decode(&blockhash)
            .into_vec()
            .ok()
            .and_then(|b| b.try_into().ok())
            .unwrap_or_default();
        let message = Message::new_legacy(&ixs, &faucet, blockhash);
        let pre = ledger::load(&mut tx, &message.account_keys).await?;
        let mut post = pre.clone();
        let target = post.entry(*address).or_insert(Account::wallet(0));
        target.lamports = target
            .lamports
            .checked_add(lamports)
            .ok_or_else(|| SimnetError::params("the balance would overflow"))?;
        if stablecoin > 0 {
            let account = post.entry(ata).or_insert(Account {
                lamports: executor::TOKEN_ACCOUNT_RENT,
                kind: Kind::Token {
                    program: token_program,
                    mint: self.mint,
                    owner: *address,
                    amount: 0,
                    decimals: STABLECOIN_DECIMALS,
                },
            });
            match &mut account.kind {
                Kind::Token { amount, .. } => {
                    *amount = amount
                        .checked_add(stablecoin)
                        .ok_or_else(|| SimnetError::params("the balance would overflow"))?;
                }
                _ => return Err(SimnetError::params(format!("{ata} is not a token account"))),
            }
        }
        let mut signature = [0u8; 64];
        rand::rngs::OsRng.fill_bytes(&mut signature);
        let signature = bs58::encode(signature).into_string();
        let rendered = render::transaction(
            std::slice::from_ref(&signature),
            &message,
            &pre,
            &post,
            0,
            None,
            &[],
        );
        ledger::insert_transaction(&mut tx, &signature, slot, self.now_ms(), None, &rendered)
            .await?;
        signatures::record(&mut tx, &signature, slot, &message.account_keys).await?;
        ledger::save_changes(&mut tx, &pre, &post).await?;
        tx.commit().await?;
        Ok(signature)
    }

    fn is_final(&self, executed_at: i64) -> bool {
        self.now_ms().saturating_sub(executed_at) >= self.finality_ms
    }

    /// `getSignatureStatuses` entries (null for unknown signatures).
    pub async fn statuses(&self, signatures: &[String]) -> Result<Vec<Value>, SimnetError> {
        let mut conn = self.store.read().acquire().await?;
        let mut out = Vec::with_capacity(signatures.len());
        for signature in signatures {
            let Some((slot, executed_at, err, _)) =
                ledger::transaction(&mut conn, signature).await?
            else {
                out.push(Value::Null);
                continue;
            };
            let err: Value = err
                .and_then(|e| serde_json::from_str(&e).ok())
                .unwrap_or(Value::Null);
            let finalized = self.is_final(executed_at);
            let status = if err.is_null() {
                json!({"Ok": null})
            } else {
                json!({"Err": err})
            };
            out.push(json!({
                "slot": slot,
                "confirmations": if finalized { Value::Null } else { json!(1) },
                "err": err,
                "status": status,
                "confirmationStatus": if finalized { "finalized" } else { "confirmed" },
            }));
        }
        Ok(out)
    }

    /// `getTransaction` (jsonParsed): null when unknown or not yet at `commitment`.
    pub async fn transaction(
        &self,
        signature: &str,
        commitment: Commitment,
    ) -> Result<Value, SimnetError> {
        let mut conn = self.store.read().acquire().await?;
        let Some((slot, executed_at, _, rendered)) =
            ledger::transaction(&mut conn, signature).await?
        else {
            return Ok(Value::Null);
        };
        if commitment == Commitment::Finalized && !self.is_final(executed_at) {
            return Ok(Value::Null);
        }
        let mut value: Value = serde_json::from_str(&rendered)
            .map_err(|e| SimnetError::params(format!("stored transaction is unreadable: {e}")))?;
        value["slot"] = json!(slot);
        value["blockTime"] = json!(executed_at.div_euclid(1000));
        Ok(value)
    }

    /// Decode a `sendTransaction` payload in `encoding` (`base58` or `base64`).
    pub fn decode_wire(payload: &str, encoding: &str) -> Result<Vec<u8>, SimnetError> {
        match encoding {
            "base64" => base64::engine::general_purpose::STANDARD
                .decode(payload)
                .map_err(|e| SimnetError::params(format!("invalid base64 transaction: {e}"))),
            "base58" => bs58::decode(payload)
                .into_vec()
                .map_err(|e| SimnetError::params(format!("invalid base58 transaction: {e}"))),
            other => Err(SimnetError::params(format!(
                "unsupported encoding `{other}`: use base58 or base64"
            ))),
        }
    }
}
