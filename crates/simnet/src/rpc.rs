//! The simnet's JSON-RPC 2.0 service: the methods, answer shapes, encodings and errors of a real
//! Solana node, single or batched requests, so `@solana/web3.js`, `@solana/spl-token` and
//! solana-py run against it unchanged. [`handle`] takes a request body and returns the reply;
//! the HTTP route around it (Crucible's server serves it as `POST /simnet/rpc`, with the
//! PubSub websocket of [`crate::pubsub`] on the same path) is the caller's. `docs/simnet.md`
//! lists every method and what it leaves out.
//!
//! Every read takes the usual `commitment` (`processed`, `confirmed`, `finalized`) and
//! `minContextSlot`. The simnet has one leader and no forks, so `processed` and `confirmed`
//! see the same ledger; `finalized` matters where a node's answer depends on it (transactions,
//! signatures for an address, signature notifications), and account reads answer the newest
//! state at every commitment.
//!
//! `requestAirdrop` takes an optional third parameter `{"stablecoinAmount": <raw units>}` that
//! also mints the simnet stablecoin into the address's associated token account.

use base64::Engine;
use crucible_solana::tx::{Message, Pubkey};
use serde_json::{Value, json};

use crate::accounts::{self, Encoding, View};
use crate::executor::{self, Kind};
use crate::render::ui_amount;
use crate::{Commitment, Simnet, SimnetError, cluster, rent};

/// The most keys `getMultipleAccounts` and `getRecentPrioritizationFees` take, as on a node.
const MAX_MULTIPLE_ACCOUNTS: usize = 100;
const MAX_PRIORITIZATION_ADDRESSES: usize = 128;
/// The API version the simnet answers as (`context.apiVersion`, `getVersion`).
pub const API_VERSION: &str = "2.1.0";

/// Answer one JSON-RPC body: a request or a batch of them, in JSON. The reply is always JSON-RPC
/// (a body that is not JSON answers `-32700 Parse error`), to be sent with HTTP 200.
pub async fn handle(simnet: &Simnet, body: &[u8]) -> Value {
    match serde_json::from_slice(body) {
        Ok(request) => handle_json(simnet, request).await,
        Err(e) => error_reply(Value::Null, -32700, &format!("Parse error: {e}")),
    }
}

/// Answer a request (or a non-empty batch, answered in order) already parsed as JSON.
pub async fn handle_json(simnet: &Simnet, request: Value) -> Value {
    match request {
        Value::Array(batch) if !batch.is_empty() => {
            let mut replies = Vec::with_capacity(batch.len());
            for one in batch {
                replies.push(dispatch(simnet, one).await);
            }
            Value::Array(replies)
        }
        single => dispatch(simnet, single).await,
    }
}

/// A JSON-RPC error reply to request `id` (`Value::Null` when unknown).
pub fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The JSON-RPC reply for `error` to request `id`.
pub(crate) fn error_to_reply(id: Value, method: &str, error: SimnetError) -> Value {
    match error {
        SimnetError::Rpc { code, message } => error_reply(id, code, &message),
        SimnetError::Preflight { message, data } => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32002, "message": message, "data": data}}),
        SimnetError::Store(e) => {
            tracing::error!(error = %e, method, "simnet storage error");
            error_reply(id, -32603, "Internal error")
        }
    }
}

async fn dispatch(simnet: &Simnet, request: Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return error_reply(id, -32600, "Invalid request: no method");
    };
    let params = request.get("params").cloned().unwrap_or(json!([]));
    let params = params.as_array().cloned().unwrap_or_default();
    let result = match read_options(simnet, &params).await {
        Ok(()) => call(simnet, method, &params).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => error_to_reply(id, method, error),
    }
}

/// The options every read takes, checked once for every method: `commitment` must be one a
/// node knows, and `minContextSlot` must have been reached.
async fn read_options(simnet: &Simnet, params: &[Value]) -> Result<(), SimnetError> {
    for config in params.iter().filter(|p| p.is_object()) {
        if let Some(commitment) = config.get("commitment") {
            parse_commitment(commitment)?;
        }
        if let Some(min) = config.get("minContextSlot").filter(|v| !v.is_null()) {
            let min = min.as_u64().ok_or_else(|| {
                SimnetError::params("Invalid params: minContextSlot must be a slot number")
            })?;
            let slot = simnet.slot().await?;
            if slot < min {
                return Err(SimnetError::Rpc {
                    code: -32016,
                    message: format!("Minimum context slot has not been reached (slot {slot})"),
                });
            }
        }
    }
    Ok(())
}

