//! Typed answers of a Solana node's JSON-RPC methods, as a client reads them: what
//! `getSignatureStatuses`, `getSignaturesForAddress`, `getLatestBlockhash` and
//! `getTokenAccountsByOwner` return, and the node limits a client pages by. Only shapes here;
//! the client that sends the requests lives with whoever owns the HTTP stack.

use serde::Deserialize;
use serde_json::Value;

/// The most signatures a node returns per `getSignaturesForAddress` page.
pub const SIGNATURES_PAGE: usize = 1000;

/// A blockhash and the last block height at which a transaction signed with it can land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecentBlockhash {
    /// The blockhash's 32 bytes (what a message carries).
    pub hash: [u8; 32],
    /// Past this block height no transaction naming `hash` can land.
    pub last_valid_block_height: u64,
}

/// The status of one signature from `getSignatureStatuses`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SignatureStatus {
    /// The slot the transaction landed in.
    pub slot: u64,
    /// `None` once rooted (finalized).
    pub confirmations: Option<u64>,
    /// The transaction's error, `None` when it succeeded.
    pub err: Option<Value>,
    /// `processed`, `confirmed` or `finalized`.
    pub confirmation_status: Option<String>,
}

impl SignatureStatus {
    /// Whether the node reports the transaction `finalized`.
    pub fn is_finalized(&self) -> bool {
        self.confirmation_status.as_deref() == Some("finalized")
    }
}

/// One entry of `getSignaturesForAddress`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SignatureInfo {
    pub signature: String,
    pub slot: u64,
    pub err: Option<Value>,
    pub memo: Option<String>,
    pub block_time: Option<i64>,
    pub confirmation_status: Option<String>,
}

/// One token account from `getTokenAccountsByOwner` (jsonParsed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAccount {
    /// The token account's own address.
    pub address: String,
    /// The token program owning the account (Token or Token-2022).
    pub program: String,
    pub mint: String,
    /// The wallet that owns the tokens.
    pub owner: String,
    /// Raw units.
    pub amount: u64,
    pub decimals: u8,
    /// The account's own lamports (its rent, and the wrapped SOL of a native account).
    pub lamports: u64,
}

impl TokenAccount {
    /// Read one entry of a `getTokenAccountsByOwner` (jsonParsed) answer: `None` when it is
    /// not in that shape.
    pub fn from_json_parsed(entry: &Value) -> Option<Self> {
        let info = &entry["account"]["data"]["parsed"]["info"];
        let amount = &info["tokenAmount"];
        let field = |v: &Value| v.as_str().map(str::to_owned);
        Some(TokenAccount {
            address: field(&entry["pubkey"])?,
            program: field(&entry["account"]["owner"])?,
            mint: field(&info["mint"])?,
            owner: field(&info["owner"])?,
            amount: amount["amount"].as_str()?.parse().ok()?,
            decimals: u8::try_from(amount["decimals"].as_u64()?).ok()?,
            lamports: entry["account"]["lamports"].as_u64()?,
        })
    }
}

/// Which token accounts of an owner to list.
#[derive(Debug, Clone, Copy)]
pub enum TokenFilter<'a> {
    /// Accounts of one mint.
    Mint(&'a str),
    /// Accounts of one token program (Token or Token-2022).
    Program(&'a str),
}

impl TokenFilter<'_> {
    /// The filter parameter of `getTokenAccountsByOwner`.
    pub fn to_json(self) -> Value {
        match self {
            TokenFilter::Mint(mint) => serde_json::json!({"mint": mint}),
            TokenFilter::Program(program) => serde_json::json!({"programId": program}),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn statuses_and_token_accounts_read_a_nodes_shapes() {
        let status: SignatureStatus = serde_json::from_value(json!({
            "slot": 7, "confirmations": null, "err": null, "confirmationStatus": "finalized"
        }))
        .expect("status");
        assert!(status.is_finalized());
        let entry = json!({"pubkey": "A", "account": {"owner": "P", "lamports": 2039280,
            "data": {"parsed": {"info": {"mint": "M", "owner": "O",
                "tokenAmount": {"amount": "1500000", "decimals": 6}}}}}});
        let account = TokenAccount::from_json_parsed(&entry).expect("token account");
        assert_eq!((account.amount, account.decimals), (1_500_000, 6));
        assert_eq!(account.lamports, 2_039_280);
        assert!(TokenAccount::from_json_parsed(&json!({"pubkey": "A"})).is_none());
        assert_eq!(TokenFilter::Mint("M").to_json(), json!({"mint": "M"}));
    }
}
