//! Money under faults: clients that pay real entry fees on the nodes' simnet and register with
//! them, and the checker over what they were told and what the chain holds afterwards — every
//! acknowledged paid entry registered once with its fee, no fee registering twice, every prize
//! sent once and finalized, and each winner holding exactly its prizes (a prize paid twice
//! would show in the balance). Used by the random fault schedule (`faults_schedule.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use base64::Engine;
use crucible::chain::Keypair;
use crucible::chain::tx::{self, Pubkey, instructions};
use serde_json::{Value, json};

/// Entry fee of the paid tournament, raw USDC (1 USDC).
pub(crate) const FEE_RAW: u64 = 1_000_000;

/// One paid entry a client tried: its wallet, its fee's signature once signed, and the last
/// answer its registration got (0: none).
#[derive(Debug, Clone)]
pub(crate) struct PaidEntry {
    pub wallet: String,
    pub signature: Option<String>,
    pub status: u16,
}

pub(crate) type Paid = Arc<Mutex<Vec<PaidEntry>>>;

/// A JSON-RPC call to the simnet of the first node of `bases` (from `first`) that answers; the
/// `result`, or `None` when no node gave one.
async fn rpc(
    client: &reqwest::Client,
    bases: &RwLock<Vec<String>>,
    first: usize,
    method: &str,
    params: Value,
) -> Option<Value> {
    let nodes = bases.read().expect("bases").clone();
    for attempt in 0..nodes.len() {
        let base = &nodes[(first + attempt) % nodes.len()];
        let answer = client
            .post(format!("{base}/simnet/rpc"))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await;
        let Ok(answer) = answer else { continue };
        let Ok(body) = answer.json::<Value>().await else {
            continue;
        };
        if !body["result"].is_null() {
            return Some(body["result"].clone());
        }
    }
    None
}

/// The token accounts `owner` holds of `mint` (any mint when `None`): `(address, mint, amount)`.
async fn token_accounts(
    client: &reqwest::Client,
    bases: &RwLock<Vec<String>>,
    owner: &str,
) -> Option<Vec<(String, String, u64)>> {
    let result = rpc(
        client,
        bases,
        0,
        "getTokenAccountsByOwner",
        json!([owner, {"programId": tx::token_program().to_string()}, {"encoding": "jsonParsed"}]),
    )
    .await?;
    Some(
        result["value"]
            .as_array()?
            .iter()
            .filter_map(|account| {
                let info = &account["account"]["data"]["parsed"]["info"];
                Some((
                    account["pubkey"].as_str()?.to_owned(),
                    info["mint"].as_str()?.to_owned(),
                    info["tokenAmount"]["amount"].as_str()?.parse().ok()?,
                ))
            })
            .collect(),
    )
}

/// The fee transfer of `payer` for its own entry in `tournament`: to the escrow's token
/// account (created if needed), with the registration memo; signed, on the wire.
fn fee_transfer(
    payer: &Keypair,
    tournament: &str,
    escrow: &Pubkey,
    source: &Pubkey,
    mint: &Pubkey,
    blockhash: [u8; 32],
) -> (String, String) {
    let owner = payer.pubkey();
    let program = tx::token_program();
    let destination = tx::associated_token_address(escrow, mint, &program);
    let memo = crucible::tournaments::registration_memo(tournament, &[owner.to_string()]);
    let ixs = [
        instructions::create_associated_token_account_idempotent(&owner, escrow, mint, &program),
        instructions::token_transfer_checked(
            &program,
            source,
            mint,
            &destination,
            &owner,
            FEE_RAW,
            6,
        ),
        instructions::memo(&memo, &[owner]),
    ];
    let message = tx::Message::new_legacy(&ixs, &owner, blockhash);
    let transaction = tx::Transaction::sign(message, &[payer.signing_key()]).expect("sign");
    let signature = transaction.signature();
    let wire = transaction.serialize().expect("wire");
    (
        signature,
        base64::engine::general_purpose::STANDARD.encode(wire),
    )
}

/// Pay entry fees and register with them until `stop`, through either node (the other when one
/// does not answer). Every attempt is recorded in `paid`.
pub(crate) async fn client_loop(
    bases: Arc<RwLock<Vec<String>>>,
    tournament: String,
    escrow: Pubkey,
    id: u64,
    paid: Paid,
    stop: Arc<AtomicBool>,
) {
    let client = crate::helpers::server_process::client(15);
    let first = id as usize % 2;
    while !stop.load(Ordering::Relaxed) {
        let payer = Keypair::generate();
        let wallet = payer.pubkey().to_string();
        // SOL for the transaction fee and exactly one entry fee of USDC.
        let funded = rpc(
            &client,
            &bases,
            first,
            "requestAirdrop",
            json!([wallet, 10_000_000u64, {"stablecoinAmount": FEE_RAW}]),
        )
        .await;
        let accounts = match funded {
            Some(_) => token_accounts(&client, &bases, &wallet).await,
            None => None,
        };
        let Some((source, mint, _)) = accounts.and_then(|a| a.into_iter().next()) else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let Some(latest) = rpc(&client, &bases, first, "getLatestBlockhash", json!([])).await
        else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let blockhash = crate::helpers::blockhash_bytes(&latest);
        let (signature, wire) = fee_transfer(
            &payer,
            &tournament,
            &escrow,
            &source.parse().expect("source"),
            &mint.parse().expect("mint"),
            blockhash,
        );
        // Sent to either node; the same bytes again to the other if the first did not answer
        // (a transaction lands at most once).
        let sent = rpc(
            &client,
            &bases,
            first,
            "sendTransaction",
            json!([wire, {"encoding": "base64"}]),
        )
        .await;
        let mut entry = PaidEntry {
            wallet: wallet.clone(),
            signature: Some(signature.clone()),
            status: 0,
        };
        if sent.is_some() {
            entry.status = register(&client, &bases, first, &tournament, &wallet, &signature).await;
        }
        paid.lock().expect("paid").push(entry);
    }
}

