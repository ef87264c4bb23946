//! The simnet's JSON-RPC 2.0 endpoint (`POST /simnet/rpc`): the methods and answer shapes of a
//! real Solana node, single or batched requests. Not part of the OpenAPI document: it speaks
//! Solana's protocol, not Crucible's.
//!
//! `getAccountInfo` serves wallets, token accounts and mints (jsonParsed) and the pool program's
//! accounts (base64), so clients can read the pool's state as on any node.
//!
//! `requestAirdrop` takes an optional third parameter `{"stablecoinAmount": <raw units>}` that
//! also mints the simnet stablecoin into the address's associated token account.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use base64::Engine;

use super::executor::{Account, Kind};
use super::render::ui_amount;
use super::{Commitment, Simnet, SimnetError};
use crate::chain::pool;
use crate::chain::tx::{self, Pubkey};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/simnet/rpc", post(handle))
}

async fn handle(State(state): State<AppState>, body: Bytes) -> Response {
    let Some(simnet) = state.chain.simnet().cloned() else {
        return axum::Json(error_reply(
            Value::Null,
            -32601,
            "simnet is disabled on this server (SOLANA_RPC_URL is set)",
        ))
        .into_response();
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => {
            return axum::Json(error_reply(
                Value::Null,
                -32700,
                &format!("Parse error: {e}"),
            ))
            .into_response();
        }
    };
    let reply = match request {
        Value::Array(batch) if !batch.is_empty() => {
            let mut replies = Vec::with_capacity(batch.len());
            for one in batch {
                replies.push(dispatch(&simnet, one).await);
            }
            Value::Array(replies)
        }
        single => dispatch(&simnet, single).await,
    };
    axum::Json(reply).into_response()
}

fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

async fn dispatch(simnet: &Simnet, request: Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return error_reply(id, -32600, "Invalid request: no method");
    };
    let params = request.get("params").cloned().unwrap_or(json!([]));
    let params = params.as_array().cloned().unwrap_or_default();
    match call(simnet, method, &params).await {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(SimnetError::Rpc { code, message }) => error_reply(id, code, &message),
        Err(SimnetError::Store(e)) => {
            tracing::error!(error = %e, method, "simnet storage error");
            error_reply(id, -32603, "Internal error")
        }
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
    let raw = text(params, index, "a base58 address")?;
    raw.parse()
        .map_err(|_| SimnetError::params(format!("Invalid param: `{raw}` is not a valid address")))
}

fn config(params: &[Value], index: usize) -> &Value {
    params.get(index).unwrap_or(&Value::Null)
}

