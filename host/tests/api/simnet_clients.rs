//! The simnet as a drop-in local validator: the JSON-RPC methods and encodings client libraries
//! rely on (account layouts `getMint`/`getAccount` decode, rent, fees, simulation with logs,
//! cluster info, commitment options) and the PubSub websocket over a real socket. The suite in
//! `host/tests/simnet-clients/` runs the real client libraries against a server in CI.

use base64::Engine;
use crucible::chain::Keypair;
use crucible::chain::tx::{self, Message, Pubkey, Transaction, instructions};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite;

use crate::helpers::TestApp;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(value: &Value) -> Vec<u8> {
    assert_eq!(value[1], "base64", "{value}");
    base64::engine::general_purpose::STANDARD
        .decode(value[0].as_str().unwrap())
        .unwrap()
}

async fn funded(app: &TestApp, lamports: u64, usdc_raw: u64) -> Keypair {
    let keypair = Keypair::generate();
    app.airdrop(&keypair.pubkey().to_string(), lamports, usdc_raw)
        .await;
    keypair
}

async fn signed(app: &TestApp, payer: &Keypair, ixs: &[tx::message::Instruction]) -> Vec<u8> {
    let message = Message::new_legacy(ixs, &payer.pubkey(), app.latest_blockhash().await);
    Transaction::sign(message, &[payer.signing_key()])
        .unwrap()
        .serialize()
        .unwrap()
}

fn compute_price(micro_lamports: u64) -> tx::message::Instruction {
    let mut data = vec![3];
    data.extend(micro_lamports.to_le_bytes());
    tx::message::Instruction {
        program_id: tx::compute_budget_program(),
        accounts: vec![],
        data,
    }
}

fn compute_limit(units: u32) -> tx::message::Instruction {
    let mut data = vec![2];
    data.extend(units.to_le_bytes());
    tx::message::Instruction {
        program_id: tx::compute_budget_program(),
        accounts: vec![],
        data,
    }
}