/// Register `wallet` with its fee `signature`, asking again while the payment is not final
/// (202) or a node is away (503, no answer), for up to 20 s; the last answer.
pub(crate) async fn register(
    client: &reqwest::Client,
    bases: &RwLock<Vec<String>>,
    first: usize,
    tournament: &str,
    wallet: &str,
    signature: &str,
) -> u16 {
    let body = json!({"registeredWallets": [wallet], "txSignature": signature,
                      "payerWallet": wallet});
    let began = Instant::now();
    let mut status = 0;
    for attempt in 0.. {
        let base = {
            let nodes = bases.read().expect("bases");
            nodes[(first + attempt) % nodes.len()].clone()
        };
        status = match client
            .post(format!("{base}/api/tournaments/{tournament}/register"))
            .json(&body)
            .send()
            .await
        {
            Ok(response) => response.status().as_u16(),
            Err(_) => 0,
        };
        if !matches!(status, 0 | 202 | 503) || began.elapsed() > Duration::from_secs(20) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    status
}

/// What the money checker counted.
#[derive(Debug)]
pub(crate) struct MoneyChecked {
    pub entries_acknowledged: usize,
    pub payouts_sent: usize,
}

/// The checker: run once the tournament has ended (it waits for its prizes to be sent).
pub(crate) async fn check(
    pool: &sqlx::AnyPool,
    bases: &RwLock<Vec<String>>,
    tournament: &str,
    paid: &[PaidEntry],
    seed: u64,
) -> MoneyChecked {
    let client = crate::helpers::server_process::client(15);
    // Every acknowledged paid entry is registered, with its own fee.
    let acknowledged: Vec<&PaidEntry> = paid.iter().filter(|e| e.status == 201).collect();
    for entry in &acknowledged {
        let (registered,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM tournament_registrations
              WHERE tournament_id = $1 AND wallet = $2 AND tx_signature = $3",
        )
        .bind(tournament)
        .bind(&entry.wallet)
        .bind(entry.signature.as_deref())
        .fetch_one(pool)
        .await
        .expect("count");
        assert_eq!(
            registered, 1,
            "acknowledged paid entry {} lost (seed {seed})",
            entry.wallet
        );
    }
    // No fee registers twice.
    let reused: Vec<(String, i64)> = sqlx::query_as(
        "SELECT tx_signature, COUNT(*) FROM tournament_registrations
          WHERE tx_signature IS NOT NULL GROUP BY tx_signature HAVING COUNT(*) > 1",
    )
    .fetch_all(pool)
    .await
    .expect("reused");
    assert!(
        reused.is_empty(),
        "fees registered twice: {reused:?} (seed {seed})"
    );

    // Every prize is sent (finalized) within two minutes of the end.
    let waiting = Instant::now();
    let payouts: Vec<(String, i64, String, Option<String>)> = loop {
        let rows: Vec<(String, i64, String, Option<String>)> = sqlx::query_as(
            "SELECT wallet, amount_raw, status, tx_signature FROM payouts
              WHERE source_kind = 'tournament' AND source_id = $1",
        )
        .bind(tournament)
        .fetch_all(pool)
        .await
        .expect("payouts");
        if !rows.is_empty() && rows.iter().all(|(_, _, status, _)| status == "sent") {
            break rows;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "prizes not all sent within 120 s of the end: {rows:?} (seed {seed})"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let mut prizes: BTreeMap<String, u64> = BTreeMap::new();
    for (wallet, amount, _, signature) in &payouts {
        *prizes.entry(wallet.clone()).or_default() += u64::try_from(*amount).expect("amount");
        let signature = signature
            .as_deref()
            .expect("a sent payout has its signature");
        // The node asked may see it finalized a little after the node that sent it: the simnet
        // decides finality by the clock of the node that answers, and these are skewed.
        let asked = Instant::now();
        loop {
            let statuses = rpc(
                &client,
                bases,
                0,
                "getSignatureStatuses",
                json!([[signature]]),
            )
            .await
            .expect("statuses");
            let status = &statuses["value"][0]["confirmationStatus"];
            if status == "finalized" {
                break;
            }
            assert!(
                status == "confirmed" && asked.elapsed() < Duration::from_secs(10),
                "payout {signature} is {status} (seed {seed})"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    // Each winner paid its one fee and holds exactly its prizes: paid twice, it would hold more.
    for (wallet, prize) in &prizes {
        let held: u64 = token_accounts(&client, bases, wallet)
            .await
            .expect("balances")
            .iter()
            .map(|(_, _, amount)| amount)
            .sum();
        assert_eq!(
            held, *prize,
            "{wallet} holds other than its prizes (seed {seed})"
        );
    }
    MoneyChecked {
        entries_acknowledged: acknowledged.len(),
        payouts_sent: payouts.len(),
    }
}
