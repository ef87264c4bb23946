//! Chain: everything Crucible knows about Solana.
//!
//! Other modules call three things on [`Chain`]: [`Chain::verify_payment`] (is this signature the
//! expected entry payment, and is it final?), [`Chain::portfolio`] (a wallet's SOL and token
//! balances, for leaderboards) and [`Chain::transfer_token`] (pay out from a server-held
//! keypair). All three go through one JSON-RPC client ([`rpc`]); with `SOLANA_RPC_URL` unset
//! that client talks over HTTP to the embedded [`simnet`] served by this same server at
//! `/simnet/rpc`, exactly as it would to devnet or mainnet. On simnet a constant-product
//! SOL/USDC pool ([`pool`], seeded by [`liquidity`]) is the market swaps go to ([`swap`] is the
//! client side), its price ([`price`]) values wallets, and [`market_maker`] keeps it near the
//! simulated market.
//!
//! This module never trusts a client's word about a payment: only finalized, parsed chain data
//! is checked, by the pure function in [`verify`].

pub mod hermes;
pub(crate) mod jupiter;
pub(crate) mod liquidity;
pub(crate) mod market_maker;
pub(crate) mod payment;
pub(crate) mod portfolio;
pub(crate) mod price;
pub(crate) mod rpc;
pub mod simnet;
pub mod swap;
pub(crate) mod trader;
pub mod transfer;
pub(crate) mod wallet_cli;
mod wallets;

// The wire format, keys, the payment check and the RPC answer types are the
// `crucible-solana` crate's; these paths are where the server has always found them.
pub use crucible_solana::{keypair, tx, verify};
// The SOL/USDC pool program's addresses, instructions and quotes live with the simnet that
// executes them.
pub use crucible_simnet::pool;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Config;
use crate::crypto::Sealer;
use crate::db::{Store, StoreError};
use crate::domain::WalletAddress;

pub use keypair::Keypair;
pub(crate) use portfolio::Portfolio;
pub(crate) use rpc::RpcClient;
pub(crate) use simnet::Simnet;
pub use verify::{ExpectedPayment, PaymentStatus, RejectReason};
pub(crate) use wallets::ServerWallet;

