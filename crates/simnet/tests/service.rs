//! The simnet as a library: an in-memory ledger on a test clock, driven only through the public
//! API a server mounts (JSON-RPC bodies in, replies out; a PubSub session per connection).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use base64::Engine;
use crucible_simnet::pubsub::Session;
use crucible_simnet::{Simnet, SqliteFile, Storage, default_stablecoin_mint, rpc};
use crucible_solana::Keypair;
use crucible_solana::tx::{Message, Pubkey, Transaction, instructions};
use serde_json::{Value, json};

const FINALITY_MS: u64 = 3_000;

/// A simnet on a private in-memory database, and the clock it reads (ms, moved by hand).
async fn simnet() -> (Arc<Simnet>, Arc<AtomicI64>) {
    let now = Arc::new(AtomicI64::new(1_700_000_000_000));
    let clock = {
        let now = now.clone();
        move || now.load(Ordering::SeqCst)
    };
    let storage = Storage::in_memory().await.expect("in-memory storage");
    let simnet = Simnet::open(
        storage,
        Arc::new(clock),
        FINALITY_MS,
        default_stablecoin_mint(),
    )
    .await
    .expect("open");
    (Arc::new(simnet), now)
}

async fn call(simnet: &Simnet, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply = rpc::handle(simnet, body.to_string().as_bytes()).await;
    assert_eq!(reply["id"], 1, "{reply}");
    reply
}

async fn result(simnet: &Simnet, method: &str, params: Value) -> Value {
    let reply = call(simnet, method, params).await;
    assert!(reply.get("error").is_none(), "{method}: {reply}");
    reply["result"].clone()
}

/// A signed SOL transfer from `from` to `to`, base64 on the wire, with a fresh blockhash.
async fn transfer(simnet: &Simnet, from: &Keypair, to: &Pubkey, lamports: u64) -> (String, String) {
    let latest = result(simnet, "getLatestBlockhash", json!([])).await;
    let blockhash: [u8; 32] = bs58::decode(latest["value"]["blockhash"].as_str().expect("hash"))
        .into_vec()
        .expect("base58")
        .try_into()
        .expect("32 bytes");
    let message = Message::new_legacy(
        &[instructions::system_transfer(&from.pubkey(), to, lamports)],
        &from.pubkey(),
        blockhash,
    );
    let transaction = Transaction::sign(message, &[from.signing_key()]).expect("sign");
    let wire = transaction.serialize().expect("serialize");
    (
        transaction.signature(),
        base64::engine::general_purpose::STANDARD.encode(wire),
    )
}

/// `sendTransaction` of a base64 wire transaction on a task of its own (so several share the
/// ledger's batches); the JSON-RPC reply.
fn spawn_send(simnet: &Arc<Simnet>, wire: String) -> tokio::task::JoinHandle<Value> {
    let simnet = simnet.clone();
    tokio::spawn(async move {
        call(
            &simnet,
            "sendTransaction",
            json!([wire, {"encoding": "base64"}]),
        )
        .await
    })
}

#[tokio::test]
async fn a_transfer_is_confirmed_at_once_and_finalized_on_the_clock() {
    let (simnet, now) = simnet().await;
    let payer = Keypair::from_secret([1; 32]);
    let payee = Pubkey([2; 32]);
    simnet
        .airdrop(&payer.pubkey(), 2_000_000_000, 0)
        .await
        .expect("airdrop");

    let (signature, wire) = transfer(&simnet, &payer, &payee, 1_000_000_000).await;
    let sent = result(
        &simnet,
        "sendTransaction",
        json!([wire, {"encoding": "base64"}]),
    )
    .await;
    assert_eq!(sent, json!(signature));

    let statuses = result(&simnet, "getSignatureStatuses", json!([[signature]])).await;
    assert_eq!(statuses["value"][0]["confirmationStatus"], "confirmed");
    let unseen = result(&simnet, "getTransaction", json!([signature])).await;
    assert_eq!(unseen, Value::Null, "not finalized yet");

    now.fetch_add(FINALITY_MS as i64, Ordering::SeqCst);
    let statuses = result(&simnet, "getSignatureStatuses", json!([[signature]])).await;
    assert_eq!(statuses["value"][0]["confirmationStatus"], "finalized");
    let landed = result(&simnet, "getTransaction", json!([signature])).await;
    assert_eq!(landed["meta"]["err"], Value::Null);
    let balance = result(&simnet, "getBalance", json!([payee.to_string()])).await;
    assert_eq!(balance["value"], 1_000_000_000);

    // The same bytes again are a replay.
    let replay = call(
        &simnet,
        "sendTransaction",
        json!([wire, {"encoding": "base64"}]),
    )
    .await;
    assert_eq!(replay["error"]["code"], -32002, "{replay}");
}

