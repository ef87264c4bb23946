//! Agents that think (`docs/agents.md`): each tick the class rule computes its proposal in the
//! sandbox as always, then, when the agent's model can be asked, the model decides — once per
//! tick, briefed by [`briefing`] and answering the object [`verdict::read_answer`] accepts —
//! and its verdict becomes the tick's orders. When the model cannot be asked (no endpoint, no
//! key, budget spent) or fails (timeout, refusal, 429 back-off, an answer that is not the
//! object), the rule's orders stand and the decision records why. Every decision is stored
//! with its tick ([`decisions`]).
//!
//! Where answers come from is an [`Oracle`]: the server's providers with the operator's key
//! ([`ProviderOracle`]), or in backtests a recording or a replay of one.

mod briefing;
pub(crate) mod decisions;
pub(crate) mod oracles;
mod port;
mod readiness;
mod verdict;

pub(crate) use briefing::{Briefing, DECISIONS_SHOWN, PastDecision};
pub(crate) use decisions::{DecidedBy, DecisionRecord, DecisionView};
pub(crate) use port::{AgentPort, ModelUse, failure_of, reply_of, request_of};
pub(crate) use readiness::{ModelAccess, ModelView};
pub(crate) use verdict::{Action, Verdict};

use std::future::Future;
use std::pin::Pin;

use crate::models::{Completion, Message, ModelError, ModelRequest};
use crate::paper::{OrderRequest, PortfolioView};

/// Tokens an agent may spend per UTC day unless it says otherwise (`modelBudget.tokensPerDay`).
pub(crate) const DEFAULT_TOKENS_PER_DAY: u64 = 200_000;

/// Where a model's answers come from.
pub(crate) trait Oracle: Send + Sync {
    /// One completion of `request`, on behalf of `account_id`.
    fn ask<'a>(
        &'a self,
        account_id: &'a str,
        request: &'a ModelRequest,
    ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>>;

    /// Whether this node serves `vendor` at all. Asked before the briefing is written, so an
    /// agent whose model nobody serves here costs its tick nothing more than the rule.
    fn serves(&self, _vendor: &str) -> bool {
        true
    }
}

/// What asking an account's model touches: the model keys' rows, the sealer that opens them,
/// and the providers.
#[derive(Clone)]
pub(crate) struct Providers {
    pub store: crate::db::Store,
    pub sealer: std::sync::Arc<crate::crypto::Sealer>,
    pub models: std::sync::Arc<crate::models::Models>,
}

impl Providers {
    pub(crate) async fn complete(
        &self,
        account_id: &str,
        request: &ModelRequest,
    ) -> Result<Completion, ModelError> {
        crate::models::complete_for(&self.store, &self.sealer, &self.models, account_id, request)
            .await
    }
}

/// The server's providers, with the account's own key or the host's default.
pub(crate) struct ProviderOracle<'s>(pub &'s Providers);

impl Oracle for ProviderOracle<'_> {
    fn ask<'a>(
        &'a self,
        account_id: &'a str,
        request: &'a ModelRequest,
    ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>> {
        Box::pin(self.0.complete(account_id, request))
    }

    fn serves(&self, vendor: &str) -> bool {
        self.0.models.endpoints().get(vendor).is_some()
    }
}

/// One tick put to the model.
#[derive(Debug, Clone)]
pub(crate) struct Question<'a> {
    pub account_id: &'a str,
    pub model_id: &'a str,
    pub personality: &'a str,
    /// Tokens the agent may still spend today.
    pub tokens_left: u64,
    pub briefing: Briefing<'a>,
    /// The class rule's orders, which stand when the model does not decide.
    pub rule_orders: &'a [OrderRequest],
}

/// A tick's decision and the orders it places.
#[derive(Debug, Clone)]
pub(crate) struct Thought {
    pub orders: Vec<OrderRequest>,
    pub record: DecisionRecord,
}

/// The short name of why the rule decided after `error`.
pub(crate) fn why_of(error: &ModelError) -> &'static str {
    match error {
        ModelError::NoEndpoint(_) => "no_endpoint",
        ModelError::NoKey(_) => "no_key",
        ModelError::BudgetExhausted => "budget_exhausted",
        ModelError::Timeout => "timeout",
        ModelError::Refused { .. } => "refused",
        ModelError::Malformed(_) => "malformed",
        ModelError::KeyUnavailable => "key_unavailable",
    }
}

/// SHA-256 (hex) of what the model is asked: model, system message and turns, as canonical JSON.
pub(crate) fn prompt_hash(model_id: &str, request: &ModelRequest) -> String {
    let turns: Vec<_> = request
        .messages
        .iter()
        .map(|m| [m.role.as_str(), m.content.as_str()])
        .collect();
    let canonical = serde_json::json!([model_id, request.personality, turns]).to_string();
    crate::crypto::sha256_hex(canonical)
}

