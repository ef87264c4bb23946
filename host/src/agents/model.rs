//! An agent as stored and as shown.

use serde::Serialize;

use super::thinking::{ModelAccess, ModelView};
use crate::clock::{from_millis, rfc3339};
use crate::paper::{Ledger, UNIT};

/// Lifecycle of an agent: `unfunded` → `idle` → `active` ⇄ `idle`; `error` after
/// repeated strategy faults (start clears it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AgentStatus {
    Unfunded,
    Idle,
    Active,
    Error,
}

impl AgentStatus {
    pub(crate) fn parse(stored: &str) -> AgentStatus {
        match stored {
            "idle" => AgentStatus::Idle,
            "active" => AgentStatus::Active,
            "error" => AgentStatus::Error,
            _ => AgentStatus::Unfunded,
        }
    }
}

/// Paper capital every agent starts with, whole quote tokens.
pub(crate) const PAPER_CAPITAL: f64 = 10_000.0;

/// The columns of [`Agent`], in order.
pub(super) const COLUMNS: &str = "id, account_id, name, username, class, model_id, strategy_type, strategy_component, \
     base_token, quote_token, time_interval, max_allocation, personality, is_paper_trading, avatar_url, \
     wallet_address, status, status_reason, ledger, ticks, faults, last_fault, \
     last_tick_at, last_price, started_at, stopped_at, created_at, live_sol_lamports, live_usdc_raw, \
     live_equity, live_initial_equity, refused_orders, last_refusal, model_tokens_per_day, \
     model_tokens_day, model_tokens_used, model_last_error, strategy_params";

/// An agent row (without its strategy state blob, which only ticks read).
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Agent {
    pub id: String,
    pub account_id: String,
    pub name: String,
    pub username: String,
    pub class: String,
    pub model_id: String,
    pub strategy_type: String,
    pub strategy_component: Option<String>,
    pub base_token: String,
    pub quote_token: String,
    pub time_interval: String,
    pub max_allocation: f64,
    pub personality: String,
    pub is_paper_trading: i64,
    pub avatar_url: Option<String>,
    pub wallet_address: String,
    pub status: String,
    pub status_reason: Option<String>,
    pub ledger: String,
    pub ticks: i64,
    pub faults: i64,
    pub last_fault: Option<String>,
    pub last_tick_at: Option<i64>,
    pub last_price: Option<f64>,
    pub started_at: Option<i64>,
    pub stopped_at: Option<i64>,
    pub created_at: i64,
    pub live_sol_lamports: Option<i64>,
    pub live_usdc_raw: Option<i64>,
    pub live_equity: Option<f64>,
    pub live_initial_equity: Option<f64>,
    pub refused_orders: i64,
    pub last_refusal: Option<String>,
    pub model_tokens_per_day: Option<i64>,
    pub model_tokens_day: Option<String>,
    pub model_tokens_used: i64,
    pub model_last_error: Option<String>,
    pub strategy_params: Option<String>,
}

impl Agent {
    pub(crate) fn status(&self) -> AgentStatus {
        AgentStatus::parse(&self.status)
    }

    /// Whether the agent trades from its wallet on chain rather than on paper.
    pub(crate) fn is_live(&self) -> bool {
        self.is_paper_trading == 0
    }

    pub(crate) fn ledger(&self) -> anyhow::Result<Ledger> {
        Ok(serde_json::from_str(&self.ledger)?)
    }

