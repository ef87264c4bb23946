//! OpenAI's chat completions format, spoken by OpenAI and by most other vendors' compatible
//! endpoints (OpenRouter, Groq, Together, Mistral, DeepSeek, xAI, Ollama):
//! `POST {base}/chat/completions` with `Authorization: Bearer <key>`
//! (https://platform.openai.com/docs/api-reference/chat/create).

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ModelError;
use super::request::{Answer, ModelRequest, temperature_json};

pub(crate) const PATH: &str = "/chat/completions";

/// The request body: the personality as the first (system) message, then the turns; with a
/// schema, `response_format` of type `json_schema`.
pub(crate) fn body(request: &ModelRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.personality})];
    messages.extend(
        request
            .messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content})),
    );
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": temperature_json(request.temperature),
    });
    if let Some(schema) = &request.json_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema},
        });
    }
    body
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// The first choice's text and the token counts of a 2xx answer.
pub(crate) fn parse(bytes: &[u8]) -> Result<Answer, ModelError> {
    let response: Response = serde_json::from_slice(bytes)
        .map_err(|_| ModelError::Malformed("not a chat completion".into()))?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ModelError::Malformed("no choices".into()))?;
    let text = match (choice.message.content, choice.message.refusal) {
        (Some(text), _) => text,
        (None, Some(_)) => return Err(ModelError::Malformed("the model refused to answer".into())),
        (None, None) => return Err(ModelError::Malformed("the choice has no content".into())),
    };
    let usage = response.usage.unwrap_or(Usage {
        prompt_tokens: 0,
        completion_tokens: 0,
    });
    Ok(Answer {
        text,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::request::Message;

    fn request(schema: Option<Value>) -> ModelRequest {
        ModelRequest {
            vendor: "openai".into(),
            model: "gpt-4o".into(),
            personality: "You are a cautious contrarian.".into(),
            messages: vec![
                Message::user("SOL fell 5%."),
                Message::assistant("hold"),
                Message::user("and now?"),
            ],
            max_tokens: 200,
            temperature: 0.5,
            json_schema: schema,
        }
    }

    #[test]
    fn the_personality_comes_first_as_the_system_message() {
        let body = body(&request(None));
        assert_eq!(body["model"], "gpt-4o");
        assert_eq!(body["max_tokens"], 200);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "You are a cautious contrarian."},
                {"role": "user", "content": "SOL fell 5%."},
                {"role": "assistant", "content": "hold"},
                {"role": "user", "content": "and now?"},
            ])
        );
        assert!(body.get("response_format").is_none());
    }

    #[test]
    fn a_schema_becomes_a_json_schema_response_format() {
        let schema = json!({"type": "object", "properties": {"action": {"type": "string"}}});
        let body = body(&request(Some(schema.clone())));
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
        assert_eq!(body["response_format"]["json_schema"]["name"], "answer");
    }

    #[test]
    fn parses_the_first_choice_and_the_usage() {
        let answer = parse(
            br#"{"id":"c1","object":"chat.completion","choices":[{"index":0,
                "message":{"role":"assistant","content":"buy"},"finish_reason":"stop"}],
                "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
        )
        .expect("parses");
        assert_eq!(answer.text, "buy");
        assert_eq!((answer.prompt_tokens, answer.completion_tokens), (12, 3));
        let no_usage = parse(br#"{"choices":[{"message":{"content":"x"}}]}"#).expect("parses");
        assert_eq!((no_usage.prompt_tokens, no_usage.completion_tokens), (0, 0));
    }

    #[test]
    fn anything_else_is_malformed() {
        for garbage in [
            &b"not json"[..],
            br#"{"choices":[]}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            br#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#,
            br#"{"content":[{"type":"text","text":"an anthropic answer"}]}"#,
            br#"[1,2]"#,
        ] {
            assert!(
                matches!(parse(garbage), Err(ModelError::Malformed(_))),
                "{}",
                String::from_utf8_lossy(garbage)
            );
        }
    }
}
