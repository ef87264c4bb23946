//! Swaps on a real cluster through Jupiter's quote and swap API (`GET /quote`, `POST /swap`):
//! Jupiter finds the route and builds the transaction, we check it and sign it locally with the
//! agent's key, and it is sent through our own RPC (`SOLANA_RPC_URL`), so no key ever leaves
//! the server.
//!
//! A transaction built by someone else is signed only if it can do nothing but swap for us:
//! the agent's wallet is its fee payer and only signer, and every instruction calls a program
//! a swap needs (Jupiter's router, compute budget, System, the token programs, associated token
//! accounts). Programs cannot be loaded from address lookup tables, so this is checked on the
//! static keys alone, without resolving the tables.
//!
//! Built against the documented API format and tested against responses the tests build; it
//! has not been run against the live service from this repository's CI (no network there).

use std::time::Duration;

use base64::Engine;
use ed25519_dalek::Signer;
use serde::Deserialize;
use serde_json::{Value, json};

use super::keypair::Keypair;
use super::tx::{self, Pubkey, decode_shortvec};

/// Jupiter's free endpoint; `https://api.jup.ag/swap/v1` with an API key.
pub(crate) const DEFAULT_BASE_URL: &str = "https://lite-api.jup.ag/swap/v1";
/// Jupiter's aggregator program (v6).
pub(crate) const JUPITER_PROGRAM: &str = "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4";
/// Wrapped SOL: how the API names native SOL.
pub(crate) const WRAPPED_SOL_MINT: &str = "So11111111111111111111111111111111111111112";

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwapApiError {
    /// The service could not be reached or failed (transport, 5xx, 429): try again later.
    #[error("the swap API is unavailable: {0}")]
    Unavailable(String),
    /// The service answered that it cannot do this swap (no route, amount too small, …).
    #[error("the swap API refused: {0}")]
    Refused(String),
    /// The answer is not in the documented format.
    #[error("unexpected answer from the swap API: {0}")]
    Malformed(String),
    /// The transaction it built could do more than swap for us: never signed.
    #[error("refusing to sign the swap API's transaction: {0}")]
    Unsafe(String),
}

#[derive(Debug, Clone)]
pub(crate) struct JupiterConfig {
    pub base_url: String,
    /// Sent as `x-api-key` (needed on `api.jup.ag`, not on the free endpoint).
    pub api_key: Option<crate::secret::Secret>,
}

impl Default for JupiterConfig {
    fn default() -> Self {
        JupiterConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
        }
    }
}

/// A route Jupiter offers for an exact-in swap.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Quote {
    pub in_amount: u64,
    /// The expected output, in the output mint's raw units.
    pub out_amount: u64,
    /// The least the swap may return before it fails on chain (slippage applied).
    pub min_out: u64,
    pub price_impact_pct: f64,
    /// The quote as received: `/swap` wants it back unchanged.
    response: Value,
}

/// A swap transaction Jupiter built, checked but not yet signed.
#[derive(Debug, Clone)]
pub(crate) struct PreparedSwap {
    wire: Vec<u8>,
    /// Where the message (what the signature covers) starts in `wire`.
    message_at: usize,
    /// The block height after which its blockhash can no longer land.
    pub last_valid_block_height: u64,
}

/// A signed swap, ready for `sendTransaction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignedSwap {
    pub wire: Vec<u8>,
    /// The transaction id (its signature, base58).
    pub signature: String,
}

