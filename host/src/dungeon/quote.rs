//! Dungeon entry quotes, signed instead of stored: the quote id itself carries the dungeon, the
//! paying wallet, the amount and the expiry, followed by an HMAC-SHA256 tag under a key derived
//! from the server's master key. Issuing one writes nothing (the quote endpoint is a public GET),
//! every node can check one, and changing any character of it breaks the tag.
//!
//! Form: `dq_<base64url(payload)>.<base64url(tag)>`, the payload being
//! `<dungeonId>|<wallet>|<amountRaw>|<expiresAtMillis>|<nonce>`. The nonce makes two quotes for
//! the same wallet different ids (a run records its quote, and a quote enters one run only).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::clock::{from_millis, to_millis};
use crate::crypto::{constant_time_eq, random_base58};
use crate::domain::WalletAddress;

/// What the quote tag key is derived for (see [`crate::crypto::Sealer::derived_key`]).
pub(crate) const KEY_PURPOSE: &str = "dungeon entry quote v1";
const PREFIX: &str = "dq_";

/// The facts a quote vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QuoteClaims {
    pub dungeon_id: String,
    pub wallet: String,
    pub amount_raw: u64,
    pub expires_at: DateTime<Utc>,
    nonce: String,
}

/// Why a quote id is refused before its facts are even compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuoteError {
    #[error("quote `{0}` was not issued by this server or has been altered")]
    Forged(String),
}

impl QuoteClaims {
    pub(crate) fn new(
        dungeon_id: String,
        wallet: &WalletAddress,
        amount_raw: u64,
        expires_at: DateTime<Utc>,
    ) -> Self {
        QuoteClaims {
            dungeon_id,
            wallet: wallet.to_string(),
            amount_raw,
            expires_at,
            nonce: random_base58(8),
        }
    }

    /// The signed quote id.
    pub(crate) fn sign(&self, key: &[u8; 32]) -> String {
        let payload = format!(
            "{}|{}|{}|{}|{}",
            self.dungeon_id,
            self.wallet,
            self.amount_raw,
            to_millis(self.expires_at),
            self.nonce
        );
        let encoded = B64.encode(payload.as_bytes());
        let tag = B64.encode(tag(key, &encoded));
        format!("{PREFIX}{encoded}.{tag}")
    }

    /// The claims of a quote id this server signed, or [`QuoteError::Forged`].
    pub(crate) fn verify(quote_id: &str, key: &[u8; 32]) -> Result<Self, QuoteError> {
        let forged = || QuoteError::Forged(quote_id.to_owned());
        let (encoded, tag_text) = quote_id
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .ok_or_else(forged)?;
        let given = B64.decode(tag_text).map_err(|_| forged())?;
        if !constant_time_eq(&given, &tag(key, encoded)) {
            return Err(forged());
        }
        let payload = B64
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(forged)?;
        let mut fields = payload.split('|');
        let mut next = || fields.next().map(str::to_owned).ok_or_else(forged);
        let (dungeon_id, wallet, amount, expires, nonce) =
            (next()?, next()?, next()?, next()?, next()?);
        Ok(QuoteClaims {
            dungeon_id,
            wallet,
            amount_raw: amount.parse().map_err(|_| forged())?,
            expires_at: from_millis(expires.parse().map_err(|_| forged())?),
            nonce,
        })
    }
}

fn tag(key: &[u8; 32], encoded_payload: &str) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(encoded_payload.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> QuoteClaims {
        let wallet = WalletAddress::from_public_key(&[3; 32]);
        QuoteClaims::new(
            "2026-11-23".into(),
            &wallet,
            1_000_000,
            from_millis(1_800_000_000_000),
        )
    }

    #[test]
    fn a_signed_quote_reads_back_under_its_key_only() {
        let claims = claims();
        let id = claims.sign(&[1; 32]);
        assert!(id.starts_with("dq_"), "{id}");
        assert_eq!(QuoteClaims::verify(&id, &[1; 32]), Ok(claims));
        assert!(QuoteClaims::verify(&id, &[2; 32]).is_err());
    }

    #[test]
    fn any_change_breaks_the_tag() {
        let id = claims().sign(&[1; 32]);
        // Re-sign nothing: swap the wallet inside the payload and keep the old tag.
        let (payload, tag) = id["dq_".len()..].split_once('.').expect("dot");
        let text = String::from_utf8(B64.decode(payload).expect("b64")).expect("utf8");
        let other = WalletAddress::from_public_key(&[4; 32]).to_string();
        let wallet = text.split('|').nth(1).expect("wallet").to_owned();
        let tampered = format!("dq_{}.{tag}", B64.encode(text.replace(&wallet, &other)));
        assert!(QuoteClaims::verify(&tampered, &[1; 32]).is_err());
        for bad in [
            "",
            "dq_",
            "dq_abc",
            "dq_abc.def",
            "xx_abc.def",
            &id[..id.len() - 2],
        ] {
            assert!(QuoteClaims::verify(bad, &[1; 32]).is_err(), "{bad}");
        }
        assert_ne!(claims().sign(&[1; 32]), id, "each quote is its own id");
    }
}
