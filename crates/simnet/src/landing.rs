//! Landings in sets: the transactions one ledger batch lands in a row are read, executed and
//! written together.
//!
//! Landed alone ([`crate::land`]), a transaction costs nine statements: the replay check, its
//! blockhash, its accounts, the slot, the transaction, its signature index, its changed
//! accounts, and the savepoint and release around it. On PostgreSQL each is a round trip, and
//! the ledger's writes run in one serial lane, so on a busy simnet the lane's round trips were
//! what a swap waited for (`cargo bench --bench live_swaps`). A run of landings in a batch costs
//! about seven statements together instead.
//!
//! The outcome is the one the same landings give one after another: each executes against the
//! accounts as the landings before it left them; one already landed (in the ledger, or earlier
//! in the set) is refused as processed; a blockhash is checked against the height the landing
//! would land at; a refused landing changes nothing and fails alone, the rest land. Should a
//! statement of the set fail, the writer rolls the set back and lands each alone instead.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crucible_solana::tx::{Pubkey, Transaction};
use serde_json::Value;

use crate::executor::{self, Accounts, Trace};
use crate::sql::Conn;
use crate::writer::Done;
use crate::{Shared, SimnetError, Standing, ledger, render, signatures};

/// A transaction waiting in the ledger's queue to land, and how it went.
pub(crate) struct Landing {
    /// Taken when it lands (its announcement owns it).
    pub(crate) transaction: Option<Transaction>,
    pub(crate) skip_preflight: bool,
    pub(crate) outcome: Option<Result<Done<String>, SimnetError>>,
}

impl Landing {
    pub(crate) fn new(transaction: Transaction, skip_preflight: bool) -> Self {
        Landing {
            transaction: Some(transaction),
            skip_preflight,
            outcome: None,
        }
    }
}

/// A landing of the set that executed and is written.
struct Accepted {
    /// Its place among the set's landings.
    index: usize,
    signature: String,
    /// Its account keys, which index its signature.
    keys: Vec<Pubkey>,
    err: Option<Value>,
    /// The jsonParsed transaction, as text: stored, and remembered once stored.
    rendered: Arc<str>,
    trace: Trace,
}

/// Land `lands` in order as one set, in the batch's transaction. Each landing's outcome is set
/// only once every statement succeeded; on an error none is, and the caller rolls back.
pub(crate) async fn land_all(
    conn: &mut Conn<'_>,
    shared: &Shared,
    lands: &mut [&mut Landing],
) -> Result<(), SimnetError> {
    let (refused, executed) = {
        let transactions: Vec<(&Transaction, bool)> = lands
            .iter()
            .filter_map(|land| land.transaction.as_ref().map(|t| (t, land.skip_preflight)))
            .collect();
        if transactions.len() != lands.len() {
            return Err(SimnetError::params("a landing was already taken"));
        }
        execute_all(conn, shared, &transactions).await?
    };
    let (first_slot, executed_at) = if executed.accepted.is_empty() {
        (0, 0)
    } else {
        write_all(conn, shared, &executed).await?
    };
    // Every statement succeeded: each landing learns its outcome.
    for (offset, accepted) in (0..).zip(executed.accepted) {
        let Accepted {
            index,
            signature,
            err,
            rendered,
            trace,
            ..
        } = accepted;
        let Some(land) = lands.get_mut(index) else {
            continue;
        };
        let slot = first_slot + offset;
        let transaction = land.transaction.take();
        land.outcome = Some(Ok(Done {
            value: signature.clone(),
            after: Some(Box::new(move |shared: &Shared| {
                shared.remember(&signature, slot, executed_at, rendered);
                if let Some(transaction) = transaction {
                    shared.publish(
                        &signature,
                        slot,
                        executed_at,
                        err,
                        &transaction.message,
                        &trace,
                    );
                }
            })),
        }));
    }
    for (index, error) in refused {
        if let Some(land) = lands.get_mut(index) {
            land.outcome = Some(Err(error));
        }
    }
    Ok(())
}

