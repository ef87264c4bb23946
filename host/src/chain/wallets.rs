//! The server's own wallets (tournament escrow, dungeon treasury). A configured address is used
//! as is (its key lives elsewhere); otherwise a keypair is generated once, stored sealed with
//! the master key in `chain_wallets`, and reused on every start, so payouts can be signed.

use crate::crypto::Sealer;
use crate::db::Store;
use crate::domain::WalletAddress;

use super::ChainError;
use super::keypair::Keypair;

pub struct ServerWallet {
    pub address: WalletAddress,
    keypair: Option<Keypair>,
}

impl std::fmt::Debug for ServerWallet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerWallet")
            .field("address", &self.address)
            .field("server_held", &self.keypair.is_some())
            .finish()
    }
}

impl ServerWallet {
    /// The keypair, when the server holds it (generated wallets only).
    pub fn keypair(&self) -> Option<&Keypair> {
        self.keypair.as_ref()
    }

    pub(super) async fn resolve(
        role: &str,
        configured: Option<&str>,
        store: &Store,
        sealer: &Sealer,
    ) -> Result<Self, ChainError> {
        if let Some(address) = configured {
            return Ok(ServerWallet {
                address: WalletAddress::parse(address)
                    .map_err(|e| ChainError::Config(format!("{role} wallet: {e}")))?,
                keypair: None,
            });
        }
        let stored: Option<(String,)> =
            sqlx::query_as("SELECT sealed_secret FROM chain_wallets WHERE role = $1")
                .bind(role)
                .fetch_optional(store.read())
                .await?;
        let keypair = match stored {
            Some((sealed,)) => {
                let secret = sealer.open_key(&sealed).map_err(|e| {
                    ChainError::Config(format!("cannot open the {role} key: {e:#}"))
                })?;
                Keypair::from_secret(secret)
            }
            None => {
                let keypair = Keypair::generate();
                let secret = &keypair.to_bytes()[..32];
                // Two nodes starting at once: the first insert wins, the other reads it back.
                sqlx::query(
                    "INSERT INTO chain_wallets (role, address, sealed_secret) VALUES ($1, $2, $3) \
                     ON CONFLICT (role) DO NOTHING",
                )
                .bind(role)
                .bind(keypair.pubkey().to_string())
                .bind(sealer.seal(secret))
                .execute(store.write())
                .await?;
                return Box::pin(Self::resolve(role, None, store, sealer)).await;
            }
        };
        tracing::info!(role, address = %keypair.pubkey(), "server wallet");
        Ok(ServerWallet {
            address: keypair.pubkey().into(),
            keypair: Some(keypair),
        })
    }
}
