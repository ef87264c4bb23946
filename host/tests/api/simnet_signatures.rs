//! `getSignaturesForAddress` on the simnet, over HTTP like a real node: every account key of a
//! landed transaction lists it, newest first, with `before` / `until` / `limit` paging and the
//! commitment respected; the server's own RPC client pages through all of them.

use crate::helpers::TestApp;
use base64::Engine;
use chrono::Duration;
use crucible::chain::Keypair;
use crucible::chain::tx::{Message, Transaction, instructions};
use serde_json::{Value, json};

async fn send(
    app: &TestApp,
    payer: &Keypair,
    ixs: &[crucible::chain::tx::message::Instruction],
) -> String {
    let reply = app.rpc_result("getLatestBlockhash", json!([])).await;
    let blockhash: [u8; 32] = bs58::decode(reply["value"]["blockhash"].as_str().unwrap())
        .into_vec()
        .unwrap()
        .try_into()
        .unwrap();
    let message = Message::new_legacy(ixs, &payer.pubkey(), blockhash);
    let wire = Transaction::sign(message, &[payer.signing_key()])
        .unwrap()
        .serialize()
        .unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(wire);
    app.rpc_result("sendTransaction", json!([encoded, {"encoding": "base64"}]))
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

fn signatures(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e["signature"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_address_lists_its_transactions_newest_first_with_node_paging() {
    let app = TestApp::spawn_with(|c| c.simnet_finality_ms = 10_000).await;
    let alice = Keypair::generate();
    let bob = Keypair::generate().pubkey();
    let a = alice.pubkey().to_string();
    let mut sent = Vec::new();
    for _ in 0..3 {
        sent.push(
            app.rpc_result("requestAirdrop", json!([a, 1_000_000_000u64]))
                .await
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    sent.push(
        send(
            &app,
            &alice,
            &[
                instructions::system_transfer(&alice.pubkey(), &bob, 1_000_000),
                instructions::memo("hello", &[]),
            ],
        )
        .await,
    );
    sent.reverse();

    // Nothing is final yet: the default (finalized) lists nothing, confirmed lists all.
    let none = app.rpc_result("getSignaturesForAddress", json!([a])).await;
    assert_eq!(none, json!([]));
    let all = app
        .rpc_result(
            "getSignaturesForAddress",
            json!([a, {"commitment": "confirmed"}]),
        )
        .await;
    assert_eq!(signatures(&all), sent);
    let newest = &all[0];
    assert_eq!(newest["memo"], "[5] hello");
    assert_eq!(newest["err"], Value::Null);
    assert_eq!(newest["confirmationStatus"], "confirmed");
    assert!(newest["blockTime"].as_i64().unwrap() > 0);
    assert!(newest["slot"].as_u64().unwrap() > all[1]["slot"].as_u64().unwrap());
    assert_eq!(all[1]["memo"], Value::Null);

    app.advance(Duration::seconds(11));
    let page = app
        .rpc_result("getSignaturesForAddress", json!([a, {"limit": 2}]))
        .await;
    assert_eq!(signatures(&page), sent[..2]);
    assert_eq!(page[0]["confirmationStatus"], "finalized");
    let next = app
        .rpc_result(
            "getSignaturesForAddress",
            json!([a, {"limit": 2, "before": sent[1]}]),
        )
        .await;
    assert_eq!(signatures(&next), sent[2..]);
    let since = app
        .rpc_result("getSignaturesForAddress", json!([a, {"until": sent[2]}]))
        .await;
    assert_eq!(signatures(&since), sent[..2]);
    // The receiver of the transfer sees only that one.
    let bobs = app
        .rpc_result("getSignaturesForAddress", json!([bob.to_string()]))
        .await;
    assert_eq!(signatures(&bobs), sent[..1]);

    let refused = app
        .rpc("getSignaturesForAddress", json!([a, {"limit": 1001}]))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["message"], "Invalid limit; max 1000");

    // The server's client walks every page.
    let rpc = app.state.chain.rpc();
    let walked = rpc
        .get_signatures_since(&a, None, "finalized")
        .await
        .unwrap();
    let walked: Vec<String> = walked.into_iter().map(|s| s.signature).collect();
    assert_eq!(walked, sent);
    let walked = rpc
        .get_signatures_since(&a, Some(&sent[1]), "confirmed")
        .await
        .unwrap();
    assert_eq!(walked.len(), 1);
    assert_eq!(walked[0].signature, sent[0]);
    assert_eq!(walked[0].memo.as_deref(), Some("[5] hello"));
}
