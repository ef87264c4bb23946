//! The one typed configuration of the server, read once at start from the command line and the
//! environment (clap does both). Every setting has an embedded default: no file is needed to start.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, FromArgMatches};

use crate::models::EndpointSetting;
use crate::secret::Secret;
use crate::tournaments::series::{SeriesSpec, default_series};

/// Settings shared by every subcommand that touches the database.
#[derive(Debug, Clone, Args)]
pub struct StorageArgs {
    /// Directory for the embedded database, the dev master key and compiled artifacts.
    #[arg(long, env = "CRUCIBLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// `postgres://…` for a multi-node deployment; by default an SQLite file in the data dir.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,

    /// 32-byte key (64 hex characters) that encrypts secrets at rest. Without it a key is
    /// generated into the data dir on first start (fine for development, not for production).
    #[arg(long, env = "CRUCIBLE_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<Secret>,
}

/// Settings of `crucible serve`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CRUCIBLE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    #[command(flatten)]
    pub storage: StorageArgs,

    /// `off` disables every rate limit (tests and benchmarks).
    #[arg(long, env = "CRUCIBLE_RATE_LIMITS", default_value = "on", value_parser = ["on", "off"])]
    pub rate_limits: String,

    /// Behind one proxy you run: the same as `--trusted-proxies 1`.
    #[arg(long, env = "CRUCIBLE_TRUST_FORWARDED_FOR", default_value_t = false)]
    pub trust_forwarded_for: bool,

    /// How many proxies you run in front of the server (TLS terminator, load balancer…). The
    /// client address is read from `X-Forwarded-For` from the right, past that many hops; 0
    /// (default) ignores the header, since anyone can send it.
    #[arg(long, env = "CRUCIBLE_TRUSTED_PROXIES", default_value_t = 0)]
    pub trusted_proxies: usize,

    /// Public base URL used in links the server hands out; defaults to `http://<bind>`.
    #[arg(long, env = "CRUCIBLE_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// How often the scheduler looks for due work, in milliseconds (0 turns it off).
    #[arg(long, env = "CRUCIBLE_SCHEDULER_INTERVAL_MS", default_value_t = 1000)]
    pub scheduler_interval_ms: u64,

    /// How long a webhook receiver has to answer one delivery, in milliseconds.
    #[arg(long, env = "CRUCIBLE_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=300_000))]
    pub webhook_timeout_ms: u64,

    /// Allow webhook URLs on private, loopback and link-local addresses (off: such URLs would
    /// let a key owner reach the server's own network).
    #[arg(long, env = "CRUCIBLE_WEBHOOK_ALLOW_PRIVATE", default_value_t = false)]
    pub webhook_allow_private: bool,

    /// Recurring tournaments as a JSON array (see README); `[]` creates none. Default: daily,
    /// weekly and monthly series.
    #[arg(long, env = "CRUCIBLE_TOURNAMENT_SERIES", value_parser = parse_series)]
    pub tournament_series: Option<Vec<SeriesSpec>>,

    /// Seed of the simulated market (prices, candles, signals): same seed, same market. Unset,
    /// each deployment draws a random seed once and keeps it with its data, so nobody can
    /// compute its future prices; set it for tests and demos.
    #[arg(long, env = "CRUCIBLE_MARKET_SEED")]
    pub market_seed: Option<u64>,

    /// Seed demo data (tournaments, and a demo operator whose agents trade in the free one) into
    /// the embedded database (`on` by default there; PostgreSQL and real clusters never get it).
    #[arg(long, env = "CRUCIBLE_DEMO_DATA", value_parser = ["on", "off"])]
    pub demo_data: Option<String>,

    /// Run the simulated market clock and agent tick intervals this many times faster than wall
    /// time (demos and black-box tests: at 300 a 5m agent ticks every second).
    #[arg(long, env = "CRUCIBLE_TIME_SCALE", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub time_scale: u32,

    /// SOL (in lamports) an agent's wallet must hold for fees before it may start (0.01 SOL).
    #[arg(
        long,
        env = "CRUCIBLE_AGENT_FEE_RESERVE_LAMPORTS",
        default_value_t = 10_000_000
    )]
    pub agent_fee_reserve_lamports: u64,

    /// Dungeon runs without a turn for this many seconds are abandoned (their key dies).
    #[arg(long, env = "CRUCIBLE_DUNGEON_IDLE_TIMEOUT_SECS", default_value_t = 1800,
          value_parser = clap::value_parser!(u64).range(60..=604_800))]
    pub dungeon_idle_timeout_secs: u64,

    /// Percent of the dungeon's daily entry fees kept by the host; the rest is the day's prize.
    #[arg(long, env = "CRUCIBLE_DUNGEON_RAKE_PERCENT", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub dungeon_rake_percent: u32,

    #[command(flatten)]
    pub chain: ChainArgs,

    #[command(flatten)]
    pub sandbox: SandboxArgs,

    #[command(flatten)]
    pub retention: RetentionArgs,

    /// Fault testing only: this node's clock runs this many milliseconds ahead of the system
    /// clock (behind when negative), to see what skew between nodes does (docs/operations.md,
    /// "Clocks"). Never set it in production.
    #[arg(long, env = "CRUCIBLE_CLOCK_OFFSET_MS", default_value_t = 0, allow_hyphen_values = true,
          value_parser = clap::value_parser!(i64).range(-86_400_000..=86_400_000))]
    pub clock_offset_ms: i64,

    /// Fault testing only: every lease (agent ticks, jobs, payouts) lasts this many
    /// milliseconds instead of its standard length, so a test sees another node take over the
    /// work of one cut off from the database within seconds (docs/operations.md, "Leases and
    /// fencing"). Never set it in production.
    #[arg(long, env = "CRUCIBLE_LEASE_MS",
          value_parser = clap::value_parser!(u64).range(1_000..=3_600_000))]
    pub lease_ms: Option<u64>,

    /// A request not answered within this many milliseconds is answered 503 with
    /// `Retry-After` (a database cut off mid-query would otherwise hold it until TCP gives up).
    /// Event streams are not cut: only the wait for a response's head is bounded.
    #[arg(long, env = "CRUCIBLE_REQUEST_TIMEOUT_MS", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1_000..=3_600_000))]
    pub request_timeout_ms: u64,

    /// A client must send a request's headers within this many milliseconds of the server
    /// being ready for them, or the connection is closed (slow or silent clients).
    #[arg(long, env = "CRUCIBLE_HEADER_READ_TIMEOUT_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(100..=300_000))]
    pub header_read_timeout_ms: u64,

    /// Server-sent event streams this node keeps open at once.
    #[arg(long, env = "CRUCIBLE_MAX_STREAMS", default_value_t = 10_000)]
    pub max_streams: usize,

    /// Server-sent event streams one client address may keep open at once.
    #[arg(long, env = "CRUCIBLE_MAX_STREAMS_PER_CLIENT", default_value_t = 20)]
    pub max_streams_per_client: usize,

    /// A bearer token that lets a scraper read `GET /metrics` from anywhere; without it,
    /// metrics are served to clients on this machine only.
    #[arg(long, env = "CRUCIBLE_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<Secret>,

    /// Unfunded agents one account may hold at once (each has a wallet and is checked for
    /// funding): fund one, or wait for the old ones to be archived, to create more.
    #[arg(long, env = "CRUCIBLE_MAX_UNFUNDED_AGENTS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_unfunded_agents: u64,

    /// Seconds between valuations of tournament wallets (leaderboard snapshots). It must tile
    /// a minute, an hour or a day (e.g. 5, 30, 60, 300, 3600) so runs stay evenly spaced.
    /// Default 300, or 30 with demo data, so the demo's board moves within a minute.
    #[arg(long, env = "CRUCIBLE_SNAPSHOT_INTERVAL_SECS", value_parser = parse_snapshot_interval)]
    pub snapshot_interval_secs: Option<u64>,

    /// A model provider's endpoint, `VENDOR=BASE_URL` (repeatable; the variable takes a
    /// comma-separated list). It adds a vendor or replaces a built-in one (docs/models.md).
    #[arg(long = "model-endpoint", env = "CRUCIBLE_MODEL_ENDPOINTS", value_delimiter = ',',
          value_parser = crate::models::endpoints::parse_setting)]
    pub model_endpoints: Vec<EndpointSetting>,

    /// How long one call to a model provider may take, in milliseconds.
    #[arg(long, env = "CRUCIBLE_MODEL_TIMEOUT_MS", default_value_t = 20_000,
          value_parser = clap::value_parser!(u64).range(100..=300_000))]
    pub model_timeout_ms: u64,
}