/// A node's commitment levels (and their deprecated names). The simnet's `processed` is its
/// `confirmed`: one leader, no forks, a transaction is confirmed as it lands.
pub(crate) fn parse_commitment(value: &Value) -> Result<Commitment, SimnetError> {
    match value.as_str() {
        Some("processed" | "confirmed" | "recent" | "single" | "singleGossip") => {
            Ok(Commitment::Confirmed)
        }
        Some("finalized" | "max" | "root") => Ok(Commitment::Finalized),
        _ => Err(SimnetError::params(format!(
            "Invalid params: unknown commitment {value}: use processed, confirmed or finalized"
        ))),
    }
}

fn text<'a>(params: &'a [Value], index: usize, what: &str) -> Result<&'a str, SimnetError> {
    params.get(index).and_then(Value::as_str).ok_or_else(|| {
        SimnetError::params(format!(
            "Invalid params: expected {what} at position {index}"
        ))
    })
}

fn address(params: &[Value], index: usize) -> Result<Pubkey, SimnetError> {
    parse_key(text(params, index, "a base58 address")?)
}

pub(crate) fn parse_key(raw: &str) -> Result<Pubkey, SimnetError> {
    raw.parse()
        .map_err(|_| SimnetError::params(format!("Invalid param: `{raw}` is not a valid address")))
}

fn config(params: &[Value], index: usize) -> &Value {
    params.get(index).unwrap_or(&Value::Null)
}

fn context(slot: u64, value: Value) -> Value {
    json!({"context": {"slot": slot, "apiVersion": API_VERSION}, "value": value})
}

/// Decode a base64 or base58 payload (a transaction, a message).
fn decode_payload(payload: &str, encoding: &str, what: &str) -> Result<Vec<u8>, SimnetError> {
    match encoding {
        "base64" => base64::engine::general_purpose::STANDARD
            .decode(payload)
            .map_err(|e| SimnetError::params(format!("invalid base64 {what}: {e}"))),
        "base58" => bs58::decode(payload)
            .into_vec()
            .map_err(|e| SimnetError::params(format!("invalid base58 {what}: {e}"))),
        other => Err(SimnetError::params(format!(
            "unsupported encoding `{other}`: use base58 or base64"
        ))),
    }
}

