//! What a model is asked and what it answers, independent of any vendor's format.

use std::time::Duration;

/// Who wrote a turn of the conversation. The system message is not a turn: it is always the
/// agent's personality, carried apart in [`ModelRequest::personality`] and put first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

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

/// One completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The vendor, whose host-configured endpoint is called.
    pub vendor: String,
    /// The model's name at that vendor (`gpt-4o`, `llama3.2`…).
    pub model: String,
    /// The agent's personality: sent verbatim as the system message, before every turn.
    pub personality: String,
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    pub temperature: f32,
    /// A JSON schema the answer must follow.
    pub json_schema: Option<serde_json::Value>,
}

impl ModelRequest {
    /// `modelId` `<vendor>/<model>` split at its first `/` (model names may hold more).
    pub fn split_model_id(model_id: &str) -> Option<(&str, &str)> {
        model_id
            .split_once('/')
            .filter(|(vendor, model)| !vendor.is_empty() && !model.is_empty())
    }
}

/// `temperature` as JSON, as written (`0.3`, not the `0.30000001192092896` a plain widening of
/// the `f32` gives); not a number (NaN, infinite) is `null`, the provider's default.
pub(crate) fn temperature_json(temperature: f32) -> serde_json::Value {
    temperature
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The answer's text (with a schema: the JSON document).
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// From sending the request to reading the whole answer.
    pub latency: Duration,
}

/// What a vendor's answer said, before latency is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temperature_goes_out_as_written() {
        assert_eq!(temperature_json(0.3).to_string(), "0.3");
        assert_eq!(temperature_json(1.0).to_string(), "1.0");
        assert_eq!(temperature_json(f32::NAN), serde_json::Value::Null);
    }

    #[test]
    fn a_model_id_splits_at_its_first_slash() {
        assert_eq!(
            ModelRequest::split_model_id("openai/gpt-4o"),
            Some(("openai", "gpt-4o"))
        );
        assert_eq!(
            ModelRequest::split_model_id("openrouter/meta-llama/llama-3-70b"),
            Some(("openrouter", "meta-llama/llama-3-70b"))
        );
        assert_eq!(ModelRequest::split_model_id("gpt-4o"), None);
        assert_eq!(ModelRequest::split_model_id("/gpt"), None);
        assert_eq!(ModelRequest::split_model_id("openai/"), None);
    }
}