async fn call(simnet: &Simnet, method: &str, params: &[Value]) -> Result<Value, SimnetError> {
    let context = |slot: u64, value: Value| json!({"context": {"slot": slot, "apiVersion": "2.1.0"}, "value": value});
    match method {
        "getHealth" => Ok(json!("ok")),
        "getVersion" => Ok(json!({"solana-core": "2.1.0-crucible-simnet", "feature-set": 0})),
        "getSlot" | "getBlockHeight" => Ok(json!(simnet.slot().await?)),
        "getLatestBlockhash" => {
            let (blockhash, last_valid, slot) = simnet.latest_blockhash().await?;
            Ok(context(
                slot,
                json!({"blockhash": blockhash, "lastValidBlockHeight": last_valid}),
            ))
        }
        "getBalance" => {
            let key = address(params, 0)?;
            let lamports = simnet.balance(&key).await?;
            Ok(context(simnet.slot().await?, json!(lamports)))
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
            let encoding = config(params, 2)["encoding"].as_str().unwrap_or("base64");
            if encoding != "jsonParsed" {
                return Err(SimnetError::params(
                    "simnet serves token accounts only with encoding jsonParsed",
                ));
            }
            let accounts = simnet
                .token_accounts(&owner, mint.as_ref(), program.as_ref())
                .await?;
            let value: Vec<Value> = accounts
                .into_iter()
                .filter_map(|(key, account)| match account.kind {
                    Kind::Token {
                        program,
                        mint,
                        owner,
                        amount,
                        decimals,
                    } => Some(json!({
                        "pubkey": key.to_string(),
                        "account": {
                            "lamports": account.lamports,
                            "owner": program.to_string(),
                            "executable": false,
                            "rentEpoch": u64::MAX,
                            "space": 165,
                            "data": token_account_data(&program, &mint, &owner, amount, decimals),
                        },
                    })),
                    _ => None,
                })
                .collect();
            Ok(context(simnet.slot().await?, json!(value)))
        }
        "getAccountInfo" => {
            let key = address(params, 0)?;
            let encoding = config(params, 1)["encoding"].as_str().unwrap_or("base64");
            if encoding != "base64" && encoding != "jsonParsed" {
                return Err(SimnetError::params(format!(
                    "simnet serves account data as base64 or jsonParsed, not `{encoding}`"
                )));
            }
            let account = simnet.account(&key).await?;
            let value = match account {
                None => Value::Null,
                Some(account) => account_info(&account, encoding == "jsonParsed")?,
            };
            Ok(context(simnet.slot().await?, value))
        }
        "sendTransaction" => {
            let payload = text(params, 0, "an encoded transaction")?;
            let options = config(params, 1);
            let encoding = options["encoding"].as_str().unwrap_or("base58");
            let wire = Simnet::decode_wire(payload, encoding)?;
            let skip_preflight = options["skipPreflight"].as_bool().unwrap_or(false);
            Ok(json!(simnet.send(&wire, skip_preflight).await?))
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
            let commitment = match options["commitment"].as_str().unwrap_or("finalized") {
                "finalized" => Commitment::Finalized,
                "confirmed" => Commitment::Confirmed,
                other => {
                    return Err(SimnetError::params(format!(
                        "Invalid params: commitment `{other}` is not supported for getTransaction"
                    )));
                }
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
            let query = super::signatures::Query::from_params(params)?;
            Ok(json!(simnet.signatures_for_address(&query).await?))
        }
        other => Err(SimnetError::Rpc {
            code: -32601,
            message: format!("Method not found: simnet does not serve `{other}`"),
        }),
    }
}

/// `getAccountInfo`'s value: `{lamports, owner, executable, rentEpoch, space, data}`. Token
/// accounts and mints are served parsed (like a node's `jsonParsed`); the pool's state as
/// base64 of its byte layout (`chain::pool::PoolState`), as a node serves a program it cannot
/// parse; wallets and the SOL vault have no data.
fn account_info(account: &Account, parsed: bool) -> Result<Value, SimnetError> {
    let base64 = |bytes: &[u8]| {
        json!([
            base64::engine::general_purpose::STANDARD.encode(bytes),
            "base64"
        ])
    };
    let (owner, space, data) = match &account.kind {
        Kind::Wallet => (tx::system_program(), 0, base64(&[])),
        Kind::Vault { .. } => (pool::program_id(), 0, base64(&[])),
        Kind::Pool {
            usdc_mint,
            lp_supply,
        } => {
            let a = pool::PoolAddresses::sol_usdc();
            let state = pool::PoolState {
                usdc_mint: *usdc_mint,
                sol_vault: a.sol_vault,
                usdc_vault: a.usdc_vault,
                lp_mint: a.lp_mint,
                lp_supply: *lp_supply,
                fee_bps: u16::try_from(pool::FEE_BPS).unwrap_or(u16::MAX),
            };
            (
                pool::program_id(),
                pool::POOL_STATE_LEN,
                base64(&state.to_bytes()),
            )
        }
        Kind::Token { program, .. } | Kind::Mint { program, .. } if !parsed => {
            return Err(SimnetError::params(format!(
                "simnet serves {} accounts only with encoding jsonParsed",
                token_name(program)
            )));
        }
        Kind::Token {
            program,
            mint,
            owner,
            amount,
            decimals,
        } => (
            *program,
            165,
            token_account_data(program, mint, owner, *amount, *decimals),
        ),
        Kind::Mint { program, decimals } => (
            *program,
            82,
            json!({"program": token_name(program), "space": 82, "parsed": {"type": "mint",
                   "info": {"decimals": decimals, "isInitialized": true}}}),
        ),
    };
    Ok(json!({
        "lamports": account.lamports,
        "owner": owner.to_string(),
        "executable": false,
        "rentEpoch": u64::MAX,
        "space": space,
        "data": data,
    }))
}

fn parse_key(raw: &str) -> Result<Pubkey, SimnetError> {
    raw.parse()
        .map_err(|_| SimnetError::params(format!("Invalid param: `{raw}` is not a valid address")))
}

/// A token account's `data` in `jsonParsed`, as a real node renders it.
fn token_account_data(
    program: &Pubkey,
    mint: &Pubkey,
    owner: &Pubkey,
    amount: u64,
    decimals: u8,
) -> Value {
    json!({"program": token_name(program), "space": 165, "parsed": {"type": "account", "info": {
        "isNative": false,
        "mint": mint.to_string(),
        "owner": owner.to_string(),
        "state": "initialized",
        "tokenAmount": ui_amount(amount, decimals),
    }}})
}

/// How `jsonParsed` names a token program.
fn token_name(program: &Pubkey) -> &'static str {
    if *program == tx::token_program() {
        "spl-token"
    } else {
        "spl-token-2022"
    }
}