#[tokio::test]
async fn json_rpc_answers_batches_parse_errors_and_unknown_methods() {
    let (simnet, _) = simnet().await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "getHealth"},
        {"jsonrpc": "2.0", "id": 2, "method": "getBlockProduction"},
    ]);
    let replies = rpc::handle(&simnet, batch.to_string().as_bytes()).await;
    assert_eq!(replies[0]["result"], "ok");
    assert_eq!(replies[1]["error"]["code"], -32601);
    assert!(
        replies[1]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("getBlockProduction"))
    );
    let garbage = rpc::handle(&simnet, b"{not json").await;
    assert_eq!(garbage["error"]["code"], -32700);
    let version = result(&simnet, "getVersion", json!([])).await;
    assert_eq!(version["solana-core"], rpc::API_VERSION);
}

#[tokio::test]
async fn a_session_notifies_accounts_at_once_and_signatures_once_final() {
    let (simnet, now) = simnet().await;
    let mut session = Session::new(simnet.clone());
    let wallet = Keypair::from_secret([3; 32]);
    let address = wallet.pubkey().to_string();

    let answered = session
        .on_text(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "accountSubscribe",
                    "params": [address, {"commitment": "confirmed", "encoding": "base64"}]})
            .to_string(),
        )
        .await;
    let answer: Value = serde_json::from_str(&answered[0]).expect("json");
    let account_subscription = answer["result"].as_u64().expect("subscription id");

    simnet
        .airdrop(&wallet.pubkey(), 1_000_000_000, 0)
        .await
        .expect("airdrop");
    let due = tokio::time::timeout(Duration::from_secs(5), session.due())
        .await
        .expect("a landed transaction wakes the session");
    let sent = session.on_due(due).await.expect("the simnet is open");
    let notification: Value = serde_json::from_str(&sent[0]).expect("json");
    assert_eq!(notification["method"], "accountNotification");
    assert_eq!(notification["params"]["subscription"], account_subscription);
    assert_eq!(
        notification["params"]["result"]["value"]["lamports"],
        1_000_000_000
    );

    // A transaction that already landed is found in the ledger at subscribe time; at
    // `finalized` its one notification waits for the clock.
    let (signature, wire) = transfer(&simnet, &wallet, &Pubkey([4; 32]), 5_000_000).await;
    result(
        &simnet,
        "sendTransaction",
        json!([wire, {"encoding": "base64"}]),
    )
    .await;
    let answered = session
        .on_text(
            &json!({"jsonrpc": "2.0", "id": 8, "method": "signatureSubscribe",
                    "params": [signature, {"commitment": "finalized"}]})
            .to_string(),
        )
        .await;
    assert_eq!(answered.len(), 1, "only the answer: {answered:?}");
    now.fetch_add(FINALITY_MS as i64, Ordering::SeqCst);
    let mut final_notification = None;
    for _ in 0..50 {
        let due = tokio::time::timeout(Duration::from_secs(5), session.due())
            .await
            .expect("the session wakes");
        for message in session.on_due(due).await.expect("open") {
            let message: Value = serde_json::from_str(&message).expect("json");
            if message["method"] == "signatureNotification" {
                final_notification = Some(message);
            }
        }
        if final_notification.is_some() {
            break;
        }
    }
    let notification = final_notification.expect("a signature notification once final");
    assert_eq!(
        notification["params"]["result"]["value"]["err"],
        Value::Null
    );

    // Unsubscribing twice: the second time the id is unknown.
    let unsubscribe = json!({"jsonrpc": "2.0", "id": 9, "method": "accountUnsubscribe",
                             "params": [account_subscription]})
    .to_string();
    let first: Value = serde_json::from_str(&session.on_text(&unsubscribe).await[0]).expect("json");
    assert_eq!(first["result"], true);
    let again: Value = serde_json::from_str(&session.on_text(&unsubscribe).await[0]).expect("json");
    assert_eq!(again["error"]["message"], "Invalid subscription id.");
    assert!(session.on_binary()[0].contains("-32700"));
}

