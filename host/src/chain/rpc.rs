//! A small Solana JSON-RPC client over HTTP (reqwest): the methods Crucible needs, typed answers,
//! a timeout per request and a few retries on transport errors. The same client talks to devnet,
//! mainnet, or the server's own embedded simnet — that one in process: the same JSON-RPC
//! requests and replies, handed to the simnet's dispatcher instead of sent to its own
//! `/simnet/rpc` over a loopback socket (docs/simnet.md, "The server's own calls").

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::ChainError;
pub(crate) use crucible_solana::rpc::{
    RecentBlockhash, SIGNATURES_PAGE, SignatureInfo, SignatureStatus, TokenAccount, TokenFilter,
};

/// Attempts per call when the transport fails (connection refused, reset, timeout).
const ATTEMPTS: u32 = 3;
/// How long one call may take, its retries included: a node that accepts and never answers
/// costs a caller this once, not once per attempt, so a request waiting on the chain is
/// answered (503) within it.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug)]
pub struct RpcClient {
    url: String,
    http: reqwest::Client,
    next_id: AtomicU64,
    /// The node, when it is this server's embedded simnet: calls are answered in process.
    embedded: Option<Arc<super::Simnet>>,
}

#[derive(Deserialize)]
struct Envelope {
    result: Option<Value>,
    error: Option<RpcErrorBody>,
}

#[derive(Deserialize)]
struct RpcErrorBody {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

impl RpcErrorBody {
    /// The message, followed by what the failing program logged (a preflight failure's
    /// `data.logs`): a node's message names only the instruction and the error code, while the
    /// program's own words ("below the minimum") are in its logs. The last few lines suffice.
    fn into_message(self) -> String {
        const SHOWN: usize = 3;
        let logs: Vec<&str> = self
            .data
            .as_ref()
            .and_then(|data| data.get("logs"))
            .and_then(Value::as_array)
            .map(|lines| {
                lines
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(|line| line.strip_prefix("Program log: "))
                    .collect()
            })
            .unwrap_or_default();
        if logs.is_empty() {
            return self.message;
        }
        let shown = &logs[logs.len().saturating_sub(SHOWN)..];
        format!("{} (program log: {})", self.message, shown.join("; "))
    }
}

#[derive(Deserialize)]
struct WithContext<T> {
    value: T,
}

impl RpcClient {
    pub(crate) fn new(url: impl Into<String>) -> Result<Self, ChainError> {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ChainError::Transport {
                url: String::new(),
                detail: e.to_string(),
            })?;
        Ok(RpcClient {
            url: url.into(),
            http,
            next_id: AtomicU64::new(1),
            embedded: None,
        })
    }

    /// A client of this server's embedded `simnet`, whose HTTP address is `url` (what the
    /// client names as its node; its calls never leave the process).
    pub(crate) fn embedded(
        url: impl Into<String>,
        simnet: Arc<super::Simnet>,
    ) -> Result<Self, ChainError> {
        Ok(RpcClient {
            embedded: Some(simnet),
            ..RpcClient::new(url)?
        })
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// One JSON-RPC call with retries on transport errors (never on RPC errors: those are answers).
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, ChainError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let envelope = match &self.embedded {
            Some(simnet) => self.call_embedded(simnet, method, body).await?,
            None => self.call_http(method, &body).await?,
        };
        if let Some(error) = envelope.error {
            return Err(ChainError::Rpc {
                method: method.to_owned(),
                code: error.code,
                message: error.into_message(),
            });
        }
        serde_json::from_value(envelope.result.unwrap_or(Value::Null)).map_err(|e| {
            ChainError::Decode {
                method: method.to_owned(),
                detail: e.to_string(),
            }
        })
    }

    /// One call answered by the embedded simnet's dispatcher, bounded as an HTTP call is.
    async fn call_embedded(
        &self,
        simnet: &super::Simnet,
        method: &str,
        body: Value,
    ) -> Result<Envelope, ChainError> {
        let reply = tokio::time::timeout(
            CALL_TIMEOUT,
            crucible_simnet::rpc::handle_json(simnet, body),
        )
        .await
        .map_err(|_| ChainError::Transport {
            url: crate::redact::url(&self.url),
            detail: format!("the simnet did not answer `{method}` within {CALL_TIMEOUT:?}"),
        })?;
        serde_json::from_value(reply).map_err(|e| ChainError::Decode {
            method: method.to_owned(),
            detail: e.to_string(),
        })
    }

