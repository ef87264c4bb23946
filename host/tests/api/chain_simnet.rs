//! The embedded simnet end to end, over HTTP like a real node: the wallet CLI pays, the chain
//! module verifies (Pending before finality, Verified after), and simnet refuses what a real
//! cluster refuses (tampered bytes, a wrong signer, replays, stale blockhashes, unknown programs).
//! One test sends transactions whose wire bytes are written out by hand from the published
//! format, so simnet is checked against the format itself and not only against our encoder.

use std::process::Command;

use crate::helpers::TestApp;
use base64::Engine;
use chrono::Duration;
use crucible::chain::tx::{self, Message, Pubkey, Transaction, instructions};
use crucible::chain::{ExpectedPayment, Keypair, PaymentStatus, RejectReason};
use crucible::domain::WalletAddress;
use ed25519_dalek::{Signer, SigningKey};
use futures_util::FutureExt;
use serde_json::{Value, json};

async fn send_b64(app: &TestApp, wire: &[u8], skip_preflight: bool) -> Value {
    let encoded = base64::engine::general_purpose::STANDARD.encode(wire);
    app.rpc(
        "sendTransaction",
        json!([encoded, {"encoding": "base64", "skipPreflight": skip_preflight}]),
    )
    .await
}

/// `instructions` paid and signed by `payer` over `blockhash`, sent (with preflight unless
/// `skip_preflight`): the whole JSON-RPC reply.
async fn send_signed(
    app: &TestApp,
    payer: &Keypair,
    instructions: &[tx::message::Instruction],
    blockhash: [u8; 32],
    skip_preflight: bool,
) -> Value {
    let message = Message::new_legacy(instructions, &payer.pubkey(), blockhash);
    let wire = Transaction::sign(message, &[payer.signing_key()])
        .unwrap()
        .serialize()
        .unwrap();
    send_b64(app, &wire, skip_preflight).await
}