/// Limits of the strategy sandbox that a deployment may set (the rest are fixed defaults).
#[derive(Debug, Clone, Args)]
pub struct SandboxArgs {
    /// Largest strategy component accepted, in MiB (a Python component is about 18).
    #[arg(long, env = "CRUCIBLE_MAX_COMPONENT_MIB", default_value_t = 40,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_component_mib: u64,

    /// Linear memory a language-runtime (WASI) strategy may use per tick, in MiB.
    #[arg(long, env = "CRUCIBLE_MAX_GUEST_MEMORY_MIB", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(16..=4096))]
    pub max_guest_memory_mib: u64,

    /// Fuel (about one per wasm instruction) per tick of a language-runtime strategy.
    #[arg(long, env = "CRUCIBLE_RUNTIME_FUEL_PER_TICK", default_value_t = 200_000_000,
          value_parser = clap::value_parser!(u64).range(1_000_000..=100_000_000_000))]
    pub runtime_fuel_per_tick: u64,

    /// Calls to its agent's model an uploaded component may make per tick (built-in classes
    /// make one).
    #[arg(long, env = "CRUCIBLE_MODEL_CALLS_PER_TICK", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub model_calls_per_tick: u32,

    /// Component compilations this node runs at once.
    #[arg(long, env = "CRUCIBLE_COMPILE_WORKERS", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    pub compile_workers: u64,

    /// Longest a component compilation may take, waiting for a worker included, in seconds;
    /// an upload over it is answered 503 (retry later).
    #[arg(long, env = "CRUCIBLE_COMPILE_TIMEOUT_SECS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub compile_timeout_secs: u64,

    /// Uploaded strategy components one account may keep, and their total size in MiB.
    #[arg(long, env = "CRUCIBLE_STRATEGY_QUOTA_COUNT", default_value_t = 20)]
    pub strategy_quota_count: u64,
    #[arg(long, env = "CRUCIBLE_STRATEGY_QUOTA_MIB", default_value_t = 200)]
    pub strategy_quota_mib: u64,
}