/// Errors at the chain boundary. Rejections of a payment are not errors: they are a
/// [`PaymentStatus::Rejected`].
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("cannot reach the Solana RPC at {url}: {detail}")]
    Transport { url: String, detail: String },
    #[error("the Solana RPC refused {method}: {message} (code {code})")]
    Rpc {
        method: String,
        code: i64,
        message: String,
    },
    #[error("unexpected answer from the Solana RPC to {method}: {detail}")]
    Decode { method: String, detail: String },
    #[error(transparent)]
    Wire(#[from] tx::WireError),
    #[error("{0}")]
    Transfer(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Keypair(#[from] keypair::KeypairError),
    #[error("chain configuration: {0}")]
    Config(String),
    #[error("simnet: {0}")]
    Simnet(#[from] simnet::SimnetError),
}

impl From<sqlx::Error> for ChainError {
    fn from(error: sqlx::Error) -> Self {
        ChainError::Store(StoreError::Query(error))
    }
}

/// Below this many lamports a simnet server wallet is topped up at start.
const SERVER_WALLET_SOL_FLOOR: u64 = 1_000_000_000;
/// What a simnet server wallet is topped up with (10 SOL).
const SERVER_WALLET_SOL_TOP_UP: u64 = 10_000_000_000;

/// The server's view of Solana: the RPC client, the stablecoin, the server wallets, and the
/// embedded simnet when no external RPC is configured.
#[derive(Debug)]
pub struct Chain {
    rpc: RpcClient,
    simnet: Option<Arc<Simnet>>,
    stablecoin_mint: String,
    escrow: ServerWallet,
    dungeon: ServerWallet,
    /// Simnet only: the wallet that seeds the pool's liquidity.
    pool_wallet: Option<ServerWallet>,
    /// Simnet only: the wallet the market maker trades from.
    market_maker: Option<ServerWallet>,
    /// What values SOL: the pool on simnet, Pyth (Hermes) on a real cluster. Built once, so a
    /// price source's cache lives as long as the server.
    prices: Arc<dyn price::PriceSource>,
}

impl Chain {
    /// Open the chain for a server listening on `local_addr`: an external RPC when configured,
    /// else the simnet (ledger in `store`) reached over HTTP at `http://<local_addr>/simnet/rpc`.
    pub(crate) async fn open(
        config: &Config,
        store: &Store,
        clock: Arc<dyn Clock>,
        sealer: &Sealer,
        local_addr: SocketAddr,
    ) -> Result<Self, ChainError> {
        let (rpc_url, simnet) = match &config.solana_rpc_url {
            Some(url) => (url.clone(), None),
            None => {
                let mint = config
                    .stablecoin_mint
                    .as_deref()
                    .map(str::parse)
                    .transpose()
                    .map_err(|_| {
                        ChainError::Config("the stablecoin mint is not an address".into())
                    })?
                    .unwrap_or_else(simnet::default_stablecoin_mint);
                let simnet =
                    simnet::open(store, clock.clone(), config.simnet_finality_ms, mint).await?;
                let mut host = local_addr;
                if host.ip().is_unspecified() {
                    host.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
                }
                (format!("http://{host}/simnet/rpc"), Some(Arc::new(simnet)))
            }
        };
        let stablecoin_mint = match (&config.stablecoin_mint, &simnet) {
            (Some(mint), _) => WalletAddress::parse(mint)
                .map_err(ChainError::Config)?
                .as_str()
                .to_owned(),
            (None, Some(simnet)) => simnet.stablecoin_mint().to_string(),
            (None, None) => tx::MAINNET_USDC_MINT.to_owned(),
        };
        let escrow =
            ServerWallet::resolve("escrow", config.escrow_wallet.as_deref(), store, sealer).await?;
        let dungeon =
            ServerWallet::resolve("dungeon", config.dungeon_wallet.as_deref(), store, sealer)
                .await?;
        let prices: Arc<dyn price::PriceSource> = match &simnet {
            Some(simnet) => Arc::new(price::PoolPrice::new(simnet.clone())),
            None => {
                let hermes = hermes::HermesPrices::new(hermes::HermesConfig::from_config(config))
                    .map_err(|error| {
                    ChainError::Config(format!("price API client: {error}"))
                })?;
                Arc::new(price::HermesPrice::new(hermes, clock.clone()))
            }
        };
        let (pool_wallet, market_maker) = match &simnet {
            Some(_) => (
                Some(ServerWallet::resolve("pool", None, store, sealer).await?),
                Some(ServerWallet::resolve("market_maker", None, store, sealer).await?),
            ),
            None => (None, None),
        };
        if let Some(simnet) = &simnet {
            // On the embedded ledger the server's own wallets start with SOL for fees (payouts
            // sign from the escrow); on a real cluster the host funds them.
            for wallet in [&escrow, &dungeon] {
                let key = tx::Pubkey::from(&wallet.address);
                if simnet.balance(&key).await? < SERVER_WALLET_SOL_FLOOR {
                    simnet.airdrop(&key, SERVER_WALLET_SOL_TOP_UP, 0).await?;
                }
            }
        }
        Ok(Chain {
            rpc: match &simnet {
                Some(simnet) => RpcClient::embedded(rpc_url, simnet.clone())?,
                None => RpcClient::new(rpc_url)?,
            },
            simnet,
            stablecoin_mint,
            escrow,
            dungeon,
            pool_wallet,
            prices,
            market_maker,
        })
    }

    /// Simnet: create and seed the SOL/USDC pool at `sol_price` with `depth_usdc` USDC (and
    /// as much SOL) unless it exists, and give the market maker its float once. Nothing to do
    /// on an external cluster.
    pub(crate) async fn seed_pool(
        &self,
        sol_price: f64,
        depth_usdc: u64,
    ) -> Result<bool, ChainError> {
        let (Some(simnet), Some(wallet)) = (&self.simnet, &self.pool_wallet) else {
            return Ok(false);
        };
        let seeded = liquidity::ensure_pool(simnet, wallet, sol_price, depth_usdc).await?;
        if let Some(maker) = &self.market_maker {
            liquidity::fund_market_maker(simnet, maker, sol_price, depth_usdc).await?;
        }
        Ok(seeded)
    }

    /// Simnet: the wallet the market maker trades from.
    pub fn market_maker(&self) -> Option<&ServerWallet> {
        self.market_maker.as_ref()
    }

    /// Simnet: one market-maker run toward `target_price` (at most one bounded swap).
    pub async fn make_market(
        &self,
        target_price: f64,
    ) -> Result<Option<swap::SwapReceipt>, swap::SwapError> {
        match &self.market_maker {
            Some(wallet) => market_maker::rebalance(self, wallet, target_price).await,
            None => Ok(None),
        }
    }

    /// What values SOL for this server: the pool on simnet, Pyth's feed on a real cluster.
    pub fn price_source(&self) -> &Arc<dyn price::PriceSource> {
        &self.prices
    }

    pub fn rpc(&self) -> &RpcClient {
        &self.rpc
    }

    /// The embedded ledger, when this server runs one.
    pub fn simnet(&self) -> Option<&Arc<Simnet>> {
        self.simnet.as_ref()
    }

    /// The stablecoin (USDC) mint entry fees and prizes are paid in.
    pub fn stablecoin_mint(&self) -> &str {
        &self.stablecoin_mint
    }

    /// Where tournament entry fees go (and prizes come from).
    pub fn escrow(&self) -> &ServerWallet {
        &self.escrow
    }

    /// Where dungeon entry fees go.
    pub fn dungeon(&self) -> &ServerWallet {
        &self.dungeon
    }

    /// Is `signature` the expected payment, and final? `Pending` until the node reports it
    /// `finalized`; then the parsed transaction is checked by [`verify::verify_transaction`].
    pub async fn verify_payment(
        &self,
        signature: &str,
        expected: &ExpectedPayment,
    ) -> Result<PaymentStatus, ChainError> {
        let well_formed = bs58::decode(signature)
            .into_vec()
            .is_ok_and(|bytes| bytes.len() == 64);
        if !well_formed {
            return Ok(PaymentStatus::Rejected(RejectReason::UnknownSignature));
        }
        let Some(status) = self.rpc.get_signature_status(signature).await? else {
            return Ok(PaymentStatus::Rejected(RejectReason::UnknownSignature));
        };
        if !status.is_finalized() {
            return Ok(PaymentStatus::Pending);
        }
        match self.rpc.get_transaction(signature, "finalized").await? {
            // Finalized by status but not yet served at `finalized` (another RPC node): later.
            None => Ok(PaymentStatus::Pending),
            Some(tx) => Ok(verify::verify_transaction(&tx, expected)),
        }
    }

    /// SOL and every token balance of `wallet`.
    pub async fn portfolio(&self, wallet: &WalletAddress) -> Result<Portfolio, ChainError> {
        portfolio::read(&self.rpc, wallet).await
    }

    /// Send `amount_raw` of `mint` from `from` to `to_wallet`'s associated token account
    /// (created if missing), with `memo`; returns the signature once the node accepted it.
    pub async fn transfer_token(
        &self,
        from: &Keypair,
        to_wallet: &WalletAddress,
        mint: &str,
        amount_raw: u64,
        memo: &str,
    ) -> Result<String, ChainError> {
        transfer::transfer_token(&self.rpc, from, to_wallet, mint, amount_raw, memo).await
    }

    /// Sign (do not send) the transfer [`Chain::transfer_token`] would send.
    pub(crate) async fn sign_token_transfer(
        &self,
        from: &Keypair,
        to_wallet: &WalletAddress,
        mint: &str,
        amount_raw: u64,
        memo: &str,
    ) -> Result<SignedTransfer, ChainError> {
        let (transaction, last_valid_block_height) = transfer::sign_token_transfer_expiring(
            &self.rpc, from, to_wallet, mint, amount_raw, memo,
        )
        .await?;
        Ok(SignedTransfer {
            signature: transaction.signature(),
            wire: transaction.serialize()?,
            last_valid_block_height,
        })
    }

    /// The finalized block height (see [`RpcClient::get_block_height`]).
    pub(crate) async fn block_height(&self) -> Result<u64, ChainError> {
        self.rpc.get_block_height().await
    }

    /// Send a transaction signed earlier; returns its signature.
    pub async fn send_signed(&self, wire: &[u8]) -> Result<String, ChainError> {
        self.rpc.send_transaction(wire).await
    }

    /// What the node knows of `signature`: `None` if it never saw it.
    pub(crate) async fn signature_status(
        &self,
        signature: &str,
    ) -> Result<Option<rpc::SignatureStatus>, ChainError> {
        self.rpc.get_signature_status(signature).await
    }
}

/// A transfer signed but not necessarily sent: what a sender records before it sends, so a
/// retry can resend these very bytes or know when they can no longer land.
#[derive(Debug, Clone)]
pub(crate) struct SignedTransfer {
    pub signature: String,
    pub wire: Vec<u8>,
    /// The last block height at which `wire` can land (its blockhash's).
    pub last_valid_block_height: u64,
}