/// The message of a JSON-RPC error reply.
fn error_message(reply: &Value) -> &str {
    reply["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

async fn funded(app: &TestApp, lamports: u64, usdc_raw: u64) -> Keypair {
    let keypair = Keypair::generate();
    app.rpc_result(
        "requestAirdrop",
        json!([keypair.pubkey().to_string(), lamports, {"stablecoinAmount": usdc_raw}]),
    )
    .await;
    keypair
}

fn pubkey_of(key: &SigningKey) -> [u8; 32] {
    key.verifying_key().to_bytes()
}

/// Run the real binary (blocking, off the runtime that serves the app).
async fn crucible(args: Vec<String>) -> String {
    tokio::task::spawn_blocking(move || {
        let output = Command::new(env!("CARGO_BIN_EXE_crucible"))
            .args(&args)
            .env_remove("SOLANA_RPC_URL")
            .output()
            .expect("run crucible");
        assert!(
            output.status.success(),
            "crucible {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("utf8")
    })
    .await
    .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_cli_pays_and_the_payment_is_pending_then_verified() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 3_000).await;
    let rpc_url = format!("{}/simnet/rpc", app.address);
    let dir = tempfile::tempdir().unwrap();
    let keyfile = dir.path().join("payer.json");

    let out = crucible(vec![
        "wallet".into(),
        "new".into(),
        "--out".into(),
        keyfile.display().to_string(),
    ])
    .await;
    let payer = out.trim().to_owned();
    assert_eq!(Keypair::read(&keyfile).unwrap().pubkey().to_string(), payer);

    crucible(vec![
        "wallet".into(),
        "airdrop".into(),
        payer.clone(),
        "--sol".into(),
        "1".into(),
        "--usdc".into(),
        "50".into(),
        "--rpc".into(),
        rpc_url.clone(),
    ])
    .await;

    let chain = app.state.chain.clone();
    let escrow = chain.escrow().address.clone();
    let memo = "reg:t-1:0123456789abcdef";
    let signature = crucible(vec![
        "wallet".into(),
        "pay".into(),
        "--keypair".into(),
        keyfile.display().to_string(),
        "--to".into(),
        escrow.to_string(),
        "--usdc".into(),
        "10".into(),
        "--memo".into(),
        memo.into(),
        "--rpc".into(),
        rpc_url,
    ])
    .await
    .trim()
    .to_owned();

    let expected = ExpectedPayment {
        payer: payer.clone(),
        recipient: escrow.to_string(),
        mint: chain.stablecoin_mint().to_owned(),
        amount_raw: 10_000_000,
        memo: memo.into(),
    };
    assert_eq!(
        chain.verify_payment(&signature, &expected).await.unwrap(),
        PaymentStatus::Pending
    );
    // Confirmed but not final: `getTransaction` at finalized is null, at confirmed it is there.
    assert!(
        app.rpc_result("getTransaction", json!([signature, {"encoding": "jsonParsed", "commitment": "finalized", "maxSupportedTransactionVersion": 0}]))
            .await
            .is_null()
    );
    let statuses = app
        .rpc_result("getSignatureStatuses", json!([[signature]]))
        .await;
    assert_eq!(statuses["value"][0]["confirmationStatus"], "confirmed");

    app.advance(Duration::milliseconds(3_000));
    let verified = chain.verify_payment(&signature, &expected).await.unwrap();
    assert!(
        matches!(
            verified,
            PaymentStatus::Verified {
                block_time: Some(_),
                ..
            }
        ),
        "{verified:?}"
    );
    let statuses = app
        .rpc_result("getSignatureStatuses", json!([[signature]]))
        .await;
    assert_eq!(statuses["value"][0]["confirmationStatus"], "finalized");
    assert!(statuses["value"][0]["confirmations"].is_null());

    // The same transaction is not another payment.
    let mut more = expected.clone();
    more.amount_raw = 20_000_000;
    assert!(matches!(
        chain.verify_payment(&signature, &more).await.unwrap(),
        PaymentStatus::Rejected(RejectReason::Amount { .. })
    ));
    let mut other_memo = expected.clone();
    other_memo.memo = "reg:t-2:0123456789abcdef".into();
    assert!(matches!(
        chain.verify_payment(&signature, &other_memo).await.unwrap(),
        PaymentStatus::Rejected(RejectReason::Memo { .. })
    ));
    let unknown = bs58::encode([7u8; 64]).into_string();
    assert_eq!(
        chain.verify_payment(&unknown, &expected).await.unwrap(),
        PaymentStatus::Rejected(RejectReason::UnknownSignature)
    );

    // Portfolios: the payer paid 10 USDC, the fee and the rent of the escrow's token account.
    let payer_portfolio = chain
        .portfolio(&WalletAddress::parse(&payer).unwrap())
        .await
        .unwrap();
    assert_eq!(payer_portfolio.lamports, 1_000_000_000 - 5_000 - 2_039_280);
    assert_eq!(payer_portfolio.token(chain.stablecoin_mint()), 40_000_000);
    assert_eq!(payer_portfolio.tokens[0].decimals, 6);
    let escrow_portfolio = chain.portfolio(&escrow).await.unwrap();
    assert_eq!(escrow_portfolio.token(chain.stablecoin_mint()), 10_000_000);

    // A second payment reuses the escrow's token account (create is idempotent).
    let keypair = Keypair::read(&keyfile).unwrap();
    let second = chain
        .transfer_token(
            &keypair,
            &escrow,
            chain.stablecoin_mint(),
            1_500_000,
            "second",
        )
        .await
        .unwrap();
    assert_ne!(second, signature);
    let escrow_portfolio = chain.portfolio(&escrow).await.unwrap();
    assert_eq!(escrow_portfolio.token(chain.stablecoin_mint()), 11_500_000);
}

#[tokio::test]
async fn tampered_replayed_wrongly_signed_and_stale_transactions_are_refused() {
    let app = TestApp::spawn().await;
    let payer = funded(&app, 1_000_000_000, 0).await;
    let to = Pubkey::new([9; 32]);
    // A new account must end rent-exempt (890,880 lamports for one without data).
    let ix = instructions::system_transfer(&payer.pubkey(), &to, 1_000_000);
    let message = Message::new_legacy(
        std::slice::from_ref(&ix),
        &payer.pubkey(),
        app.latest_blockhash().await,
    );
    let wire = Transaction::sign(message.clone(), &[payer.signing_key()])
        .unwrap()
        .serialize()
        .unwrap();

    // One changed byte anywhere in the message breaks the signature.
    let mut tampered = wire.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0x01;
    let reply = send_b64(&app, &tampered, false).await;
    assert_eq!(reply["error"]["code"], -32003, "{reply}");

    // Signed by someone else than the fee payer named in the message.
    let intruder = Keypair::generate();
    let mut forged = Transaction::sign(message.clone(), &[payer.signing_key()]).unwrap();
    let bytes = message.serialize().unwrap();
    forged.signatures[0] = intruder.signing_key().sign(&bytes).to_bytes();
    let reply = send_b64(&app, &forged.serialize().unwrap(), false).await;
    assert_eq!(reply["error"]["code"], -32003, "{reply}");

    // Accepted once, refused when replayed (base58 this time).
    let reply = send_b64(&app, &wire, false).await;
    assert!(reply["error"].is_null(), "{reply}");
    let reply = app
        .rpc(
            "sendTransaction",
            json!([bs58::encode(&wire).into_string(), {"encoding": "base58"}]),
        )
        .await;
    assert!(
        error_message(&reply).contains("already been processed"),
        "{reply}"
    );
    assert_eq!(
        app.rpc_result("getBalance", json!([to.to_string()])).await["value"],
        1_000_000
    );

    // A blockhash simnet never issued, and one that fell out of the last 150.
    let reply = send_signed(&app, &payer, std::slice::from_ref(&ix), [3; 32], false).await;
    assert!(
        error_message(&reply).contains("Blockhash not found"),
        "{reply}"
    );
    // Expired by time alone (150 slots of 400 ms), with no newer blockhash ever asked for.
    let quiet = app.latest_blockhash().await;
    app.advance(Duration::seconds(61));
    let reply = send_signed(
        &app,
        &payer,
        &[instructions::system_transfer(&payer.pubkey(), &to, 3_000)],
        quiet,
        false,
    )
    .await;
    assert!(
        error_message(&reply).contains("Blockhash not found"),
        "{reply}"
    );
    // Valid through its `lastValidBlockHeight` (its slot + 150), refused one block later.
    let old = app.latest_blockhash().await;
    for _ in 0..151 {
        app.advance(Duration::milliseconds(400));
        app.latest_blockhash().await;
    }
    let reply = send_signed(
        &app,
        &payer,
        &[instructions::system_transfer(&payer.pubkey(), &to, 2_000)],
        old,
        false,
    )
    .await;
    assert!(
        error_message(&reply).contains("Blockhash not found"),
        "{reply}"
    );

    // Programs simnet does not run are refused, and nothing is charged.
    let before = app
        .rpc_result("getBalance", json!([payer.pubkey().to_string()]))
        .await["value"]
        .clone();
    let foreign = tx::message::Instruction {
        program_id: Pubkey::new([42; 32]),
        accounts: vec![],
        data: vec![1, 2, 3],
    };
    let reply = send_signed(&app, &payer, &[foreign], app.latest_blockhash().await, true).await;
    assert!(
        error_message(&reply).contains("unsupported program"),
        "{reply}"
    );
    assert_eq!(
        app.rpc_result("getBalance", json!([payer.pubkey().to_string()]))
            .await["value"],
        before
    );

    let reply = app.rpc("getProgramAccounts", json!([])).await;
    assert_eq!(reply["error"]["code"], -32601);
}

#[tokio::test]
async fn a_failing_instruction_lands_only_with_skip_preflight_and_is_rejected() {
    let app = TestApp::spawn().await;
    let chain = app.state.chain.clone();
    let payer = funded(&app, 100_000_000, 5_000_000).await;
    let recipient = funded(&app, 0, 1).await;
    let mint: Pubkey = chain.stablecoin_mint().parse().unwrap();
    let source = tx::associated_token_address(&payer.pubkey(), &mint, &tx::token_program());
    let dest = tx::associated_token_address(&recipient.pubkey(), &mint, &tx::token_program());
    let ixs = [
        instructions::token_transfer_checked(
            &tx::token_program(),
            &source,
            &mint,
            &dest,
            &payer.pubkey(),
            9_000_000, // more than the 5 USDC held
            6,
        ),
        instructions::memo("reg:x:1", &[]),
    ];
    let message = Message::new_legacy(&ixs, &payer.pubkey(), app.latest_blockhash().await);
    let wire = Transaction::sign(message, &[payer.signing_key()])
        .unwrap()
        .serialize()
        .unwrap();
    let reply = send_b64(&app, &wire, false).await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    let reply = send_b64(&app, &wire, true).await;
    let signature = reply["result"].as_str().expect("landed").to_owned();

    let tx = app
        .rpc_result(
            "getTransaction",
            json!([signature, {"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0}]),
        )
        .await;
    assert_eq!(
        tx["meta"]["err"],
        json!({"InstructionError": [0, {"Custom": 1}]})
    );
    assert_eq!(tx["meta"]["fee"], 5_000);
    let expected = ExpectedPayment {
        payer: payer.pubkey().to_string(),
        recipient: recipient.pubkey().to_string(),
        mint: mint.to_string(),
        amount_raw: 9_000_000,
        memo: "reg:x:1".into(),
    };
    match chain.verify_payment(&signature, &expected).await.unwrap() {
        PaymentStatus::Rejected(reason) => assert_eq!(reason.field(), "transaction"),
        other => panic!("{other:?}"),
    }
    // Only the fee moved.
    let balance = app
        .rpc_result("getBalance", json!([payer.pubkey().to_string()]))
        .await;
    assert_eq!(balance["value"], 100_000_000 - 5_000);
    let portfolio = chain.portfolio(&payer.pubkey().into()).await.unwrap();
    assert_eq!(portfolio.token(&mint.to_string()), 5_000_000);
}

/// Wire bytes written out field by field from the published transaction format, signed with
/// ed25519-dalek directly: none of Crucible's encoder is involved.
#[tokio::test]
async fn hand_encoded_legacy_and_v0_transactions_execute_in_simnet() {
    let app = TestApp::spawn().await;
    let payer = SigningKey::from_bytes(&[0x11; 32]);
    let payer_key = pubkey_of(&payer);
    let payer_address = bs58::encode(payer_key).into_string();
    app.rpc_result(
        "requestAirdrop",
        json!([payer_address, 2_000_000_000u64, {"stablecoinAmount": 30_000_000}]),
    )
    .await;
    let recipient = [0x22u8; 32];

    // Legacy System transfer of 1,001,234 lamports (a new account must end rent-exempt).
    let hash = app.latest_blockhash().await;
    let mut msg = vec![1u8, 0, 1]; // 1 signer, 0 readonly signed, 1 readonly unsigned
    msg.push(3); // three account keys
    msg.extend(payer_key);
    msg.extend(recipient);
    msg.extend([0u8; 32]); // System program
    msg.extend(hash);
    msg.push(1); // one instruction
    msg.extend([2, 2, 0, 1, 12]); // program index 2, accounts [0, 1], 12 data bytes
    msg.extend(2u32.to_le_bytes()); // Transfer
    msg.extend(1_001_234u64.to_le_bytes());
    let mut wire = vec![1u8];
    wire.extend(payer.sign(&msg).to_bytes());
    wire.extend(&msg);
    let reply = app
        .rpc(
            "sendTransaction",
            json!([bs58::encode(&wire).into_string()]),
        )
        .await;
    let legacy_sig = reply["result"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_owned();
    assert_eq!(legacy_sig, bs58::encode(&wire[1..65]).into_string());
    let balance = app
        .rpc_result("getBalance", json!([bs58::encode(recipient).into_string()]))
        .await;
    assert_eq!(balance["value"], 1_001_234);

    // v0 transferChecked of 7.5 USDC + memo, into a token account the recipient already has.
    let recipient_wallet = SigningKey::from_bytes(&[0x33; 32]);
    let recipient_address = bs58::encode(pubkey_of(&recipient_wallet)).into_string();
    app.rpc_result(
        "requestAirdrop",
        json!([recipient_address, 0, {"stablecoinAmount": 1}]),
    )
    .await;
    let account_of =
        |owner: String| {
            let app = &app;
            async move {
                let accounts = app.rpc_result("getTokenAccountsByOwner",
                json!([owner, {"programId": tx::TOKEN_PROGRAM}, {"encoding": "jsonParsed"}]),
            )
            .await;
                let entry = &accounts["value"][0];
                let key: [u8; 32] = bs58::decode(entry["pubkey"].as_str().unwrap())
                    .into_vec()
                    .unwrap()
                    .try_into()
                    .unwrap();
                let mint: [u8; 32] = bs58::decode(
                    entry["account"]["data"]["parsed"]["info"]["mint"]
                        .as_str()
                        .unwrap(),
                )
                .into_vec()
                .unwrap()
                .try_into()
                .unwrap();
                (key, mint)
            }
        };
    let (source, mint) = account_of(payer_address.clone()).await;
    let (destination, _) = account_of(recipient_address.clone()).await;
    let token_program: [u8; 32] = bs58::decode(tx::TOKEN_PROGRAM)
        .into_vec()
        .unwrap()
        .try_into()
        .unwrap();
    let memo_program: [u8; 32] = bs58::decode(tx::MEMO_PROGRAM)
        .into_vec()
        .unwrap()
        .try_into()
        .unwrap();
    let memo = "dgn:d-1:wallet:q-9";
    let hash = app.latest_blockhash().await;
    let mut msg = vec![0x80u8, 1, 0, 3]; // v0 prefix; 1 signer, 3 readonly unsigned
    msg.push(6);
    for key in [
        payer_key,
        source,
        destination,
        mint,
        token_program,
        memo_program,
    ] {
        msg.extend(key);
    }
    msg.extend(hash);
    msg.push(2);
    msg.extend([4, 4, 1, 3, 2, 0, 10, 12]); // token: [source, mint, dest, owner], 10 bytes
    msg.extend(7_500_000u64.to_le_bytes());
    msg.push(6);
    msg.extend([5, 0, memo.len() as u8]); // memo: no accounts
    msg.extend(memo.as_bytes());
    msg.push(0); // no address-table lookups
    let mut wire = vec![1u8];
    wire.extend(payer.sign(&msg).to_bytes());
    wire.extend(&msg);
    let reply = send_b64(&app, &wire, false).await;
    let v0_sig = reply["result"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_owned();

    // The jsonParsed answer has the shape of a real node's.
    let parsed = app.rpc_result("getTransaction",
        json!([v0_sig, {"encoding": "jsonParsed", "commitment": "finalized", "maxSupportedTransactionVersion": 0}]),
    )
    .await;
    assert_eq!(parsed["version"], 0);
    assert!(parsed["slot"].as_u64().unwrap() > 0);
    assert!(parsed["blockTime"].as_i64().unwrap() > 1_700_000_000);
    let keys = &parsed["transaction"]["message"]["accountKeys"];
    assert_eq!(
        keys[0],
        json!({"pubkey": payer_address, "signer": true, "writable": true, "source": "transaction"})
    );
    assert_eq!(keys[3]["writable"], false);
    let ixs = &parsed["transaction"]["message"]["instructions"];
    assert_eq!(ixs[0]["program"], "spl-token");
    assert_eq!(ixs[0]["parsed"]["type"], "transferChecked");
    assert_eq!(
        ixs[0]["parsed"]["info"]["tokenAmount"]["uiAmountString"],
        "7.5"
    );
    assert_eq!(
        ixs[1],
        json!({"program": "spl-memo", "programId": tx::MEMO_PROGRAM, "parsed": memo, "stackHeight": null})
    );
    let meta = &parsed["meta"];
    assert!(meta["err"].is_null());
    assert_eq!(meta["fee"], 5_000);
    assert_eq!(
        meta["preBalances"][0].as_u64().unwrap() - meta["postBalances"][0].as_u64().unwrap(),
        5_000
    );
    let post = meta["postTokenBalances"].as_array().unwrap();
    let recipient_after = post
        .iter()
        .find(|b| b["owner"] == recipient_address.as_str())
        .unwrap();
    assert_eq!(recipient_after["uiTokenAmount"]["amount"], "7500001");
    assert_eq!(recipient_after["uiTokenAmount"]["decimals"], 6);
    assert_eq!(recipient_after["programId"], tx::TOKEN_PROGRAM);

    // Asked without maxSupportedTransactionVersion, a v0 transaction is an error, as on mainnet.
    let reply = app
        .rpc(
            "getTransaction",
            json!([v0_sig, {"encoding": "jsonParsed"}]),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32015);

    // And the chain module verifies it as a payment.
    let status = app
        .state
        .chain
        .verify_payment(
            &v0_sig,
            &ExpectedPayment {
                payer: payer_address,
                recipient: recipient_address,
                mint: bs58::encode(mint).into_string(),
                amount_raw: 7_500_000,
                memo: memo.into(),
            },
        )
        .await
        .unwrap();
    assert!(
        matches!(status, PaymentStatus::Verified { .. }),
        "{status:?}"
    );
}

#[tokio::test]
async fn the_ledger_and_finality_survive_a_restart() {
    let app = TestApp::spawn_with(|config| config.simnet_finality_ms = 60_000).await;
    let keypair = funded(&app, 3_000_000, 4_000_000).await;
    let to = Keypair::generate();
    let escrow_before = app.state.chain.escrow().address.clone();
    let signature = app
        .state
        .chain
        .transfer_token(
            &keypair,
            &to.pubkey().into(),
            app.state.chain.stablecoin_mint(),
            1_000_000,
            "m",
        )
        .await
        .unwrap();
    let app = app.restart().await;
    assert_eq!(
        app.state.chain.escrow().address,
        escrow_before,
        "server wallets are stable"
    );
    let portfolio = app
        .state
        .chain
        .portfolio(&keypair.pubkey().into())
        .await
        .unwrap();
    assert_eq!(
        portfolio.token(app.state.chain.stablecoin_mint()),
        3_000_000
    );
    assert_eq!(portfolio.lamports, 3_000_000 - 5_000 - 2_039_280);
    let statuses = app
        .rpc_result("getSignatureStatuses", json!([[signature]]))
        .await;
    assert_eq!(statuses["value"][0]["confirmationStatus"], "confirmed");
}

/// Lists are answered entry by entry, in order, however the simnet reads them: a signature or
/// an account named twice is answered twice, an unknown one is null, and a transaction that
/// landed reports its slot and outcome.
#[tokio::test]
async fn list_reads_answer_every_entry_in_order_even_when_one_repeats() {
    let app = TestApp::spawn().await;
    let a = Keypair::generate();
    let b = Keypair::generate();
    let airdropped = app
        .rpc_result(
            "requestAirdrop",
            json!([a.pubkey().to_string(), 5_000_000_000_u64]),
        )
        .await;
    let signature = airdropped
        .as_str()
        .expect("an airdrop's signature")
        .to_owned();
    let unknown = bs58::encode([7u8; 64]).into_string();
    let statuses = app
        .rpc_result(
            "getSignatureStatuses",
            json!([[signature, unknown, signature], {"searchTransactionHistory": true}]),
        )
        .await;
    let value = statuses["value"].as_array().expect("statuses");
    assert_eq!(value.len(), 3, "{statuses}");
    assert!(value[1].is_null(), "{statuses}");
    assert_eq!(value[0], value[2], "{statuses}");
    assert_eq!(value[0]["err"], Value::Null, "{statuses}");
    assert!(value[0]["slot"].as_u64().is_some(), "{statuses}");

    let (a, b) = (a.pubkey().to_string(), b.pubkey().to_string());
    let accounts = app
        .rpc_result(
            "getMultipleAccounts",
            json!([[a, b, a], {"encoding": "base64"}]),
        )
        .await;
    let value = accounts["value"].as_array().expect("accounts");
    assert_eq!(value.len(), 3, "{accounts}");
    assert!(value[1].is_null(), "{accounts}");
    assert_eq!(value[0]["lamports"], 5_000_000_000_u64, "{accounts}");
    assert_eq!(value[0], value[2], "{accounts}");
}

/// Landings and airdrops sent at once share the ledger's batches in whatever order they arrive:
/// a set of landings first, last or between other writes (its savepoint marked in the batch's
/// `BEGIN` or on its own, released or left to the `COMMIT`: `crates/simnet/src/writer.rs`). Each
/// is answered for what it did: every transfer lands once, every airdrop credits, a duplicate and
/// an overdraft are refused alone, and the balances add up.
#[tokio::test]
async fn landings_and_airdrops_sent_at_once_land_whole_in_any_batch_order() {
    const PAID: u64 = 100_000_000;
    const DROPPED: u64 = 2_000_000;
    let app = TestApp::spawn().await;
    let payee = Pubkey::new([7; 32]);
    let mut payers = Vec::new();
    for _ in 0..24 {
        payers.push(funded(&app, 1_000_000_000, 0).await);
    }
    let blockhash = app.latest_blockhash().await;
    let sign = |payer: &Keypair, lamports: u64| {
        let ix = instructions::system_transfer(&payer.pubkey(), &payee, lamports);
        let message = Message::new_legacy(std::slice::from_ref(&ix), &payer.pubkey(), blockhash);
        let signed = Transaction::sign(message, &[payer.signing_key()]).unwrap();
        let signature = bs58::encode(signed.signatures[0]).into_string();
        (signature, signed.serialize().unwrap())
    };
    let transfers: Vec<(String, Vec<u8>)> = payers.iter().map(|p| sign(p, PAID)).collect();
    let broke = Keypair::generate();
    let overdraft = sign(&broke, PAID);
    let recipients: Vec<Keypair> = (0..8).map(|_| Keypair::generate()).collect();

    // Airdrops between the transfers, the duplicate and the overdraft at the end.
    let mut sends = Vec::new();
    for (index, (_, wire)) in transfers.iter().enumerate() {
        sends.push(send_b64(&app, wire, false).boxed());
        if index % 3 == 1 {
            let recipient = recipients[index / 3].pubkey().to_string();
            sends.push(
                app.rpc("requestAirdrop", json!([recipient, DROPPED]))
                    .boxed(),
            );
        }
    }
    sends.push(send_b64(&app, &transfers[0].1, false).boxed());
    sends.push(send_b64(&app, &overdraft.1, false).boxed());
    let replies = futures_util::future::join_all(sends).await;

    let (overdrafted, replies) = replies.split_last().unwrap();
    let (again, replies) = replies.split_last().unwrap();
    assert!(overdrafted["error"].is_object(), "{overdrafted}");
    let (mut landed, mut dropped) = (0, 0);
    for reply in replies {
        assert!(reply["error"].is_null(), "{reply}");
        if transfers
            .iter()
            .any(|(signature, _)| reply["result"] == json!(signature))
        {
            landed += 1;
        } else {
            dropped += 1;
        }
    }
    assert_eq!(landed, transfers.len());
    assert_eq!(dropped, recipients.len());
    let message = error_message(again);
    assert!(message.contains("already been processed"), "{message}");

    let balance = |address: String| {
        let app = &app;
        async move { app.rpc_result("getBalance", json!([address])).await["value"].clone() }
    };
    assert_eq!(
        balance(payee.to_string()).await,
        json!(PAID * transfers.len() as u64)
    );
    for recipient in &recipients {
        assert_eq!(
            balance(recipient.pubkey().to_string()).await,
            json!(DROPPED)
        );
    }
    assert_eq!(balance(broke.pubkey().to_string()).await, json!(0));
}