    /// The agent as its operator sees it; `access` rates its model (one read per account).
    pub(crate) fn view(&self, access: &ModelAccess) -> AgentView {
        let at = |millis: Option<i64>| millis.map(|ms| rfc3339(from_millis(ms)));
        let live = self.is_live().then(|| {
            let equity = self.live_equity.unwrap_or(0.0);
            LiveView {
                sol: self.live_sol_lamports.unwrap_or(0) as f64 / 1e9,
                usdc: self.live_usdc_raw.unwrap_or(0) as f64 / UNIT,
                equity,
                initial_equity: self.live_initial_equity,
                pnl: self.live_initial_equity.map(|initial| equity - initial),
                refused_orders: self.refused_orders,
                last_refusal: self.last_refusal.clone(),
            }
        });
        let paper = self
            .ledger()
            .ok()
            .filter(|_| !self.is_live())
            .map(|ledger| {
                let price = self.last_price.unwrap_or(0.0);
                let view = ledger.view(price);
                PaperView {
                    equity: view.equity,
                    base: view.base,
                    quote: view.quote,
                    total_trades: ledger.trades,
                    price: self.last_price,
                    refused_orders: self.refused_orders,
                    last_refusal: self.last_refusal.clone(),
                }
            });
        AgentView {
            agent_id: self.id.clone(),
            name: self.name.clone(),
            username: self.username.clone(),
            class: self.class.clone(),
            model_id: self.model_id.clone(),
            model: access.rate(self),
            status: self.status(),
            status_reason: self.status_reason.clone(),
            wallet_address: self.wallet_address.clone(),
            strategy: StrategyView {
                kind: self.strategy_type.clone(),
                token_pair: TokenPair {
                    base: self.base_token.clone(),
                    quote: self.quote_token.clone(),
                },
                time_interval: self.time_interval.clone(),
                max_allocation: self.max_allocation,
                params: super::params::stored(self.strategy_params.as_deref()),
            },
            personality: self.personality.clone(),
            is_paper_trading: self.is_paper_trading != 0,
            avatar_url: self.avatar_url.clone(),
            paper,
            live,
            ticks: self.ticks,
            faults: self.faults,
            last_fault: self.last_fault.clone(),
            last_tick_at: at(self.last_tick_at),
            started_at: at(self.started_at),
            stopped_at: at(self.stopped_at),
            created_at: rfc3339(from_millis(self.created_at)),
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentView {
    pub agent_id: String,
    pub name: String,
    pub username: String,
    pub class: String,
    pub model_id: String,
    /// Whether the model can be asked (`ready`) or why not, and today's tokens.
    pub model: ModelView,
    pub status: AgentStatus,
    /// Why the agent is in `error` (the last fault), or what it waits for.
    pub status_reason: Option<String>,
    pub wallet_address: String,
    pub strategy: StrategyView,
    pub personality: String,
    pub is_paper_trading: bool,
    pub avatar_url: Option<String>,
    /// The paper account at the last tick's price.
    pub paper: Option<PaperView>,
    /// A live agent's wallet as last read on chain, valued at the pool price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveView>,
    pub ticks: i64,
    pub faults: i64,
    pub last_fault: Option<String>,
    pub last_tick_at: Option<String>,
    pub started_at: Option<String>,
    pub stopped_at: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AgentStrategy)]
pub(crate) struct StrategyView {
    #[serde(rename = "type")]
    pub kind: String,
    pub token_pair: TokenPair,
    pub time_interval: String,
    pub max_allocation: f64,
    /// The parameter values chosen at creation (`strategy.params`); the strategy's declared
    /// defaults apply to the parameters not named here.
    #[schema(value_type = Object)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct TokenPair {
    pub base: String,
    pub quote: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PaperView {
    pub equity: f64,
    pub base: f64,
    pub quote: f64,
    pub total_trades: u64,
    pub price: Option<f64>,
    /// Orders the paper ledger refused (beyond `maxAllocation`, not enough quote, nothing to
    /// sell, dust) and the last reason: not faults, so they never trip the circuit breaker.
    pub refused_orders: i64,
    pub last_refusal: Option<String>,
}

/// A live agent's wallet (whole tokens) and value in USDC; `pnl` against its first value.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LiveView {
    pub sol: f64,
    pub usdc: f64,
    pub equity: f64,
    pub initial_equity: Option<f64>,
    pub pnl: Option<f64>,
    /// Orders refused (sizing, fee reserve, or by the chain) and the last reason.
    pub refused_orders: i64,
    pub last_refusal: Option<String>,
}
