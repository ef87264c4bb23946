//! Wallets whose keys the server holds: accounts' embedded wallets (e-mail sign-up), and later
//! agents' and escrow wallets. The ed25519 secret is sealed under the master key before it is
//! stored; the address is the base58 public key, as on Solana.

use anyhow::Context;
use ed25519_dalek::SigningKey;
use sqlx::AnyConnection;

use crate::clock::Clock;
use crate::clock::to_millis;
use crate::crypto::Sealer;
use crate::db::Store;
use crate::domain::WalletAddress;

/// Generate a keypair, store its sealed secret, and return the new address.
pub async fn create(
    conn: &mut AnyConnection,
    clock: &dyn Clock,
    sealer: &Sealer,
    owner_kind: &str,
    owner_id: &str,
) -> sqlx::Result<WalletAddress> {
    let signing = SigningKey::generate(&mut rand::rngs::OsRng);
    let address = WalletAddress::from_public_key(&signing.verifying_key().to_bytes());
    sqlx::query(
        "INSERT INTO custodial_wallets (address, owner_kind, owner_id, secret_sealed, created_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(address.as_str())
    .bind(owner_kind)
    .bind(owner_id)
    .bind(sealer.seal(&signing.to_bytes()))
    .bind(to_millis(clock.now()))
    .execute(conn)
    .await?;
    Ok(address)
}

/// The signing key of a custodial wallet, for the server to sign transfers from it.
pub async fn signing_key(
    store: &Store,
    sealer: &Sealer,
    address: &WalletAddress,
) -> anyhow::Result<Option<SigningKey>> {
    // In place on a SQLite file: every live swap signs with one (docs/architecture.md,
    // "Statements in place").
    let sealed: Option<(String,)> =
        crucible_sql::query("SELECT secret_sealed FROM custodial_wallets WHERE address = $1")
            .bind(address.as_str())
            .fetch_optional(&mut store.reader().await?.conn()?)
            .await?;
    sealed
        .map(|(sealed,)| open(sealer, address, &sealed))
        .transpose()
}

/// Open `address`'s sealed secret, checking that it is the key of that address: for a caller
/// that read the sealed secret with other columns (a live swap reads it with its agent's row).
pub(crate) fn open(
    sealer: &Sealer,
    address: &WalletAddress,
    sealed: &str,
) -> anyhow::Result<SigningKey> {
    let secret = sealer
        .open_key(sealed)
        .with_context(|| format!("custodial secret of {address}"))?;
    let key = SigningKey::from_bytes(&secret);
    anyhow::ensure!(
        WalletAddress::from_public_key(&key.verifying_key().to_bytes()) == *address,
        "custodial secret of {address} does not match its address"
    );
    Ok(key)
}

/// The embedded wallet of `account_id` (created at e-mail sign-up), if it has one.
pub(crate) async fn embedded_wallet(
    store: &Store,
    account_id: &str,
) -> sqlx::Result<Option<WalletAddress>> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT address FROM custodial_wallets WHERE owner_kind = 'account' AND owner_id = $1
         ORDER BY created_at LIMIT 1",
    )
    .bind(account_id)
    .fetch_optional(store.read())
    .await?;
    Ok(row.and_then(|(address,)| WalletAddress::parse(&address).ok()))
}
