//! A Solana wallet address as a parsed value: whatever holds a [`WalletAddress`] holds the
//! canonical base58 spelling of exactly 32 bytes. Each `parse` error is a sentence a person can
//! act on.

use std::fmt;

use crate::tx::Pubkey;

/// A Solana wallet address: base58 of 32 bytes, in canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WalletAddress(String);

impl WalletAddress {
    /// Parse a base58 address (surrounding spaces ignored), keeping one spelling per key.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let trimmed = raw.trim();
        let bytes = crate::base58::decode(trimmed)
            .map_err(|_| format!("`{trimmed}` is not a base58 Solana address"))?;
        if bytes.len() != 32 {
            return Err(format!(
                "`{trimmed}` is not a Solana address (it decodes to {} bytes, not 32)",
                bytes.len()
            ));
        }
        // Leading-zero or padded spellings decode to the same key; keep one spelling per key.
        Ok(WalletAddress(crate::base58::encode(&bytes)))
    }

    /// The address of an ed25519 public key (or any 32 bytes).
    pub fn from_public_key(bytes: &[u8; 32]) -> Self {
        WalletAddress(crate::base58::encode(bytes))
    }

    /// The canonical base58 spelling.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 32 bytes of the address.
    pub fn to_bytes(&self) -> [u8; 32] {
        // Built only from 32 decoded bytes, so decoding again cannot fail or differ in length.
        crate::base58::decode_32(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for WalletAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&WalletAddress> for Pubkey {
    fn from(wallet: &WalletAddress) -> Self {
        Pubkey(wallet.to_bytes())
    }
}

impl From<Pubkey> for WalletAddress {
    fn from(key: Pubkey) -> Self {
        WalletAddress::from_public_key(&key.0)
    }
}

/// How the address appears in an OpenAPI document: the schema states the rule `parse` checks,
/// so a client generated from the document sends what a server accepts.
#[cfg(feature = "openapi")]
mod schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaFormat, Type};
    use utoipa::openapi::{RefOr, Schema};
    use utoipa::{PartialSchema, ToSchema};

    use super::WalletAddress;

    impl PartialSchema for WalletAddress {
        fn schema() -> RefOr<Schema> {
            // The format names the whole rule (32 bytes once decoded), which no pattern states
            // exactly; a pattern of the alphabet alone would call most of its strings valid.
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::Custom("solana-address".into())))
                .description(Some(
                    "A Solana address: the base58 spelling (alphabet \
                     `1-9A-HJ-NP-Za-km-z`) of exactly 32 bytes",
                ))
                .min_length(Some(32))
                .max_length(Some(44))
                .examples(["So11111111111111111111111111111111111111112"])
                .into()
        }
    }
    impl ToSchema for WalletAddress {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wallet_addresses_are_32_byte_base58() {
        let ok =
            WalletAddress::parse(" 11111111111111111111111111111111 ").expect("system program id");
        assert_eq!(ok.as_str(), "11111111111111111111111111111111");
        assert_eq!(ok.to_bytes(), [0u8; 32]);
        assert!(WalletAddress::parse("not base58 0OIl").is_err());
        assert!(WalletAddress::parse("abc").is_err());
        let key = [9u8; 32];
        assert_eq!(WalletAddress::from_public_key(&key).to_bytes(), key);
    }

    #[test]
    fn addresses_and_pubkeys_convert_both_ways() {
        let key = Pubkey([7u8; 32]);
        let address = WalletAddress::from(key);
        assert_eq!(address.as_str(), key.to_string());
        assert_eq!(Pubkey::from(&address), key);
    }
}