#[tokio::test]
async fn the_schema_can_be_created_again_and_a_reopened_ledger_keeps_its_state() {
    let storage = Storage::in_memory().await.expect("storage");
    storage.create_schema().await.expect("idempotent");
    let clock = || 1_700_000_000_000_i64;
    let mint = default_stablecoin_mint();
    let first = Simnet::open(storage.clone(), Arc::new(clock), FINALITY_MS, mint)
        .await
        .expect("open");
    let wallet = Pubkey([5; 32]);
    first
        .airdrop(&wallet, 3_000_000_000, 250_000_000)
        .await
        .expect("airdrop");
    let again = Simnet::open(storage, Arc::new(clock), FINALITY_MS, mint)
        .await
        .expect("reopen");
    assert_eq!(
        again.balance(&wallet).await.expect("balance"),
        3_000_000_000
    );
    let tokens = again
        .token_accounts(&wallet, Some(&mint), None)
        .await
        .expect("token accounts");
    assert_eq!(tokens.len(), 1);
}

/// Writes sent at once share batches (`writer.rs`): every one is answered for what it did, a
/// refused one changes nothing and fails alone, a transaction sent twice lands once, and the
/// ledger adds up as if each had had a transaction of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_sent_at_once_land_whole_and_a_refused_one_fails_alone() {
    let (simnet, _now) = simnet().await;
    let payee = Pubkey([9; 32]);
    let payers: Vec<Keypair> = (10..42u8).map(|i| Keypair::from_secret([i; 32])).collect();
    let mut airdrops = Vec::new();
    for payer in &payers {
        let (simnet, address) = (simnet.clone(), payer.pubkey());
        airdrops.push(tokio::spawn(async move {
            simnet.airdrop(&address, 2_000_000_000, 0).await
        }));
    }
    for airdrop in airdrops {
        airdrop.await.expect("task").expect("airdrop");
    }
    let mut wires = Vec::new();
    for payer in &payers {
        wires.push(transfer(&simnet, payer, &payee, 1_000_000_000).await);
    }
    // One overdraft (an account with nothing), and the first transfer a second time.
    let broke = Keypair::from_secret([99; 32]);
    let overdraft = transfer(&simnet, &broke, &payee, 1).await;
    let duplicate = wires[0].clone();

    let send = |wire: String| spawn_send(&simnet, wire);
    let mut sent = Vec::new();
    for (_, wire) in &wires {
        sent.push(send(wire.clone()));
    }
    let refused = send(overdraft.1.clone());
    let again = send(duplicate.1.clone());

    let mut landed = 0;
    for (reply, (signature, _)) in sent.into_iter().zip(&wires) {
        let reply = reply.await.expect("task");
        if reply.get("error").is_none() {
            assert_eq!(reply["result"], json!(signature));
            landed += 1;
        } else {
            // Only the first transfer may lose the race to its own duplicate.
            assert_eq!(signature, &duplicate.0, "{reply}");
        }
    }
    let again = again.await.expect("task");
    let refused = refused.await.expect("task");
    assert!(
        refused.get("error").is_some(),
        "an overdraft is refused: {refused}"
    );
    // Of the two sends of the same transaction, exactly one landed.
    let duplicate_landed = usize::from(again.get("error").is_none());
    assert_eq!(landed + duplicate_landed, payers.len(), "{again}");
    if duplicate_landed == 0 {
        let message = again["error"]["message"].as_str().expect("message");
        assert!(message.contains("already been processed"), "{message}");
    }

    let balance = result(&simnet, "getBalance", json!([payee.to_string()])).await;
    assert_eq!(balance["value"], 1_000_000_000 * payers.len() as u64);
    let broke_balance = result(&simnet, "getBalance", json!([broke.pubkey().to_string()])).await;
    assert_eq!(
        broke_balance["value"], 0,
        "the refused transfer charged nothing"
    );
    // Every airdrop and transfer is on the ledger once.
    let count = result(&simnet, "getTransactionCount", json!([])).await;
    assert_eq!(count, json!(2 * payers.len()));
}

