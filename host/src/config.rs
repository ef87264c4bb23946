//! The one typed configuration of the server, read once at start from the command line and the
//! environment (clap does both). Every setting has an embedded default: no file is needed to start.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

/// Settings shared by every subcommand that touches the database.
#[derive(Debug, Clone, Args)]
pub struct StorageArgs {
    /// Directory for the embedded database, the dev master key and compiled artifacts.
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// `postgres://…` for a multi-node deployment; by default an SQLite file in the data dir.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
}

/// Settings of `crucible serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CRUCIBLE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    #[command(flatten)]
    pub storage: StorageArgs,

    /// 32-byte key (64 hex characters) that encrypts secrets at rest. Without it a key is
    /// generated into the data dir on first start (fine for development, not for production).
    #[arg(long, env = "CRUCIBLE_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<String>,

    /// `off` disables every rate limit (tests and benchmarks).
    #[arg(long, env = "CRUCIBLE_RATE_LIMITS", default_value = "on", value_parser = ["on", "off"])]
    pub rate_limits: String,

    /// Trust the first hop of `X-Forwarded-For` as the client address (only behind a proxy you run).
    #[arg(long, env = "CRUCIBLE_TRUST_FORWARDED_FOR", default_value_t = false)]
    pub trust_forwarded_for: bool,

    /// Public base URL used in links the server hands out; defaults to `http://<bind>`.
    #[arg(long, env = "CRUCIBLE_PUBLIC_URL")]
    pub public_url: Option<String>,
}

/// The resolved configuration the server runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub master_key: Option<String>,
    pub rate_limits: bool,
    pub trust_forwarded_for: bool,
    pub public_url: String,
}

impl StorageArgs {
    /// The database to use: `DATABASE_URL` if given, else `crucible.db` inside the data dir.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) if !url.trim().is_empty() => url.clone(),
            _ => sqlite_url_in(&self.data_dir),
        }
    }
}

/// `sqlite://<dir>/crucible.db?mode=rwc`: created on first start.
pub fn sqlite_url_in(dir: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", dir.join("crucible.db").display())
}

impl From<ServeArgs> for Config {
    fn from(args: ServeArgs) -> Self {
        let public_url = args
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", args.bind))
            .trim_end_matches('/')
            .to_owned();
        Config {
            bind: args.bind,
            database_url: args.storage.database_url(),
            data_dir: args.storage.data_dir,
            master_key: args.master_key,
            rate_limits: args.rate_limits != "off",
            trust_forwarded_for: args.trust_forwarded_for,
            public_url,
        }
    }
}

impl Config {
    /// A configuration for tests and benchmarks: the given database, an ephemeral port,
    /// a fixed master key and no rate limits unless the test turns them on.
    pub fn for_tests(data_dir: PathBuf, database_url: String) -> Self {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
            database_url,
            master_key: Some("00".repeat(32)),
            rate_limits: false,
            trust_forwarded_for: false,
            public_url: "http://127.0.0.1".to_owned(),
        }
    }
}
