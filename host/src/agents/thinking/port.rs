//! The model port of an uploaded component's tick (`crucible:strategy/model@0.2.0`): the
//! sandbox hands each `model.complete` call here, and this side adds what only the host knows —
//! the agent's vendor and model, its personality as the system message, the operator's key and
//! the day's token budget — then asks through the same providers as the built-in classes. What
//! the calls cost and said becomes the tick's decision record.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use super::Providers;
use super::decisions::{DecidedBy, DecisionRecord};
use super::verdict::Verdict;
use super::why_of;
use crate::models::{Message, ModelError, ModelRequest};
use crate::sandbox::{ModelCall, ModelFailure, ModelPort, ModelReply, ModelRole};

/// Most tokens one answer may ask for: a component's own cap, within reason.
const MAX_ANSWER_TOKENS: u32 = 4_096;

/// What one tick's calls spent and said.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ModelUse {
    pub calls: u32,
    pub answered: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub latency_ms: u64,
    /// The last failure's kind and detail.
    pub failure: Option<(&'static str, String)>,
    /// The last call's conversation (its turns, one per line) and answer.
    pub prompt: Option<String>,
    pub prompt_hash: Option<String>,
    pub completion: Option<String>,
}

impl ModelUse {
    /// The decision of a tick whose component asked the model: `model` if any call was answered,
    /// else `rule` with the last failure as why. `None` when it never asked.
    pub(crate) fn record(&self, verdict: Verdict) -> Option<DecisionRecord> {
        if self.calls == 0 {
            return None;
        }
        let decided_by = if self.answered > 0 {
            DecidedBy::Model
        } else {
            DecidedBy::Rule
        };
        Some(DecisionRecord {
            decided_by,
            why: match decided_by {
                DecidedBy::Model => None,
                DecidedBy::Rule => self.failure.clone(),
            },
            verdict,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            latency_ms: (self.answered > 0).then_some(self.latency_ms),
            prompt_hash: self.prompt_hash.clone(),
            prompt: self.prompt.clone(),
            completion: self.completion.clone(),
        })
    }
}

/// One agent's port for one tick.
pub(crate) struct AgentPort {
    models: Providers,
    account_id: String,
    model_id: String,
    personality: String,
    use_: Mutex<(u64, ModelUse)>,
}

impl AgentPort {
    /// A port for `account_id`'s agent on `model_id` with `personality`, which may spend
    /// `tokens_left` tokens this tick.
    pub(crate) fn new(
        models: Providers,
        account_id: &str,
        model_id: &str,
        personality: &str,
        tokens_left: u64,
    ) -> Self {
        AgentPort {
            models,
            account_id: account_id.to_owned(),
            model_id: model_id.to_owned(),
            personality: personality.to_owned(),
            use_: Mutex::new((tokens_left, ModelUse::default())),
        }
    }

    /// What the tick's calls spent and said so far.
    pub(crate) fn usage(&self) -> ModelUse {
        self.lock().1.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, ModelUse)> {
        self.use_.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn ask(&self, call: ModelCall) -> Result<ModelReply, ModelError> {
        let request = request_of(&self.model_id, &self.personality, call)?;
        {
            let mut held = self.lock();
            held.1.calls += 1;
            held.1.prompt = Some(
                request
                    .messages
                    .iter()
                    .map(|m| format!("{}: {}", m.role.as_str(), m.content))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            held.1.prompt_hash = Some(super::prompt_hash(&self.model_id, &request));
            if held.0 == 0 {
                return Err(ModelError::BudgetExhausted);
            }
        }
        let completion = self.models.complete(&self.account_id, &request).await?;
        let tokens = completion.prompt_tokens + completion.completion_tokens;
        let latency_ms = completion.latency.as_millis() as u64;
        let reply = reply_of(&completion);
        let mut held = self.lock();
        held.0 = held.0.saturating_sub(tokens);
        let used = &mut held.1;
        used.answered += 1;
        used.prompt_tokens += completion.prompt_tokens;
        used.completion_tokens += completion.completion_tokens;
        used.latency_ms += latency_ms;
        used.completion = Some(completion.text);
        Ok(reply)
    }
}

/// A component's call as a request to `model_id` with `personality` as the system message.
pub(crate) fn request_of(
    model_id: &str,
    personality: &str,
    call: ModelCall,
) -> Result<ModelRequest, ModelError> {
    let Some((vendor, model)) = ModelRequest::split_model_id(model_id) else {
        return Err(ModelError::NoEndpoint(model_id.to_owned()));
    };
    let json_schema = match call.json_schema {
        None => None,
        Some(text) => Some(serde_json::from_str(&text).map_err(|error| {
            ModelError::Malformed(format!("the request's json-schema is not JSON: {error}"))
        })?),
    };
    Ok(ModelRequest {
        vendor: vendor.to_owned(),
        model: model.to_owned(),
        personality: personality.to_owned(),
        messages: call
            .messages
            .into_iter()
            .map(|(role, content)| match role {
                ModelRole::User => Message::user(content),
                ModelRole::Assistant => Message::assistant(content),
            })
            .collect(),
        max_tokens: call.max_tokens.clamp(1, MAX_ANSWER_TOKENS),
        temperature: call.temperature,
        json_schema,
    })
}

/// A completion as the component receives it.
pub(crate) fn reply_of(completion: &crate::models::Completion) -> ModelReply {
    ModelReply {
        text: completion.text.clone(),
        prompt_tokens: u32::try_from(completion.prompt_tokens).unwrap_or(u32::MAX),
        completion_tokens: u32::try_from(completion.completion_tokens).unwrap_or(u32::MAX),
        latency_ms: u32::try_from(completion.latency.as_millis()).unwrap_or(u32::MAX),
    }
}

impl ModelPort for AgentPort {
    fn complete(
        &self,
        call: ModelCall,
    ) -> Pin<Box<dyn Future<Output = Result<ModelReply, ModelFailure>> + Send + '_>> {
        Box::pin(async move {
            self.ask(call).await.map_err(|error| {
                self.lock().1.failure = Some((why_of(&error), error.to_string()));
                failure_of(error)
            })
        })
    }
}

/// A provider's error as the component sees it.
pub(crate) fn failure_of(error: ModelError) -> ModelFailure {
    match error {
        ModelError::NoEndpoint(_) => ModelFailure::NoEndpoint,
        ModelError::NoKey(_) => ModelFailure::NoKey,
        ModelError::BudgetExhausted => ModelFailure::BudgetExhausted,
        ModelError::Timeout => ModelFailure::Timeout,
        ModelError::Refused { status, reason } => ModelFailure::Refused { status, reason },
        ModelError::Malformed(detail) => ModelFailure::Malformed(detail),
        ModelError::KeyUnavailable => ModelFailure::Refused {
            status: 0,
            reason: "the stored key could not be read".into(),
        },
    }
}
