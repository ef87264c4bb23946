//! Property tests of the wire decoder and the payment check (`docs/architecture.md`, "A
//! payment"): whatever bytes or JSON a client sends, they are refused, never a panic, and a
//! signed transaction verifies only as it was signed.

use ed25519_dalek::SigningKey;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::instructions;
use super::{Message, Pubkey, Transaction};
use crate::verify::{ExpectedPayment, verify_transaction};

fn signed_transfer(seed: u8, lamports: u64, memo: &str) -> Vec<u8> {
    let key = SigningKey::from_bytes(&[seed.max(1); 32]);
    let payer = Pubkey(key.verifying_key().to_bytes());
    let ixs = [
        instructions::system_transfer(&payer, &Pubkey([9; 32]), lamports),
        instructions::memo(memo, &[]),
    ];
    let message = Message::new_legacy(&ixs, &payer, [7; 32]);
    Transaction::sign(message, &[&key])
        .and_then(|tx| tx.serialize())
        .expect("a valid transaction")
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::from),
        Just(json!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")),
        Just(json!("transferChecked")),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            proptest::collection::hash_map(
                prop_oneof![
                    Just("transaction".to_owned()),
                    Just("message".to_owned()),
                    Just("meta".to_owned()),
                    Just("instructions".to_owned()),
                    Just("accountKeys".to_owned()),
                    Just("parsed".to_owned()),
                    Just("info".to_owned()),
                    Just("preTokenBalances".to_owned()),
                    Just("postTokenBalances".to_owned()),
                    Just("err".to_owned()),
                    "[a-z]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn expected() -> ExpectedPayment {
    ExpectedPayment {
        payer: Pubkey([1; 32]).to_string(),
        recipient: Pubkey([2; 32]).to_string(),
        mint: Pubkey([3; 32]).to_string(),
        amount_raw: 1_000_000,
        memo: "reg:trn_x:0123456789abcdef".into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn any_bytes_decode_or_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Ok((tx, _rest)) = Transaction::deserialize(&bytes) {
            // Whatever decodes re-encodes, and checking its signatures never panics.
            let _ = tx.serialize();
            if let Ok(message) = tx.message.serialize() {
                let _ = tx.verify(&message);
            }
        }
        let _ = Message::deserialize(&bytes);
        let _ = instructions::decode_system(&bytes);
        let _ = instructions::decode_token(&bytes);
        let _ = instructions::decode_ata(&bytes);
    }

    #[test]
    fn a_signed_transaction_verifies_only_as_signed(
        seed in any::<u8>(),
        lamports in any::<u64>(),
        memo in ".{0,40}",
        flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 1..4),
    ) {
        let original = signed_transfer(seed, lamports, &memo);
        let mut bytes = original.clone();
        for (at, mask) in &flips {
            let at = at % bytes.len();
            bytes[at] ^= mask;
        }
        if let Ok((tx, rest)) = Transaction::deserialize(&bytes) {
            let message = tx.message.serialize();
            let verified = message.as_ref().is_ok_and(|m| tx.verify(m).is_ok());
            if verified && rest.is_empty() {
                prop_assert_eq!(tx.serialize().ok(), Some(original), "only the signed bytes verify");
            }
        }
    }

    #[test]
    fn any_json_is_a_verdict_never_a_panic(tx in json_value()) {
        let _ = verify_transaction(&tx, &expected());
        let wrapped = json!({"transaction": {"message": tx.clone()}, "meta": tx});
        let _ = verify_transaction(&wrapped, &expected());
    }
}
