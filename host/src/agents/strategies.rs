//! Strategy components uploaded by authors (`POST /api/v1/public/strategies`): validated by the
//! sandbox (size, component format, our world), compiled on the node's bounded compile worker,
//! given one dry tick, stored once by content (SHA-256 id) with the profile that tick measured,
//! and usable by the uploading accounts' agents as `strategy.type = "custom:<id>"`.
//!
//! An account keeps at most [`UploadQuota`](super::runtime::UploadQuota) components and bytes, so uploads
//! cannot fill the database or the compile worker on their own. The quota is reserved before the
//! compile, atomically per account ([`reserve_quota`]), and released once the upload is stored or
//! refused: uploads racing each other cannot all pass the same check.

use serde::Serialize;
use std::sync::Arc;

use super::AgentError;
use crate::agents::Runtime;
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339, to_millis};
use crate::crypto::sha256_hex;
use crate::db::Store;
use crate::market::MarketFeed;
use crate::market::{Interval, Pair};
use crate::paper::PortfolioView;
use crate::sandbox::{AgentSettings, LoadError, LoadedStrategy, Sandbox, TickInput};

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = UploadedStrategy)]
pub(crate) struct StrategyView {
    pub strategy_id: String,
    /// What to put in an agent's `strategy.type`.
    pub strategy_type: String,
    pub name: String,
    pub size_bytes: i64,
    pub uploaded_at: String,
    /// What the dry tick at upload measured; `null` for components uploaded before profiles.
    pub profile: Option<ProfileView>,
}

/// A component's profile: the limits it runs under and what its dry tick used.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProfileView {
    /// `bare` (imports only `host.log`) or `runtime` (a language runtime over WASI).
    pub kind: String,
    /// Linear memory the instance asked for, bytes.
    pub memory_bytes: i64,
    /// Fuel the dry tick burnt.
    pub fuel_first_tick: i64,
}

/// Candles the dry tick hands a component: as many as an agent's tick sees.
const DRY_TICK_CANDLES: usize = 200;

/// Validate and store an uploaded component for the account. Uploading the same bytes again
/// (by anyone) stores nothing new; the account's name for it is updated.
pub(crate) async fn upload(
    store: &Store,
    clock: &dyn Clock,
    agents: &Arc<Runtime>,
    market: &dyn MarketFeed,
    account_id: &str,
    name: &str,
    bytes: Vec<u8>,
) -> Result<StrategyView, AgentError> {
    let limit = agents.limits().max_component_bytes;
    if bytes.len() > limit {
        return Err(AgentError::ComponentTooLarge(format!(
            "the component is {} bytes; the limit is {limit}",
            bytes.len()
        )));
    }
    // Hashing tens of MiB takes tens of milliseconds: not on an async worker.
    let (id, bytes) = tokio::task::spawn_blocking(move || (sha256_hex(&bytes), bytes))
        .await
        .map_err(AgentError::internal)?;
    if let Some(reason) = crate::admin::service::ban_of(store, &id).await? {
        return Err(AgentError::Banned(format!(
            "this component ({id}) was banned by the service's admins: {reason}"
        )));
    }
    reserve_quota(store, clock, agents, account_id, &id, bytes.len()).await?;
    let stored = check_and_store(store, clock, agents, market, account_id, name, &id, bytes).await;
    // Stored (the account's row now counts) or refused: the reservation has done its work.
    let released = sqlx::query(
        "DELETE FROM strategy_upload_reservations WHERE account_id = $1 AND strategy_id = $2",
    )
    .bind(account_id)
    .bind(&id)
    .execute(store.write())
    .await;
    if let Err(error) = released {
        // It expires on its own after RESERVATION_TTL.
        tracing::warn!(account_id, strategy_id = id, %error, "upload reservation not released");
    }
    stored
}