    /// One call over HTTP, retried on transport errors.
    async fn call_http(&self, method: &str, body: &Value) -> Result<Envelope, ChainError> {
        let deadline = std::time::Instant::now() + CALL_TIMEOUT;
        let mut attempt = 0;
        let envelope: Envelope = loop {
            attempt += 1;
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let sent = self
                .http
                .post(&self.url)
                .timeout(left)
                .json(body)
                .send()
                .await;
            let outcome: Result<(), String> = match sent {
                Ok(response) if response.status().is_server_error() || response.status() == 429 => {
                    Err(format!("HTTP {}", response.status()))
                }
                Ok(response) => match response.json::<Envelope>().await {
                    Ok(envelope) => break envelope,
                    Err(e) if e.is_decode() => {
                        return Err(ChainError::Decode {
                            method: method.to_owned(),
                            detail: crate::redact::error(&e),
                        });
                    }
                    Err(e) => Err(crate::redact::error(&e)),
                },
                Err(e) => Err(crate::redact::error(&e)),
            };
            if let Err(detail) = outcome {
                let pause = Duration::from_millis(200 * u64::from(attempt));
                if attempt >= ATTEMPTS || std::time::Instant::now() + pause >= deadline {
                    // The node's URL may carry an API key: errors name only its host.
                    return Err(ChainError::Transport {
                        url: crate::redact::url(&self.url),
                        detail,
                    });
                }
                tracing::warn!(method, attempt, %detail, "solana rpc transport error; retrying");
                tokio::time::sleep(pause).await;
            }
        };
        Ok(envelope)
    }

    /// The status of one signature, searching the whole history; `None` if the node never saw it.
    pub(crate) async fn get_signature_status(
        &self,
        signature: &str,
    ) -> Result<Option<SignatureStatus>, ChainError> {
        let statuses: WithContext<Vec<Option<SignatureStatus>>> = self
            .call(
                "getSignatureStatuses",
                json!([[signature], {"searchTransactionHistory": true}]),
            )
            .await?;
        Ok(statuses.value.into_iter().next().flatten())
    }

    /// The transaction in `jsonParsed` form at `commitment`; `None` until it is visible there.
    pub(crate) async fn get_transaction(
        &self,
        signature: &str,
        commitment: &str,
    ) -> Result<Option<Value>, ChainError> {
        let tx: Value = self
            .call(
                "getTransaction",
                json!([signature, {"encoding": "jsonParsed", "commitment": commitment,
                                   "maxSupportedTransactionVersion": 0}]),
            )
            .await?;
        Ok((!tx.is_null()).then_some(tx))
    }

    /// One page of `getSignaturesForAddress` at `commitment`: newest first, strictly older than
    /// `before` and newer than `until`, at most `limit` (up to [`SIGNATURES_PAGE`]).
    pub(crate) async fn get_signatures_page(
        &self,
        address: &str,
        before: Option<&str>,
        until: Option<&str>,
        limit: usize,
        commitment: &str,
    ) -> Result<Vec<SignatureInfo>, ChainError> {
        let mut config =
            json!({"limit": limit.clamp(1, SIGNATURES_PAGE), "commitment": commitment});
        if let Some(before) = before {
            config["before"] = json!(before);
        }
        if let Some(until) = until {
            config["until"] = json!(until);
        }
        self.call("getSignaturesForAddress", json!([address, config]))
            .await
    }

    /// Every signature of `address` newer than `until` (all of them without it), newest first,
    /// following `before` from page to page.
    pub async fn get_signatures_since(
        &self,
        address: &str,
        until: Option<&str>,
        commitment: &str,
    ) -> Result<Vec<SignatureInfo>, ChainError> {
        self.signatures_while(address, until, commitment, |_| true)
            .await
    }

    /// Every signature of `address` in a slot after `slot`, newest first, following `before`
    /// from page to page and stopping at the first older one.
    pub(crate) async fn get_signatures_after_slot(
        &self,
        address: &str,
        slot: u64,
        commitment: &str,
    ) -> Result<Vec<SignatureInfo>, ChainError> {
        self.signatures_while(address, None, commitment, |s| s.slot > slot)
            .await
    }

