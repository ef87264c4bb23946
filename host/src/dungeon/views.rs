//! The dungeon's read models: the list of recent days, one day's detail and leaderboard, a
//! run's public page (with its stored events: a deterministic replay any client can render),
//! an account's runs and a run's credential.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::DungeonError;
use super::day::{self, DungeonDay, ENTRY_FEE_RAW, RECENT_DAYS};
use super::entry::RunUrls;
use super::game::map::{FLOORS, ROOMS_PER_FLOOR};
use super::store::{self, RunRow};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::{from_millis, rfc3339};
use crate::config::Config;
use crate::crypto::Sealer;
use crate::db::Store;
use crate::usdc::Usdc;

/// Leaderboard rows shown.
const BOARD_SIZE: i64 = 100;
/// Best scores shown per day in the list.
const TOP_IN_LIST: i64 = 3;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntryFee {
    amount_ui: f64,
    amount_raw: String,
    mint: String,
}

#[derive(Debug, Serialize, sqlx::FromRow, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BestScore {
    wallet: String,
    score: i64,
    run_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DungeonView {
    dungeon_id: String,
    theme: String,
    /// `open` (today: entries accepted) or `closed`.
    status: &'static str,
    opens_at: String,
    closes_at: String,
    floors: usize,
    rooms_per_floor: usize,
    entry_fee: EntryFee,
    dungeon_wallet_address: String,
    entries: i64,
    /// Entry fees minus the rake, paid to the day's best score.
    prize_pool_raw: String,
    prize_pool_ui: f64,
    rake_percent: u32,
    best_scores: Vec<BestScore>,
}

