//! The agent's language model as the sandbox sees it: a port the host implements
//! ([`ModelPort`]), and the per-tick session behind `crucible:strategy/model.complete`.
//!
//! The sandbox knows nothing of providers, keys, budgets in tokens or HTTP: it hands the guest's
//! request to the port it was given for this tick and the answer back to the guest. What it does
//! own is the per-tick call limit (`SandboxConfig::max_model_calls_per_tick`), the count of calls
//! that reached the port (`TickOutcome::model_calls`) and the time the tick spent waiting, which
//! is not charged to the tick's wall-time guard (see `tick_async`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::tick::TickState;

/// Who wrote a turn of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelRole {
    /// The guest's side.
    User,
    /// The model's earlier answers.
    Assistant,
}

/// One `model.complete` call of a guest. The host adds the agent's personality as the system
/// message before `messages` (see `wit/strategy.wit`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCall {
    /// The conversation, oldest first.
    pub messages: Vec<(ModelRole, String)>,
    /// Longest answer, tokens.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// A JSON schema (JSON text) the answer must follow.
    pub json_schema: Option<String>,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// The answer.
    pub text: String,
    /// Tokens of the prompt, as the provider counted them.
    pub prompt_tokens: u32,
    /// Tokens of the answer.
    pub completion_tokens: u32,
    /// How long the provider took.
    pub latency_ms: u32,
}

/// Why a call got no answer; each reaches the guest as the `model-error` case of the same name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelFailure {
    /// The agent's vendor has no endpoint configured.
    #[error("no endpoint for the agent's model vendor")]
    NoEndpoint,
    /// The agent's vendor has no key.
    #[error("no key for the agent's model vendor")]
    NoKey,
    /// The agent's token budget (or the tick's call limit) is spent.
    #[error("the model budget is spent")]
    BudgetExhausted,
    /// No answer in time.
    #[error("the model did not answer in time")]
    Timeout,
    /// The provider answered with an error.
    #[error("the provider refused the request ({status}): {reason}")]
    Refused {
        /// Its HTTP status.
        status: u16,
        /// Its reason, as given.
        reason: String,
    },
    /// The provider's answer could not be read.
    #[error("the provider's answer could not be read: {0}")]
    Malformed(String),
}

/// What the host implements to answer the model calls of one agent's tick: it knows the agent,
/// its vendor, key and token budget; the sandbox hands it calls and nothing else.
///
/// The future is polled on the tokio runtime that runs `Sandbox::tick_async`; while it is
/// pending the tick holds no thread.
pub trait ModelPort: Send + Sync + 'static {
    /// Answer one call.
    fn complete(
        &self,
        call: ModelCall,
    ) -> Pin<Box<dyn Future<Output = Result<ModelReply, ModelFailure>> + Send + '_>>;
}

/// The model calls of one tick: the port (if any), the limit, what was asked and waited.
pub(super) struct ModelSession {
    port: Option<Arc<dyn ModelPort>>,
    limit: u32,
    /// Calls the guest made.
    asked: u32,
    /// Calls that reached the port.
    pub(super) reached: u32,
    /// Time spent waiting for the port, which the wall-time guard gives back.
    pub(super) waited: Duration,
}

impl ModelSession {
    pub(super) fn new(port: Option<Arc<dyn ModelPort>>, limit: u32) -> Self {
        ModelSession {
            port,
            limit,
            asked: 0,
            reached: 0,
            waited: Duration::ZERO,
        }
    }

    /// One call: no port answers `no-endpoint`, a call past the limit `budget-exhausted`, both
    /// without reaching a model.
    async fn ask(&mut self, call: ModelCall) -> Result<ModelReply, ModelFailure> {
        let Some(port) = self.port.clone() else {
            return Err(ModelFailure::NoEndpoint);
        };
        self.asked = self.asked.saturating_add(1);
        if self.asked > self.limit {
            return Err(ModelFailure::BudgetExhausted);
        }
        self.reached += 1;
        let started = Instant::now();
        let reply = port.complete(call).await;
        self.waited += started.elapsed();
        reply
    }
}

/// `model.complete` of a contract version (0.2.0 and 0.3.0 share its types).
macro_rules! model_host {
    ($v:ident) => {
        const _: () = {
            use super::wit::$v::crucible::strategy::model as w;

            impl w::Host for TickState {
                async fn complete(
                    &mut self,
                    request: w::Request,
                ) -> wasmtime::Result<Result<w::Completion, w::ModelError>> {
                    let call = ModelCall {
                        messages: request
                            .messages
                            .into_iter()
                            .map(|m| {
                                let role = match m.role {
                                    w::Role::User => ModelRole::User,
                                    w::Role::Assistant => ModelRole::Assistant,
                                };
                                (role, m.content)
                            })
                            .collect(),
                        max_tokens: request.max_tokens,
                        temperature: request.temperature,
                        json_schema: request.json_schema,
                    };
                    let answer = self.model.ask(call).await;
                    Ok(answer
                        .map(|reply| w::Completion {
                            text: reply.text,
                            prompt_tokens: reply.prompt_tokens,
                            completion_tokens: reply.completion_tokens,
                            latency_ms: reply.latency_ms,
                        })
                        .map_err(|failure| match failure {
                            ModelFailure::NoEndpoint => w::ModelError::NoEndpoint,
                            ModelFailure::NoKey => w::ModelError::NoKey,
                            ModelFailure::BudgetExhausted => w::ModelError::BudgetExhausted,
                            ModelFailure::Timeout => w::ModelError::Timeout,
                            ModelFailure::Refused { status, reason } => {
                                w::ModelError::Refused(w::Refusal { status, reason })
                            }
                            ModelFailure::Malformed(detail) => w::ModelError::Malformed(detail),
                        }))
                }
            }
        };
    };
}

model_host!(v0_2);
model_host!(v0_3);