/// How long the hourly pruning keeps what the service no longer needs, in days
/// (`crate::retention`). Money (payouts, registrations, payments, trades) is never pruned.
#[derive(Debug, Clone, Args)]
pub(crate) struct RetentionArgs {
    /// Delivered and dead webhook deliveries.
    #[arg(long, env = "CRUCIBLE_RETENTION_WEBHOOK_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub retention_webhook_days: u64,
    /// Finished scheduler jobs.
    #[arg(long, env = "CRUCIBLE_RETENTION_JOB_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub retention_job_days: u64,
    /// The event record of ended dungeon runs (the run's row and score stay).
    #[arg(long, env = "CRUCIBLE_RETENTION_DUNGEON_DAYS", default_value_t = 90,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub retention_dungeon_days: u64,
    /// Uploaded strategy components no agent uses, after their last upload.
    #[arg(long, env = "CRUCIBLE_RETENTION_COMPONENT_DAYS", default_value_t = 90,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub retention_component_days: u64,
    /// Agents' decisions (what their model was told and answered; their trades stay).
    #[arg(long, env = "CRUCIBLE_RETENTION_DECISION_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub retention_decision_days: u64,
    /// Agents still unfunded this long after their creation are archived.
    #[arg(long, env = "CRUCIBLE_UNFUNDED_AGENT_ARCHIVE_DAYS", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub unfunded_agent_archive_days: u64,
}

/// Solana settings.
#[derive(Debug, Clone, Args)]
pub(crate) struct ChainArgs {
    /// JSON-RPC URL of a Solana node (devnet, mainnet). Unset: the embedded simnet at
    /// `http://<bind>/simnet/rpc`.
    #[arg(long, env = "SOLANA_RPC_URL")]
    pub solana_rpc_url: Option<String>,

    /// Simnet: milliseconds from confirmation to finalization.
    #[arg(long, env = "CRUCIBLE_SIMNET_FINALITY_MS", default_value_t = 3000)]
    pub simnet_finality_ms: u64,

    /// Stablecoin (USDC) mint. Default: mainnet USDC with an external RPC, the simnet mint otherwise.
    #[arg(long, env = "CRUCIBLE_STABLECOIN_MINT")]
    pub stablecoin_mint: Option<String>,

    /// Wallet receiving tournament entry fees. Default: a server-held keypair generated once.
    #[arg(long, env = "CRUCIBLE_ESCROW_WALLET")]
    pub escrow_wallet: Option<String>,