async fn call(simnet: &Simnet, method: &str, params: &[Value]) -> Result<Value, SimnetError> {
    match method {
        "getHealth" => Ok(json!("ok")),
        "getVersion" => Ok(json!({"solana-core": API_VERSION, "feature-set": 0})),
        "getIdentity" => Ok(json!({"identity": cluster::identity().to_string()})),
        "getGenesisHash" => Ok(json!(cluster::genesis_hash())),
        "getSlot" | "getBlockHeight" => Ok(json!(simnet.slot().await?)),
        "getEpochInfo" => {
            let slot = simnet.slot().await?;
            Ok(cluster::epoch_info(slot, simnet.transaction_count().await?))
        }
        "getEpochSchedule" => Ok(cluster::epoch_schedule()),
        "getTransactionCount" => Ok(json!(simnet.transaction_count().await?)),
        "getLatestBlockhash" => {
            let (blockhash, last_valid, slot) = simnet.latest_blockhash().await?;
            Ok(context(
                slot,
                json!({"blockhash": blockhash, "lastValidBlockHeight": last_valid}),
            ))
        }
        "isBlockhashValid" => {
            let blockhash = text(params, 0, "a base58 blockhash")?;
            let valid = simnet.is_blockhash_valid(blockhash).await?;
            Ok(context(simnet.slot().await?, json!(valid)))
        }
        "getMinimumBalanceForRentExemption" => {
            let len = params.first().and_then(Value::as_u64).ok_or_else(|| {
                SimnetError::params("Invalid params: expected a data length at position 0")
            })?;
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            Ok(json!(rent::minimum_balance(len)))
        }
        "getFeeForMessage" => {
            let payload = text(params, 0, "a base64 message")?;
            let bytes = decode_payload(payload, "base64", "message")?;
            let message = Message::deserialize(&bytes)
                .map_err(|e| SimnetError::params(format!("invalid message: {e}")))?;
            let fee = executor::fee(&message).map_err(|e| SimnetError::params(e.to_string()))?;
            // A node answers null for a message whose blockhash it no longer knows.
            let blockhash = crucible_solana::base58::encode(&message.recent_blockhash);
            let value = if simnet.is_blockhash_valid(&blockhash).await? {
                json!(fee)
            } else {
                Value::Null
            };
            Ok(context(simnet.slot().await?, value))
        }
        "getRecentPrioritizationFees" => {
            let keys: Vec<Pubkey> = match params.first() {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(all)) => all
                    .iter()
                    .map(|k| parse_key(k.as_str().unwrap_or_default()))
                    .collect::<Result<_, _>>()?,
                Some(_) => {
                    return Err(SimnetError::params(
                        "Invalid params: expected an array of addresses",
                    ));
                }
            };
            if keys.len() > MAX_PRIORITIZATION_ADDRESSES {
                return Err(SimnetError::params(format!(
                    "Too many inputs provided; max {MAX_PRIORITIZATION_ADDRESSES}"
                )));
            }
            let fees = simnet.recent_prioritization_fees(&keys).await?;
            Ok(json!(
                fees.into_iter()
                    .map(|(slot, fee)| json!({"slot": slot, "prioritizationFee": fee}))
                    .collect::<Vec<_>>()
            ))
        }
        "getBalance" => {
            let key = address(params, 0)?;
            let (account, slot) = simnet.account_at_slot(&key).await?;
            Ok(context(slot, json!(account.map_or(0, |a| a.lamports))))
        }
        "getAccountInfo" => {
            let key = address(params, 0)?;
            let view = View::from_config(config(params, 1), Encoding::Base58)?;
            let (account, slot) = simnet.account_at_slot(&key).await?;
            let value = match account {
                None => Value::Null,
                Some(account) => accounts::render(&account, view)?,
            };
            Ok(context(slot, value))
        }
        "getMultipleAccounts" => {
            let keys: Vec<Pubkey> = params
                .first()
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    SimnetError::params("Invalid params: expected an array of addresses")
                })?
                .iter()
                .map(|k| parse_key(k.as_str().unwrap_or_default()))
                .collect::<Result<_, _>>()?;
            if keys.len() > MAX_MULTIPLE_ACCOUNTS {
                return Err(SimnetError::params(format!(
                    "Too many inputs provided; max {MAX_MULTIPLE_ACCOUNTS}"
                )));
            }
            let view = View::from_config(config(params, 1), Encoding::Base64)?;
            let (found, slot) = simnet.accounts_at_slot(&keys).await?;
            let mut value = Vec::with_capacity(keys.len());
            for account in found {
                value.push(match account {
                    None => Value::Null,
                    Some(account) => accounts::render(&account, view)?,
                });
            }
            Ok(context(slot, json!(value)))
        }
        "getTokenAccountBalance" => {
            let key = address(params, 0)?;
            let (account, slot) = simnet.account_at_slot(&key).await?;
            let value = match account.map(|a| a.kind) {
                Some(Kind::Token {
                    amount, decimals, ..
                }) => ui_amount(amount, decimals),
                _ => {
                    return Err(SimnetError::params("Invalid param: not a Token account"));
                }
            };
            Ok(context(slot, value))
        }
        "getTokenSupply" => {
            let key = address(params, 0)?;
            let (account, slot) = simnet.account_at_slot(&key).await?;
            let value = match account.map(|a| a.kind) {
                Some(Kind::Mint {
                    supply, decimals, ..
                }) => ui_amount(supply, decimals),
                _ => return Err(SimnetError::params("Invalid param: not a Token mint")),
            };
            Ok(context(slot, value))
        }
        "getTokenAccountsByOwner" => {
            let owner = address(params, 0)?;
            let filter = config(params, 1);
            let (mint, program) = match (filter.get("mint"), filter.get("programId")) {
                (Some(Value::String(m)), None) => (Some(parse_key(m)?), None),
                (None, Some(Value::String(p))) => (None, Some(parse_key(p)?)),
                _ => {
                    return Err(SimnetError::params(
                        "Invalid params: the filter must be {\"mint\": …} or {\"programId\": …}",
                    ));
                }
            };
            let view = View::from_config(config(params, 2), Encoding::Base64)?;
            let found = simnet
                .token_accounts(&owner, mint.as_ref(), program.as_ref())
                .await?;
            let mut value = Vec::with_capacity(found.len());
            for (key, account) in found {
                value.push(json!({
                    "pubkey": key.to_string(),
                    "account": accounts::render(&account, view)?,
                }));
            }
            Ok(context(simnet.slot().await?, json!(value)))
        }
        "sendTransaction" => {
            let payload = text(params, 0, "an encoded transaction")?;
            let options = config(params, 1);
            let encoding = options["encoding"].as_str().unwrap_or("base58");
            let wire = decode_payload(payload, encoding, "transaction")?;
            let skip_preflight = options["skipPreflight"].as_bool().unwrap_or(false);
            Ok(json!(simnet.send(&wire, skip_preflight).await?))
        }
        "simulateTransaction" => {
            let payload = text(params, 0, "an encoded transaction")?;
            let options = config(params, 1);
            let encoding = options["encoding"].as_str().unwrap_or("base58");
            let wire = decode_payload(payload, encoding, "transaction")?;
            if options.get("accounts").is_some_and(|a| !a.is_null()) {
                return Err(SimnetError::params(
                    "simnet does not return post-simulation accounts (`accounts`)",
                ));
            }
            let sim = simnet
                .simulate(
                    &wire,
                    options["sigVerify"].as_bool().unwrap_or(false),
                    options["replaceRecentBlockhash"].as_bool().unwrap_or(false),
                )
                .await?;
            let mut value = json!({
                "err": sim.err,
                "logs": sim.trace.logs,
                "accounts": null,
                "unitsConsumed": sim.trace.units_consumed,
                "returnData": null,
                "innerInstructions": null,
            });
            if let Some(replacement) = sim.replacement_blockhash {
                value["replacementBlockhash"] = replacement;
            }
            Ok(context(sim.slot, value))
        }
        "requestAirdrop" => {
            let key = address(params, 0)?;
            let lamports = params.get(1).and_then(Value::as_u64).ok_or_else(|| {
                SimnetError::params("Invalid params: expected lamports at position 1")
            })?;
            let stablecoin = match config(params, 2).get("stablecoinAmount") {
                None => 0,
                Some(v) => v.as_u64().ok_or_else(|| {
                    SimnetError::params(
                        "stablecoinAmount must be a non-negative integer of raw units",
                    )
                })?,
            };
            Ok(json!(simnet.airdrop(&key, lamports, stablecoin).await?))
        }
        "getSignatureStatuses" => {
            let signatures: Vec<String> = params
                .first()
                .and_then(Value::as_array)
                .map(|all| {
                    all.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .ok_or_else(|| {
                    SimnetError::params("Invalid params: expected an array of signatures")
                })?;
            if signatures.len() > 256 {
                return Err(SimnetError::params("Too many inputs provided; max 256"));
            }
            let statuses = simnet.statuses(&signatures).await?;
            Ok(context(simnet.slot().await?, json!(statuses)))
        }
        "getTransaction" => {
            let signature = text(params, 0, "a signature")?;
            let options = config(params, 1);
            let commitment = match options.get("commitment") {
                None => Commitment::Finalized,
                Some(c) if c == "processed" => {
                    return Err(SimnetError::params(
                        "Invalid params: commitment `processed` is not supported for getTransaction",
                    ));
                }
                Some(c) => parse_commitment(c)?,
            };
            let encoding = options["encoding"].as_str().unwrap_or("json");
            if encoding != "jsonParsed" && encoding != "json" {
                return Err(SimnetError::params(
                    "simnet serves transactions with encoding jsonParsed (or json, answered as jsonParsed)",
                ));
            }
            let tx = simnet.transaction(signature, commitment).await?;
            let max_version = options["maxSupportedTransactionVersion"].as_u64();
            if tx["version"] == json!(0) && max_version.is_none() {
                return Err(SimnetError::Rpc {
                    code: -32015,
                    message: "Transaction version (0) is not supported by the requesting client. \
                              Please try the request again with the following configuration parameter: \
                              \"maxSupportedTransactionVersion\": 0"
                        .to_owned(),
                });
            }
            Ok(tx)
        }
        "getSignaturesForAddress" => {
            let query = crate::signatures::Query::from_params(params)?;
            Ok(json!(simnet.signatures_for_address(&query).await?))
        }
        other => Err(SimnetError::Rpc {
            code: -32601,
            message: format!("Method not found: simnet does not serve `{other}`"),
        }),
    }
}
