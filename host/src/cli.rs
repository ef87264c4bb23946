//! The command line: `crucible serve`, `crucible migrate`, the operator tools, and
//! `crucible simnet` (the simnet alone).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{Config, ServeArgs, StorageArgs};
use crate::db::Store;

#[derive(Debug, Parser)]
#[command(
    name = "crucible",
    version,
    about = "Crucible: AI agents competing with Solana wallets"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the server (creates the database and applies migrations on first start).
    Serve(Box<ServeArgs>),
    /// Apply pending database migrations and exit.
    Migrate(StorageArgs),
    /// Backtest or check strategy components (no server needed).
    Strategy(crate::strategy_cli::StrategyArgs),
    /// Measure the markets: stylized facts of real and simulated candles, signal ICs.
    Market(crate::market_cli::MarketArgs),
    /// Create, list and cancel tournaments (on the same database as the server).
    #[command(subcommand)]
    Tournament(crate::tournaments::cli::TournamentCommand),
    /// Solana wallets: create a keypair, fund it on simnet, pay an entry fee.
    Wallet(crate::chain::wallet_cli::WalletArgs),
    /// Run the simnet alone: a local Solana JSON-RPC and PubSub node for any client's tests.
    Simnet(crate::chain::simnet::standalone::SimnetArgs),
    /// Grant or revoke the admin role (on the same database as the server).
    #[command(subcommand)]
    Admin(crate::admin::cli::AdminCommand),
    /// Copy the embedded database to FILE while the server runs, and check the copy.
    Backup {
        /// Where to write the copy (must not exist yet).
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Put a checked backup in place as the data dir's database (the server must be stopped).
    Restore {
        /// A file written by `crucible backup`.
        file: PathBuf,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// The master key that seals secrets at rest.
    #[command(subcommand)]
    MasterKey(MasterKeyCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum MasterKeyCommand {
    /// Seal every secret again under a new key, in one transaction (the server must be stopped).
    Rotate(#[command(flatten)] StorageArgs),
}

/// Parse the command line, run the chosen command and turn its outcome into an exit code.
pub async fn run() -> ExitCode {
    crate::telemetry::init();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => serve(Config::from(*args).with_model_keys_from_env()).await,
        Command::Migrate(args) => migrate(args).await,
        Command::Strategy(args) => crate::strategy_cli::run(args),
        Command::Market(args) => crate::market_cli::run(args),
        Command::Tournament(command) => crate::tournaments::cli::run(command).await,
        Command::Wallet(args) => crate::chain::wallet_cli::run(args).await,
        Command::Simnet(args) => crate::chain::simnet::standalone::run(args).await,
        Command::Admin(command) => crate::admin::cli::run(command).await,
        Command::Backup { out, storage } => backup(&storage, &out).await,
        Command::Restore { file, storage } => restore(&storage, &file).await,
        Command::MasterKey(MasterKeyCommand::Rotate(storage)) => rotate(&storage).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn describe(checked: &crate::backup::Checked) -> String {
    format!(
        "schema version {}, {} accounts, {} tournament registrations, {} payouts; integrity ok",
        checked.schema_version, checked.accounts, checked.registrations, checked.payouts
    )
}

async fn backup(storage: &StorageArgs, out: &std::path::Path) -> anyhow::Result<()> {
    let checked = crate::backup::backup(storage, out).await?;
    println!("backed up to {}: {}", out.display(), describe(&checked));
    println!("the master key is not in the backup: keep it separately (docs/operations.md)");
    Ok(())
}

async fn restore(storage: &StorageArgs, file: &std::path::Path) -> anyhow::Result<()> {
    let checked = crate::backup::restore(storage, file).await?;
    println!(
        "restored {} into {}: {}",
        file.display(),
        storage.data_dir.display(),
        describe(&checked)
    );
    Ok(())
}

async fn rotate(storage: &StorageArgs) -> anyhow::Result<()> {
    let rotated = crate::master_key::rotate(storage).await?;
    println!(
        "{} secrets sealed again under a new master key",
        rotated.resealed
    );
    match &rotated.key_file {
        Some(path) => println!("the new key is in {}", path.display()),
        None => {
            println!(
                "set CRUCIBLE_MASTER_KEY to this new key on every node before starting the server                  (it is also in {}; delete that file once the key is in your secret store):",
                storage
                    .data_dir
                    .join(crate::master_key::NEXT_KEY_FILE)
                    .display()
            );
            println!("{}", rotated.new_key.expose());
        }
    }
    Ok(())
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let app = crate::startup::Application::build(config).await?;
    // Listening for the signals before saying so (`shutdown_signal`).
    let stop = crate::startup::shutdown_signal();
    println!("crucible listening on http://{}", app.local_addr());
    app.run_until_stopped(stop).await
}

async fn migrate(args: StorageArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)?;
    let store = Store::connect(&args.database_url()).await?;
    store.migrate().await?;
    println!("migrations applied ({})", store.backend());
    Ok(())
}