    /// Wallet receiving dungeon entry fees. Default: a server-held keypair generated once.
    #[arg(long, env = "CRUCIBLE_DUNGEON_WALLET")]
    pub dungeon_wallet: Option<String>,

    /// Real clusters: the Pyth Hermes service that prices SOL for valuations (a provider's URL,
    /// token included, works too).
    #[arg(long, env = "CRUCIBLE_PRICE_API_URL", default_value = crate::chain::hermes::DEFAULT_BASE_URL)]
    pub price_api_url: String,

    /// Real clusters: the Pyth feed id of SOL/USD.
    #[arg(long, env = "CRUCIBLE_PRICE_FEED_SOL", default_value = crate::chain::hermes::SOL_USD_FEED)]
    pub price_feed_sol: String,

    /// Real clusters: Jupiter's swap API that routes live agents' swaps
    /// (`https://api.jup.ag/swap/v1` with an API key).
    #[arg(long, env = "CRUCIBLE_SWAP_API_URL", default_value = crate::chain::jupiter::DEFAULT_BASE_URL)]
    pub swap_api_url: String,

    /// Real clusters: the swap API's key, sent as `x-api-key`.
    #[arg(long, env = "CRUCIBLE_SWAP_API_KEY", hide_env_values = true)]
    pub swap_api_key: Option<Secret>,

    /// Real clusters: a price older than this many seconds is refused (the round is marked stale).
    #[arg(long, env = "CRUCIBLE_PRICE_MAX_AGE_SECS", default_value_t = 60)]
    pub price_max_age_secs: u64,

    /// Simnet: USDC (UI units) seeded into the SOL/USDC pool at first start, with as much SOL
    /// at the simulated market's price.
    #[arg(long, env = "CRUCIBLE_SIMNET_POOL_DEPTH_USDC", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub simnet_pool_depth_usdc: u64,
}

fn parse_snapshot_interval(text: &str) -> Result<u64, String> {
    let secs: u64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    snapshot_cron(secs)?;
    Ok(secs)
}

/// The cron expression (seconds first) running every `secs` seconds, for intervals that divide
/// a minute, an hour or a day evenly; anything else could not be spaced evenly by cron.
pub fn snapshot_cron(secs: u64) -> Result<String, String> {
    // Every n hours, minutes or seconds, where n divides the next field up (24, 60, 60).
    let every = |unit: u64, span: u64| {
        let n = secs / unit;
        (secs >= unit && secs.is_multiple_of(unit) && n <= span && span.is_multiple_of(n))
            .then_some(n)
    };
    if let Some(n) = every(3600, 24) {
        Ok(format!("0 0 */{n} * * *"))
    } else if let Some(n) = every(60, 60) {
        Ok(format!("0 */{n} * * * *"))
    } else if let Some(n) = every(1, 60) {
        Ok(format!("*/{n} * * * * *"))
    } else {
        Err(format!(
            "a snapshot interval of {secs} s does not divide a minute, an hour or a day evenly"
        ))
    }
}

fn parse_series(json: &str) -> Result<Vec<SeriesSpec>, String> {
    serde_json::from_str(json)
        .map_err(|error| format!("CRUCIBLE_TOURNAMENT_SERIES is not a valid series list: {error}"))
}

/// Seconds between wallet valuations, unless set.
const DEFAULT_SNAPSHOT_INTERVAL_SECS: u64 = 300;
/// The same with demo data: the demo board moves within a minute.
const DEMO_SNAPSHOT_INTERVAL_SECS: u64 = 30;