#[tokio::test]
async fn accounts_are_served_in_the_spl_layouts_with_supply_and_real_rent() {
    let app = TestApp::spawn().await;
    let mint: Pubkey = app.state.chain.stablecoin_mint().parse().unwrap();
    let before = app
        .rpc_result("getTokenSupply", json!([mint.to_string()]))
        .await;
    let supply_before: u64 = before["value"]["amount"].as_str().unwrap().parse().unwrap();
    let owner = funded(&app, 1_000_000_000, 50_000_000).await;
    let ata = tx::associated_token_address(&owner.pubkey(), &mint, &tx::token_program());

    // The mint: 82 bytes, faucet authority, supply raised by the airdrop, 6 decimals.
    let info = app
        .rpc_result(
            "getAccountInfo",
            json!([mint.to_string(), {"encoding": "base64"}]),
        )
        .await;
    assert_eq!(info["value"]["owner"], tx::TOKEN_PROGRAM);
    assert_eq!(info["value"]["space"], 82);
    let data = unb64(&info["value"]["data"]);
    assert_eq!(data.len(), 82);
    assert_eq!(data[0..4], 1u32.to_le_bytes(), "a mint authority");
    let supply = u64::from_le_bytes(data[36..44].try_into().unwrap());
    assert_eq!(supply, supply_before + 50_000_000);
    assert_eq!((data[44], data[45]), (6, 1));
    let parsed = app
        .rpc_result(
            "getAccountInfo",
            json!([mint.to_string(), {"encoding": "jsonParsed"}]),
        )
        .await;
    let mint_info = &parsed["value"]["data"]["parsed"]["info"];
    assert_eq!(mint_info["supply"], supply.to_string());
    assert_eq!(mint_info["freezeAuthority"], Value::Null);

    // The token account: 165 bytes, mint, owner, amount, initialized.
    let unknown = Keypair::generate().pubkey().to_string();
    let many = app
        .rpc_result(
            "getMultipleAccounts",
            json!([[ata.to_string(), unknown, owner.pubkey().to_string()], {"encoding": "base64"}]),
        )
        .await;
    let token = unb64(&many["value"][0]["data"]);
    assert_eq!(token.len(), 165);
    assert_eq!(&token[0..32], &mint.0);
    assert_eq!(&token[32..64], &owner.pubkey().0);
    assert_eq!(
        u64::from_le_bytes(token[64..72].try_into().unwrap()),
        50_000_000
    );
    assert_eq!(token[108], 1);
    assert_eq!(many["value"][0]["lamports"], 2_039_280);
    assert_eq!(many["value"][1], Value::Null);
    assert_eq!(many["value"][2]["owner"], tx::SYSTEM_PROGRAM);
    assert_eq!(unb64(&many["value"][2]["data"]), Vec::<u8>::new());

    let balance = app
        .rpc_result("getTokenAccountBalance", json!([ata.to_string()]))
        .await;
    assert_eq!(
        balance["value"],
        json!({"amount": "50000000", "decimals": 6, "uiAmount": 50.0, "uiAmountString": "50"})
    );
    let reply = app
        .rpc(
            "getTokenAccountBalance",
            json!([owner.pubkey().to_string()]),
        )
        .await;
    assert_eq!(
        reply["error"]["code"], -32602,
        "a wallet is no token account: {reply}"
    );
    let supply_now = app
        .rpc_result("getTokenSupply", json!([mint.to_string()]))
        .await;
    assert_eq!(supply_now["value"]["amount"], supply.to_string());

    // Rent as on mainnet.
    for (len, lamports) in [(0, 890_880), (165, 2_039_280), (82, 1_461_600)] {
        let min = app
            .rpc_result("getMinimumBalanceForRentExemption", json!([len]))
            .await;
        assert_eq!(min, lamports);
    }
    // A new account below exemption is refused, with the node's error and logs, and nothing
    // moves; at the exempt minimum it lands.
    let fresh = Keypair::generate().pubkey();
    let dust = signed(
        &app,
        &owner,
        &[instructions::system_transfer(
            &owner.pubkey(),
            &fresh,
            1_000,
        )],
    )
    .await;
    let reply = app
        .rpc(
            "sendTransaction",
            json!([b64(&dust), {"encoding": "base64"}]),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    assert_eq!(
        reply["error"]["data"]["err"],
        json!({"InsufficientFundsForRent": {"account_index": 1}})
    );
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("insufficient funds for rent"),
        "{reply}"
    );
    let refused = app
        .rpc("requestAirdrop", json!([fresh.to_string(), 1_000]))
        .await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    let exempt = signed(
        &app,
        &owner,
        &[instructions::system_transfer(
            &owner.pubkey(),
            &fresh,
            890_880,
        )],
    )
    .await;
    let reply = app
        .rpc(
            "sendTransaction",
            json!([b64(&exempt), {"encoding": "base64"}]),
        )
        .await;
    assert!(reply["error"].is_null(), "{reply}");
    let fresh_balance = app
        .rpc_result("getBalance", json!([fresh.to_string()]))
        .await;
    assert_eq!(fresh_balance["value"], 890_880);
}

