//! `getSignaturesForAddress` on the simnet: the signatures of the landed transactions that
//! named an address among their account keys, newest first, in a real node's shape
//! (`signature`, `slot`, `err`, `memo`, `blockTime`, `confirmationStatus`) and with its
//! parameters (`before`, `until`, `limit` up to 1000, `commitment`).
//!
//! The index is written with the transaction ([`record`]), inside the same database
//! transaction, so a signature is listed exactly when `getTransaction` can find it. Every
//! transaction has its own slot on the simnet, so the slot alone orders an address's history.

use crucible_solana::tx::Pubkey;
use serde_json::{Value, json};

use crate::sql::{self, Conn};
use crate::{Commitment, Simnet, SimnetError, ledger};

/// The most signatures one call returns, as on a real node.
pub(crate) const MAX_LIMIT: u64 = 1000;

/// What one `getSignaturesForAddress` call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    pub address: Pubkey,
    /// Start strictly before (older than) this signature.
    pub before: Option<String>,
    /// Stop strictly after (newer than) this signature.
    pub until: Option<String>,
    pub limit: u64,
    pub commitment: Commitment,
}

impl Query {
    /// Read the JSON-RPC params `[address, {before?, until?, limit?, commitment?}]`.
    pub(crate) fn from_params(params: &[Value]) -> Result<Query, SimnetError> {
        let raw = params.first().and_then(Value::as_str).ok_or_else(|| {
            SimnetError::params("Invalid params: expected a base58 address at position 0")
        })?;
        let address = raw.parse().map_err(|_| {
            SimnetError::params(format!("Invalid param: `{raw}` is not a valid address"))
        })?;
        let config = params.get(1).unwrap_or(&Value::Null);
        let signature = |name: &str| -> Result<Option<String>, SimnetError> {
            match config.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s))
                    if bs58::decode(s).into_vec().is_ok_and(|b| b.len() == 64) =>
                {
                    Ok(Some(s.clone()))
                }
                Some(_) => Err(SimnetError::params(format!(
                    "Invalid param: `{name}` must be a base58 transaction signature"
                ))),
            }
        };
        let limit = match config.get("limit") {
            None | Some(Value::Null) => MAX_LIMIT,
            Some(v) => v
                .as_u64()
                .filter(|l| (1..=MAX_LIMIT).contains(l))
                .ok_or_else(|| SimnetError::params(format!("Invalid limit; max {MAX_LIMIT}")))?,
        };
        let commitment = match config.get("commitment").and_then(Value::as_str) {
            None | Some("finalized") => Commitment::Finalized,
            Some("confirmed") => Commitment::Confirmed,
            Some(_) => {
                return Err(SimnetError::params(
                    "Method does not support commitment below `confirmed`",
                ));
            }
        };
        Ok(Query {
            address,
            before: signature("before")?,
            until: signature("until")?,
            limit,
            commitment,
        })
    }
}

/// Index a landed transaction under each of its account keys.
pub(crate) async fn record(
    conn: &mut Conn<'_>,
    signature: &str,
    slot: i64,
    keys: &[Pubkey],
) -> Result<(), SimnetError> {
    record_all(conn, &[(signature, slot, keys)]).await
}

/// Index several landed transactions, each `(signature, slot, account keys)`, under each of
/// their account keys: a few dozen rows a statement, for all of them together.
pub(crate) async fn record_all(
    conn: &mut Conn<'_>,
    landed: &[(&str, i64, &[Pubkey])],
) -> Result<(), SimnetError> {
    let mut rows: Vec<(String, i64, &str)> = Vec::new();
    for (signature, slot, keys) in landed {
        rows.extend(addresses(keys).into_iter().map(|a| (a, *slot, *signature)));
    }
    for chunk in rows.chunks(ADDRESSES_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO simnet_address_signatures (address, slot, signature) VALUES {}",
            ledger::placeholders(chunk.len(), 3, 0)
        );
        let mut query = sql::query(&sql);
        for (address, slot, signature) in chunk {
            query = query.bind(address.as_str()).bind(*slot).bind(*signature);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// The addresses a transaction naming `keys` is indexed under: each once, in order.
pub(crate) fn addresses(keys: &[Pubkey]) -> Vec<String> {
    let mut addresses: Vec<String> = keys.iter().map(Pubkey::to_string).collect();
    addresses.sort_unstable();
    addresses.dedup();
    addresses
}

/// Addresses one insert carries at most.
const ADDRESSES_PER_STATEMENT: usize = 64;

async fn slot_of(conn: &mut Conn<'_>, signature: Option<&str>) -> Result<Option<i64>, SimnetError> {
    match signature {
        None => Ok(None),
        Some(s) => Ok(ledger::transaction(conn, s).await?.map(|(slot, ..)| slot)),
    }
}

/// A real node's `memo` field: each memo instruction as `[length] text`, joined by `; `.
fn memo(rendered: &Value) -> Value {
    let memos: Vec<String> = rendered["transaction"]["message"]["instructions"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|ix| ix["program"] == "spl-memo")
                .filter_map(|ix| ix["parsed"].as_str())
                .map(|text| format!("[{}] {text}", text.len()))
                .collect()
        })
        .unwrap_or_default();
    if memos.is_empty() {
        Value::Null
    } else {
        json!(memos.join("; "))
    }
}