/// The resolved configuration the server runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub master_key: Option<Secret>,
    pub rate_limits: bool,
    /// Proxies in front of the server whose `X-Forwarded-For` hops are trusted (0: none).
    pub trusted_proxies: usize,
    pub public_url: String,
    /// 0 = no background scheduler (tests drive it by hand).
    pub scheduler_interval_ms: u64,
    /// Per-request timeout of webhook deliveries (default 10 000).
    pub webhook_timeout_ms: u64,
    /// Whether webhooks may go to private addresses.
    pub webhook_allow_private: bool,
    pub tournament_series: Vec<SeriesSpec>,
    pub demo_data: bool,
    /// `None`: the deployment's own random seed (`deployment::market_seed`).
    pub market_seed: Option<u64>,
    /// `None`: the embedded simnet.
    pub solana_rpc_url: Option<String>,
    pub simnet_finality_ms: u64,
    pub stablecoin_mint: Option<String>,
    pub escrow_wallet: Option<String>,
    pub dungeon_wallet: Option<String>,
    /// Seconds without a turn after which a dungeon run is abandoned (default 1800).
    pub dungeon_idle_timeout_secs: u64,
    /// Percent of a day's dungeon entry fees kept as rake (default 10); the rest is the prize.
    pub dungeon_rake_percent: u32,
    /// Market clock and agent intervals run this many times faster than wall time (≥ 1).
    pub time_scale: u32,
    /// Lamports an agent wallet needs before it may start.
    pub agent_fee_reserve_lamports: u64,
    /// USDC (UI units) seeded into the simnet pool at first start (default 100 000).
    pub simnet_pool_depth_usdc: u64,
    /// Seconds between tournament wallet valuations (default 300).
    pub snapshot_interval_secs: u64,
    /// Milliseconds a client has to send a request's headers.
    pub header_read_timeout_ms: u64,
    /// Fault testing: how far this node's clock is moved from the system clock.
    pub clock_offset_ms: i64,
    /// How long claims of leased work last (standard unless `--lease-ms`).
    pub leases: crate::leases::Leases,
    /// Milliseconds a request may take before it is answered 503.
    pub request_timeout_ms: u64,
    /// Open event streams per node and per client address.
    pub max_streams: usize,
    pub max_streams_per_client: usize,
    pub max_unfunded_agents: u64,
    /// The token `GET /metrics` accepts from other machines.
    pub metrics_token: Option<Secret>,
    /// Real clusters: Hermes base URL, SOL/USD feed id, oldest price accepted (seconds).
    pub price_api_url: String,
    pub price_feed_sol: String,
    pub price_max_age_secs: u64,
    /// Real clusters: Jupiter's swap API and its key.
    pub swap_api_url: String,
    pub swap_api_key: Option<Secret>,
    /// Deployment limits of the strategy sandbox and uploads.
    pub sandbox: SandboxArgs,
    /// How long pruned data is kept.
    pub(crate) retention: RetentionArgs,
    /// Model provider endpoints set by the host, over the built-in ones.
    pub model_endpoints: Vec<EndpointSetting>,
    /// Per-call timeout of model providers (default 20 000).
    pub model_timeout_ms: u64,
    /// The host's default key per vendor (`CRUCIBLE_MODEL_KEY_<VENDOR>`), used for accounts
    /// without their own.
    pub model_default_keys: std::collections::BTreeMap<String, Secret>,
}

impl StorageArgs {
    /// The database to use: `DATABASE_URL` if given, else `crucible.db` inside the data dir.
    pub(crate) fn database_url(&self) -> String {
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
        let embedded = args
            .storage
            .database_url
            .as_deref()
            .is_none_or(|url| url.trim().is_empty());
        // Demo data is for the embedded default only: SQLite and the in-process simnet.
        let on_simnet = args
            .chain
            .solana_rpc_url
            .as_deref()
            .is_none_or(|url| url.trim().is_empty());
        let demo_data = args.demo_data.as_deref() != Some("off") && embedded && on_simnet;
        Config {
            bind: args.bind,
            scheduler_interval_ms: args.scheduler_interval_ms,
            webhook_timeout_ms: args.webhook_timeout_ms,
            webhook_allow_private: args.webhook_allow_private,
            tournament_series: args.tournament_series.unwrap_or_else(default_series),
            demo_data,
            market_seed: args.market_seed,
            solana_rpc_url: args
                .chain
                .solana_rpc_url
                .filter(|url| !url.trim().is_empty()),
            simnet_finality_ms: args.chain.simnet_finality_ms,
            stablecoin_mint: args.chain.stablecoin_mint,
            escrow_wallet: args.chain.escrow_wallet,
            dungeon_wallet: args.chain.dungeon_wallet,
            dungeon_idle_timeout_secs: args.dungeon_idle_timeout_secs,
            dungeon_rake_percent: args.dungeon_rake_percent,
            time_scale: args.time_scale,
            agent_fee_reserve_lamports: args.agent_fee_reserve_lamports,
            simnet_pool_depth_usdc: args.chain.simnet_pool_depth_usdc,
            header_read_timeout_ms: args.header_read_timeout_ms,
            clock_offset_ms: args.clock_offset_ms,
            leases: args.lease_ms.map_or(
                crate::leases::Leases::STANDARD,
                crate::leases::Leases::uniform,
            ),
            request_timeout_ms: args.request_timeout_ms,
            max_streams: args.max_streams,
            max_streams_per_client: args.max_streams_per_client,
            max_unfunded_agents: args.max_unfunded_agents,
            metrics_token: args.metrics_token,
            price_api_url: args.chain.price_api_url,
            price_feed_sol: args.chain.price_feed_sol,
            price_max_age_secs: args.chain.price_max_age_secs,
            swap_api_url: args.chain.swap_api_url,
            swap_api_key: args.chain.swap_api_key,
            sandbox: args.sandbox,
            retention: args.retention,
            model_endpoints: args.model_endpoints,
            model_timeout_ms: args.model_timeout_ms,
            // Read from the environment by `with_model_keys_from_env`, at `serve` only.
            model_default_keys: Default::default(),
            snapshot_interval_secs: args.snapshot_interval_secs.unwrap_or(if demo_data {
                DEMO_SNAPSHOT_INTERVAL_SECS
            } else {
                DEFAULT_SNAPSHOT_INTERVAL_SECS
            }),
            database_url: args.storage.database_url(),
            data_dir: args.storage.data_dir,
            master_key: args.storage.master_key,
            rate_limits: args.rate_limits != "off",
            trusted_proxies: args
                .trusted_proxies
                .max(usize::from(args.trust_forwarded_for)),
            public_url,
        }
    }
}