/// A ledger in a SQLite file, as a server keeps it: the hot statements run in place on the
/// ledger's own connections while sqlx's pools stay the way in for everything else. Transfers
/// sent at once share batches (one of them a duplicate that must fail alone), every answer is
/// what the file holds, and a reopened ledger has all of it.
#[tokio::test]
async fn a_ledger_in_a_sqlite_file_runs_in_place_and_keeps_every_landing() {
    use sqlx::any::{AnyPoolOptions, install_default_drivers};

    install_default_drivers();
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("ledger.db");
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let pools = || async {
        let writer = AnyPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .expect("writer pool");
        sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&writer)
            .await
            .expect("wal");
        let reader = AnyPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await
            .expect("reader pool");
        (reader, writer)
    };
    let (reader, writer) = pools().await;
    let storage = Storage::with_sqlite_file(reader, writer, SqliteFile::new(&path));
    storage.create_schema().await.expect("schema");
    let open = |storage: Storage| async move {
        let clock = || 1_700_000_000_000_i64;
        Arc::new(
            Simnet::open(storage, Arc::new(clock), 0, default_stablecoin_mint())
                .await
                .expect("open"),
        )
    };
    let simnet = open(storage.clone()).await;
    let payer = Keypair::from_secret([7; 32]);
    let payee = Pubkey([8; 32]);
    simnet
        .airdrop(&payer.pubkey(), 10_000_000_000, 0)
        .await
        .expect("airdrop");

    let mut wires = Vec::new();
    for n in 0..16 {
        wires.push(transfer(&simnet, &payer, &payee, 1_000_000 + n).await.1);
    }
    // The first transfer twice: a node lands it once and refuses the copy.
    wires.push(wires[0].clone());
    let sends: Vec<_> = wires
        .into_iter()
        .map(|wire| spawn_send(&simnet, wire))
        .collect();
    let mut landed = 0;
    let mut refused = 0;
    for send in sends {
        let reply = send.await.expect("send task");
        if reply.get("result").is_some() {
            landed += 1;
        } else {
            refused += 1;
        }
    }
    assert_eq!((landed, refused), (16, 1));
    let expected: u64 = (0..16).map(|n| 1_000_000 + n).sum();
    assert_eq!(simnet.balance(&payee).await.expect("balance"), expected);
    let (batches, writes) = simnet.write_batches();
    assert!(
        writes > batches,
        "sent at once, writes share batches: {writes} in {batches}"
    );

    // What the file holds, read through sqlx, and again after a reopen.
    let (count,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM simnet_address_signatures WHERE address = $1")
            .bind(payee.to_string())
            .fetch_one(storage.read())
            .await
            .expect("count");
    assert_eq!(count, 16);
    drop(simnet);
    storage.close().await;
    let (reader, writer) = pools().await;
    let reopened = open(Storage::with_sqlite_file(
        reader,
        writer,
        SqliteFile::new(&path),
    ))
    .await;
    assert_eq!(reopened.balance(&payee).await.expect("balance"), expected);
}
