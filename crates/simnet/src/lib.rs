//! Simnet: a Solana-compatible ledger in a SQL database (SQLite or PostgreSQL, through sqlx),
//! that any server can serve as a node's JSON-RPC ([`rpc::handle`]: request bytes in, reply
//! out) and PubSub ([`pubsub::Session`]: one per connection, whatever carries its messages).
//! Crucible's server mounts both at `/simnet/rpc` when no external `SOLANA_RPC_URL` is
//! configured, and `crucible simnet` runs it alone; the crate itself knows no HTTP framework.
//!
//! It accepts real signed wire transactions, checks every ed25519 signature (`verify_strict`),
//! the recent blockhash (valid while the block height has not passed its
//! `lastValidBlockHeight`, as on Solana) and duplicates, then
//! executes System transfer and createAccount, SPL Token transfer / transferChecked /
//! initializeAccount (1, 2, 3) / closeAccount (Token and Token-2022), associated-token-account
//! creation, Memo ([`executor`]) and the Crucible pool program
//! (`amm.rs` runs [`pool`], a constant-product SOL/USDC market the server seeds at first start).
//! Anything else is refused with a JSON-RPC error. A transaction is `confirmed` at once and `finalized` once
//! `finality_ms` (the server's `CRUCIBLE_SIMNET_FINALITY_MS`) have passed since it executed;
//! because that is computed from the stored execution time and the injected [`Clock`], it
//! survives restarts.
//!
//! Everything lives in the database (`ledger.rs`, in the tables [`Storage::create_schema`]
//! creates); this crate never keeps ledger state in memory, and it never pretends to be more
//! than a simulator: no real value moves. `docs/simnet.md` lists every method and what it
//! leaves out.

#![warn(unreachable_pub)]

mod accounts;
mod amm;
pub mod clock;
mod cluster;
mod compute_budget;
pub mod executor;
mod landing;
mod ledger;
pub mod pool;
pub mod pubsub;
mod recent;
pub mod render;
mod rent;
pub mod rpc;
mod signatures;
use crucible_sql as sql;
pub mod storage;
mod writer;

#[cfg(test)]
mod proptests;

use std::sync::Arc;

use crucible_solana::tx::{self, Message, Pubkey, Transaction, WireError};
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use executor::{Account, Kind, Refusal, Trace};
use sql::Conn;

pub use clock::{Clock, SystemClock};
pub use crucible_sql::SqliteFile;
pub use storage::{Backend, Storage};

/// A transaction that landed, as the PubSub subscriptions need it ([`pubsub`]).
#[derive(Debug, Clone)]
pub struct Executed {
    pub signature: String,
    pub slot: u64,
    /// When it executed (ms on the simnet's clock); it is final `finality_ms` later.
    pub executed_at: i64,
    pub err: Option<Value>,
    /// Every account the transaction named, and those it could write.
    pub keys: Vec<Pubkey>,
    pub writable: Vec<Pubkey>,
    pub logs: Vec<String>,
}

/// How many landed transactions a slow subscriber may fall behind before it re-reads the
/// ledger instead (`broadcast` lag).
const EVENT_BUFFER: usize = 4096;

/// The advisory lock key every node takes to write the simnet ledger on PostgreSQL
/// ("simnet" in ASCII).
const LEDGER_LOCK: i64 = 0x7369_6d6e_6574;

/// How many blocks a blockhash stays valid for: its `lastValidBlockHeight` is its slot plus this
/// (as on Solana).
pub const RECENT_BLOCKHASHES: i64 = 150;
/// The length of a slot: a blockhash is reused for this long, and an idle simnet's block height
/// still advances one block per slot, so a blockhash expires after about a minute however quiet
/// the simnet is, as on a real cluster.
const SLOT_MS: i64 = 400;
/// Slots a blockhash is handed out again for after it was issued, as transactions land: a client
/// still gets at least 134 of its 150 slots, and a busy simnet issues a new blockhash every few
/// landings rather than after each (a new one is a write of the ledger, in its one serial lane).
const REUSE_SLOTS: i64 = 16;
/// Old blockhashes are deleted when a new one's sequence number is a multiple of this.
const PRUNE_EVERY: i64 = 16;
/// Decimals of the simnet stablecoin (as USDC).
pub const STABLECOIN_DECIMALS: u8 = 6;
/// Largest airdrop of SOL per request: 1,000 SOL.
pub const MAX_AIRDROP_LAMPORTS: u64 = 1_000 * 1_000_000_000;
/// Largest airdrop of the stablecoin per request: 1,000,000 (in raw units).
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
    /// Refused, with a node's JSON-RPC error code.
    #[error("{message}")]
    Rpc { code: i64, message: String },
    /// A transaction preflight refused, with what a node attaches as `error.data`: its `err`,
    /// program `logs` and `unitsConsumed`, which clients (web3.js's `SendTransactionError`)
    /// show to the user.
    #[error("{message}")]
    Preflight { message: String, data: Value },
    /// The database failed (the ledger is unchanged: every write is one transaction).
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