impl ServeArgs {
    /// Every setting at its default, whatever the environment says. The defaults are the ones
    /// written on the flags above, and only there: tests and offline tools start from these and
    /// override what they change.
    pub(crate) fn defaults() -> ServeArgs {
        let command =
            ServeArgs::augment_args(clap::Command::new("crucible")).mut_args(|arg| arg.env(None));
        let matches = command
            .try_get_matches_from(["crucible"])
            .expect("every setting has a default or is optional");
        ServeArgs::from_arg_matches(&matches).expect("the defaults parse")
    }
}

impl Config {
    /// With the host's default model keys, `CRUCIBLE_MODEL_KEY_<VENDOR>` for each vendor it has
    /// an endpoint for (variable names are per vendor, so clap cannot read them).
    pub(crate) fn with_model_keys_from_env(mut self) -> Self {
        let endpoints = crate::models::Endpoints::with_settings(&self.model_endpoints);
        self.model_default_keys = crate::models::endpoints::default_keys_from_env(&endpoints);
        self
    }

    /// Whether this is a deployment that holds real value or runs several nodes: PostgreSQL, or
    /// a real Solana cluster. Settings fit for a laptop (a master key generated into the data
    /// dir) are warned about loudly there.
    pub(crate) fn is_production(&self) -> bool {
        self.database_url.starts_with("postgres") || self.solana_rpc_url.is_some()
    }