/// Decide a tick: ask the model if it may be asked, else (or if it fails) keep the rule's orders.
pub(crate) async fn think(oracle: &dyn Oracle, question: Question<'_>) -> Thought {
    let portfolio = question.briefing.portfolio;
    let proposal = question.briefing.proposal.clone();
    let rule = |why: &'static str, detail: String, record: DecisionRecord| Thought {
        orders: question.rule_orders.to_vec(),
        record: DecisionRecord {
            decided_by: DecidedBy::Rule,
            why: Some((why, detail)),
            verdict: proposal.clone(),
            ..record
        },
    };
    let empty = DecisionRecord {
        decided_by: DecidedBy::Rule,
        why: None,
        verdict: proposal.clone(),
        prompt_tokens: 0,
        completion_tokens: 0,
        latency_ms: None,
        prompt_hash: None,
        prompt: None,
        completion: None,
    };
    let Some((vendor, model)) = ModelRequest::split_model_id(question.model_id) else {
        let error = ModelError::NoEndpoint(question.model_id.to_owned());
        return rule(why_of(&error), error.to_string(), empty);
    };
    if !oracle.serves(vendor) {
        // Nothing would be sent: no briefing is written (or stored) for it.
        let error = ModelError::NoEndpoint(vendor.to_owned());
        return rule(why_of(&error), error.to_string(), empty);
    }
    if question.tokens_left == 0 {
        let error = ModelError::BudgetExhausted;
        return rule(why_of(&error), error.to_string(), empty);
    }
    let message = question.briefing.user_message();
    let request = ModelRequest {
        vendor: vendor.to_owned(),
        model: model.to_owned(),
        personality: question.personality.to_owned(),
        messages: vec![Message::user(message.clone())],
        max_tokens: briefing::MAX_ANSWER_TOKENS,
        temperature: briefing::TEMPERATURE,
        json_schema: Some(briefing::answer_schema()),
    };
    let asked = DecisionRecord {
        prompt_hash: Some(prompt_hash(question.model_id, &request)),
        prompt: Some(message),
        ..empty
    };
    let completion = match oracle.ask(question.account_id, &request).await {
        Ok(completion) => completion,
        Err(error) => return rule(why_of(&error), error.to_string(), asked),
    };
    let answered = DecisionRecord {
        prompt_tokens: completion.prompt_tokens,
        completion_tokens: completion.completion_tokens,
        latency_ms: Some(completion.latency.as_millis() as u64),
        completion: Some(completion.text.clone()),
        ..asked
    };
    match verdict::read_answer(&completion.text) {
        Ok(verdict) => Thought {
            orders: verdict::orders_of(&verdict, &portfolio),
            record: DecisionRecord {
                decided_by: DecidedBy::Model,
                verdict,
                ..answered
            },
        },
        Err(detail) => rule("malformed", detail, answered),
    }
}

/// The rule's verdict on its own orders (what the proposal in a briefing says).
pub(crate) fn proposal_of(
    orders: &[OrderRequest],
    portfolio: &PortfolioView,
    price: f64,
) -> Verdict {
    verdict::of_orders(orders, portfolio, price)
}

/// The UTC day `at_ms` falls on, as budgets count it (`YYYY-MM-DD`).
pub(crate) fn budget_day(at_ms: i64) -> String {
    use chrono::Datelike as _;
    let date = crate::clock::from_millis(at_ms).date_naive();
    format!("{:04}-{:02}-{:02}", date.year(), date.month(), date.day())
}

/// An agent's token budget as its row keeps it: its own daily budget (if it set one) and the
/// tokens counted on the UTC day `day`. The one reading of those columns, for ticks and views.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenBudget<'a> {
    pub per_day: Option<i64>,
    pub day: Option<&'a str>,
    pub used: i64,
}

impl TokenBudget<'_> {
    /// Tokens the agent may spend per day.
    pub(crate) fn per_day(&self) -> u64 {
        self.per_day
            .map_or(DEFAULT_TOKENS_PER_DAY, |b| b.max(0) as u64)
    }

    /// Tokens spent on `today` (a count kept for another day is yesterday's).
    pub(crate) fn spent_on(&self, today: &str) -> u64 {
        if self.day == Some(today) {
            self.used.max(0) as u64
        } else {
            0
        }
    }

    /// Tokens left on `today`.
    pub(crate) fn left_on(&self, today: &str) -> u64 {
        self.per_day().saturating_sub(self.spent_on(today))
    }
}