/// Compile the component, give it its dry tick and store it for the account.
async fn check_and_store(
    store: &Store,
    clock: &dyn Clock,
    agents: &Arc<Runtime>,
    market: &dyn MarketFeed,
    account_id: &str,
    name: &str,
    id: &str,
    bytes: Vec<u8>,
) -> Result<StrategyView, AgentError> {
    let now = to_millis(clock.now());
    let dry_run = DryRun::at(market, now)?;
    let runtime = agents.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let sandbox = runtime.sandbox()?;
        let loaded = sandbox.load(&bytes)?;
        Ok::<_, LoadError>((dry_run.tick(sandbox, &loaded), bytes))
    })
    .await
    .map_err(AgentError::internal)?;
    let (profile, bytes) = checked.map_err(|error| match error {
        LoadError::TooLarge { .. } => AgentError::ComponentTooLarge(error.to_string()),
        LoadError::CompileTimeout(_) => AgentError::Busy(error.to_string()),
        LoadError::Cache(_) | LoadError::Engine(_) => AgentError::internal(error),
        other => AgentError::invalid("body", other.to_string()),
    })?;
    let profile = profile?;

    let mut tx = store.begin().await?;
    sqlx::query(
        "INSERT INTO strategy_components
             (id, size_bytes, bytes, created_at, profile, profile_memory_bytes, profile_fuel)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (id) DO UPDATE SET profile = excluded.profile,
             profile_memory_bytes = excluded.profile_memory_bytes,
             profile_fuel = excluded.profile_fuel",
    )
    .bind(id)
    .bind(bytes.len() as i64)
    .bind(bytes)
    .bind(now)
    .bind(&profile.kind)
    .bind(profile.memory_bytes)
    .bind(profile.fuel_first_tick)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO account_strategies (account_id, strategy_id, name, uploaded_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (account_id, strategy_id) DO UPDATE SET name = excluded.name",
    )
    .bind(account_id)
    .bind(id)
    .bind(name)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!(account_id, strategy_id = id, "strategy uploaded");
    list(store, account_id)
        .await?
        .into_iter()
        .find(|view| view.strategy_id == id)
        .ok_or_else(|| AgentError::internal(anyhow::anyhow!("strategy {id} vanished")))
}

/// How long a reservation holds quota for an upload still being checked: longer than any
/// compile and dry tick take, so one left behind by a node that died frees itself.
const RESERVATION_TTL_MS: i64 = 10 * 60 * 1000;

/// Reserve the quota an upload of `size` bytes needs, or refuse it: the account's stored
/// components and the reservations of its uploads in flight count (a component it already has,
/// or is already uploading, does not count twice). The count and the reservation are one
/// transaction that first takes the account's row, so concurrent uploads of one account take
/// turns (PostgreSQL's row lock; SQLite has a single writer).
async fn reserve_quota(
    store: &Store,
    clock: &dyn Clock,
    agents: &Arc<Runtime>,
    account_id: &str,
    id: &str,
    size: usize,
) -> Result<(), AgentError> {
    let now = to_millis(clock.now());
    let mut tx = store.begin().await?;
    sqlx::query("UPDATE accounts SET updated_at = updated_at WHERE id = $1")
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
    let (count, bytes): (i64, Option<i64>) = sqlx::query_as(
        // SUM of a BIGINT is NUMERIC on PostgreSQL: cast so both databases answer an integer.
        // UNION (not ALL): a component both stored and being uploaded again counts once.
        "SELECT COUNT(*), CAST(SUM(size_bytes) AS BIGINT) FROM (
             SELECT s.strategy_id, c.size_bytes
             FROM account_strategies s JOIN strategy_components c ON c.id = s.strategy_id
             WHERE s.account_id = $1 AND s.strategy_id <> $2
             UNION
             SELECT strategy_id, size_bytes FROM strategy_upload_reservations
             WHERE account_id = $1 AND strategy_id <> $2 AND reserved_at > $3
         ) held",
    )
    .bind(account_id)
    .bind(id)
    .bind(now - RESERVATION_TTL_MS)
    .fetch_one(&mut *tx)
    .await?;
    within_quota(
        agents.quota(),
        count as u64 + 1,
        bytes.unwrap_or(0) as u64 + size as u64,
    )?;
    sqlx::query(
        "INSERT INTO strategy_upload_reservations (account_id, strategy_id, size_bytes, reserved_at)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (account_id, strategy_id) DO UPDATE SET reserved_at = excluded.reserved_at",
    )
    .bind(account_id)
    .bind(id)
    .bind(size as i64)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Refuse `count` components of `bytes` in all if they exceed `quota`.
fn within_quota(
    quota: super::runtime::UploadQuota,
    count: u64,
    bytes: u64,
) -> Result<(), AgentError> {
    if count > quota.components {
        return Err(AgentError::QuotaExceeded(format!(
            "an account keeps at most {} strategy components; this would be {count}",
            quota.components
        )));
    }
    if bytes > quota.bytes {
        return Err(AgentError::QuotaExceeded(format!(
            "an account keeps at most {} MiB of strategy components; this would be {:.1} MiB",
            quota.bytes >> 20,
            bytes as f64 / (1 << 20) as f64
        )));
    }
    Ok(())
}

/// The tick every upload must pass before it is accepted: the market's last
/// [`DRY_TICK_CANDLES`] hourly SOL/USDC candles, a fresh 10,000 USDC paper portfolio, no state,
/// a `fighter` agent with full allocation and no personality. What it measures is the profile.
struct DryRun {
    now: i64,
    candles: Vec<crate::market::Candle>,
    signals: crate::market::Signals,
}