#[derive(Debug)]
pub(crate) struct JupiterSwaps {
    http: reqwest::Client,
    config: JupiterConfig,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QuoteFields {
    input_mint: String,
    in_amount: String,
    output_mint: String,
    out_amount: String,
    other_amount_threshold: String,
    #[serde(default)]
    price_impact_pct: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SwapFields {
    swap_transaction: String,
    last_valid_block_height: u64,
}

impl JupiterSwaps {
    pub(crate) fn new(config: JupiterConfig) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(3))
            .build()?;
        Ok(JupiterSwaps { http, config })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.config.base_url.trim_end_matches('/'))
    }

    fn authorised(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.api_key {
            Some(key) => request.header("x-api-key", key.expose()),
            None => request,
        }
    }

    /// The best exact-in route for `amount` raw units of `input_mint` into `output_mint`.
    pub(crate) async fn quote(
        &self,
        input_mint: &str,
        output_mint: &str,
        amount: u64,
        slippage_bps: u16,
    ) -> Result<Quote, SwapApiError> {
        let request = self.http.get(self.url("quote")).query(&[
            ("inputMint", input_mint.to_owned()),
            ("outputMint", output_mint.to_owned()),
            ("amount", amount.to_string()),
            ("slippageBps", slippage_bps.to_string()),
            ("swapMode", "ExactIn".to_owned()),
        ]);
        let response = send(self.authorised(request)).await?;
        let fields: QuoteFields = serde_json::from_value(response.clone())
            .map_err(|error| SwapApiError::Malformed(format!("quote: {error}")))?;
        // The route must be the one we asked for: a quote for other mints or another amount
        // would be signed as if it were ours.
        if fields.input_mint != input_mint
            || fields.output_mint != output_mint
            || raw_amount("inAmount", &fields.in_amount)? != amount
        {
            return Err(SwapApiError::Malformed(format!(
                "the quote is for {} {} → {}, not {amount} {input_mint} → {output_mint}",
                fields.in_amount, fields.input_mint, fields.output_mint
            )));
        }
        let out_amount = raw_amount("outAmount", &fields.out_amount)?;
        let min_out = raw_amount("otherAmountThreshold", &fields.other_amount_threshold)?;
        if min_out > out_amount {
            return Err(SwapApiError::Malformed(format!(
                "minimum out {min_out} exceeds the quoted {out_amount}"
            )));
        }
        let price_impact_pct = fields
            .price_impact_pct
            .as_deref()
            .map(|pct| pct.parse::<f64>())
            .transpose()
            .map_err(|_| SwapApiError::Malformed("priceImpactPct is not a number".into()))?
            .unwrap_or(0.0);
        Ok(Quote {
            in_amount: amount,
            out_amount,
            min_out,
            price_impact_pct,
            response,
        })
    }

    /// The transaction that executes `quote` for `user`, checked (see the module docs).
    pub(crate) async fn prepare(
        &self,
        quote: &Quote,
        user: &Pubkey,
    ) -> Result<PreparedSwap, SwapApiError> {
        let request = self.http.post(self.url("swap")).json(&json!({
            "quoteResponse": quote.response,
            "userPublicKey": user.to_string(),
            "wrapAndUnwrapSol": true,
            "dynamicComputeUnitLimit": true,
        }));
        let response = send(self.authorised(request)).await?;
        let fields: SwapFields = serde_json::from_value(response)
            .map_err(|error| SwapApiError::Malformed(format!("swap: {error}")))?;
        let wire = base64::engine::general_purpose::STANDARD
            .decode(fields.swap_transaction.as_bytes())
            .map_err(|_| SwapApiError::Malformed("swapTransaction is not base64".into()))?;
        let message_at = check_transaction(&wire, user)?;
        Ok(PreparedSwap {
            wire,
            message_at,
            last_valid_block_height: fields.last_valid_block_height,
        })
    }
}

impl PreparedSwap {
    /// Sign with the fee payer's key (checked to be the one the transaction names).
    pub(crate) fn sign(&self, payer: &Keypair) -> Result<SignedSwap, SwapApiError> {
        let expected = Pubkey::new(self.wire_key(0)?);
        if payer.pubkey() != expected {
            return Err(SwapApiError::Unsafe(format!(
                "the transaction is paid by {expected}, not by {}",
                payer.pubkey()
            )));
        }
        let signature = payer
            .signing_key()
            .sign(&self.wire[self.message_at..])
            .to_bytes();
        let mut wire = self.wire.clone();
        // One signature slot (checked): the shortvec count is one byte, the slot follows it.
        wire[1..65].copy_from_slice(&signature);
        Ok(SignedSwap {
            wire,
            signature: crucible_solana::base58::encode(&signature),
        })
    }

    /// Static account key `index` of the message.
    fn wire_key(&self, index: usize) -> Result<[u8; 32], SwapApiError> {
        let parsed = parse(&self.wire).map_err(SwapApiError::Malformed)?;
        parsed
            .static_keys
            .get(index)
            .copied()
            .ok_or_else(|| SwapApiError::Malformed("no such account key".into()))
    }
}

/// The parts of a wire transaction the safety check reads.
struct Parsed {
    signature_slots: usize,
    message_at: usize,
    num_required_signatures: u8,
    static_keys: Vec<[u8; 32]>,
    program_indices: Vec<u8>,
}