    /// A configuration for tests and benchmarks: the given database, an ephemeral port,
    /// a fixed master key, no background work and no rate limits unless the test turns them on.
    pub fn for_tests(data_dir: PathBuf, database_url: String) -> Self {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
            database_url,
            master_key: Some(Secret::new("00".repeat(32))),
            rate_limits: false,
            public_url: "http://127.0.0.1".to_owned(),
            scheduler_interval_ms: 0,
            // Test receivers listen on loopback.
            webhook_allow_private: true,
            tournament_series: Vec::new(),
            demo_data: false,
            simnet_finality_ms: 0,
            // A fixed market, so tests can reason about prices.
            market_seed: Some(42),
            snapshot_interval_secs: DEFAULT_SNAPSHOT_INTERVAL_SECS,
            ..Config::from(ServeArgs::defaults())
        }
    }

    /// The configuration of CLI tools that work on the database without serving: they reach the
    /// simnet of a server on the default address, and never run background work.
    pub(crate) fn offline(storage: &StorageArgs) -> Self {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: storage.data_dir.clone(),
            database_url: storage.database_url(),
            master_key: storage.master_key.clone(),
            rate_limits: false,
            public_url: "http://127.0.0.1:8080".to_owned(),
            scheduler_interval_ms: 0,
            tournament_series: Vec::new(),
            demo_data: false,
            snapshot_interval_secs: DEFAULT_SNAPSHOT_INTERVAL_SECS,
            ..Config::from(ServeArgs::defaults())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_data_is_for_the_embedded_simnet_only_and_off_turns_it_off() {
        let demo = |tweak: fn(&mut ServeArgs)| {
            let mut args = ServeArgs::defaults();
            tweak(&mut args);
            let config = Config::from(args);
            (config.demo_data, config.snapshot_interval_secs)
        };
        assert_eq!(
            demo(|_| {}),
            (true, 30),
            "the embedded default, with a lively board"
        );
        assert_eq!(demo(|a| a.demo_data = Some("off".into())), (false, 300));
        assert_eq!(
            demo(|a| a.storage.database_url = Some("postgres://db/crucible".into())),
            (false, 300),
            "PostgreSQL is a production database"
        );
        assert_eq!(
            demo(|a| {
                a.storage.database_url = Some("postgres://db/crucible".into());
                a.demo_data = Some("on".into());
            }),
            (false, 300),
            "whatever the setting says"
        );
        assert_eq!(
            demo(|a| a.chain.solana_rpc_url = Some("https://rpc.example.com".into())),
            (false, 300),
            "a real cluster"
        );
        assert_eq!(
            demo(|a| a.snapshot_interval_secs = Some(60)),
            (true, 60),
            "an interval set is kept"
        );
    }

    #[test]
    fn tests_start_from_the_flags_defaults() {
        let config = Config::for_tests(PathBuf::from("/tmp/x"), "sqlite://x".into());
        assert_eq!(config.webhook_timeout_ms, 10_000);
        assert_eq!(config.snapshot_interval_secs, 300);
        assert_eq!(config.agent_fee_reserve_lamports, 10_000_000);
        assert_eq!(config.scheduler_interval_ms, 0, "overridden");
        let offline = Config::offline(&ServeArgs::defaults().storage);
        assert_eq!(offline.simnet_finality_ms, 3_000);
        assert_eq!(config.market_seed, Some(42), "tests keep a fixed market");
        assert_eq!(
            offline.market_seed, None,
            "tools read the deployment's own seed"
        );
    }

    #[test]
    fn printing_the_configuration_gives_no_secret_away() {
        let mut config = Config::for_tests(PathBuf::from("/tmp/x"), "sqlite://x".into());
        config.master_key = Some(Secret::new("ab".repeat(32)));
        config.swap_api_key = Some(Secret::new("jupiter-key-123"));
        config
            .model_default_keys
            .insert("openai".into(), Secret::new("sk-host-default-1"));
        let printed = format!("{config:?}");
        assert!(!printed.contains(&"ab".repeat(32)), "{printed}");
        assert!(!printed.contains("jupiter-key-123"), "{printed}");
        assert!(!printed.contains("sk-host-default-1"), "{printed}");
        assert!(printed.contains("[redacted]"));
    }

    #[test]
    fn model_endpoints_come_from_repeated_flags_and_default_to_none() {
        assert!(ServeArgs::defaults().model_endpoints.is_empty());
        assert_eq!(ServeArgs::defaults().model_timeout_ms, 20_000);
        let command =
            ServeArgs::augment_args(clap::Command::new("crucible")).mut_args(|arg| arg.env(None));
        let matches = command
            .try_get_matches_from([
                "crucible",
                "--model-endpoint",
                "openai=http://127.0.0.1:9000/v1",
                "--model-endpoint",
                "local=http://127.0.0.1:8000/v1,groq=https://g.example/v1",
            ])
            .expect("parses");
        let args = ServeArgs::from_arg_matches(&matches).expect("args");
        let vendors: Vec<_> = args
            .model_endpoints
            .iter()
            .map(|s| s.vendor.as_str())
            .collect();
        assert_eq!(vendors, ["openai", "local", "groq"]);
        let command =
            ServeArgs::augment_args(clap::Command::new("crucible")).mut_args(|arg| arg.env(None));
        assert!(
            command
                .try_get_matches_from(["crucible", "--model-endpoint", "openai"])
                .is_err()
        );
    }

    #[test]
    fn postgres_or_a_real_cluster_is_production() {
        let mut config = Config::for_tests(PathBuf::from("/tmp/x"), "sqlite://x".into());
        assert!(!config.is_production());
        config.database_url = "postgres://db/crucible".into();
        assert!(config.is_production());
        config.database_url = "sqlite://x".into();
        config.solana_rpc_url = Some("https://api.mainnet-beta.solana.com".into());
        assert!(config.is_production());
    }
}