async fn view(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    config: &Config,
    day: DungeonDay,
    salt: &str,
) -> Result<DungeonView, DungeonError> {
    let id = day.id();
    let (entries,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM dungeon_runs WHERE dungeon_id = $1")
            .bind(&id)
            .fetch_one(store.read())
            .await?;
    let best_scores: Vec<BestScore> = sqlx::query_as(
        "SELECT wallet, score, id AS run_id FROM dungeon_runs WHERE dungeon_id = $1
         ORDER BY score DESC, created_at, id LIMIT $2",
    )
    .bind(&id)
    .bind(TOP_IN_LIST)
    .fetch_all(store.read())
    .await?;
    let rake = config.dungeon_rake_percent;
    let pot = day::pot_raw(entries, rake);
    let open = day == DungeonDay::of(clock.now());
    Ok(DungeonView {
        theme: day.map(salt).theme,
        dungeon_id: id,
        status: if open { "open" } else { "closed" },
        opens_at: rfc3339(day.opens_at()),
        closes_at: rfc3339(day.closes_at()),
        floors: FLOORS,
        rooms_per_floor: ROOMS_PER_FLOOR,
        entry_fee: EntryFee {
            amount_ui: Usdc::from_raw(ENTRY_FEE_RAW as i64).ui(),
            amount_raw: ENTRY_FEE_RAW.to_string(),
            mint: chain.stablecoin_mint().to_owned(),
        },
        dungeon_wallet_address: chain.dungeon().address.to_string(),
        entries,
        prize_pool_raw: pot.to_string(),
        prize_pool_ui: Usdc::from_raw(pot).ui(),
        rake_percent: rake,
        best_scores,
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DungeonList {
    dungeons: Vec<DungeonView>,
}

/// Today's dungeon first, then the previous days.
pub(crate) async fn list(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    config: &Config,
) -> Result<DungeonList, DungeonError> {
    let salt = day::map_salt(store, sealer).await?;
    let today = DungeonDay::of(clock.now());
    let mut dungeons = Vec::with_capacity(RECENT_DAYS as usize);
    for back in 0..RECENT_DAYS {
        dungeons.push(view(store, clock, chain, config, today.days_before(back), &salt).await?);
    }
    Ok(DungeonList { dungeons })
}

pub(crate) async fn detail(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    config: &Config,
    dungeon_id: &str,
) -> Result<DungeonView, DungeonError> {
    let day = day::known(clock, dungeon_id)?;
    let salt = day::map_salt(store, sealer).await?;
    view(store, clock, chain, config, day, &salt).await
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BoardEntry {
    rank: usize,
    wallet: String,
    best_score: i64,
    deepest_floor: i64,
    cleared: bool,
    runs: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Leaderboard {
    dungeon_id: String,
    entries: Vec<BoardEntry>,
}

/// A wallet's line of the board as summed up by the database.
#[derive(sqlx::FromRow)]
struct BoardRow {
    wallet: String,
    best_score: i64,
    deepest_floor: i64,
    cleared: i64,
    runs: i64,
}

/// Per wallet: best score, deepest floor, whether any run cleared; best first.
pub(crate) async fn leaderboard(
    store: &Store,
    clock: &dyn Clock,
    dungeon_id: &str,
) -> Result<Leaderboard, DungeonError> {
    let day = day::known(clock, dungeon_id)?;
    let rows: Vec<BoardRow> = sqlx::query_as(
        "SELECT wallet, MAX(score) AS best_score, MAX(deepest_floor) AS deepest_floor,
                CAST(MAX(CASE WHEN status = 'cleared' THEN 1 ELSE 0 END) AS BIGINT) AS cleared,
                COUNT(*) AS runs
         FROM dungeon_runs WHERE dungeon_id = $1
         GROUP BY wallet ORDER BY MAX(score) DESC, MIN(created_at), wallet LIMIT $2",
    )
    .bind(day.id())
    .bind(BOARD_SIZE)
    .fetch_all(store.read())
    .await?;
    Ok(Leaderboard {
        dungeon_id: day.id(),
        entries: rows
            .into_iter()
            .enumerate()
            .map(|(i, row)| BoardEntry {
                rank: i + 1,
                wallet: row.wallet,
                best_score: row.best_score,
                deepest_floor: row.deepest_floor,
                cleared: row.cleared == 1,
                runs: row.runs,
            })
            .collect(),
    })
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunSummary {
    run_id: String,
    dungeon_id: String,
    class: String,
    wallet: String,
    /// `active`, `cleared`, `dead`, `exhausted` or `abandoned`.
    status: String,
    score: i64,
    deepest_floor: i64,
    turn_number: i64,
    created_at: String,
    last_action_at: String,
    ended_at: Option<String>,
    run_url: String,
}

impl RunSummary {
    fn of(config: &Config, row: &RunRow) -> Self {
        RunSummary {
            run_id: row.id.clone(),
            dungeon_id: row.dungeon_id.clone(),
            class: row.class.clone(),
            wallet: row.wallet.clone(),
            status: row.status.as_str().to_owned(),
            score: row.score,
            deepest_floor: row.deepest_floor,
            turn_number: row.turn_number,
            created_at: rfc3339(from_millis(row.created_at)),
            last_action_at: rfc3339(from_millis(row.last_action_at)),
            ended_at: row.ended_at.map(|at| rfc3339(from_millis(at))),
            run_url: RunUrls::of(config, &row.id).run,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WatchedEvent {
    seq: i64,
    event: String,
    data: Value,
    at: String,
}

/// Events on a run page unless `limit` says otherwise, and at most.
pub(crate) const RUN_PAGE_DEFAULT: i64 = 500;
pub(crate) const RUN_PAGE_MAX: i64 = 1000;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunPage {
    #[serde(flatten)]
    summary: RunSummary,
    /// The visible state now.
    state: Value,
    /// Stored events in order, after `afterSeq`: one page of the replay.
    events: Vec<WatchedEvent>,
    /// Where the next page starts (`?afterSeq=`), or `null` when this page ends the record.
    next_after_seq: Option<i64>,
}

/// The public run page: summary, current state and one page of the event record (a long run's
/// record is read page by page, so one request never carries an unbounded body).
pub(crate) async fn run_page(
    store: &Store,
    config: &Config,
    run_id: &str,
    after_seq: i64,
    limit: i64,
) -> Result<RunPage, DungeonError> {
    let row = store::load(store, run_id)
        .await?
        .ok_or_else(|| DungeonError::UnknownRun(run_id.to_owned()))?;
    let current = serde_json::to_value(store::game(store, &row).await?.view())
        .map_err(DungeonError::internal)?;
    // One more than asked tells whether another page follows.
    let mut page = store::events_after(store, run_id, after_seq, limit + 1).await?;
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next_after_seq = more.then(|| page.last().map(|event| event.seq)).flatten();
    let events = page
        .into_iter()
        .map(|event| WatchedEvent {
            seq: event.seq,
            event: event.kind,
            data: event.payload,
            at: rfc3339(from_millis(event.created_at)),
        })
        .collect();
    Ok(RunPage {
        summary: RunSummary::of(config, &row),
        state: current,
        events,
        next_after_seq,
    })
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountRuns {
    runs: Vec<RunSummary>,
}

/// The caller's runs, newest first.
pub(crate) async fn account_runs(
    store: &Store,
    config: &Config,
    account_id: &str,
) -> Result<AccountRuns, DungeonError> {
    let rows = store::list_for_account(store, account_id).await?;
    Ok(AccountRuns {
        runs: rows.iter().map(|row| RunSummary::of(config, row)).collect(),
    })
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Credential {
    run_id: String,
    registration_key: String,
    /// The key works only while this is `active`.
    status: String,
    turn_url: String,
    broadcast_url: String,
    watch_url: String,
    run_url: String,
    agent_skill_file: String,
}

/// The run's key again, for its owner only; anyone else is told the run does not exist.
pub(crate) async fn credential(
    store: &Store,
    sealer: &Sealer,
    config: &Config,
    run_id: &str,
    account_id: &str,
) -> Result<Credential, DungeonError> {
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT key_sealed, status FROM dungeon_runs WHERE id = $1 AND account_id = $2",
    )
    .bind(run_id)
    .bind(account_id)
    .fetch_optional(store.read())
    .await?;
    let Some((sealed, status)) = row else {
        return Err(DungeonError::UnknownRun(run_id.to_owned()));
    };
    let key = sealer.open_text(&sealed).map_err(DungeonError::internal)?;
    let row = store::load(store, run_id)
        .await?
        .ok_or_else(|| DungeonError::UnknownRun(run_id.to_owned()))?;
    let run = store::game(store, &row).await?;
    let view = run.view();
    let urls = RunUrls::of(config, run_id);
    Ok(Credential {
        agent_skill_file: super::entry::skill_file(
            config,
            run_id,
            &view.dungeon_id,
            &view.theme,
            run.class(),
        ),
        run_id: run_id.to_owned(),
        registration_key: key,
        status,
        turn_url: urls.turn,
        broadcast_url: urls.broadcast,
        watch_url: urls.watch,
        run_url: urls.run,
    })
}
