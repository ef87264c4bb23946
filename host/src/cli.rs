//! The command line: `crucible serve`, `crucible migrate`, and the operator tools.

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
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (creates the database and applies migrations on first start).
    Serve(Box<ServeArgs>),
    /// Apply pending database migrations and exit.
    Migrate(StorageArgs),
    /// Backtest or check strategy components (no server needed).
    Strategy(crate::strategy_cli::StrategyArgs),
    /// Create, list and cancel tournaments (on the same database as the server).
    #[command(subcommand)]
    Tournament(crate::tournaments::cli::TournamentCommand),
    /// Solana wallets: create a keypair, fund it on simnet, pay an entry fee.
    Wallet(crate::chain::wallet_cli::WalletArgs),
    /// Grant or revoke the admin role (on the same database as the server).
    #[command(subcommand)]
    Admin(crate::admin::cli::AdminCommand),
}

/// Parse the command line, run the chosen command and turn its outcome into an exit code.
pub async fn run() -> ExitCode {
    crate::telemetry::init();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => serve(Config::from(*args)).await,
        Command::Migrate(args) => migrate(args).await,
        Command::Strategy(args) => crate::strategy_cli::run(args),
        Command::Tournament(command) => crate::tournaments::cli::run(command).await,
        Command::Wallet(args) => crate::chain::wallet_cli::run(args).await,
        Command::Admin(command) => crate::admin::cli::run(command).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let app = crate::startup::Application::build(config).await?;
    println!("crucible listening on http://{}", app.local_addr());
    app.run_until_stopped(crate::startup::shutdown_signal())
        .await
}

async fn migrate(args: StorageArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)?;
    let store = Store::connect(&args.database_url()).await?;
    store.migrate().await?;
    println!("migrations applied ({})", store.backend());
    Ok(())
}