/// Write the set's landings: their slots (one after another, from the counter), the
/// transactions, their signature index and the accounts they changed (on PostgreSQL in one
/// statement, `ledger::write_set`). The first slot and the execution time.
async fn write_all(
    conn: &mut Conn<'_>,
    shared: &Shared,
    executed: &Executed,
) -> Result<(i64, i64), SimnetError> {
    let count = i64::try_from(executed.accepted.len()).unwrap_or(i64::MAX);
    let executed_at = shared.now_ms();
    if conn.is_postgres() {
        let landings: Vec<ledger::SetLanding<'_>> = executed
            .accepted
            .iter()
            .map(|a| ledger::SetLanding {
                signature: &a.signature,
                err: a.err.as_ref().map(Value::to_string),
                rendered: &a.rendered,
                keys: &a.keys,
            })
            .collect();
        let first = ledger::write_set(
            conn,
            &landings,
            executed_at,
            &executed.before,
            &executed.after,
        )
        .await?;
        return Ok((first, executed_at));
    }
    let last = ledger::advance(conn, "slot", count).await?;
    let first = last - count + 1;
    let transactions: Vec<ledger::NewTransaction<'_>> = (first..)
        .zip(&executed.accepted)
        .map(|(slot, a)| ledger::NewTransaction {
            signature: &a.signature,
            slot,
            executed_at,
            err: a.err.as_ref().map(Value::to_string),
            rendered: &a.rendered,
        })
        .collect();
    ledger::insert_transactions(conn, &transactions).await?;
    let indexed: Vec<(&str, i64, &[Pubkey])> = (first..)
        .zip(&executed.accepted)
        .map(|(slot, a)| (a.signature.as_str(), slot, a.keys.as_slice()))
        .collect();
    signatures::record_all(conn, &indexed).await?;
    ledger::save_changes(conn, &executed.before, &executed.after).await?;
    Ok((first, executed_at))
}

/// What the set reads before it executes: which of its signatures have landed, where each of
/// its blockhashes stands, and the accounts it names: one statement (`ledger::read_set`), or a
/// read each for a set too large for one.
async fn read_all(
    conn: &mut Conn<'_>,
    shared: &Shared,
    signatures: &[&str],
    hashes: &[[u8; 32]],
    keys: &[Pubkey],
) -> Result<
    (
        HashMap<String, ledger::Landing>,
        HashMap<[u8; 32], Standing>,
        Accounts,
    ),
    SimnetError,
> {
    let encoded: Vec<String> = hashes
        .iter()
        .map(|hash| crucible_solana::base58::encode(hash))
        .collect();
    if let Some(reads) = ledger::read_set(conn, signatures, &encoded, keys).await? {
        let height = shared.height(reads.counter, reads.newest);
        let standings = hashes
            .iter()
            .zip(&encoded)
            .map(|(hash, text)| {
                let issued = reads.issued.get(text).copied();
                (*hash, Standing { issued, height })
            })
            .collect();
        return Ok((reads.landed, standings, reads.accounts));
    }
    let landed = ledger::landings(conn, signatures).await?;
    let mut standings = HashMap::with_capacity(hashes.len());
    for hash in hashes {
        standings.insert(*hash, shared.blockhash_standing(conn, hash).await?);
    }
    let before = ledger::load(conn, keys).await?;
    Ok((landed, standings, before))
}