impl SimnetError {
    /// A refusal of the request's parameters (`-32602`).
    pub fn params(message: impl Into<String>) -> Self {
        SimnetError::Rpc {
            code: -32602,
            message: message.into(),
        }
    }

    fn preflight(message: impl std::fmt::Display, err: Value, trace: &Trace) -> Self {
        SimnetError::Preflight {
            message: format!("Transaction simulation failed: {message}"),
            data: json!({"err": err, "logs": trace.logs, "accounts": null,
                         "unitsConsumed": trace.units_consumed, "returnData": null,
                         "innerInstructions": null}),
        }
    }

    fn refused(refusal: &Refusal) -> Self {
        SimnetError::preflight(refusal, refusal.to_json(), &Trace::default())
    }

    /// A replay of a transaction the ledger already has.
    fn already_processed() -> Self {
        SimnetError::preflight(
            "This transaction has already been processed",
            json!("AlreadyProcessed"),
            &Trace::default(),
        )
    }

    /// A transaction naming a blockhash the ledger never issued, or one past its height.
    fn blockhash_not_found() -> Self {
        SimnetError::preflight(
            "Blockhash not found",
            json!("BlockhashNotFound"),
            &Trace::default(),
        )
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

/// What `simulateTransaction` found, at `slot`.
#[derive(Debug, Clone)]
pub struct Simulation {
    pub slot: u64,
    pub err: Option<Value>,
    pub trace: Trace,
    /// `{blockhash, lastValidBlockHeight}` when the caller asked to replace its blockhash.
    pub replacement_blockhash: Option<Value>,
}

/// The commitment levels the simnet tells apart: one leader and no forks make `processed` the
/// same as `confirmed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commitment {
    /// Landed (`processed`, `confirmed`).
    Confirmed,
    /// Landed at least `finality_ms` ago.
    Finalized,
}

/// The ledger: open it once and share it (`Arc`) between the JSON-RPC handler, PubSub sessions
/// and whatever else reads or airdrops.
pub struct Simnet {
    store: Storage,
    shared: Arc<Shared>,
    /// Every write to the ledger goes through it: one batch at a time, many writes a batch
    /// (`writer.rs`).
    writer: writer::Writer,
    /// Held by the one `getLatestBlockhash` that asks the writer for a new blockhash; the
    /// others wait for it and take its blockhash, rather than each queue a write. It keeps
    /// the last blockhash this process issued.
    issuing: tokio::sync::Mutex<Option<Issued>>,
    /// How many blockhashes this process has issued: an ask that found the newest stale takes
    /// one issued after it looked without reading the ledger again.
    issues: std::sync::atomic::AtomicU64,
}

/// A blockhash this process issued, and its place in [`Simnet::issues`].
struct Issued {
    hash: String,
    slot: i64,
    issue: u64,
}

/// What reads and the ledger's writer both need: the clock, the mint, finality and the stream
/// of executed transactions.
pub(crate) struct Shared {
    clock: Arc<dyn Clock>,
    finality_ms: i64,
    mint: Pubkey,
    events: tokio::sync::broadcast::Sender<Arc<Executed>>,
    /// What this process landed last, as `getTransaction` reads it (`recent.rs`).
    recent: recent::RecentLandings,
}

impl Shared {
    /// Remember a landing whose batch has committed, for `getTransaction` to answer from.
    pub(crate) fn remember(
        &self,
        signature: &str,
        slot: i64,
        executed_at: i64,
        rendered: Arc<str>,
    ) {
        self.recent.insert(
            signature,
            recent::Landed {
                slot,
                executed_at,
                rendered,
            },
        );
    }

    /// Now on the simnet's clock (ms since the Unix epoch).
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub(crate) fn publish(
        &self,
        signature: &str,
        slot: i64,
        executed_at: i64,
        err: Option<Value>,
        message: &Message,
        trace: &Trace,
    ) {
        let writable = (0..message.account_keys.len())
            .filter(|&i| message.is_writable(i))
            .map(|i| message.account_keys[i])
            .collect();
        // No subscriber is not an error: the ledger is the record, events only wake streams.
        let _ = self.events.send(Arc::new(Executed {
            signature: signature.to_owned(),
            slot: u64::try_from(slot).unwrap_or_default(),
            executed_at,
            err,
            keys: message.account_keys.clone(),
            writable,
            logs: trace.logs.clone(),
        }));
    }

    /// The block height now: the stored slot counter plus the slots that have passed on the
    /// clock since the newest blockhash was issued. Issuing a blockhash stores those idle
    /// slots (see [`Simnet::latest_blockhash`]), so the height never goes back; a blockhash is
    /// valid while this is at most its `lastValidBlockHeight`.
    pub(crate) async fn block_height(&self, conn: &mut Conn<'_>) -> Result<i64, SimnetError> {
        // Both figures in one statement: every answer with a context slot asks for them.
        let (counter, newest): (Option<i64>, Option<i64>) =
            sql::query(&format!("SELECT {}", ledger::HEIGHT_FIGURES))
                .fetch_one(conn)
                .await?;
        let counter = counter.ok_or(sqlx::Error::RowNotFound)?;
        Ok(self.height(counter, newest))
    }