#[tokio::test]
async fn simulation_fees_logs_and_cluster_information_answer_like_a_node() {
    let app = TestApp::spawn().await;
    // Enough for the 1 SOL transfer twice: it lands once, and is simulated again at the end.
    let payer = funded(&app, 3_000_000_000, 5_000_000).await;
    let to = Keypair::generate().pubkey();
    let mint: Pubkey = app.state.chain.stablecoin_mint().parse().unwrap();
    let source = tx::associated_token_address(&payer.pubkey(), &mint, &tx::token_program());

    // A failing transfer: simulation reports the error and the program log, records nothing.
    let overdraw = signed(
        &app,
        &payer,
        &[instructions::token_transfer_checked(
            &tx::token_program(),
            &source,
            &mint,
            &source,
            &payer.pubkey(),
            9_000_000,
            6,
        )],
    )
    .await;
    let sim = app
        .rpc_result(
            "simulateTransaction",
            json!([b64(&overdraw), {"encoding": "base64"}]),
        )
        .await;
    assert_eq!(
        sim["value"]["err"],
        json!({"InstructionError": [0, {"Custom": 1}]})
    );
    let logs: Vec<&str> = sim["value"]["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(logs[0], format!("Program {} invoke [1]", tx::TOKEN_PROGRAM));
    assert!(
        logs.contains(&"Program log: Instruction: TransferChecked"),
        "{logs:?}"
    );
    assert_eq!(
        logs.last().copied(),
        Some(
            format!(
                "Program {} failed: custom program error: 0x1",
                tx::TOKEN_PROGRAM
            )
            .as_str()
        )
    );
    // Sending it with preflight fails with the same logs in `data`.
    let reply = app
        .rpc(
            "sendTransaction",
            json!([b64(&overdraw), {"encoding": "base64"}]),
        )
        .await;
    assert_eq!(
        reply["error"]["data"]["logs"], sim["value"]["logs"],
        "{reply}"
    );
    assert_eq!(
        reply["error"]["message"],
        "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1"
    );

    // A good transfer simulates with units and a success log, and moves nothing.
    let good = signed(
        &app,
        &payer,
        &[
            compute_limit(10_000),
            compute_price(1_000_000),
            instructions::system_transfer(&payer.pubkey(), &to, 1_000_000_000),
            instructions::memo("hello", &[payer.pubkey()]),
        ],
    )
    .await;
    let sim = app
        .rpc_result(
            "simulateTransaction",
            json!([b64(&good), {"encoding": "base64", "sigVerify": true}]),
        )
        .await;
    assert_eq!(sim["value"]["err"], Value::Null, "{sim}");
    assert!(sim["value"]["unitsConsumed"].as_u64().unwrap() > 0);
    assert!(
        sim["value"]["logs"]
            .as_array()
            .unwrap()
            .contains(&json!("Program log: Memo (len 5): \"hello\"")),
        "{sim}"
    );
    let untouched = app.rpc_result("getBalance", json!([to.to_string()])).await;
    assert_eq!(untouched["value"], 0);

    // Its fee: one signature plus 10,000 units at 1 lamport each.
    let (transaction, _) = Transaction::deserialize(&good).unwrap();
    let message = b64(&transaction.message.serialize().unwrap());
    let fee = app.rpc_result("getFeeForMessage", json!([message])).await;
    assert_eq!(fee["value"], 15_000);
    let reply = app
        .rpc(
            "sendTransaction",
            json!([b64(&good), {"encoding": "base64"}]),
        )
        .await;
    let signature = reply["result"].as_str().expect("landed").to_owned();
    let landed = app
        .rpc_result(
            "getTransaction",
            json!([signature, {"encoding": "jsonParsed", "commitment": "confirmed"}]),
        )
        .await;
    assert_eq!(landed["meta"]["fee"], 15_000);
    assert!(landed["meta"]["logMessages"].as_array().unwrap().len() >= 6);
    assert!(landed["meta"]["computeUnitsConsumed"].as_u64().unwrap() > 0);
    let fees = app
        .rpc_result("getRecentPrioritizationFees", json!([[to.to_string()]]))
        .await;
    assert_eq!(fees.as_array().unwrap().len(), 1, "{fees}");
    assert_eq!(fees[0]["prioritizationFee"], 1_000_000);
    // Over its unit limit, a transaction fails as on a node.
    let starved = signed(
        &app,
        &payer,
        &[
            compute_limit(100),
            instructions::memo("too much work for 100 units", &[payer.pubkey()]),
        ],
    )
    .await;
    let sim = app
        .rpc_result(
            "simulateTransaction",
            json!([b64(&starved), {"encoding": "base64"}]),
        )
        .await;
    assert_eq!(
        sim["value"]["err"],
        json!({"InstructionError": [0, "ComputationalBudgetExceeded"]})
    );

    // Blockhashes: valid now, unknown ones not; an expired blockhash is the simulation's err.
    let (hash, _) = {
        let latest = app
            .rpc_result("getLatestBlockhash", json!([{"commitment": "finalized"}]))
            .await;
        (
            latest["value"]["blockhash"].as_str().unwrap().to_owned(),
            (),
        )
    };
    let valid = app.rpc_result("isBlockhashValid", json!([hash])).await;
    assert_eq!(valid["value"], true);
    let bogus = bs58::encode([7u8; 32]).into_string();
    let valid = app.rpc_result("isBlockhashValid", json!([bogus])).await;
    assert_eq!(valid["value"], false);
    app.advance(chrono::Duration::seconds(120));
    let sim = app
        .rpc_result(
            "simulateTransaction",
            json!([b64(&good), {"encoding": "base64"}]),
        )
        .await;
    assert_eq!(sim["value"]["err"], "BlockhashNotFound");
    let fee = app.rpc_result("getFeeForMessage", json!([message])).await;
    assert_eq!(fee["value"], Value::Null, "an expired blockhash has no fee");
    let sim = app
        .rpc_result(
            "simulateTransaction",
            json!([b64(&good), {"encoding": "base64", "replaceRecentBlockhash": true}]),
        )
        .await;
    assert_eq!(sim["value"]["err"], Value::Null, "{sim}");
    assert!(sim["value"]["replacementBlockhash"]["blockhash"].is_string());

    // The cluster.
    let slot = app
        .rpc_result("getSlot", json!([{"commitment": "processed"}]))
        .await;
    let epoch = app.rpc_result("getEpochInfo", json!([])).await;
    assert_eq!(epoch["slotsInEpoch"], 432_000);
    assert!(epoch["absoluteSlot"].as_u64().unwrap() >= slot.as_u64().unwrap());
    assert!(epoch["transactionCount"].as_u64().unwrap() >= 2);
    let genesis = app.rpc_result("getGenesisHash", json!([])).await;
    assert_eq!(
        bs58::decode(genesis.as_str().unwrap())
            .into_vec()
            .unwrap()
            .len(),
        32
    );
    let identity = app.rpc_result("getIdentity", json!([])).await;
    assert!(
        identity["identity"]
            .as_str()
            .unwrap()
            .parse::<Pubkey>()
            .is_ok()
    );
    let height = app.rpc_result("getBlockHeight", json!([])).await;
    assert!(height.as_u64().unwrap() >= slot.as_u64().unwrap());

    // Commitment and minContextSlot are checked on every read.
    let reply = app
        .rpc(
            "getBalance",
            json!([to.to_string(), {"commitment": "eventually"}]),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let reply = app
        .rpc(
            "getBalance",
            json!([to.to_string(), {"minContextSlot": 1_000_000_000}]),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32016, "{reply}");
    let reply = app
        .rpc(
            "getAccountInfo",
            json!([to.to_string(), {"encoding": "base64+zstd"}]),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn websocket(app: &TestApp) -> Socket {
    let url = format!("{}/simnet/rpc", app.address.replacen("http", "ws", 1));
    let (socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("upgrade");
    socket
}

async fn next_json(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next())
            .await
            .expect("a message within 10 s")
            .expect("open")
            .expect("frame");
        if let tungstenite::Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).expect("json");
        }
    }
}

/// Send a request and return its reply (notifications arriving first are returned too,
/// in order, so nothing is lost).
async fn request(socket: &mut Socket, id: u64, method: &str, params: Value) -> (Value, Vec<Value>) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    socket
        .send(tungstenite::Message::Text(body.to_string().into()))
        .await
        .expect("send");
    let mut early = Vec::new();
    loop {
        let message = next_json(socket).await;
        if message["id"] == id {
            return (message, early);
        }
        early.push(message);
    }
}

