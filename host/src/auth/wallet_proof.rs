//! Proof that the caller controls a wallet, Sign-In-With-Solana style: the server issues a
//! single-use nonce inside a fixed message; the wallet signs the message (ed25519); the server
//! checks the signature against the stored message, then burns the nonce. Used for wallet sign-in
//! and for linking further wallets to an account.

use chrono::{DateTime, Duration, Utc};
use ed25519_dalek::{Signature, VerifyingKey};

use crate::clock::Clock;
use crate::clock::{rfc3339, to_millis};
use crate::config::Config;
use crate::crypto::random_base58;
use crate::db::Store;
use crate::domain::WalletAddress;

pub(crate) const NONCE_LIFETIME: Duration = Duration::minutes(5);

/// Why a proof was not accepted (mapped to HTTP in `auth/routes.rs`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProofError {
    /// The wallet or signature is not well formed.
    #[error("{0}")]
    Malformed(&'static str),
    /// Well formed, but it proves nothing: unknown or spent nonce, or a signature that does
    /// not match.
    #[error("{0}")]
    Refused(&'static str),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// What the client must sign.
pub(crate) struct Challenge {
    pub nonce: String,
    pub message: String,
    pub expires_at: DateTime<Utc>,
}

/// Issue a nonce for `wallet`.
pub(crate) async fn issue(
    store: &Store,
    clock: &dyn Clock,
    config: &Config,
    wallet: &WalletAddress,
) -> sqlx::Result<Challenge> {
    let now = clock.now();
    let nonce = random_base58(16);
    let expires_at = now + NONCE_LIFETIME;
    let message = message(&config.public_url, wallet, &nonce, now, expires_at);
    sqlx::query(
        "INSERT INTO wallet_nonces (nonce, wallet, message, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&nonce)
    .bind(wallet.as_str())
    .bind(&message)
    .bind(to_millis(now))
    .bind(to_millis(expires_at))
    .execute(store.write())
    .await?;
    Ok(Challenge {
        nonce,
        message,
        expires_at,
    })
}

fn message(
    public_url: &str,
    wallet: &WalletAddress,
    nonce: &str,
    now: DateTime<Utc>,
    expires: DateTime<Utc>,
) -> String {
    let domain = url::Url::parse(public_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| "crucible".to_owned());
    format!(
        "{domain} wants you to sign in with your Solana account:\n{wallet}\n\n\
         Sign in to Crucible, or link this wallet to your Crucible account.\n\n\
         Nonce: {nonce}\nIssued At: {}\nExpiration Time: {}",
        rfc3339(now),
        rfc3339(expires)
    )
}

/// Check `signature` (base58 ed25519) by `wallet` over the message of `nonce`, then consume the
/// nonce. A bad signature leaves the nonce unused; a nonce works once, for its own wallet only.
pub(crate) async fn verify_and_consume(
    store: &Store,
    clock: &dyn Clock,
    wallet: &WalletAddress,
    nonce: &str,
    signature: &str,
) -> Result<(), ProofError> {
    let now = to_millis(clock.now());
    let stored: Option<(String,)> = sqlx::query_as(
        "SELECT message FROM wallet_nonces WHERE nonce = $1 AND wallet = $2 AND used_at IS NULL AND expires_at > $3",
    )
    .bind(nonce)
    .bind(wallet.as_str())
    .bind(now)
    .fetch_optional(store.read())
    .await?;
    let Some((message,)) = stored else {
        return Err(ProofError::Refused(
            "the nonce is unknown, already used, expired, or was issued for another wallet; request a new one",
        ));
    };
    check_signature(wallet, &message, signature)?;
    let consumed = sqlx::query(
        "UPDATE wallet_nonces SET used_at = $1 WHERE nonce = $2 AND used_at IS NULL AND expires_at > $1",
    )
    .bind(now)
    .bind(nonce)
    .execute(store.write())
    .await?;
    if consumed.rows_affected() != 1 {
        return Err(ProofError::Refused(
            "the nonce was already used; request a new one",
        ));
    }
    Ok(())
}

/// A wallet proof's `signature` in the OpenAPI document: base58 of exactly 64 bytes, named by
/// the custom format `ed25519-signature` (no pattern states the byte count; a string that is not
/// one is 400, a real signature of the wrong message 401 or 403).
pub(crate) fn signature_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaFormat, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::Custom("ed25519-signature".into())))
        .description(Some(
            "base58 (alphabet `1-9A-HJ-NP-Za-km-z`) ed25519 signature of exactly 64 bytes of the \
             nonce's `message` by `wallet`",
        ))
        .min_length(Some(64))
        .max_length(Some(88))
        .build()
}

/// Verify a base58 ed25519 signature of `message` by `wallet` (strict: no malleable encodings).
pub(crate) fn check_signature(
    wallet: &WalletAddress,
    message: &str,
    signature: &str,
) -> Result<(), ProofError> {
    let key = VerifyingKey::from_bytes(&wallet.to_bytes()).map_err(|_| {
        ProofError::Malformed("`wallet` is not an ed25519 public key, so it cannot sign")
    })?;
    let bytes = bs58::decode(signature.trim())
        .into_vec()
        .map_err(|_| ProofError::Malformed("`signature` must be base58"))?;
    let bytes: [u8; 64] = bytes.try_into().map_err(|_| {
        ProofError::Malformed("`signature` must be a 64-byte ed25519 signature in base58")
    })?;
    key.verify_strict(message.as_bytes(), &Signature::from_bytes(&bytes))
        .map_err(|_| ProofError::Refused("the signature does not match the message and wallet"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    #[test]
    fn accepts_the_wallets_own_signature_only() {
        let signer = SigningKey::from_bytes(&[3; 32]);
        let wallet = WalletAddress::from_public_key(&signer.verifying_key().to_bytes());
        let message = "sign me";
        let good = bs58::encode(signer.sign(message.as_bytes()).to_bytes()).into_string();
        assert!(check_signature(&wallet, message, &good).is_ok());
        assert!(matches!(
            check_signature(&wallet, "other", &good),
            Err(ProofError::Refused(_))
        ));
        let stranger = SigningKey::from_bytes(&[4; 32]);
        let forged = bs58::encode(stranger.sign(message.as_bytes()).to_bytes()).into_string();
        assert!(matches!(
            check_signature(&wallet, message, &forged),
            Err(ProofError::Refused(_))
        ));
        assert!(matches!(
            check_signature(&wallet, message, "xyz"),
            Err(ProofError::Malformed(_))
        ));
    }
}