    /// The rule a real cluster applies, and the one the `lastValidBlockHeight` of
    /// `getLatestBlockhash` promises: once the height has passed it, a transaction naming
    /// this blockhash can never land, which is what lets a sender safely sign a replacement.
    pub(crate) async fn blockhash_valid(
        &self,
        conn: &mut Conn<'_>,
        blockhash: &[u8; 32],
    ) -> Result<bool, SimnetError> {
        Ok(self
            .blockhash_standing(conn, blockhash)
            .await?
            .valid_after(0))
    }

    /// The blockhash's slot (none when the ledger never issued it) and the block height now.
    pub(crate) async fn blockhash_standing(
        &self,
        conn: &mut Conn<'_>,
        blockhash: &[u8; 32],
    ) -> Result<Standing, SimnetError> {
        // The blockhash's slot and the figures of `block_height`, in one statement.
        let sql = format!(
            "SELECT (SELECT slot FROM simnet_blockhashes WHERE hash = $1), {}",
            ledger::HEIGHT_FIGURES
        );
        let (issued, counter, newest): (Option<i64>, i64, Option<i64>) = sql::query(&sql)
            .bind(crucible_solana::base58::encode(blockhash))
            .fetch_one(conn)
            .await?;
        Ok(Standing {
            issued,
            height: counter + self.slots_since(newest),
        })
    }

    /// Whole slots of the clock since `issued_at` (0 when no blockhash was issued yet).
    /// The block height from its two stored figures ([`Shared::block_height`]).
    pub(crate) fn height(&self, counter: i64, newest: Option<i64>) -> i64 {
        counter + self.slots_since(newest)
    }

    fn slots_since(&self, issued_at: Option<i64>) -> i64 {
        issued_at.map_or(0, |issued_at| (self.now_ms() - issued_at).max(0) / SLOT_MS)
    }
}

/// Where a blockhash stands against the block height ([`Shared::blockhash_standing`]).
#[derive(Clone, Copy)]
pub(crate) struct Standing {
    issued: Option<i64>,
    height: i64,
}

impl Standing {
    /// Whether a transaction naming the blockhash may land once `landed` more transactions
    /// have (each in a slot of its own).
    pub(crate) fn valid_after(self, landed: i64) -> bool {
        self.issued
            .is_some_and(|slot| self.height + landed <= slot + RECENT_BLOCKHASHES)
    }
}

impl std::fmt::Debug for Simnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simnet")
            .field("finality_ms", &self.shared.finality_ms)
            .field("mint", &self.shared.mint)
            .finish_non_exhaustive()
    }
}

impl Simnet {
    /// Open the ledger in `store` (its tables must exist: the server's migrations or
    /// [`Storage::create_schema`]), creating the counters and the stablecoin mint `mint` on
    /// first use. A transaction is final `finality_ms` after it executed on `clock`.
    pub async fn open(
        store: Storage,
        clock: Arc<dyn Clock>,
        finality_ms: u64,
        mint: Pubkey,
    ) -> Result<Self, SimnetError> {
        let mut tx = store.begin().await?;
        for name in ["slot", "blockhash_seq"] {
            sql::query(
                "INSERT INTO simnet_counters (name, value) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .execute(&mut Conn::Any(&mut tx))
            .await?;
        }
        let existing = ledger::load(&mut Conn::Any(&mut tx), &[mint])
            .await?
            .remove(&mint);
        // Mints stored before they recorded an authority: the faucet has always minted this one.
        if let Some(
            mut account @ Account {
                kind: Kind::Mint {
                    authority: None, ..
                },
                ..
            },
        ) = existing.clone()
        {
            if let Kind::Mint { authority, .. } = &mut account.kind {
                *authority = Some(faucet());
            }
            ledger::save(&mut Conn::Any(&mut tx), &mint, &account).await?;
        }
        if existing.is_none() {
            let account = Account {
                lamports: 1_461_600,
                kind: Kind::Mint {
                    program: tx::token_program(),
                    decimals: STABLECOIN_DECIMALS,
                    supply: 0,
                    authority: Some(faucet()),
                },
            };
            ledger::save(&mut Conn::Any(&mut tx), &mint, &account).await?;
        }
        tx.commit().await?;
        let shared = Arc::new(Shared {
            recent: recent::RecentLandings::default(),
            clock,
            finality_ms: i64::try_from(finality_ms).unwrap_or(i64::MAX),
            mint,
            events: tokio::sync::broadcast::channel(EVENT_BUFFER).0,
        });
        Ok(Simnet {
            writer: writer::Writer::start(store.clone(), shared.clone()),
            issuing: tokio::sync::Mutex::new(None),
            issues: std::sync::atomic::AtomicU64::new(0),
            store,
            shared,
        })
    }

    /// Batches the ledger's writer has run, and the writes (transactions, airdrops, new
    /// blockhashes) they carried: each batch is one commit.
    pub fn write_batches(&self) -> (u64, u64) {
        self.writer.counts()
    }

    /// The stablecoin the faucet mints.
    pub fn stablecoin_mint(&self) -> Pubkey {
        self.shared.mint
    }

    /// Every transaction this process lands from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<Executed>> {
        self.shared.events.subscribe()
    }

