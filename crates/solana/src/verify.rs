//! The payment check: a pure function over a `getTransaction` (`jsonParsed`) result, in the
//! manner of Solana Pay's `validateTransfer`. It never talks to a node, so it is tested against
//! recorded responses and is the same for simnet, devnet and mainnet.
//!
//! A payment is accepted when the transaction succeeded, the payer signed it, the recipient
//! wallet's balance of the mint (summed over its token accounts, Token or Token-2022) rose by
//! exactly the expected raw amount, and an SPL Memo instruction carries exactly the expected memo.

use std::fmt;

use serde_json::Value;

use crate::tx::{MEMO_PROGRAM, MEMO_V1_PROGRAM, TOKEN_2022_PROGRAM, TOKEN_PROGRAM};

/// What a payment must look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedPayment {
    /// The wallet that must have signed.
    pub payer: String,
    /// The wallet owning the receiving token account (not the token account itself).
    pub recipient: String,
    pub mint: String,
    pub amount_raw: u64,
    pub memo: String,
}

/// The outcome of a verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentStatus {
    /// Not finalized yet (or not yet visible at `finalized`): ask again later.
    Pending,
    /// Finalized and exactly as expected. `block_time` is Unix seconds when the node knows it.
    Verified { slot: u64, block_time: Option<i64> },
    /// Finalized (or unknown) and not the expected payment; the reason names the field.
    Rejected(RejectReason),
}

/// Why a transaction is not the expected payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    UnknownSignature,
    FailedTransaction {
        error: String,
    },
    Payer {
        payer: String,
    },
    Recipient {
        recipient: String,
    },
    Mint {
        mint: String,
    },
    Amount {
        expected: u64,
        received: i128,
    },
    Memo {
        expected: String,
        found: Option<String>,
    },
}

impl RejectReason {
    /// The field that was wrong, for API bodies and logs.
    pub fn field(&self) -> &'static str {
        match self {
            RejectReason::UnknownSignature => "signature",
            RejectReason::FailedTransaction { .. } => "transaction",
            RejectReason::Payer { .. } => "payer",
            RejectReason::Recipient { .. } => "recipient",
            RejectReason::Mint { .. } => "mint",
            RejectReason::Amount { .. } => "amount",
            RejectReason::Memo { .. } => "memo",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::UnknownSignature => {
                f.write_str("the network does not know this transaction signature")
            }
            RejectReason::FailedTransaction { error } => {
                write!(f, "the transaction failed on chain ({error})")
            }
            RejectReason::Payer { payer } => {
                write!(
                    f,
                    "the transaction is not signed by the payer wallet {payer}"
                )
            }
            RejectReason::Recipient { recipient } => write!(
                f,
                "the transaction does not pay any token account owned by {recipient}"
            ),
            RejectReason::Mint { mint } => write!(
                f,
                "the transaction pays the recipient in another token, not mint {mint}"
            ),
            RejectReason::Amount { expected, received } => write!(
                f,
                "the recipient received {received} raw units, expected exactly {expected}"
            ),
            RejectReason::Memo { expected, found } => match found {
                Some(found) => write!(f, "the memo is `{found}`, expected `{expected}`"),
                None => write!(f, "the transaction carries no memo; expected `{expected}`"),
            },
        }
    }
}

/// Check a finalized `getTransaction` result against the expected payment.
pub fn verify_transaction(tx: &Value, expected: &ExpectedPayment) -> PaymentStatus {
    match check(tx, expected) {
        Ok(()) => PaymentStatus::Verified {
            slot: tx["slot"].as_u64().unwrap_or_default(),
            block_time: tx["blockTime"].as_i64(),
        },
        Err(reason) => PaymentStatus::Rejected(reason),
    }
}