    /// The signatures of `address` newer than `until`, newest first, page after page, up to the
    /// first that `wanted` refuses (signatures come newest first, so the rest are older still).
    async fn signatures_while(
        &self,
        address: &str,
        until: Option<&str>,
        commitment: &str,
        wanted: impl Fn(&SignatureInfo) -> bool,
    ) -> Result<Vec<SignatureInfo>, ChainError> {
        let mut all: Vec<SignatureInfo> = Vec::new();
        loop {
            let before = all.last().map(|s| s.signature.clone());
            let page = self
                .get_signatures_page(
                    address,
                    before.as_deref(),
                    until,
                    SIGNATURES_PAGE,
                    commitment,
                )
                .await?;
            let full = page.len() >= SIGNATURES_PAGE;
            let kept: Vec<SignatureInfo> = page.into_iter().take_while(&wanted).collect();
            let reached = kept.len() < SIGNATURES_PAGE;
            all.extend(kept);
            if !full || reached {
                return Ok(all);
            }
        }
    }

    /// SOL balance in lamports.
    pub(crate) async fn get_balance(&self, address: &str) -> Result<u64, ChainError> {
        let balance: WithContext<u64> = self
            .call("getBalance", json!([address, {"commitment": "confirmed"}]))
            .await?;
        Ok(balance.value)
    }

    /// Addresses one `getMultipleAccounts` call may name (a node's limit).
    pub(crate) const MULTIPLE_ACCOUNTS_LIMIT: usize = 100;

    /// The balances of `addresses` in lamports (0 for an account that does not exist), in
    /// order, with one `getMultipleAccounts` call per 100 addresses; no account data is sent
    /// (`dataSlice` of length 0).
    pub async fn get_balances(&self, addresses: &[&str]) -> Result<Vec<u64>, ChainError> {
        let mut balances = Vec::with_capacity(addresses.len());
        for chunk in addresses.chunks(Self::MULTIPLE_ACCOUNTS_LIMIT) {
            let config = json!({"encoding": "base64", "commitment": "confirmed",
                                "dataSlice": {"offset": 0, "length": 0}});
            for account in self.multiple_accounts(chunk, config).await? {
                balances.push(
                    account
                        .as_ref()
                        .and_then(|a| a["lamports"].as_u64())
                        .unwrap_or(0),
                );
            }
        }
        Ok(balances)
    }