    /// How long after executing a transaction becomes final (ms).
    pub fn finality_ms(&self) -> i64 {
        self.shared.finality_ms
    }

    /// Now on the simnet's clock (ms since the Unix epoch).
    pub fn now_ms(&self) -> i64 {
        self.shared.now_ms()
    }

    /// Where and when each signature landed (`None`: not on the ledger).
    pub async fn landed(
        &self,
        signatures: &[String],
    ) -> Result<Vec<Option<pubsub::Landed>>, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let mut out = Vec::with_capacity(signatures.len());
        for signature in signatures {
            let row: Option<(i64, i64, Option<String>)> = sql::query(
                "SELECT slot, executed_at, err FROM simnet_transactions WHERE signature = $1",
            )
            .bind(signature)
            .fetch_optional(conn)
            .await?;
            out.push(row.map(|(slot, executed_at, err)| pubsub::Landed {
                slot: u64::try_from(slot).unwrap_or_default(),
                executed_at,
                err: err.and_then(|e| serde_json::from_str(&e).ok()),
            }));
        }
        Ok(out)
    }

    /// The current slot, which is also the block height (the simnet skips no slots).
    pub async fn slot(&self) -> Result<u64, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let height = self.shared.block_height(conn).await?;
        Ok(u64::try_from(height).unwrap_or_default())
    }

    /// The newest blockhash (a new one at most every slot) and its last valid block height.
    pub async fn latest_blockhash(&self) -> Result<(String, u64, u64), SimnetError> {
        use std::sync::atomic::Ordering;
        let looked_after = self.issues.load(Ordering::Acquire);
        // Most asks find the newest one still fresh: read, not queued behind the ledger's writes.
        let (hash, slot) = match self.fresh_blockhash().await? {
            Some(fresh) => fresh,
            None => {
                let mut issuing = self.issuing.lock().await;
                match &*issuing {
                    // Issued here while this ask waited its turn, after it found the newest
                    // stale: as new as a read would find, without the read.
                    Some(issued) if issued.issue > looked_after => {
                        (issued.hash.clone(), issued.slot)
                    }
                    _ => match self.fresh_blockhash().await? {
                        // Issued by another process on the same ledger.
                        Some(fresh) => fresh,
                        None => {
                            let (hash, slot) = self
                                .writer
                                .write(|conn, shared| Box::pin(issue_blockhash(conn, shared)))
                                .await?;
                            let issue = self.issues.fetch_add(1, Ordering::AcqRel) + 1;
                            *issuing = Some(Issued {
                                hash: hash.clone(),
                                slot,
                                issue,
                            });
                            (hash, slot)
                        }
                    },
                }
            }
        };
        let slot = u64::try_from(slot).unwrap_or_default();
        Ok((hash, slot + RECENT_BLOCKHASHES as u64, slot))
    }

    /// The newest blockhash and its slot, when it may be handed out again now.
    async fn fresh_blockhash(&self) -> Result<Option<(String, i64)>, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        Ok(Newest::read(conn).await?.reusable(self.shared.now_ms()))
    }

    /// The SOL balance of `address` in lamports (0 when it does not exist).
    pub async fn balance(&self, address: &Pubkey) -> Result<u64, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        Ok(ledger::load(conn, &[*address])
            .await?
            .get(address)
            .map_or(0, |a| a.lamports))
    }

    /// One account as stored, `None` when it does not exist.
    pub async fn account(&self, address: &Pubkey) -> Result<Option<Account>, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        Ok(ledger::load(conn, &[*address]).await?.remove(address))
    }

    /// Several accounts and the slot they were read at, in the order asked (`None` where
    /// absent): what an answer with a context slot needs, one snapshot and, for up to
    /// `ledger::KEYS_PER_STATEMENT` keys, one statement.
    pub async fn accounts_at_slot(
        &self,
        keys: &[Pubkey],
    ) -> Result<(Vec<Option<Account>>, u64), SimnetError> {
        let (found, height) = if keys.len() <= ledger::KEYS_PER_STATEMENT {
            let mut reader = self.store.reader().await?;
            let conn = &mut reader.conn()?;
            let reads = ledger::read_set(conn, &[], &[], keys)
                .await?
                .ok_or_else(|| SimnetError::params("too many accounts for one read"))?;
            (
                reads.accounts,
                self.shared.height(reads.counter, reads.newest),
            )
        } else {
            let mut tx = self.store.read().begin().await?;
            let conn = &mut Conn::Any(&mut tx);
            let found = ledger::load(conn, keys).await?;
            let height = self.shared.block_height(conn).await?;
            tx.commit().await?;
            (found, height)
        };
        let slot = u64::try_from(height).unwrap_or_default();
        // A key named twice is answered twice, as a node does.
        Ok((keys.iter().map(|k| found.get(k).cloned()).collect(), slot))
    }

    /// One account and the slot it was read at ([`Simnet::accounts_at_slot`]).
    pub async fn account_at_slot(
        &self,
        address: &Pubkey,
    ) -> Result<(Option<Account>, u64), SimnetError> {
        let (mut found, slot) = self.accounts_at_slot(std::slice::from_ref(address)).await?;
        Ok((found.pop().flatten(), slot))
    }

    /// How many transactions have landed (`getTransactionCount`, `getEpochInfo`).
    pub async fn transaction_count(&self) -> Result<u64, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let (count,): (i64,) = sql::query("SELECT COUNT(*) FROM simnet_transactions")
            .fetch_one(conn)
            .await?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// `getRecentPrioritizationFees`: for each of the last 150 slots that holds a transaction
    /// (writing to one of `addresses`, when given), the compute-unit price it paid in
    /// micro-lamports, oldest first.
    pub async fn recent_prioritization_fees(
        &self,
        addresses: &[Pubkey],
    ) -> Result<Vec<(u64, u64)>, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let newest = self.shared.block_height(conn).await?;
        let since = newest - RECENT_BLOCKHASHES;
        let rows: Vec<(i64, String)> = if addresses.is_empty() {
            sql::query(
                "SELECT slot, rendered FROM simnet_transactions WHERE slot > $1 ORDER BY slot",
            )
            .bind(since)
            .fetch_all(conn)
            .await?
        } else {
            let mut rows = Vec::new();
            for address in addresses {
                let some: Vec<(i64, String)> = sql::query(
                    "SELECT t.slot, t.rendered FROM simnet_address_signatures s
                     JOIN simnet_transactions t ON t.signature = s.signature
                     WHERE s.address = $1 AND s.slot > $2",
                )
                .bind(address.to_string())
                .bind(since)
                .fetch_all(conn)
                .await?;
                rows.extend(some);
            }
            rows.sort_by_key(|(slot, _)| *slot);
            rows.dedup_by_key(|(slot, _)| *slot);
            rows
        };
        Ok(rows
            .into_iter()
            .map(|(slot, rendered)| {
                let price = serde_json::from_str::<Value>(&rendered)
                    .ok()
                    .map_or(0, |tx| render::compute_unit_price(&tx));
                (u64::try_from(slot).unwrap_or_default(), price)
            })
            .collect())
    }

    /// The SOL/USDC pool's reserves read from one consistent snapshot of the ledger (one
    /// statement); `None` until the pool exists.
    pub async fn pool_reserves(&self) -> Result<Option<PoolReserves>, SimnetError> {
        let a = crate::pool::PoolAddresses::sol_usdc();
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let accounts = ledger::load(conn, &[a.pool, a.sol_vault, a.usdc_vault]).await?;
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
        let a = crate::pool::PoolAddresses::sol_usdc();
        let slot = i64::try_from(slot).unwrap_or(i64::MAX);
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let last: Option<(String,)> = sql::query(
            "SELECT t.rendered FROM simnet_address_signatures s
             JOIN simnet_transactions t ON t.signature = s.signature
             WHERE s.address = $1 AND s.slot < $2 AND t.err IS NULL
             ORDER BY s.slot DESC LIMIT 1",
        )
        .bind(a.usdc_vault.to_string())
        .bind(slot)
        .fetch_optional(conn)
        .await?;
        let Some((rendered,)) = last else {
            return Ok(None);
        };
        let tx: Value = serde_json::from_str(&rendered)
            .map_err(|e| SimnetError::params(format!("stored transaction is unreadable: {e}")))?;
        Ok(render::post_reserves(&tx, &a.sol_vault, &a.usdc_vault))
    }

    /// The token accounts of `owner`, of one `mint` or one token `program` when given.
    pub async fn token_accounts(
        &self,
        owner: &Pubkey,
        mint: Option<&Pubkey>,
        program: Option<&Pubkey>,
    ) -> Result<Vec<(Pubkey, Account)>, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        ledger::token_accounts(conn, owner, mint, program).await
    }

    /// Execute a signed wire transaction. With `skip_preflight`, a transaction whose
    /// instruction fails still lands (fee charged, `meta.err` set), as on a real cluster;
    /// otherwise the failure is returned as a preflight error (with its logs) and nothing is
    /// recorded.
    pub async fn send(&self, wire: &[u8], skip_preflight: bool) -> Result<String, SimnetError> {
        let transaction = Self::decode_transaction(wire, true)?;
        self.writer.land(transaction, skip_preflight).await
    }

    /// `simulateTransaction`: run a transaction against the current ledger and record
    /// nothing. Signatures are checked only with `sig_verify`; with `replace_blockhash` the
    /// newest blockhash stands in for the transaction's own (and is returned), otherwise an
    /// expired one is reported as the result's `err`, as a node does.
    pub async fn simulate(
        &self,
        wire: &[u8],
        sig_verify: bool,
        replace_blockhash: bool,
    ) -> Result<Simulation, SimnetError> {
        if sig_verify && replace_blockhash {
            return Err(SimnetError::params(
                "sigVerify may not be used with replaceRecentBlockhash",
            ));
        }
        let mut transaction = Self::decode_transaction(wire, sig_verify)?;
        let replacement = if replace_blockhash {
            let (hash, last_valid, _) = self.latest_blockhash().await?;
            let bytes = crucible_solana::base58::decode_32(&hash).unwrap_or_default();
            transaction.message.recent_blockhash = bytes;
            Some(json!({"blockhash": hash, "lastValidBlockHeight": last_valid}))
        } else {
            None
        };
        let message = &transaction.message;
        // One read transaction: the height, the blockhash and the accounts of one snapshot.
        let mut tx = self.store.read().begin().await?;
        let conn = &mut Conn::Any(&mut tx);
        let slot = u64::try_from(self.shared.block_height(conn).await?).unwrap_or_default();
        let outcome = if !self
            .shared
            .blockhash_valid(conn, &message.recent_blockhash)
            .await?
        {
            (Some(json!("BlockhashNotFound")), Trace::default())
        } else {
            let pre = ledger::load(conn, &message.account_keys).await?;
            match executor::process(message, &pre) {
                Ok(processed) => (processed.failure.map(|f| f.to_json()), processed.trace),
                Err(refusal) => (Some(refusal.to_json()), Trace::default()),
            }
        };
        tx.commit().await?;
        let (err, trace) = outcome;
        Ok(Simulation {
            slot,
            err,
            trace,
            replacement_blockhash: replacement,
        })
    }

    /// Deserialize a wire transaction, checking its signatures when `verify`.
    fn decode_transaction(wire: &[u8], verify: bool) -> Result<Transaction, SimnetError> {
        let (transaction, message_bytes) = Transaction::deserialize(wire)
            .map_err(|e| SimnetError::params(format!("failed to deserialize transaction: {e}")))?;
        if verify {
            transaction
                .verify(&message_bytes)
                .map_err(|e: WireError| SimnetError::Rpc {
                    code: -32003,
                    message: format!("Transaction signature verification failure: {e}"),
                })?;
        }
        Ok(transaction)
    }

    /// `isBlockhashValid` for a base58 blockhash (false for anything that is not one).
    pub async fn is_blockhash_valid(&self, blockhash: &str) -> Result<bool, SimnetError> {
        let Some(bytes) = crucible_solana::base58::decode_32(blockhash) else {
            return Ok(false);
        };
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        self.shared.blockhash_valid(conn, &bytes).await
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
        let ata = tx::associated_token_address(address, &self.shared.mint, &token_program);
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
                    tx::message::AccountMeta::writable(self.shared.mint, false),
                    tx::message::AccountMeta::writable(ata, false),
                    tx::message::AccountMeta::readonly(faucet, true),
                ],
                data,
            });
        }
        let mint = self.shared.mint;
        let address = *address;
        self.writer
            .write(move |conn, shared| {
                Box::pin(credit(
                    conn,
                    shared,
                    Credit {
                        address,
                        ata,
                        mint,
                        lamports,
                        stablecoin,
                        ixs,
                    },
                ))
            })
            .await
    }

    fn is_final(&self, executed_at: i64) -> bool {
        self.now_ms().saturating_sub(executed_at) >= self.shared.finality_ms
    }

    /// `getSignatureStatuses` entries (null for unknown signatures).
    pub async fn statuses(&self, signatures: &[String]) -> Result<Vec<Value>, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let wanted: Vec<&str> = signatures.iter().map(String::as_str).collect();
        let landed = ledger::landings(conn, &wanted).await?;
        let mut out = Vec::with_capacity(signatures.len());
        for signature in signatures {
            // `get`, not `remove`: a signature may be asked about twice in one request.
            let Some((slot, executed_at, err)) = landed.get(signature).cloned() else {
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
        // Landed here a moment ago (a sender reading its own transaction back), or read.
        let (slot, executed_at, rendered) = match self.shared.recent.get(signature) {
            Some(landed) => (landed.slot, landed.executed_at, landed.rendered),
            None => {
                let mut reader = self.store.reader().await?;
                let conn = &mut reader.conn()?;
                let Some((slot, executed_at, _, rendered)) =
                    ledger::transaction(conn, signature).await?
                else {
                    return Ok(Value::Null);
                };
                (slot, executed_at, rendered.into())
            }
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
}

/// The newest blockhash, or a new one when the clock or a landed transaction has moved past its
/// slot: one write of the ledger (`Simnet::latest_blockhash`).
async fn issue_blockhash(
    conn: &mut Conn<'_>,
    shared: &Shared,
) -> Result<writer::Done<(String, i64)>, SimnetError> {
    let now = shared.now_ms();
    let newest = Newest::read(conn).await?;
    let issued_at = newest.issued_at;
    let (hash, slot) = match newest.reusable(now) {
        Some(fresh) => fresh,
        None => {
            // The slots that passed since the newest blockhash become real (at least the
            // one this blockhash opens), so the height never goes back from what
            // `block_height` reported and moves one block per slot of the clock.
            let passed = shared.slots_since(issued_at).max(1);
            let (slot,): (i64,) = sql::query(
                "UPDATE simnet_counters SET value = value + $1 WHERE name = 'slot' RETURNING value",
            )
            .bind(passed)
            .fetch_one(conn)
            .await?;
            let seq = ledger::next(conn, "blockhash_seq").await?;
            let mut salt = [0u8; 16];
            rand::rngs::OsRng.fill_bytes(&mut salt);
            let mut hasher = Sha256::new();
            hasher.update(seq.to_le_bytes());
            hasher.update(now.to_le_bytes());
            hasher.update(salt);
            let hash = crucible_solana::base58::encode(&hasher.finalize());
            sql::query(
                    "INSERT INTO simnet_blockhashes (hash, seq, slot, issued_at) VALUES ($1, $2, $3, $4)",
                )
                .bind(&hash)
                .bind(seq)
                .bind(slot)
                .bind(now)
                .execute(conn)
                .await?;
            // Keep a margin beyond the validity window; older hashes can never be used. Swept
            // every few blockhashes rather than each time: a few more rows, one statement less
            // per blockhash.
            if seq % PRUNE_EVERY == 0 {
                sql::query("DELETE FROM simnet_blockhashes WHERE seq < $1")
                    .bind(seq - 2 * RECENT_BLOCKHASHES)
                    .execute(conn)
                    .await?;
            }
            (hash, slot)
        }
    };
    Ok(writer::Done::new((hash, slot)))
}

/// The newest blockhash and the slot counter, as one statement reads them.
struct Newest {
    hash: Option<String>,
    slot: Option<i64>,
    issued_at: Option<i64>,
    current_slot: i64,
}

impl Newest {
    async fn read(conn: &mut Conn<'_>) -> Result<Self, SimnetError> {
        let (hash, slot, issued_at, current_slot) = sql::query(
            "SELECT b.hash, b.slot, b.issued_at, c.value
             FROM simnet_counters c
             LEFT JOIN (SELECT hash, slot, issued_at FROM simnet_blockhashes
                        ORDER BY seq DESC LIMIT 1) b ON 1 = 1
             WHERE c.name = 'slot'",
        )
        .fetch_one(conn)
        .await?;
        Ok(Newest {
            hash,
            slot,
            issued_at,
            current_slot,
        })
    }

    /// The newest blockhash and its slot, when it may be handed out again at `now`: within the
    /// slot of the clock it was issued in, and at most [`REUSE_SLOTS`] landings ago (each
    /// transaction lands in a slot of its own), so a client sending many transactions never
    /// receives a blockhash near its end.
    fn reusable(self, now: i64) -> Option<(String, i64)> {
        let (hash, slot, issued_at) = (self.hash?, self.slot?, self.issued_at?);
        ((0..SLOT_MS).contains(&(now - issued_at))
            && (0..=REUSE_SLOTS).contains(&(self.current_slot - slot)))
        .then_some((hash, slot))
    }
}

/// Execute a decoded transaction and record it: one write of the ledger (`Simnet::send`).
pub(crate) async fn land(
    conn: &mut Conn<'_>,
    shared: &Shared,
    transaction: Transaction,
    skip_preflight: bool,
) -> Result<writer::Done<String>, SimnetError> {
    let signature = transaction.signature();
    let message = &transaction.message;
    if !ledger::landings(conn, &[signature.as_str()])
        .await?
        .is_empty()
    {
        return Err(SimnetError::already_processed());
    }
    if !shared
        .blockhash_valid(conn, &message.recent_blockhash)
        .await?
    {
        return Err(SimnetError::blockhash_not_found());
    }
    let pre = ledger::load(conn, &message.account_keys).await?;
    let landing::Execution {
        post,
        err,
        rendered,
        trace,
    } = landing::execute(&transaction, &pre, skip_preflight)?;
    let slot = ledger::next(conn, "slot").await?;
    let executed_at = shared.now_ms();
    let rendered: Arc<str> = rendered.to_string().into();
    ledger::insert_transaction(
        &mut *conn,
        &signature,
        slot,
        executed_at,
        err.as_ref().map(Value::to_string),
        &rendered,
    )
    .await?;
    signatures::record(conn, &signature, slot, &message.account_keys).await?;
    ledger::save_changes(conn, &pre, &post).await?;
    let announced = signature.clone();
    Ok(writer::Done {
        value: signature,
        after: Some(Box::new(move |shared: &Shared| {
            tracing::debug!(signature = %announced, slot, failed = err.is_some(), "simnet transaction");
            shared.remember(&announced, slot, executed_at, rendered);
            shared.publish(
                &announced,
                slot,
                executed_at,
                err,
                &transaction.message,
                &trace,
            );
        })),
    })
}

/// An airdrop's accounts and amounts (`Simnet::airdrop`).
struct Credit {
    address: Pubkey,
    ata: Pubkey,
    mint: Pubkey,
    lamports: u64,
    stablecoin: u64,
    ixs: Vec<tx::message::Instruction>,
}

/// Credit an airdrop and record it as a faucet transaction: one write of the ledger.
async fn credit(
    conn: &mut Conn<'_>,
    shared: &Shared,
    credit: Credit,
) -> Result<writer::Done<String>, SimnetError> {
    let Credit {
        address,
        ata,
        mint,
        lamports,
        stablecoin,
        ixs,
    } = credit;
    let faucet = faucet();
    let token_program = tx::token_program();
    let slot = ledger::next(conn, "slot").await?;
    let (blockhash,): (String,) =
        sql::query("SELECT hash FROM simnet_blockhashes ORDER BY seq DESC LIMIT 1")
            .fetch_optional(conn)
            .await?
            .unwrap_or_else(|| (crucible_solana::base58::encode(&[0u8; 32]),));
    let blockhash = crucible_solana::base58::decode_32(&blockhash).unwrap_or_default();
    let message = Message::new_legacy(&ixs, &faucet, blockhash);
    let pre = ledger::load(conn, &message.account_keys).await?;
    let mut post = pre.clone();
    let target = post.entry(address).or_insert(Account::wallet(0));
    target.lamports = target
        .lamports
        .checked_add(lamports)
        .ok_or_else(|| SimnetError::params("the balance would overflow"))?;
    if stablecoin > 0 {
        let account = post.entry(ata).or_insert(Account {
            lamports: executor::TOKEN_ACCOUNT_RENT,
            kind: Kind::Token {
                program: token_program,
                mint,
                owner: address,
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
        if let Some(Account {
            kind: Kind::Mint { supply, .. },
            ..
        }) = post.get_mut(&mint)
        {
            *supply = supply.saturating_add(stablecoin);
        }
    }
    // The faucet's transfer obeys rent like any other: a new account gets at least the
    // exempt minimum or the airdrop is refused, as `solana-test-validator` refuses it.
    if let Err(short) = rent::check(&message, &pre, &post) {
        return Err(SimnetError::preflight(
            short.message(),
            short.to_json(),
            &Trace::default(),
        ));
    }
    let mut trace = Trace::default();
    for program in ixs.iter().map(|ix| ix.program_id) {
        trace.logs.push(format!("Program {program} invoke [1]"));
        trace.logs.push(format!("Program {program} success"));
    }
    let mut signature = [0u8; 64];
    rand::rngs::OsRng.fill_bytes(&mut signature);
    let signature = crucible_solana::base58::encode(&signature);
    let rendered = render::transaction(
        std::slice::from_ref(&signature),
        &message,
        &pre,
        &post,
        0,
        None,
        &trace,
    );
    let executed_at = shared.now_ms();
    let rendered: Arc<str> = rendered.to_string().into();
    ledger::insert_transaction(conn, &signature, slot, executed_at, None, &rendered).await?;
    signatures::record(conn, &signature, slot, &message.account_keys).await?;
    ledger::save_changes(conn, &pre, &post).await?;
    Ok(writer::Done {
        value: signature.clone(),
        after: Some(Box::new(move |shared: &Shared| {
            shared.remember(&signature, slot, executed_at, rendered);
            shared.publish(&signature, slot, executed_at, None, &message, &trace);
        })),
    })
}

#[cfg(test)]
mod blockhash_reuse {
    use super::*;

    fn newest(slot: i64, issued_at: i64, current_slot: i64) -> Newest {
        Newest {
            hash: Some("hash".to_owned()),
            slot: Some(slot),
            issued_at: Some(issued_at),
            current_slot,
        }
    }

    #[test]
    fn a_blockhash_is_handed_out_again_within_its_slot_and_a_few_landings() {
        assert_eq!(
            newest(100, 1_000, 100).reusable(1_000),
            Some(("hash".to_owned(), 100))
        );
        assert!(
            newest(100, 1_000, 100 + REUSE_SLOTS)
                .reusable(1_000 + SLOT_MS - 1)
                .is_some()
        );
    }

    #[test]
    fn a_new_one_is_issued_once_the_clock_or_the_landings_move_on() {
        assert_eq!(newest(100, 1_000, 100).reusable(1_000 + SLOT_MS), None);
        assert_eq!(newest(100, 1_000, 101 + REUSE_SLOTS).reusable(1_000), None);
        // A clock that went back, and a counter behind the blockhash, are not trusted either.
        assert_eq!(newest(100, 1_000, 100).reusable(999), None);
        assert_eq!(newest(100, 1_000, 99).reusable(1_000), None);
        let none = Newest {
            hash: None,
            slot: None,
            issued_at: None,
            current_slot: 0,
        };
        assert_eq!(none.reusable(0), None);
    }
}
