//! What a webhook request carries and how it is signed.
//!
//! The *signed payload* is the compact JSON `{"event":…,"timestamp":…,"data":…}` — members in
//! that order, no whitespace — serialised once at enqueue time and stored. The body sent is those
//! exact bytes with one member appended, `,"signature":"<hex>"`, before the closing brace, where
//! `<hex>` is the HMAC-SHA256 of the signed payload under the key's `webhookSecret`. The body is a
//! pure function of the stored payload and the secret, so every retry sends byte-identical
//! bytes, and a receiver can recover the signed payload without re-serialising anything: drop
//! the last member.
//!
//! Each attempt carries two `X-Svc-Signature` header lines:
//! - `t=<unix seconds>,v1=<hex>`: the HMAC of `<t>.<body>`, made when the attempt is sent, so a
//!   receiver can refuse a replayed request whose `t` is too old (five minutes is usual);
//! - `sha256=<hex>`: the HMAC of the body alone, the original form, sent first so receivers that
//!   read the first value keep working. It will be dropped in a later release.

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

/// Header carrying the signatures (two lines, see the module docs).
pub(crate) const SIGNATURE_HEADER: &str = "x-svc-signature";
/// Header carrying the delivery id, the same on every retry, so receivers can drop duplicates.
pub(crate) const DELIVERY_HEADER: &str = "x-svc-delivery";
/// Header naming the event, so receivers can route before parsing.
pub(crate) const EVENT_HEADER: &str = "x-svc-event";

/// The members covered by the `signature` member, in their serialised order.
#[derive(Serialize)]
struct SignedPayload<'a> {
    event: &'a str,
    timestamp: &'a str,
    data: &'a serde_json::Value,
}

/// The bytes the `signature` member signs: compact JSON of `{event, timestamp, data}`.
pub(crate) fn signed_payload(event: &str, timestamp: &str, data: &serde_json::Value) -> String {
    // Serialising a struct of strings and a `Value` cannot fail (no maps with non-string keys).
    serde_json::to_string(&SignedPayload {
        event,
        timestamp,
        data,
    })
    .unwrap_or_default()
}

/// Lower-case hex HMAC-SHA256 of `message` under `secret` (the `webhookSecret` string's bytes).
#[cfg(test)]
pub(crate) fn hmac_hex(secret: &[u8], message: &[u8]) -> String {
    let mut hex = String::with_capacity(HEX_LEN);
    Signer::new(secret).push_hmac(&mut hex, &[message]);
    hex
}

/// Hex digits of one HMAC-SHA256.
const HEX_LEN: usize = 64;

/// A request ready to send: the body and the values of [`SIGNATURE_HEADER`], in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignedRequest {
    pub body: String,
    pub signature_headers: [String; 2],
}

/// [`Signer::sign`] with a key of its own.
#[cfg(test)]
pub(crate) fn sign(payload: &str, secret: &[u8], sent_at: i64) -> SignedRequest {
    Signer::new(secret).sign(payload, sent_at)
}

/// One key's HMAC, keyed once: the delivery worker makes one per key a claim's rows are signed
/// with, and every attempt's three signatures start from a copy of it rather than hashing the
/// key again.
#[derive(Clone)]
pub(crate) struct Signer {
    keyed: Hmac<Sha256>,
}

impl Signer {
    pub(crate) fn new(secret: &[u8]) -> Self {
        // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
        let keyed = <Hmac<Sha256> as Mac>::new_from_slice(secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        Signer { keyed }
    }

    /// The body for a stored `payload` (a JSON object, as [`signed_payload`] makes it):
    /// `payload` with `"signature"` appended, and the headers signing that body, the
    /// timestamped one at `sent_at` (Unix seconds).
    pub(crate) fn sign(&self, payload: &str, sent_at: i64) -> SignedRequest {
        let open = payload.strip_suffix('}').unwrap_or(payload);
        let mut body = String::with_capacity(open.len() + 16 + HEX_LEN);
        body.push_str(open);
        body.push_str(",\"signature\":\"");
        self.push_hmac(&mut body, &[payload.as_bytes()]);
        body.push_str("\"}");
        let mut legacy = String::with_capacity(7 + HEX_LEN);
        legacy.push_str("sha256=");
        self.push_hmac(&mut legacy, &[body.as_bytes()]);
        let stamp = sent_at.to_string();
        let mut timestamped = String::with_capacity(stamp.len() + 6 + HEX_LEN);
        timestamped.push_str("t=");
        timestamped.push_str(&stamp);
        timestamped.push_str(",v1=");
        // `<t>.<body>`, fed in parts rather than copied into one text.
        self.push_hmac(&mut timestamped, &[stamp.as_bytes(), b".", body.as_bytes()]);
        SignedRequest {
            body,
            signature_headers: [legacy, timestamped],
        }
    }

    /// Append the lower-case hex HMAC of `parts`, one after the other, to `out`.
    fn push_hmac(&self, out: &mut String, parts: &[&[u8]]) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut mac = self.keyed.clone();
        for part in parts {
            mac.update(part);
        }
        for byte in mac.finalize().into_bytes() {
            for nibble in [byte >> 4, byte & 0x0f] {
                out.push(char::from(DIGITS[usize::from(nibble)]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hmac_matches_the_rfc_4231_vector() {
        // RFC 4231, test case 2.
        assert_eq!(
            hmac_hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_signed_payload_is_compact_json_in_a_fixed_member_order() {
        let payload = signed_payload(
            "agent.trade",
            "2026-11-23T12:00:00.000Z",
            &json!({"agentId": "agt_1", "amount": 1.5, "type": "BUY"}),
        );
        assert_eq!(
            payload,
            r#"{"event":"agent.trade","timestamp":"2026-11-23T12:00:00.000Z","data":{"agentId":"agt_1","amount":1.5,"type":"BUY"}}"#
        );
    }

    #[test]
    fn the_body_is_the_payload_plus_its_signature_and_the_header_signs_the_body() {
        let payload = signed_payload(
            "agent.started",
            "2026-11-23T12:00:00.000Z",
            &json!({"agentId": "a"}),
        );
        let secret = b"whsec_test";
        let signed = sign(&payload, secret, 1_795_000_000);

        let body: serde_json::Value = serde_json::from_str(&signed.body).expect("valid JSON");
        assert_eq!(body["event"], "agent.started");
        assert_eq!(body["data"]["agentId"], "a");
        assert_eq!(body["signature"], hmac_hex(secret, payload.as_bytes()));
        assert_eq!(
            signed.signature_headers[0],
            format!("sha256={}", hmac_hex(secret, signed.body.as_bytes()))
        );
        let signed_text = format!("1795000000.{}", signed.body);
        assert_eq!(
            signed.signature_headers[1],
            format!(
                "t=1795000000,v1={}",
                hmac_hex(secret, signed_text.as_bytes())
            )
        );
        // A receiver recovers the signed bytes by dropping the last member.
        let cut = signed
            .body
            .rfind(",\"signature\":")
            .expect("signature member");
        assert_eq!(format!("{}}}", &signed.body[..cut]), payload);
        // Deterministic: a retry sends the same bytes; another secret signs differently.
        assert_eq!(sign(&payload, secret, 1_795_000_000), signed);
        assert_ne!(
            sign(&payload, b"whsec_other", 1_795_000_000).body,
            signed.body
        );
        // A later attempt: the same body, a new timestamped signature.
        let later = sign(&payload, secret, 1_795_000_060);
        assert_eq!(later.body, signed.body);
        assert_ne!(later.signature_headers[1], signed.signature_headers[1]);
    }
}
