//! `crucible simnet`: the simnet alone, as a fast local Solana node for any client's tests. No
//! accounts, tournaments or scheduler: JSON-RPC and PubSub at `/` (and `/simnet/rpc`) on
//! `--bind`, and PubSub again on the next port, where `@solana/web3.js` looks for it (as
//! `solana-test-validator` does with 8899 and 8900). The ledger is in memory unless `--database`
//! names one.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::Simnet;
use crate::chain::tx::Pubkey;
use crate::db::Store;
use crate::http::serve::{ServeLimits, serve};

#[derive(Debug, Args)]
pub(crate) struct SimnetArgs {
    /// Where JSON-RPC and PubSub listen (`solana-test-validator`'s port by default).
    #[arg(long, env = "CRUCIBLE_SIMNET_BIND", default_value = "127.0.0.1:8899")]
    pub bind: SocketAddr,

    /// Also serve PubSub on this address; by default the port after `--bind`'s (where
    /// web3.js looks), none when `--bind` asks for any free port (port 0).
    #[arg(long)]
    pub ws_bind: Option<SocketAddr>,

    /// Keep the ledger in this database (`sqlite://…?mode=rwc` or `postgres://…`), migrated as
    /// a server's, so it survives restarts; by default it lives in memory. Not a database a
    /// running server uses on SQLite: two processes would write one ledger.
    #[arg(long)]
    pub database: Option<String>,

    /// Milliseconds from confirmation to finalization.
    #[arg(long, env = "CRUCIBLE_SIMNET_FINALITY_MS", default_value_t = 3000)]
    pub finality_ms: u64,

    /// The stablecoin mint the faucet mints (`requestAirdrop`'s `stablecoinAmount`); the
    /// simnet's fixed mint by default.
    #[arg(long, env = "CRUCIBLE_STABLECOIN_MINT")]
    pub stablecoin_mint: Option<String>,
}

/// Run the simnet until Ctrl-C or SIGTERM.
pub(crate) async fn run(args: SimnetArgs) -> anyhow::Result<()> {
    let mint = match &args.stablecoin_mint {
        Some(mint) => mint
            .parse::<Pubkey>()
            .map_err(|_| anyhow::anyhow!("the stablecoin mint `{mint}` is not an address"))?,
        None => super::default_stablecoin_mint(),
    };
    let storage = match &args.database {
        None => crucible_simnet::Storage::in_memory().await?,
        Some(url) => {
            let store = Store::connect(url).await?;
            store.migrate().await?;
            super::storage_of(&store)
        }
    };
    let simnet = Arc::new(
        Simnet::open(
            storage.clone(),
            Arc::new(crucible_simnet::SystemClock),
            args.finality_ms,
            mint,
        )
        .await?,
    );

    let listener = TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("cannot listen on {}", args.bind))?;
    let local = listener.local_addr()?;
    let ws_bind = args.ws_bind.or_else(|| {
        let port = local
            .port()
            .checked_add(1)
            .filter(|_| args.bind.port() != 0)?;
        Some(SocketAddr::new(local.ip(), port))
    });
    let ws_listener = match ws_bind {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} for PubSub (--ws-bind)"))?,
        ),
        None => None,
    };

    // Listening for the signals before the addresses are announced (`shutdown_signal`).
    let signalled = crate::startup::shutdown_signal();
    // Written with errors ignored: a caller that reads the addresses and then closes its end of
    // the pipe must not take the node down with it (`println!` panics on a closed stdout).
    let say = |line: String| {
        let _ = writeln!(std::io::stdout(), "{line}");
    };
    say(format!(
        "stablecoin mint {mint} ({} decimals); finality {} ms; ledger {}",
        super::STABLECOIN_DECIMALS,
        args.finality_ms,
        if args.database.is_some() {
            "in the database"
        } else {
            "in memory"
        },
    ));
    say(format!(
        "simnet JSON-RPC and PubSub on http://{local} (also /simnet/rpc)"
    ));
    if let Some(ws) = &ws_listener {
        say(format!("simnet PubSub also on ws://{}", ws.local_addr()?));
    }

    let (stop, closing) = watch::channel(false);
    let limits = ServeLimits {
        header_read_timeout: Duration::from_secs(30),
        drain_timeout: Duration::from_secs(5),
    };
    let stopped = |mut closing: watch::Receiver<bool>| async move {
        let _ = closing.wait_for(|closing| *closing).await;
    };
    let router = super::rpc::standalone_router(simnet, closing.clone());
    let pubsub = ws_listener.map(|listener| {
        tokio::spawn(serve(
            listener,
            router.clone(),
            limits,
            stopped(closing.clone()),
        ))
    });
    let main = tokio::spawn(serve(listener, router, limits, stopped(closing)));
    signalled.await;
    // Websockets end on their own only when told to; then both listeners drain.
    stop.send_replace(true);
    main.await?;
    if let Some(pubsub) = pubsub {
        pubsub.await?;
    }
    // The same pools as the store's when there is one: a file's WAL is checkpointed on close.
    storage.close().await;
    Ok(())
}
