//! Ask the agent's language model (`crucible:strategy/model`, contract 0.2.0).
//!
//! The host sends the agent's personality as the system message, then your messages, to the
//! model the operator chose for the agent (its `model_id`), with the operator's key. A tick may
//! make a few calls (4 for uploaded strategies); they count against the agent's daily token
//! budget. Waiting for the answer costs the tick neither fuel nor wall time. Every way a call
//! can fail is a [`ModelError`] your strategy decides what to do with — typically: no trade.
//!
//! ```
//! #![cfg_attr(target_arch = "wasm32", no_std)]
//!
//! use crucible_sdk::model::{ask_model, ModelError, ModelRequest};
//! use crucible_sdk::prelude::*;
//!
//! pub struct Oracle;
//!
//! impl Strategy for Oracle {
//!     type State = ();
//!     fn on_tick(ctx: &Context, _state: &mut ()) -> Result<Vec<Order>, String> {
//!         let last = ctx.candles.last_close().unwrap_or_default();
//!         let request = ModelRequest::new(format!(
//!             "SOL closed at {last}. Answer `buy` or `wait`, nothing else."
//!         ))
//!         .max_tokens(4);
//!         match ask_model(request) {
//!             Ok(answer) if answer.text.trim() == "buy" && !ctx.in_position() => {
//!                 Ok(vec![Order::buy(0.25).because("the model said buy")])
//!             }
//!             Ok(_) => Ok(vec![]),
//!             // Out of calls or budget for today: sit this tick out.
//!             Err(ModelError::BudgetExhausted) => Ok(vec![]),
//!             Err(other) => {
//!                 log(Level::Warn, &format!("model error: {other}"));
//!                 Ok(vec![])
//!             }
//!         }
//!     }
//! }
//!
//! crucible_sdk::export!(Oracle);
//! ```
//!
//! A component that never calls [`ask_model`] does not import `model` at all, and ticks on the
//! host's fast path like any other.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

/// Who wrote a turn of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// What to ask: the conversation after the system message (the host adds the personality).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// Oldest first.
    pub messages: Vec<Message>,
    /// Most tokens the answer may use.
    pub max_tokens: u32,
    /// Sampling temperature; 0 for the most deterministic answers the provider gives.
    pub temperature: f32,
    /// A JSON schema (as JSON text) the answer must follow; the answer's text is then the JSON.
    pub json_schema: Option<String>,
}

impl ModelRequest {
    /// One user message; 256 tokens at most, temperature 0, free text.
    pub fn new(prompt: impl Into<String>) -> Self {
        ModelRequest {
            messages: vec![Message::user(prompt)],
            max_tokens: 256,
            temperature: 0.0,
            json_schema: None,
        }
    }

    /// A whole conversation (oldest first).
    pub fn conversation(messages: Vec<Message>) -> Self {
        ModelRequest {
            messages,
            ..ModelRequest::new("")
        }
    }

    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = temperature;
        self
    }

    /// Ask for JSON that follows `schema` (JSON text).
    pub fn json_schema(mut self, schema: impl Into<String>) -> Self {
        self.json_schema = Some(schema.into());
        self
    }
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// From sending the request to reading the whole answer, milliseconds.
    pub latency_ms: u32,
}

/// Why a call got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    /// The host has no endpoint for the agent's vendor (and every call outside a component).
    NoEndpoint,
    /// Neither the operator nor the host has a key for the vendor.
    NoKey,
    /// The agent's daily token budget or this tick's call limit is spent.
    BudgetExhausted,
    /// The provider did not answer in time.
    Timeout,
    /// The provider answered with an error: its HTTP status and a short reason.
    Refused { status: u16, reason: String },
    /// The provider's answer could not be read.
    Malformed(String),
}

impl fmt::Display for ModelError {
    /// The WIT case name (`no-key`), with the details of `refused` and `malformed`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::NoEndpoint => f.write_str("no-endpoint"),
            ModelError::NoKey => f.write_str("no-key"),
            ModelError::BudgetExhausted => f.write_str("budget-exhausted"),
            ModelError::Timeout => f.write_str("timeout"),
            ModelError::Refused { status, reason } => write!(f, "refused ({status}): {reason}"),
            ModelError::Malformed(detail) => write!(f, "malformed: {detail}"),
        }
    }
}

/// Ask the agent's model for one completion. Outside a component (native tests) every call
/// answers [`ModelError::NoEndpoint`].
pub fn ask_model(request: ModelRequest) -> Result<Completion, ModelError> {
    #[cfg(target_arch = "wasm32")]
    {
        wasm::complete(request)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = request;
        Err(ModelError::NoEndpoint)
    }
}

#[cfg(target_arch = "wasm32")]
mod wasm {
    use super::{Completion, ModelError, ModelRequest, Role};
    use crate::__bindings::crucible::strategy::model as wit;

    pub(super) fn complete(request: ModelRequest) -> Result<Completion, ModelError> {
        let request = wit::Request {
            messages: request
                .messages
                .into_iter()
                .map(|m| wit::Message {
                    role: match m.role {
                        Role::User => wit::Role::User,
                        Role::Assistant => wit::Role::Assistant,
                    },
                    content: m.content,
                })
                .collect(),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            json_schema: request.json_schema,
        };
        match wit::complete(&request) {
            Ok(c) => Ok(Completion {
                text: c.text,
                prompt_tokens: c.prompt_tokens,
                completion_tokens: c.completion_tokens,
                latency_ms: c.latency_ms,
            }),
            Err(e) => Err(match e {
                wit::ModelError::NoEndpoint => ModelError::NoEndpoint,
                wit::ModelError::NoKey => ModelError::NoKey,
                wit::ModelError::BudgetExhausted => ModelError::BudgetExhausted,
                wit::ModelError::Timeout => ModelError::Timeout,
                wit::ModelError::Refused(r) => ModelError::Refused {
                    status: r.status,
                    reason: r.reason,
                },
                wit::ModelError::Malformed(detail) => ModelError::Malformed(detail),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn errors_read_as_their_wit_case() {
        assert_eq!(ModelError::NoKey.to_string(), "no-key");
        assert_eq!(ModelError::BudgetExhausted.to_string(), "budget-exhausted");
        assert_eq!(
            ModelError::Refused {
                status: 429,
                reason: "slow down".into()
            }
            .to_string(),
            "refused (429): slow down"
        );
    }

    #[test]
    fn natively_there_is_no_model() {
        let request = ModelRequest::new("hi").max_tokens(8).temperature(0.5);
        assert_eq!(request.messages, vec![Message::user("hi")]);
        assert_eq!(ask_model(request), Err(ModelError::NoEndpoint));
    }
}