/// Read what the set needs, then execute each landing in memory against the accounts as those
/// before it left them: the refused landings by index, and those that land, in order, with the
/// accounts before and after the set.
async fn execute_all(
    conn: &mut Conn<'_>,
    shared: &Shared,
    transactions: &[(&Transaction, bool)],
) -> Result<(Vec<(usize, SimnetError)>, Executed), SimnetError> {
    let signatures: Vec<String> = transactions.iter().map(|(t, _)| t.signature()).collect();
    let asked: Vec<&str> = signatures.iter().map(String::as_str).collect();
    let mut hashes: Vec<[u8; 32]> = transactions
        .iter()
        .map(|(t, _)| t.message.recent_blockhash)
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    let mut keys: Vec<Pubkey> = transactions
        .iter()
        .flat_map(|(t, _)| t.message.account_keys.iter().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let (landed, standings, before) = read_all(conn, shared, &asked, &hashes, &keys).await?;
    let mut now = before.clone();
    let mut refused = Vec::new();
    let mut accepted = Vec::new();
    let mut in_set: HashSet<&str> = HashSet::new();
    for (index, ((transaction, skip_preflight), signature)) in
        transactions.iter().zip(&signatures).enumerate()
    {
        let message = &transaction.message;
        if landed.contains_key(signature) || in_set.contains(signature.as_str()) {
            refused.push((index, SimnetError::already_processed()));
            continue;
        }
        let standing = standings.get(&message.recent_blockhash).copied();
        if !standing.is_some_and(|s| s.valid_after(accepted.len() as i64)) {
            refused.push((index, SimnetError::blockhash_not_found()));
            continue;
        }
        let pre: Accounts = message
            .account_keys
            .iter()
            .filter_map(|key| now.get(key).map(|account| (*key, account.clone())))
            .collect();
        let run = match execute(transaction, &pre, *skip_preflight) {
            Ok(run) => run,
            Err(error) => {
                refused.push((index, error));
                continue;
            }
        };
        for key in &message.account_keys {
            match run.post.get(key) {
                Some(account) => now.insert(*key, account.clone()),
                // Closed (or never there): gone from the accounts the next landing sees.
                None => now.remove(key),
            };
        }
        in_set.insert(signature.as_str());
        accepted.push(Accepted {
            index,
            signature: signature.clone(),
            keys: message.account_keys.clone(),
            err: run.err,
            rendered: run.rendered.to_string().into(),
            trace: run.trace,
        });
    }
    Ok((
        refused,
        Executed {
            before,
            after: now,
            accepted,
        },
    ))
}

/// One landing executed: the accounts it leaves, its `meta.err`, its rendered transaction and
/// what its programs logged.
pub(crate) struct Execution {
    pub(crate) post: Accounts,
    pub(crate) err: Option<Value>,
    pub(crate) rendered: Value,
    pub(crate) trace: Trace,
}

/// Execute `transaction` against `pre`, the accounts it names as they are: what it leaves, or
/// why it is refused (it cannot run, or it fails and `skip_preflight` is off).
pub(crate) fn execute(
    transaction: &Transaction,
    pre: &Accounts,
    skip_preflight: bool,
) -> Result<Execution, SimnetError> {
    let message = &transaction.message;
    let processed = executor::process(message, pre).map_err(|r| SimnetError::refused(&r))?;
    let err = processed.failure.as_ref().map(|f| f.to_json());
    if let Some(failure) = &processed.failure
        && !skip_preflight
    {
        return Err(SimnetError::preflight(
            failure.message(),
            failure.to_json(),
            &processed.trace,
        ));
    }
    let signatures: Vec<String> = transaction
        .signatures
        .iter()
        .map(|s| crucible_solana::base58::encode(s))
        .collect();
    let rendered = render::transaction(
        &signatures,
        message,
        pre,
        &processed.post,
        processed.fee,
        err.as_ref(),
        &processed.trace,
    );
    Ok(Execution {
        post: processed.post,
        err,
        rendered,
        trace: processed.trace,
    })
}

/// What a set's execution leaves to write.
struct Executed {
    before: Accounts,
    after: Accounts,
    accepted: Vec<Accepted>,
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use std::sync::Arc;

    use crucible_solana::Keypair;
    use crucible_solana::tx::{Message, instructions};

    use super::*;
    use crate::{Simnet, Storage, default_stablecoin_mint};

    const SOL: u64 = 1_000_000_000;

    async fn simnet() -> Simnet {
        let storage = Storage::in_memory().await.expect("storage");
        Simnet::open(
            storage,
            Arc::new(|| 1_700_000_000_000),
            3_000,
            default_stablecoin_mint(),
        )
        .await
        .expect("open")
    }

    fn transfer(from: &Keypair, to: &Pubkey, lamports: u64, blockhash: [u8; 32]) -> Transaction {
        let message = Message::new_legacy(
            &[instructions::system_transfer(&from.pubkey(), to, lamports)],
            &from.pubkey(),
            blockhash,
        );
        Transaction::sign(message, &[from.signing_key()]).expect("sign")
    }

    /// Land `transactions` as one set in one committed transaction; each one's outcome.
    async fn land_set(
        simnet: &Simnet,
        transactions: Vec<Transaction>,
    ) -> Vec<Result<String, String>> {
        let mut owned: Vec<Landing> = transactions
            .into_iter()
            .map(|t| Landing::new(t, false))
            .collect();
        let mut tx = crucible_sql::Transaction::begin(simnet.store.writer(), simnet.store.local())
            .await
            .expect("begin");
        {
            let mut lands: Vec<&mut Landing> = owned.iter_mut().collect();
            land_all(&mut tx.conn().expect("conn"), &simnet.shared, &mut lands)
                .await
                .expect("the set lands");
        }
        tx.commit().await.expect("commit");
        owned
            .into_iter()
            .map(|land| match land.outcome.expect("an outcome") {
                // What the writer does once the batch commits.
                Ok(done) => {
                    if let Some(after) = done.after {
                        after(&simnet.shared);
                    }
                    Ok(done.value)
                }
                Err(error) => Err(error.to_string()),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_set_lands_as_one_after_another_would() {
        let simnet = simnet().await;
        let (a, b, broke) = (
            Keypair::from_secret([1; 32]),
            Keypair::from_secret([2; 32]),
            Keypair::from_secret([3; 32]),
        );
        let c = Pubkey([7; 32]);
        simnet
            .airdrop(&a.pubkey(), 10 * SOL, 0)
            .await
            .expect("airdrop");
        let (hash, _, _) = simnet.latest_blockhash().await.expect("blockhash");
        let blockhash = crucible_solana::base58::decode_32(&hash).expect("hash");
        let count_before = simnet.transaction_count().await.expect("count");

        let a_to_b = transfer(&a, &b.pubkey(), 3 * SOL, blockhash);
        let outcomes = land_set(
            &simnet,
            vec![
                a_to_b.clone(),
                // B spends what the landing before it gave it.
                transfer(&b, &c, SOL, blockhash),
                // The first landing again, within the set.
                a_to_b,
                // Nothing to pay with: refused, and charged nothing.
                transfer(&broke, &c, 1, blockhash),
                // A blockhash the ledger never issued.
                transfer(&a, &c, 1, [9; 32]),
                transfer(&a, &c, 2 * SOL, blockhash),
            ],
        )
        .await;

        assert!(outcomes[0].is_ok() && outcomes[1].is_ok(), "{outcomes:?}");
        assert!(
            outcomes[2]
                .as_ref()
                .is_err_and(|e| e.contains("already been processed"))
        );
        assert!(outcomes[3].is_err(), "{outcomes:?}");
        assert!(
            outcomes[4]
                .as_ref()
                .is_err_and(|e| e.contains("Blockhash not found"))
        );
        assert!(outcomes[5].is_ok(), "{outcomes:?}");
        let fee = 5_000;
        assert_eq!(
            simnet.balance(&a.pubkey()).await.unwrap(),
            5 * SOL - 2 * fee
        );
        assert_eq!(simnet.balance(&b.pubkey()).await.unwrap(), 2 * SOL - fee);
        assert_eq!(simnet.balance(&c).await.unwrap(), 3 * SOL);
        assert_eq!(simnet.balance(&broke.pubkey()).await.unwrap(), 0);
        assert_eq!(simnet.transaction_count().await.unwrap(), count_before + 3);

        // Each landed in a slot of its own, in order, and is indexed under its accounts.
        let mut slots = Vec::new();
        for landed in [&outcomes[0], &outcomes[1], &outcomes[5]] {
            let signature = landed.as_ref().expect("landed");
            let found = simnet
                .transaction(signature, crate::Commitment::Confirmed)
                .await
                .expect("read");
            slots.push(found["slot"].as_i64().expect("slot"));
        }
        assert_eq!(slots, [slots[0], slots[0] + 1, slots[0] + 2]);
        let mut conn = simnet.store.reader().await.unwrap();
        let (indexed,): (i64,) =
            crate::sql::query("SELECT COUNT(*) FROM simnet_address_signatures WHERE address = $1")
                .bind(b.pubkey().to_string())
                .fetch_one(&mut conn.conn().unwrap())
                .await
                .unwrap();
        assert_eq!(indexed, 2, "B is named by two landed transactions");
    }

    #[tokio::test]
    async fn accounts_and_their_slot_are_read_in_one_answer() {
        let simnet = simnet().await;
        let (a, absent) = (Keypair::from_secret([4; 32]), Pubkey([8; 32]));
        simnet
            .airdrop(&a.pubkey(), 2 * SOL, 0)
            .await
            .expect("airdrop");
        let slot = simnet.slot().await.expect("slot");

        let (found, at) = simnet
            .accounts_at_slot(&[absent, a.pubkey(), a.pubkey()])
            .await
            .expect("read");
        assert_eq!(at, slot);
        let lamports: Vec<Option<u64>> = found
            .iter()
            .map(|f| f.as_ref().map(|a| a.lamports))
            .collect();
        // In the order asked, a key named twice answered twice, an absent one as none.
        assert_eq!(lamports, [None, Some(2 * SOL), Some(2 * SOL)]);

        // Nothing found still says the slot.
        let (none, at) = simnet.account_at_slot(&absent).await.expect("read");
        assert!(none.is_none());
        assert_eq!(at, slot);
        let (nothing, at) = simnet.accounts_at_slot(&[]).await.expect("read");
        assert!(nothing.is_empty());
        assert_eq!(at, slot);

        // A landing moves the slot the next answer carries.
        let (hash, _, _) = simnet.latest_blockhash().await.expect("blockhash");
        let blockhash = crucible_solana::base58::decode_32(&hash).expect("hash");
        let outcomes = land_set(&simnet, vec![transfer(&a, &absent, SOL, blockhash)]).await;
        assert!(outcomes[0].is_ok(), "{outcomes:?}");
        let (found, after) = simnet.accounts_at_slot(&[absent]).await.expect("read");
        assert_eq!(after, simnet.slot().await.expect("slot"));
        assert!(after > slot);
        assert_eq!(found[0].as_ref().map(|a| a.lamports), Some(SOL));
    }

    #[tokio::test]
    async fn a_transaction_landed_here_reads_back_as_the_ledger_has_it() {
        let simnet = simnet().await;
        // A second simnet on the same ledger, as another node: it landed nothing itself.
        let other = Simnet::open(
            simnet.store.clone(),
            Arc::new(|| 1_700_000_000_000),
            3_000,
            default_stablecoin_mint(),
        )
        .await
        .expect("open");
        let a = Keypair::from_secret([5; 32]);
        simnet
            .airdrop(&a.pubkey(), 2 * SOL, 0)
            .await
            .expect("airdrop");
        let (hash, _, _) = simnet.latest_blockhash().await.expect("blockhash");
        let blockhash = crucible_solana::base58::decode_32(&hash).expect("hash");
        let outcomes = land_set(
            &simnet,
            vec![transfer(&a, &Pubkey([6; 32]), SOL, blockhash)],
        )
        .await;
        let signature = outcomes[0].as_ref().expect("landed");
        assert!(simnet.shared.recent.get(signature).is_some(), "remembered");
        assert!(other.shared.recent.get(signature).is_none());

        for commitment in [crate::Commitment::Confirmed, crate::Commitment::Finalized] {
            let here = simnet
                .transaction(signature, commitment)
                .await
                .expect("read");
            let read = other
                .transaction(signature, commitment)
                .await
                .expect("read");
            assert_eq!(here, read, "{commitment:?}");
        }
        let here = simnet
            .transaction(signature, crate::Commitment::Confirmed)
            .await
            .expect("read");
        assert!(here["slot"].as_i64().is_some_and(|slot| slot > 0));
        assert_eq!(here["transaction"]["signatures"][0], signature.as_str());
    }
}