async fn subscribe(socket: &mut Socket, id: u64, method: &str, params: Value) -> u64 {
    let (reply, _) = request(socket, id, method, params).await;
    reply["result"]
        .as_u64()
        .unwrap_or_else(|| panic!("{method}: {reply}"))
}

/// Read notifications until one of `method` arrives.
async fn notification(socket: &mut Socket, method: &str) -> Value {
    loop {
        let message = next_json(socket).await;
        if message["method"] == method {
            return message["params"].clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pubsub_websocket_notifies_signatures_accounts_slots_and_logs() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    let mut socket = websocket(&app).await;
    let payer = funded(&app, 2_000_000_000, 0).await;
    let watched = Keypair::generate().pubkey();

    let account = subscribe(
        &mut socket,
        1,
        "accountSubscribe",
        json!([watched.to_string(), {"commitment": "confirmed", "encoding": "base64"}]),
    )
    .await;
    let logs = subscribe(
        &mut socket,
        2,
        "logsSubscribe",
        json!([{"mentions": [watched.to_string()]}, {"commitment": "confirmed"}]),
    )
    .await;
    let slots = subscribe(&mut socket, 3, "slotSubscribe", json!([])).await;

    let wire = signed(
        &app,
        &payer,
        &[
            instructions::system_transfer(&payer.pubkey(), &watched, 1_000_000_000),
            instructions::memo("watched", &[payer.pubkey()]),
        ],
    )
    .await;
    let (transaction, _) = Transaction::deserialize(&wire).unwrap();
    let signature = transaction.signature();
    let confirmed = subscribe(
        &mut socket,
        4,
        "signatureSubscribe",
        json!([signature, {"commitment": "confirmed"}]),
    )
    .await;
    let finalized = subscribe(
        &mut socket,
        5,
        "signatureSubscribe",
        json!([signature, {"commitment": "finalized"}]),
    )
    .await;
    let reply = app
        .rpc(
            "sendTransaction",
            json!([b64(&wire), {"encoding": "base64"}]),
        )
        .await;
    assert!(reply["error"].is_null(), "{reply}");

    let mut seen = std::collections::HashMap::new();
    while seen.len() < 4 {
        let message = next_json(&mut socket).await;
        let id = message["params"]["subscription"]
            .as_u64()
            .expect("a notification");
        seen.insert(id, message);
    }
    assert!(!seen.contains_key(&finalized), "not final yet: {seen:?}");
    let note = &seen[&confirmed];
    assert_eq!(note["method"], "signatureNotification");
    assert_eq!(note["params"]["result"]["value"], json!({"err": null}));
    let note = &seen[&account]["params"]["result"]["value"];
    assert_eq!(note["lamports"], 1_000_000_000);
    assert_eq!(note["owner"], tx::SYSTEM_PROGRAM);
    let note = &seen[&logs]["params"]["result"]["value"];
    assert_eq!(note["signature"], signature);
    assert!(
        note["logs"]
            .as_array()
            .unwrap()
            .contains(&json!("Program log: Memo (len 7): \"watched\"")),
        "{note}"
    );
    assert!(seen[&slots]["params"]["result"]["slot"].as_u64().unwrap() > 0);

    // Finality on the simnet's clock: the finalized subscription answers once it passes.
    app.advance(chrono::Duration::seconds(4));
    let note = notification(&mut socket, "signatureNotification").await;
    assert_eq!(note["subscription"], finalized);

    // A signature that landed before the subscription is answered at once; the one-shot
    // subscription is gone afterwards.
    let again = subscribe(&mut socket, 6, "signatureSubscribe", json!([signature])).await;
    let note = notification(&mut socket, "signatureNotification").await;
    assert_eq!(note["subscription"], again);
    let (reply, _) = request(&mut socket, 7, "signatureUnsubscribe", json!([again])).await;
    assert_eq!(
        reply["error"]["message"], "Invalid subscription id.",
        "{reply}"
    );

    // Unsubscribing works once, and only for the right kind.
    let (reply, _) = request(&mut socket, 8, "slotUnsubscribe", json!([account])).await;
    assert!(reply["error"].is_object(), "{reply}");
    for (id, (method, sub)) in [
        ("accountUnsubscribe", account),
        ("logsUnsubscribe", logs),
        ("slotUnsubscribe", slots),
    ]
    .into_iter()
    .enumerate()
    {
        let (reply, _) = request(&mut socket, 10 + id as u64, method, json!([sub])).await;
        assert_eq!(reply["result"], true, "{reply}");
    }

    // Bad requests are answered with errors and the connection stays usable.
    let (reply, _) = request(&mut socket, 20, "signatureSubscribe", json!(["nope"])).await;
    assert_eq!(reply["error"]["code"], -32602);
    let (reply, _) = request(&mut socket, 21, "blockSubscribe", json!([])).await;
    assert_eq!(reply["error"]["code"], -32601);
    let (reply, _) = request(
        &mut socket,
        22,
        "logsSubscribe",
        json!([{"mentions": [watched.to_string(), payer.pubkey().to_string()]}]),
    )
    .await;
    assert_eq!(
        reply["error"]["message"],
        "Invalid Request: Only 1 address supported"
    );
}

#[tokio::test]
async fn a_connection_holds_a_bounded_number_of_subscriptions() {
    let app = TestApp::spawn().await;
    let mut socket = websocket(&app).await;
    let key = Keypair::generate().pubkey().to_string();
    let cap = crucible::chain::simnet::pubsub::MAX_SUBSCRIPTIONS as u64;
    for id in 0..cap {
        subscribe(&mut socket, id, "accountSubscribe", json!([key])).await;
    }
    let (reply, _) = request(&mut socket, cap, "accountSubscribe", json!([key])).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // Another connection has its own allowance.
    let mut other = websocket(&app).await;
    subscribe(&mut other, 1, "slotSubscribe", json!([])).await;
}

#[tokio::test]
async fn balances_of_many_wallets_are_read_a_hundred_at_a_time_in_order() {
    let app = TestApp::spawn().await;
    // 150 wallets (two calls): every seventh funded, the rest never seen by the ledger.
    let wallets: Vec<String> = (0..150)
        .map(|_| Keypair::generate().pubkey().to_string())
        .collect();
    for (n, wallet) in wallets.iter().enumerate().step_by(7) {
        app.airdrop(wallet, 1_000_000 + n as u64, 0).await;
    }
    let addresses: Vec<&str> = wallets.iter().map(String::as_str).collect();
    let balances = app
        .state
        .chain
        .rpc()
        .get_balances(&addresses)
        .await
        .expect("balances");
    let expected: Vec<u64> = (0..150)
        .map(|n| if n % 7 == 0 { 1_000_000 + n as u64 } else { 0 })
        .collect();
    assert_eq!(balances, expected);
}