fn check(tx: &Value, expected: &ExpectedPayment) -> Result<(), RejectReason> {
    let meta = &tx["meta"];
    if !meta.is_object() {
        return Err(RejectReason::FailedTransaction {
            error: "the node returned no transaction status".to_owned(),
        });
    }
    if !meta["err"].is_null() {
        return Err(RejectReason::FailedTransaction {
            error: meta["err"].to_string(),
        });
    }

    let message = &tx["transaction"]["message"];
    let keys = message["accountKeys"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let payer_signed = keys.iter().any(|key| {
        key["pubkey"].as_str() == Some(expected.payer.as_str())
            && key["signer"] == Value::Bool(true)
    });
    if !payer_signed {
        return Err(RejectReason::Payer {
            payer: expected.payer.clone(),
        });
    }

    let received = received_by(meta, &expected.recipient, &expected.mint)?;
    if received != i128::from(expected.amount_raw) {
        return Err(RejectReason::Amount {
            expected: expected.amount_raw,
            received,
        });
    }

    let memos = memos(message);
    if !memos.iter().any(|memo| *memo == expected.memo) {
        return Err(RejectReason::Memo {
            expected: expected.memo.clone(),
            found: memos.first().map(|m| (*m).to_owned()),
        });
    }
    Ok(())
}

/// How much the recipient's balance of `mint` changed, from pre/post token balances.
fn received_by(meta: &Value, recipient: &str, mint: &str) -> Result<i128, RejectReason> {
    let balances = |field: &str| -> Vec<&Value> {
        meta[field]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter(|b| b["owner"].as_str() == Some(recipient))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (pre, post) = (balances("preTokenBalances"), balances("postTokenBalances"));
    if post.is_empty() {
        return Err(RejectReason::Recipient {
            recipient: recipient.to_owned(),
        });
    }
    let of_mint = |b: &&Value| {
        b["mint"].as_str() == Some(mint)
            && b["programId"]
                .as_str()
                .is_none_or(|p| p == TOKEN_PROGRAM || p == TOKEN_2022_PROGRAM)
    };
    if !post.iter().any(of_mint) {
        return Err(RejectReason::Mint {
            mint: mint.to_owned(),
        });
    }
    let sum = |list: &[&Value]| -> i128 {
        list.iter()
            .filter(|b| of_mint(b))
            .filter_map(|b| b["uiTokenAmount"]["amount"].as_str()?.parse::<u64>().ok())
            .map(i128::from)
            .sum()
    };
    Ok(sum(&post) - sum(&pre))
}

/// The text of every top-level SPL Memo instruction (v1 and v2), in order.
fn memos(message: &Value) -> Vec<&str> {
    message["instructions"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|ix| {
                    ix["program"].as_str() == Some("spl-memo")
                        || matches!(
                            ix["programId"].as_str(),
                            Some(MEMO_PROGRAM | MEMO_V1_PROGRAM)
                        )
                })
                .filter_map(|ix| ix["parsed"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expected() -> ExpectedPayment {
        ExpectedPayment {
            payer: "P".into(),
            recipient: "R".into(),
            mint: "M".into(),
            amount_raw: 10,
            memo: "reg:t:1".into(),
        }
    }

    fn balance(owner: &str, mint: &str, amount: u64) -> Value {
        json!({"accountIndex": 1, "mint": mint, "owner": owner, "programId": TOKEN_PROGRAM,
               "uiTokenAmount": {"amount": amount.to_string(), "decimals": 6}})
    }

    fn tx(pre: Vec<Value>, post: Vec<Value>, memo: Option<&str>) -> Value {
        let mut instructions =
            vec![json!({"program": "spl-token", "parsed": {"type": "transferChecked"}})];
        if let Some(memo) = memo {
            instructions
                .push(json!({"program": "spl-memo", "programId": MEMO_PROGRAM, "parsed": memo}));
        }
        json!({"slot": 5, "blockTime": 1700000000, "meta": {"err": null,
            "preTokenBalances": pre, "postTokenBalances": post},
            "transaction": {"message": {"accountKeys": [{"pubkey": "P", "signer": true, "writable": true}],
            "instructions": instructions}}})
    }

    #[test]
    fn a_new_token_account_counts_from_zero() {
        let t = tx(vec![], vec![balance("R", "M", 10)], Some("reg:t:1"));
        assert_eq!(
            verify_transaction(&t, &expected()),
            PaymentStatus::Verified {
                slot: 5,
                block_time: Some(1_700_000_000)
            }
        );
    }

    #[test]
    fn the_reason_names_the_field() {
        let field = |t: Value| match verify_transaction(&t, &expected()) {
            PaymentStatus::Rejected(reason) => reason.field(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(tx(
                vec![balance("R", "M", 5)],
                vec![balance("R", "M", 14)],
                Some("reg:t:1")
            )),
            "amount"
        );
        assert_eq!(
            field(tx(vec![], vec![balance("X", "M", 10)], Some("reg:t:1"))),
            "recipient"
        );
        assert_eq!(
            field(tx(vec![], vec![balance("R", "N", 10)], Some("reg:t:1"))),
            "mint"
        );
        assert_eq!(field(tx(vec![], vec![balance("R", "M", 10)], None)), "memo");
        assert_eq!(
            field(tx(vec![], vec![balance("R", "M", 10)], Some("reg:t:2"))),
            "memo"
        );
        let mut unsigned = tx(vec![], vec![balance("R", "M", 10)], Some("reg:t:1"));
        unsigned["transaction"]["message"]["accountKeys"][0]["signer"] = json!(false);
        assert_eq!(field(unsigned), "payer");
        let mut failed = tx(vec![], vec![balance("R", "M", 10)], Some("reg:t:1"));
        failed["meta"]["err"] = json!({"InstructionError": [0, {"Custom": 1}]});
        assert_eq!(field(failed), "transaction");
    }
}
