//! Whether an agent's model can be asked, as its view says (`model.status`): the host must have
//! an endpoint for the vendor, the operator (or the host) a key for it, the agent tokens left
//! today, and its last call must not have failed.

use std::collections::HashSet;

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::Clock;
use crate::db::Store;
use crate::models::ModelRequest;
use crate::models::Models;

/// What the view needs to know of the host and the account to rate an agent's model.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelAccess {
    /// Vendors the host has an endpoint for, and whether each needs a key.
    endpoints: Vec<(String, bool)>,
    /// Vendors with a key: the account's own, or the host's default.
    keyed: HashSet<String>,
    /// The UTC day tokens are counted on now.
    today: String,
}

impl ModelAccess {
    /// Read the account's keys (names only) once, for all of its agents shown together.
    pub(crate) async fn of_account(
        store: &Store,
        clock: &dyn Clock,
        models: &Models,
        account_id: &str,
    ) -> sqlx::Result<Self> {
        let own: Vec<(String,)> =
            sqlx::query_as("SELECT vendor FROM model_keys WHERE account_id = $1")
                .bind(account_id)
                .fetch_all(store.read())
                .await?;
        let endpoints = models.endpoints();
        let mut keyed: HashSet<String> = own.into_iter().map(|(vendor,)| vendor).collect();
        let mut known = Vec::new();
        for vendor in endpoints.vendors() {
            if models.default_key(vendor).is_some() {
                keyed.insert(vendor.to_owned());
            }
            let needs_key = endpoints.get(vendor).is_some_and(|e| e.needs_key);
            known.push((vendor.to_owned(), needs_key));
        }
        Ok(ModelAccess {
            endpoints: known,
            keyed,
            today: super::budget_day(crate::clock::to_millis(clock.now())),
        })
    }

    /// The agent's model as its view shows it.
    pub(crate) fn rate(&self, agent: &crate::agents::Agent) -> ModelView {
        let (vendor, name) = ModelRequest::split_model_id(&agent.model_id)
            .map_or((agent.model_id.as_str(), ""), |(v, m)| (v, m));
        let budget = super::TokenBudget {
            per_day: agent.model_tokens_per_day,
            day: agent.model_tokens_day.as_deref(),
            used: agent.model_tokens_used,
        };
        let (tokens_per_day, tokens_today) = (budget.per_day(), budget.spent_on(&self.today));
        let endpoint = self.endpoints.iter().find(|(v, _)| v == vendor);
        let status = match endpoint {
            None => ModelStatus::NoEndpoint,
            Some((_, true)) if !self.keyed.contains(vendor) => ModelStatus::NoKey,
            Some(_) if tokens_today >= tokens_per_day => ModelStatus::BudgetExhausted,
            Some(_) if agent.model_last_error.is_some() => ModelStatus::Failing,
            Some(_) => ModelStatus::Ready,
        };
        ModelView {
            vendor: vendor.to_owned(),
            name: name.to_owned(),
            status,
            last_error: agent.model_last_error.clone(),
            tokens_today,
            tokens_per_day,
        }
    }
}

/// Whether the agent's model is asked on its next tick, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ModelStatus {
    Ready,
    NoEndpoint,
    NoKey,
    BudgetExhausted,
    /// The last call failed (timeout, refusal, an answer that was not a decision); it is
    /// still asked next tick.
    Failing,
}

/// An agent's model, as the agent's view shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelView {
    pub vendor: String,
    pub name: String,
    pub status: ModelStatus,
    /// The last call's failure, cleared by the next answer.
    pub last_error: Option<String>,
    /// Tokens spent today (UTC) against `tokensPerDay`.
    pub tokens_today: u64,
    pub tokens_per_day: u64,
}
