//! The demo operator of a fresh embedded install: one live agent per class, funded on the
//! simnet and entered in the Demo Free-for-All, so the README's first command shows a board
//! that moves, trades with their reasons and equity that changes (docs/operations.md, "Demo
//! data").
//!
//! Every step is idempotent and checks what exists first, so a start that was cut short is
//! completed by the next one and nothing is created or paid twice. Only the embedded simnet
//! gets it: the caller checks the configuration, and [`seed`] refuses anything but the simnet.

use serde_json::json;

use super::entry::{self, EntryError};
use super::new_agent::{self, NewAgent};
use super::{AgentStatus, service};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::config::Config;
use crate::crypto::Sealer;
use crate::crypto::new_id;
use crate::db::Store;
use crate::events::Bus;
use crate::sandbox::BUILTIN_CLASSES;
use crate::tournaments::registration::RegistrationError;

/// The demo operator's e-mail (a reserved domain: nobody can receive mail there, and the
/// account has no password, so nobody can sign in as it).
pub(crate) const DEMO_EMAIL: &str = "demo-operator@crucible.invalid";
/// What each demo wallet starts with: SOL for fees and some to sell, and USDC to buy with.
const DEMO_LAMPORTS: u64 = 2_000_000_000;
const DEMO_USDC_RAW: u64 = 1_000_000_000;
/// The demo agents' own time scale: an hour of market a second, so their hourly class rules,
/// which trade a few times a market day, trade several times a minute of wall time.
const DEMO_TIME_SCALE: i64 = 3_600;

/// Seed (or finish seeding) the demo operator and its agents, entered in `tournament_id`.
/// Returns how many agents were started by this call.
pub(crate) async fn seed(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    chain: &Chain,
    sealer: &Sealer,
    config: &Config,
    agents: &std::sync::Arc<super::Runtime>,
    tournament_id: &str,
) -> anyhow::Result<usize> {
    let Some(simnet) = chain.simnet() else {
        anyhow::bail!(
            "demo agents are funded on the embedded simnet, which this node does not run"
        );
    };
    let account_id = demo_account(store, clock).await?;
    let mut started = 0;
    for class in BUILTIN_CLASSES {
        let agent = match demo_agent_of(store, &account_id, class).await? {
            Some(agent) => agent,
            None => {
                service::create(
                    store,
                    clock,
                    events,
                    sealer,
                    config,
                    agents,
                    &account_id,
                    demo_agent(class)?,
                )
                .await?
            }
        };
        sqlx::query("UPDATE agents SET time_scale = $1 WHERE id = $2 AND time_scale IS NULL")
            .bind(DEMO_TIME_SCALE)
            .bind(&agent.id)
            .execute(store.write())
            .await?;
        if agent.status() == AgentStatus::Unfunded {
            let wallet = agent.wallet_address.parse().map_err(|error| {
                anyhow::anyhow!("demo agent {} has no valid wallet: {error}", agent.id)
            })?;
            if simnet.balance(&wallet).await? == 0 {
                simnet
                    .airdrop(&wallet, DEMO_LAMPORTS, DEMO_USDC_RAW)
                    .await?;
            }
        }
        if agent.status() != AgentStatus::Active {
            service::start(store, clock, chain, config, &account_id, &agent.id).await?;
            started += 1;
        }
        match entry::enter(
            store,
            clock,
            events,
            chain,
            sealer,
            &account_id,
            &agent.id,
            tournament_id,
            None,
        )
        .await
        {
            // Entered now, or by an earlier start: nothing more to do.
            Ok(_) | Err(EntryError::Registration(RegistrationError::AlreadyRegistered(_))) => {}
            Err(error) => {
                anyhow::bail!("demo agent {class} cannot enter the demo tournament: {error}")
            }
        }
    }
    if started > 0 {
        tracing::info!(started, "seeded the demo operator's agents");
    }
    Ok(started)
}

/// The demo operator's account, created on first use.
async fn demo_account(store: &Store, clock: &dyn Clock) -> anyhow::Result<String> {
    let found: Option<(String,)> = sqlx::query_as("SELECT id FROM accounts WHERE email = $1")
        .bind(DEMO_EMAIL)
        .fetch_optional(store.read())
        .await?;
    if let Some((id,)) = found {
        return Ok(id);
    }
    let id = new_id("acc");
    let now = to_millis(clock.now());
    sqlx::query(
        "INSERT INTO accounts (id, email, display_name, terms_accepted_at, privacy_accepted_at,
                               created_at, updated_at)
         VALUES ($1, $2, 'Demo operator', $3, $3, $3, $3)",
    )
    .bind(&id)
    .bind(DEMO_EMAIL)
    .bind(now)
    .execute(store.write())
    .await?;
    Ok(id)
}

fn username(class: &str) -> String {
    format!("demo_{class}")
}

/// The demo operator's agent of `class`, if it was created already.
async fn demo_agent_of(
    store: &Store,
    account_id: &str,
    class: &str,
) -> anyhow::Result<Option<super::Agent>> {
    let found: Option<(String,)> =
        sqlx::query_as("SELECT id FROM agents WHERE account_id = $1 AND username_key = $2")
            .bind(account_id)
            .bind(username(class))
            .fetch_optional(store.read())
            .await?;
    match found {
        Some((id,)) => Ok(service::find(store, account_id, &id).await?),
        None => Ok(None),
    }
}

/// A live agent of `class` on hourly candles, through the same rules as the API's create.
fn demo_agent(class: &str) -> anyhow::Result<NewAgent> {
    let mut name = class.to_owned();
    if let Some(first) = name.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    let body = json!({
        "name": format!("Demo {name}"),
        "username": username(class),
        "class": class,
        "modelId": "demo/class-rule",
        "personality": format!("The demo {class}: trades by its class's built-in rule."),
        "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                     "timeInterval": "1h"},
        "isPaperTrading": false,
    });
    new_agent::parse(&body, |_| true).map_err(|invalid| {
        anyhow::anyhow!(
            "the demo {class} breaks the rule of `{}`: {}",
            invalid.field,
            invalid.message
        )
    })
}