    pub(crate) async fn get_token_accounts_by_owner(
        &self,
        owner: &str,
        filter: TokenFilter<'_>,
    ) -> Result<Vec<TokenAccount>, ChainError> {
        let filter = filter.to_json();
        let accounts: WithContext<Vec<Value>> = self
            .call(
                "getTokenAccountsByOwner",
                json!([owner, filter, {"encoding": "jsonParsed", "commitment": "confirmed"}]),
            )
            .await?;
        accounts
            .value
            .iter()
            .map(TokenAccount::from_json_parsed)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ChainError::Decode {
                method: "getTokenAccountsByOwner".to_owned(),
                detail: "a token account is not in the jsonParsed shape".to_owned(),
            })
    }

    /// `getMultipleAccounts` in `encoding`: one entry per address (at most
    /// [`Self::MULTIPLE_ACCOUNTS_LIMIT`]), `None` where the account does not exist. The accounts
    /// are read at one slot, so they are consistent with each other.
    pub(crate) async fn get_multiple_accounts(
        &self,
        addresses: &[&str],
        encoding: &str,
    ) -> Result<Vec<Option<Value>>, ChainError> {
        self.multiple_accounts(
            addresses,
            json!({"encoding": encoding, "commitment": "confirmed"}),
        )
        .await
    }

    /// One `getMultipleAccounts` call with `config`: an entry per address, or a decode error
    /// when the node answers a different number.
    async fn multiple_accounts(
        &self,
        addresses: &[&str],
        config: Value,
    ) -> Result<Vec<Option<Value>>, ChainError> {
        let accounts: WithContext<Vec<Option<Value>>> = self
            .call("getMultipleAccounts", json!([addresses, config]))
            .await?;
        if accounts.value.len() != addresses.len() {
            return Err(ChainError::Decode {
                method: "getMultipleAccounts".to_owned(),
                detail: format!(
                    "{} accounts answered for {} addresses",
                    accounts.value.len(),
                    addresses.len()
                ),
            });
        }
        Ok(accounts.value)
    }

    /// `getAccountInfo` in `encoding` (`base64` or `jsonParsed`): the account object
    /// (`lamports`, `owner`, `data`, …), `None` when the account does not exist.
    pub(crate) async fn get_account_info(
        &self,
        address: &str,
        encoding: &str,
    ) -> Result<Option<Value>, ChainError> {
        let info: WithContext<Value> = self
            .call(
                "getAccountInfo",
                json!([address, {"encoding": encoding, "commitment": "confirmed"}]),
            )
            .await?;
        Ok((!info.value.is_null()).then_some(info.value))
    }

    /// A recent blockhash to sign with.
    pub(crate) async fn get_latest_blockhash(&self) -> Result<[u8; 32], ChainError> {
        Ok(self.get_recent_blockhash().await?.hash)
    }

    /// A recent blockhash with the last block height at which a transaction using it can land.
    pub(crate) async fn get_recent_blockhash(&self) -> Result<RecentBlockhash, ChainError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Latest {
            blockhash: String,
            last_valid_block_height: u64,
        }
        let latest: WithContext<Latest> = self
            .call("getLatestBlockhash", json!([{"commitment": "finalized"}]))
            .await?;
        let hash =
            crucible_solana::base58::decode_32(&latest.value.blockhash).ok_or_else(|| {
                ChainError::Decode {
                    method: "getLatestBlockhash".to_owned(),
                    detail: format!("`{}` is not a 32-byte hash", latest.value.blockhash),
                }
            })?;
        Ok(RecentBlockhash {
            hash,
            last_valid_block_height: latest.value.last_valid_block_height,
        })
    }

    /// The finalized block height: once it passes a blockhash's `lastValidBlockHeight`, no
    /// transaction signed with that blockhash can land any more.
    pub(crate) async fn get_block_height(&self) -> Result<u64, ChainError> {
        self.call("getBlockHeight", json!([{"commitment": "finalized"}]))
            .await
    }

    /// Submit a signed wire transaction (base64); returns its signature.
    pub async fn send_transaction(&self, wire: &[u8]) -> Result<String, ChainError> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(wire);
        self.call(
            "sendTransaction",
            json!([encoded, {"encoding": "base64", "preflightCommitment": "confirmed"}]),
        )
        .await
    }

    /// Ask for SOL (any faucet node) and, on simnet only, stablecoin raw units
    /// (`{"stablecoinAmount": n}`, an extension of the third parameter).
    pub async fn request_airdrop(
        &self,
        address: &str,
        lamports: u64,
        stablecoin_raw: Option<u64>,
    ) -> Result<String, ChainError> {
        let params = match stablecoin_raw {
            Some(raw) => json!([address, lamports, {"stablecoinAmount": raw}]),
            None => json!([address, lamports]),
        };
        self.call("requestAirdrop", params).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    async fn embedded() -> RpcClient {
        let storage = crucible_simnet::Storage::in_memory()
            .await
            .expect("in-memory ledger");
        let clock: Arc<dyn crucible_simnet::Clock> = Arc::new(crucible_simnet::SystemClock);
        let simnet = super::super::Simnet::open(
            storage,
            clock,
            0,
            crucible_simnet::default_stablecoin_mint(),
        )
        .await
        .expect("simnet");
        // Nothing listens at this address: a call that left the process would fail.
        RpcClient::embedded("http://127.0.0.1:9/simnet/rpc", Arc::new(simnet)).expect("client")
    }

    /// The embedded simnet answers in process, with the answers an HTTP node gives: results
    /// decoded into the client's types, refusals as `ChainError::Rpc` with the node's code.
    #[tokio::test]
    async fn the_embedded_simnet_answers_in_process_as_a_node_does() {
        let rpc = embedded().await;
        let address = "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV";
        assert_eq!(rpc.get_balance(address).await.expect("balance"), 0);
        rpc.request_airdrop(address, 5_000_000, None)
            .await
            .expect("airdrop");
        assert_eq!(
            rpc.get_balances(&[address, "11111111111111111111111111111111"])
                .await
                .expect("balances"),
            vec![5_000_000, 0]
        );
        assert_ne!(
            rpc.get_latest_blockhash().await.expect("blockhash"),
            [0; 32]
        );
        match rpc.send_transaction(b"not a transaction").await {
            Err(ChainError::Rpc { method, code, .. }) => {
                assert_eq!(method, "sendTransaction");
                assert_eq!(code, -32602, "invalid params, as a node answers");
            }
            other => panic!("a garbage transaction must be refused: {other:?}"),
        }
        match rpc.call::<Value>("noSuchMethod", json!([])).await {
            Err(ChainError::Rpc { code, .. }) => assert_eq!(code, -32601),
            other => panic!("an unknown method must be refused: {other:?}"),
        }
    }
}
