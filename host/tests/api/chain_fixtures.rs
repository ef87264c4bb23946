//! `verify_payment`'s check against recorded `getTransaction` responses (real jsonParsed format):
//! each fixture and the outcome a tournament registration must get from it.

use crucible::chain::verify::{ExpectedPayment, PaymentStatus, RejectReason, verify_transaction};
use serde_json::Value;

const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const TOKEN_2022_MINT: &str = "2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo";
const MEMO: &str = "reg:7f3c9a1e-2b44-4a8e-9d61-0c5e8f2a7b10:4e1f0c2a9b8d7e6f";

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/chain/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect(&path);
    let response: Value = serde_json::from_str(&text).expect("json");
    response["result"].clone()
}

fn expected(mint: &str) -> ExpectedPayment {
    ExpectedPayment {
        payer: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM".into(),
        recipient: "3h1zGmCwsRJnVk5BuRNMLsPaQu1y2aqXqXDWYCgrp5UG".into(),
        mint: mint.into(),
        amount_raw: 25_000_000,
        memo: MEMO.into(),
    }
}

fn rejected(name: &str, mint: &str) -> RejectReason {
    match verify_transaction(&fixture(name), &expected(mint)) {
        PaymentStatus::Rejected(reason) => reason,
        other => panic!("{name}: expected a rejection, got {other:?}"),
    }
}

#[test]
fn a_correct_usdc_transfer_with_memo_is_verified() {
    assert_eq!(
        verify_transaction(&fixture("usdc_transfer_with_memo.json"), &expected(USDC)),
        PaymentStatus::Verified {
            slot: 381_234_567,
            block_time: Some(1_763_891_234)
        }
    );
}

#[test]
fn a_wrong_amount_is_rejected_naming_the_amount() {
    let reason = rejected("wrong_amount.json", USDC);
    assert_eq!(
        reason,
        RejectReason::Amount {
            expected: 25_000_000,
            received: 24_000_000
        }
    );
    assert_eq!(reason.field(), "amount");
    assert!(reason.to_string().contains("24000000"), "{reason}");
}

#[test]
fn a_wrong_recipient_is_rejected_naming_the_recipient() {
    assert_eq!(rejected("wrong_recipient.json", USDC).field(), "recipient");
}

#[test]
fn a_wrong_mint_is_rejected_naming_the_mint() {
    assert_eq!(rejected("wrong_mint.json", USDC).field(), "mint");
}

#[test]
fn a_missing_memo_is_rejected_naming_the_memo() {
    let reason = rejected("missing_memo.json", USDC);
    assert_eq!(
        reason,
        RejectReason::Memo {
            expected: MEMO.into(),
            found: None
        }
    );
    // The right transfer with another memo is also refused.
    let mut other = expected(USDC);
    other.memo = "reg:another:0000".into();
    match verify_transaction(&fixture("usdc_transfer_with_memo.json"), &other) {
        PaymentStatus::Rejected(RejectReason::Memo { found, .. }) => {
            assert_eq!(found.as_deref(), Some(MEMO));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failed_transaction_is_rejected() {
    let reason = rejected("failed_transaction.json", USDC);
    assert_eq!(reason.field(), "transaction");
    assert!(reason.to_string().contains("InstructionError"), "{reason}");
}

#[test]
fn a_token_2022_transfer_is_verified() {
    assert!(matches!(
        verify_transaction(
            &fixture("token_2022_transfer.json"),
            &expected(TOKEN_2022_MINT)
        ),
        PaymentStatus::Verified { .. }
    ));
    // ... and it is not a USDC payment.
    assert_eq!(rejected("token_2022_transfer.json", USDC).field(), "mint");
}

#[test]
fn a_payer_who_did_not_sign_is_rejected() {
    let mut wrong = expected(USDC);
    wrong.payer = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH".into();
    match verify_transaction(&fixture("usdc_transfer_with_memo.json"), &wrong) {
        PaymentStatus::Rejected(reason) => assert_eq!(reason.field(), "payer"),
        other => panic!("{other:?}"),
    }
}