/// Read a legacy or v0 transaction far enough to check it: signatures, header, static keys,
/// instructions, and (v0) the lookup-table section, which must end the bytes exactly.
fn parse(wire: &[u8]) -> Result<Parsed, String> {
    let truncated = || "the transaction is truncated".to_owned();
    let mut pos = 0;
    let take = |pos: &mut usize, n: usize| -> Result<&[u8], String> {
        let end = pos.checked_add(n).ok_or_else(truncated)?;
        let slice = wire.get(*pos..end).ok_or_else(truncated)?;
        *pos = end;
        Ok(slice)
    };
    let shortvec = |pos: &mut usize| decode_shortvec(wire, pos).map_err(|e| e.to_string());
    let signature_slots = shortvec(&mut pos)?;
    take(
        &mut pos,
        signature_slots.checked_mul(64).ok_or_else(truncated)?,
    )?;
    let message_at = pos;
    let first = *wire.get(pos).ok_or_else(truncated)?;
    let versioned = first & 0x80 != 0;
    if versioned {
        if first & 0x7f != 0 {
            return Err(format!("unsupported message version {}", first & 0x7f));
        }
        pos += 1;
    }
    let header = take(&mut pos, 3)?;
    let num_required_signatures = header[0];
    let key_count = shortvec(&mut pos)?;
    let mut static_keys = Vec::with_capacity(key_count.min(64));
    for _ in 0..key_count {
        let mut key = [0u8; 32];
        key.copy_from_slice(take(&mut pos, 32)?);
        static_keys.push(key);
    }
    take(&mut pos, 32)?; // recent blockhash
    let instruction_count = shortvec(&mut pos)?;
    let mut program_indices = Vec::with_capacity(instruction_count.min(64));
    for _ in 0..instruction_count {
        program_indices.push(take(&mut pos, 1)?[0]);
        let accounts = shortvec(&mut pos)?;
        take(&mut pos, accounts)?;
        let data = shortvec(&mut pos)?;
        take(&mut pos, data)?;
    }
    if versioned {
        let tables = shortvec(&mut pos)?;
        for _ in 0..tables {
            take(&mut pos, 32)?;
            let writable = shortvec(&mut pos)?;
            take(&mut pos, writable)?;
            let readonly = shortvec(&mut pos)?;
            take(&mut pos, readonly)?;
        }
    }
    if pos != wire.len() {
        return Err(format!("{} bytes after the message", wire.len() - pos));
    }
    Ok(Parsed {
        signature_slots,
        message_at,
        num_required_signatures,
        static_keys,
        program_indices,
    })
}

/// Programs a swap transaction may call.
fn allowed_programs() -> [&'static str; 6] {
    [
        JUPITER_PROGRAM,
        tx::COMPUTE_BUDGET_PROGRAM,
        tx::SYSTEM_PROGRAM,
        tx::TOKEN_PROGRAM,
        tx::TOKEN_2022_PROGRAM,
        tx::ASSOCIATED_TOKEN_PROGRAM,
    ]
}

/// The safety rules of the module docs; returns where the message starts.
fn check_transaction(wire: &[u8], user: &Pubkey) -> Result<usize, SwapApiError> {
    let parsed = parse(wire).map_err(SwapApiError::Malformed)?;
    if parsed.num_required_signatures != 1 || parsed.signature_slots != 1 {
        return Err(SwapApiError::Unsafe(format!(
            "it needs {} signatures; a swap needs only the wallet's",
            parsed.num_required_signatures
        )));
    }
    if parsed.static_keys.first() != Some(&user.0) {
        return Err(SwapApiError::Unsafe(format!(
            "its fee payer is not the wallet {user}"
        )));
    }
    let allowed = allowed_programs();
    for index in parsed.program_indices {
        let program = parsed
            .static_keys
            .get(usize::from(index))
            .map(|key| Pubkey::new(*key).to_string())
            .ok_or_else(|| {
                SwapApiError::Unsafe("an instruction's program is not a static account".into())
            })?;
        if !allowed.contains(&program.as_str()) {
            return Err(SwapApiError::Unsafe(format!(
                "it calls program {program}, which a swap does not need"
            )));
        }
    }
    Ok(parsed.message_at)
}