impl Simnet {
    /// The answer to `getSignaturesForAddress`: newest first. An unknown `before` or `until`
    /// signature bounds nothing on that side, as if absent.
    pub(crate) async fn signatures_for_address(
        &self,
        query: &Query,
    ) -> Result<Vec<Value>, SimnetError> {
        let mut reader = self.store.reader().await?;
        let conn = &mut reader.conn()?;
        let before = slot_of(conn, query.before.as_deref()).await?;
        let until = slot_of(conn, query.until.as_deref()).await?;
        // Only what is final at `commitment` is listed, like `getTransaction`.
        let executed_by = match query.commitment {
            Commitment::Finalized => self.now_ms().saturating_sub(self.shared.finality_ms),
            Commitment::Confirmed => i64::MAX,
        };
        let rows: Vec<(String, i64, i64, Option<String>, String)> = sql::query(
            "SELECT t.signature, t.slot, t.executed_at, t.err, t.rendered
             FROM simnet_address_signatures a JOIN simnet_transactions t ON t.signature = a.signature
             WHERE a.address = $1 AND a.slot < $2 AND a.slot > $3 AND t.executed_at <= $4
             ORDER BY a.slot DESC LIMIT $5",
        )
        .bind(query.address.to_string())
        .bind(before.unwrap_or(i64::MAX))
        .bind(until.unwrap_or(-1))
        .bind(executed_by)
        .bind(i64::try_from(query.limit).unwrap_or(1000))
        .fetch_all(conn)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(signature, slot, executed_at, err, rendered)| {
                let err: Value = err
                    .and_then(|e| serde_json::from_str(&e).ok())
                    .unwrap_or(Value::Null);
                let rendered: Value = serde_json::from_str(&rendered).unwrap_or(Value::Null);
                let status = if self.is_final(executed_at) {
                    "finalized"
                } else {
                    "confirmed"
                };
                json!({
                    "signature": signature,
                    "slot": slot,
                    "err": err,
                    "memo": memo(&rendered),
                    "blockTime": executed_at.div_euclid(1000),
                    "confirmationStatus": status,
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(byte: u8) -> String {
        bs58::encode([byte; 64]).into_string()
    }

    #[test]
    fn params_follow_the_node() {
        let address = Pubkey([7; 32]).to_string();
        let q = Query::from_params(&[json!(address)]).expect("defaults");
        assert_eq!((q.limit, q.commitment), (1000, Commitment::Finalized));
        let q = Query::from_params(&[
            json!(address),
            json!({"limit": 5, "before": sig(1), "until": sig(2), "commitment": "confirmed"}),
        ])
        .expect("all");
        assert_eq!(q.limit, 5);
        assert_eq!(q.before, Some(sig(1)));
        assert_eq!(q.until, Some(sig(2)));
        assert_eq!(q.commitment, Commitment::Confirmed);
        for bad in [
            json!({"limit": 1001}),
            json!({"limit": 0}),
            json!({"before": "nope"}),
            json!({"commitment": "processed"}),
        ] {
            assert!(
                Query::from_params(&[json!(address), bad.clone()]).is_err(),
                "{bad}"
            );
        }
        assert!(Query::from_params(&[json!("x")]).is_err());
    }

    #[test]
    fn memos_are_rendered_with_their_length() {
        let rendered = json!({"transaction": {"message": {"instructions": [
            {"program": "spl-memo", "parsed": "hello"},
            {"program": "system", "parsed": {"type": "transfer"}},
            {"program": "spl-memo", "parsed": "hi"},
        ]}}});
        assert_eq!(memo(&rendered), json!("[5] hello; [2] hi"));
        assert_eq!(memo(&json!({})), Value::Null);
    }
}