impl DryRun {
    fn at(market: &dyn MarketFeed, now: i64) -> Result<Self, AgentError> {
        let pair = Pair::new("SOL", "USDC");
        let candles = market
            .candles(&pair, Interval::H1, now, DRY_TICK_CANDLES)
            .map_err(AgentError::internal)?;
        let signals = market.signals(&pair, now).map_err(AgentError::internal)?;
        Ok(DryRun {
            now,
            candles,
            signals,
        })
    }

    fn tick(&self, sandbox: &Sandbox, loaded: &LoadedStrategy) -> Result<ProfileView, AgentError> {
        let settings = AgentSettings {
            class: "fighter".into(),
            base: "SOL".into(),
            quote: "USDC".into(),
            interval: "1h".into(),
            max_allocation: 100.0,
            personality: String::new(),
            model_id: "crucible/dry-run".into(),
            // What an agent that chose no values gets.
            params: crate::optimize::params::defaults(loaded.params()),
        };
        let capital = super::PAPER_CAPITAL;
        let outcome = sandbox.tick_as(
            "dry-run",
            loaded,
            &TickInput {
                settings: &settings,
                now: self.now,
                candles: &self.candles,
                signals: self.signals,
                portfolio: PortfolioView {
                    base: 0.0,
                    quote: capital,
                    avg_entry_price: None,
                    equity: capital,
                },
                state: &[],
            },
        );
        if let Err(fault) = outcome.result {
            return Err(AgentError::invalid(
                "body",
                format!(
                    "the component failed its dry tick ({}): {fault}",
                    fault.kind()
                ),
            ));
        }
        Ok(ProfileView {
            kind: loaded.profile().as_str().into(),
            memory_bytes: outcome.memory_peak as i64,
            fuel_first_tick: outcome.fuel_used as i64,
        })
    }
}

/// The account's uploaded strategies, newest first.
pub(crate) async fn list(store: &Store, account_id: &str) -> Result<Vec<StrategyView>, AgentError> {
    type Row = (
        String,
        String,
        i64,
        i64,
        Option<String>,
        Option<i64>,
        Option<i64>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT s.strategy_id, s.name, c.size_bytes, s.uploaded_at,
                c.profile, c.profile_memory_bytes, c.profile_fuel
         FROM account_strategies s JOIN strategy_components c ON c.id = s.strategy_id
         WHERE s.account_id = $1 ORDER BY s.uploaded_at DESC, s.strategy_id",
    )
    .bind(account_id)
    .fetch_all(store.read())
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, name, size_bytes, uploaded_at, kind, memory, fuel)| StrategyView {
                strategy_type: format!("custom:{id}"),
                strategy_id: id,
                name,
                size_bytes,
                uploaded_at: rfc3339(from_millis(uploaded_at)),
                profile: match (kind, memory, fuel) {
                    (Some(kind), Some(memory_bytes), Some(fuel_first_tick)) => Some(ProfileView {
                        kind,
                        memory_bytes,
                        fuel_first_tick,
                    }),
                    _ => None,
                },
            },
        )
        .collect())
}

/// Whether the account uploaded component `id`.
pub(crate) async fn owned_by(
    store: &Store,
    account_id: &str,
    id: &str,
) -> Result<bool, AgentError> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT strategy_id FROM account_strategies WHERE account_id = $1 AND strategy_id = $2",
    )
    .bind(account_id)
    .bind(id)
    .fetch_optional(store.read())
    .await?;
    Ok(row.is_some())
}

/// The bytes of component `id`.
/// The component of `class`'s built-in strategy, or the uploaded `component`, from this node's
/// memory or loaded now: an upload's bytes from the database, compiled off the async runtime.
pub(crate) async fn load(
    store: &Store,
    agents: &Arc<Runtime>,
    class: &str,
    component: Option<&str>,
) -> Result<LoadedStrategy, String> {
    let key = match component {
        Some(id) => format!("custom:{id}"),
        None => format!("builtin:{class}"),
    };
    if let Some(strategy) = agents.cached(&key) {
        return Ok(strategy);
    }
    let bytes = match component {
        None => None,
        Some(id) => match bytes(store, id).await {
            Ok(Some(bytes)) => Some((id.to_owned(), bytes)),
            Ok(None) => return Err(format!("uploaded strategy {id} is missing")),
            Err(error) => return Err(format!("{error:#}")),
        },
    };
    let runtime = agents.clone();
    let class = class.to_owned();
    tokio::task::spawn_blocking(move || match bytes {
        None => runtime.builtin(&class),
        Some((id, bytes)) => runtime.custom(&id, &bytes),
    })
    .await
    .map_err(|error| error.to_string())?
    .map_err(|error| error.to_string())
}

pub(crate) async fn bytes(store: &Store, id: &str) -> anyhow::Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT bytes FROM strategy_components WHERE id = $1")
            .bind(id)
            .fetch_optional(store.read())
            .await?;
    Ok(row.map(|(bytes,)| bytes))
}