fn raw_amount(field: &str, value: &str) -> Result<u64, SwapApiError> {
    value
        .parse()
        .map_err(|_| SwapApiError::Malformed(format!("{field} `{value}` is not a raw amount")))
}

/// Send and classify: 2xx → the JSON body; 429/5xx/transport → unavailable; other 4xx →
/// refused with the service's own `error` message.
async fn send(request: reqwest::RequestBuilder) -> Result<Value, SwapApiError> {
    let response = request
        .send()
        .await
        .map_err(|error| SwapApiError::Unavailable(crate::redact::error(&error)))?;
    let status = response.status();
    let body: Value = response.json().await.map_err(|error| {
        SwapApiError::Malformed(format!("HTTP {status}: {}", crate::redact::error(&error)))
    })?;
    if status.is_success() {
        return Ok(body);
    }
    let message = body["error"]
        .as_str()
        .or_else(|| body["message"].as_str())
        .unwrap_or("no reason given")
        .to_owned();
    if status.is_server_error() || status.as_u16() == 429 {
        Err(SwapApiError::Unavailable(format!(
            "HTTP {status}: {message}"
        )))
    } else {
        Err(SwapApiError::Refused(message))
    }
}

/// For tests: `signed` is `unsigned` with only its first signature slot filled, by `wallet`,
/// over the message bytes, and `signature` is that slot in base58.
#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
pub(crate) fn assert_signed_in_place(
    unsigned: &[u8],
    signed: &[u8],
    signature: &str,
    wallet: &Keypair,
) {
    use ed25519_dalek::Verifier;
    assert_eq!(signed.len(), unsigned.len());
    assert_eq!(
        signed[65..],
        unsigned[65..],
        "only the signature slot changes"
    );
    let slot = ed25519_dalek::Signature::from_slice(&signed[1..65]).unwrap();
    wallet
        .signing_key()
        .verifying_key()
        .verify(&unsigned[65..], &slot)
        .unwrap();
    assert_eq!(signature, bs58::encode(&signed[1..65]).into_string());
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::extract::{Query, State};
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};

    use super::*;
    use crate::chain::tx::encode_shortvec;

    const USDC: &str = tx::MAINNET_USDC_MINT;

    /// What the fake Jupiter answers, and what it was sent.
    #[derive(Clone, Default)]
    struct Fake {
        quote: Arc<Mutex<Option<(StatusCode, Value)>>>,
        swap: Arc<Mutex<Option<(StatusCode, Value)>>>,
        swap_requests: Arc<Mutex<Vec<Value>>>,
        api_keys: Arc<Mutex<Vec<Option<String>>>>,
    }

    async fn quote(
        State(fake): State<Fake>,
        headers: HeaderMap,
        Query(_): Query<Vec<(String, String)>>,
    ) -> Response {
        fake.api_keys.lock().unwrap().push(
            headers
                .get("x-api-key")
                .map(|v| v.to_str().unwrap().to_owned()),
        );
        let (status, body) = fake.quote.lock().unwrap().clone().unwrap();
        (status, axum::Json(body)).into_response()
    }

    async fn swap(State(fake): State<Fake>, axum::Json(request): axum::Json<Value>) -> Response {
        fake.swap_requests.lock().unwrap().push(request);
        let (status, body) = fake.swap.lock().unwrap().clone().unwrap();
        (status, axum::Json(body)).into_response()
    }

    async fn serve(fake: Fake) -> String {
        let app = axum::Router::new()
            .route("/swap/v1/quote", get(quote))
            .route("/swap/v1/swap", post(swap))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{address}/swap/v1")
    }

    /// A quote response in the documented shape.
    fn quote_body(amount: u64, out: u64, min_out: u64) -> Value {
        json!({
            "inputMint": WRAPPED_SOL_MINT, "inAmount": amount.to_string(),
            "outputMint": USDC, "outAmount": out.to_string(),
            "otherAmountThreshold": min_out.to_string(), "swapMode": "ExactIn",
            "slippageBps": 50, "platformFee": null, "priceImpactPct": "0.0012",
            "routePlan": [{ "swapInfo": { "ammKey": "5BKxfWMbmYBAEWvyPZS9esPducUba9GqyMjtLCfbaqyF", "label": "Meteora DLMM",
                "inputMint": WRAPPED_SOL_MINT, "outputMint": USDC, "inAmount": amount.to_string(),
                "outAmount": out.to_string(), "feeAmount": "24825", "feeMint": WRAPPED_SOL_MINT }, "percent": 100 }],
            "contextSlot": 299283763, "timeTaken": 0.015257836
        })
    }

    /// A v0 transaction as Jupiter would build it: `payer` first, one empty signature slot,
    /// instructions calling `programs`, and one address lookup table.
    fn v0_transaction(payer: &Pubkey, signers: u8, programs: &[&str]) -> Vec<u8> {
        let mut keys = vec![payer.0];
        for extra in 1..signers {
            keys.push([extra; 32]);
        }
        keys.push([7u8; 32]); // a writable account the swap touches
        let first_program = keys.len();
        for program in programs {
            keys.push(program.parse::<Pubkey>().unwrap().0);
        }
        let mut message = vec![0x80, signers, 0, programs.len() as u8];
        encode_shortvec(keys.len(), &mut message).unwrap();
        for key in &keys {
            message.extend(key);
        }
        message.extend([9u8; 32]); // blockhash
        encode_shortvec(programs.len(), &mut message).unwrap();
        for i in 0..programs.len() {
            message.push((first_program + i) as u8);
            encode_shortvec(2, &mut message).unwrap();
            message.extend([0, signers]);
            encode_shortvec(3, &mut message).unwrap();
            message.extend([1, 2, 3]);
        }
        encode_shortvec(1, &mut message).unwrap(); // one lookup table
        message.extend([5u8; 32]);
        encode_shortvec(2, &mut message).unwrap();
        message.extend([0, 1]);
        encode_shortvec(1, &mut message).unwrap();
        message.extend([2]);
        let mut wire = Vec::new();
        encode_shortvec(usize::from(signers), &mut wire).unwrap();
        wire.extend(vec![0u8; 64 * usize::from(signers)]);
        wire.extend(message);
        wire
    }

    fn swap_body(wire: &[u8]) -> Value {
        json!({
            "swapTransaction": base64::engine::general_purpose::STANDARD.encode(wire),
            "lastValidBlockHeight": 279632475,
            "prioritizationFeeLamports": 9999
        })
    }

    fn client(base_url: String, api_key: Option<&str>) -> JupiterSwaps {
        JupiterSwaps::new(JupiterConfig {
            base_url,
            api_key: api_key.map(crate::secret::Secret::new),
        })
        .unwrap()
    }

    #[tokio::test]
    async fn a_quoted_swap_is_prepared_checked_and_signed_by_the_wallet() {
        let wallet = Keypair::generate();
        let fake = Fake::default();
        *fake.quote.lock().unwrap() = Some((
            StatusCode::OK,
            quote_body(1_000_000_000, 147_350_000, 146_613_250),
        ));
        let wire = v0_transaction(
            &wallet.pubkey(),
            1,
            &[
                tx::COMPUTE_BUDGET_PROGRAM,
                tx::ASSOCIATED_TOKEN_PROGRAM,
                JUPITER_PROGRAM,
                tx::TOKEN_PROGRAM,
            ],
        );
        *fake.swap.lock().unwrap() = Some((StatusCode::OK, swap_body(&wire)));
        let jupiter = client(serve(fake.clone()).await, Some("secret-key"));

        let quote = jupiter
            .quote(WRAPPED_SOL_MINT, USDC, 1_000_000_000, 50)
            .await
            .unwrap();
        assert_eq!(
            (quote.out_amount, quote.min_out),
            (147_350_000, 146_613_250)
        );
        assert!((quote.price_impact_pct - 0.0012).abs() < 1e-12);
        assert_eq!(
            fake.api_keys.lock().unwrap()[0].as_deref(),
            Some("secret-key")
        );

        let prepared = jupiter.prepare(&quote, &wallet.pubkey()).await.unwrap();
        assert_eq!(prepared.last_valid_block_height, 279632475);
        let sent = fake.swap_requests.lock().unwrap()[0].clone();
        assert_eq!(sent["userPublicKey"], wallet.pubkey().to_string());
        assert_eq!(
            sent["quoteResponse"]["outAmount"], "147350000",
            "the quote goes back unchanged"
        );

        let signed = prepared.sign(&wallet).unwrap();
        assert_signed_in_place(&wire, &signed.wire, &signed.signature, &wallet);
    }

    #[tokio::test]
    async fn a_transaction_that_could_do_more_than_swap_is_never_signed() {
        let wallet = Keypair::generate();
        let quote_for = |fake: &Fake| {
            *fake.quote.lock().unwrap() = Some((StatusCode::OK, quote_body(5_000, 700, 690)));
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                v0_transaction(&Keypair::generate().pubkey(), 1, &[JUPITER_PROGRAM]),
                "fee payer",
            ),
            (
                v0_transaction(&wallet.pubkey(), 2, &[JUPITER_PROGRAM]),
                "signatures",
            ),
            (
                v0_transaction(&wallet.pubkey(), 1, &[JUPITER_PROGRAM, tx::MEMO_PROGRAM]),
                "MemoSq4",
            ),
        ];
        for (wire, why) in cases {
            let fake = Fake::default();
            quote_for(&fake);
            *fake.swap.lock().unwrap() = Some((StatusCode::OK, swap_body(&wire)));
            let jupiter = client(serve(fake).await, None);
            let quote = jupiter
                .quote(WRAPPED_SOL_MINT, USDC, 5_000, 50)
                .await
                .unwrap();
            match jupiter.prepare(&quote, &wallet.pubkey()).await {
                Err(SwapApiError::Unsafe(message)) => assert!(message.contains(why), "{message}"),
                other => panic!("expected Unsafe ({why}), got {other:?}"),
            }
        }
        // Truncated or padded bytes are malformed, not signed.
        let mut padded = v0_transaction(&wallet.pubkey(), 1, &[JUPITER_PROGRAM]);
        padded.push(0);
        assert!(matches!(
            check_transaction(&padded, &wallet.pubkey()),
            Err(SwapApiError::Malformed(_))
        ));
        let whole = v0_transaction(&wallet.pubkey(), 1, &[JUPITER_PROGRAM]);
        assert!(matches!(
            check_transaction(&whole[..whole.len() - 3], &wallet.pubkey()),
            Err(SwapApiError::Malformed(_))
        ));
    }

    #[tokio::test]
    async fn a_quote_for_something_else_is_refused() {
        let fake = Fake::default();
        *fake.quote.lock().unwrap() = Some((StatusCode::OK, quote_body(2_000, 700, 800)));
        let jupiter = client(serve(fake.clone()).await, None);
        let error = jupiter
            .quote(WRAPPED_SOL_MINT, USDC, 1_000, 50)
            .await
            .unwrap_err();
        assert!(
            matches!(error, SwapApiError::Malformed(ref m) if m.contains("not 1000")),
            "{error:?}"
        );
        let error = jupiter
            .quote(WRAPPED_SOL_MINT, USDC, 2_000, 50)
            .await
            .unwrap_err();
        assert!(
            matches!(error, SwapApiError::Malformed(ref m) if m.contains("exceeds")),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn service_answers_are_classified() {
        let fake = Fake::default();
        let jupiter = client(serve(fake.clone()).await, None);
        *fake.quote.lock().unwrap() = Some((
            StatusCode::BAD_REQUEST,
            json!({ "error": "Could not find any route", "errorCode": "COULD_NOT_FIND_ANY_ROUTE" }),
        ));
        assert_eq!(
            jupiter
                .quote(WRAPPED_SOL_MINT, USDC, 1, 50)
                .await
                .unwrap_err(),
            SwapApiError::Refused("Could not find any route".into())
        );
        *fake.quote.lock().unwrap() = Some((
            StatusCode::TOO_MANY_REQUESTS,
            json!({ "message": "slow down" }),
        ));
        assert!(matches!(
            jupiter.quote(WRAPPED_SOL_MINT, USDC, 1, 50).await.unwrap_err(),
            SwapApiError::Unavailable(m) if m.contains("429")
        ));
        *fake.quote.lock().unwrap() =
            Some((StatusCode::OK, json!({ "inputMint": WRAPPED_SOL_MINT })));
        assert!(matches!(
            jupiter
                .quote(WRAPPED_SOL_MINT, USDC, 1, 50)
                .await
                .unwrap_err(),
            SwapApiError::Malformed(_)
        ));
        let unreachable = client("http://127.0.0.1:9/swap/v1".into(), None);
        assert!(matches!(
            unreachable
                .quote(WRAPPED_SOL_MINT, USDC, 1, 50)
                .await
                .unwrap_err(),
            SwapApiError::Unavailable(_)
        ));
    }
}
