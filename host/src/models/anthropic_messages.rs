//! Anthropic's Messages API: `POST {base}/messages` with `x-api-key` and `anthropic-version`,
//! the system prompt as the top-level `system` field
//! (https://docs.anthropic.com/en/api/messages). A JSON schema is asked for the way Anthropic
//! documents structured answers: one tool whose input is the schema, which the model must call.

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ModelError;
use super::request::{Answer, ModelRequest, temperature_json};

pub(crate) const PATH: &str = "/messages";
pub(crate) const VERSION: &str = "2023-06-01";
/// The tool the model must call when the answer has a schema.
const ANSWER_TOOL: &str = "answer";

pub(crate) fn body(request: &ModelRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    let mut body = json!({
        "model": request.model,
        "system": request.personality,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": temperature_json(request.temperature),
    });
    if let Some(schema) = &request.json_schema {
        body["tools"] = json!([{
            "name": ANSWER_TOOL,
            "description": "Give your answer.",
            "input_schema": schema,
        }]);
        body["tool_choice"] = json!({"type": "tool", "name": ANSWER_TOOL});
    }
    body
}

#[derive(Deserialize)]
struct Response {
    content: Vec<Block>,
    usage: Usage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// The answer of a 2xx response: the answer tool's input as JSON text when it was called,
/// otherwise the text blocks joined.
pub(crate) fn parse(bytes: &[u8]) -> Result<Answer, ModelError> {
    let response: Response = serde_json::from_slice(bytes)
        .map_err(|_| ModelError::Malformed("not a Messages API answer".into()))?;
    let tool_input = response.content.iter().find_map(|block| match block {
        Block::ToolUse { input } => Some(input.to_string()),
        _ => None,
    });
    let text = match tool_input {
        Some(json) => json,
        None => {
            let texts: Vec<&str> = response
                .content
                .iter()
                .filter_map(|block| match block {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if texts.is_empty() {
                return Err(ModelError::Malformed("the answer has no text".into()));
            }
            texts.concat()
        }
    };
    Ok(Answer {
        text,
        prompt_tokens: response.usage.input_tokens,
        completion_tokens: response.usage.output_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::request::Message;

    fn request(schema: Option<Value>) -> ModelRequest {
        ModelRequest {
            vendor: "anthropic".into(),
            model: "claude-sonnet-4".into(),
            personality: "You are a cautious contrarian.".into(),
            messages: vec![Message::user("SOL fell 5%.")],
            max_tokens: 300,
            temperature: 0.2,
            json_schema: schema,
        }
    }

    #[test]
    fn the_personality_is_the_top_level_system_field() {
        let body = body(&request(None));
        assert_eq!(body["model"], "claude-sonnet-4");
        assert_eq!(body["system"], "You are a cautious contrarian.");
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": "SOL fell 5%."}]),
            "no system turn among the messages"
        );
        assert_eq!(body["max_tokens"], 300);
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn a_schema_becomes_a_forced_tool() {
        let schema = json!({"type": "object", "properties": {"action": {"type": "string"}}});
        let body = body(&request(Some(schema.clone())));
        assert_eq!(body["tools"][0]["input_schema"], schema);
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "answer"})
        );
    }

    #[test]
    fn parses_text_tool_input_and_usage() {
        let answer = parse(
            br#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
                "content":[{"type":"text","text":"hold "},{"type":"text","text":"steady"}],
                "stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":4}}"#,
        )
        .expect("parses");
        assert_eq!(answer.text, "hold steady");
        assert_eq!((answer.prompt_tokens, answer.completion_tokens), (20, 4));
        let tool = parse(
            br#"{"content":[{"type":"text","text":"thinking"},
                {"type":"tool_use","id":"t1","name":"answer","input":{"action":"buy"}}],
                "usage":{"input_tokens":1,"output_tokens":2}}"#,
        )
        .expect("parses");
        assert_eq!(tool.text, r#"{"action":"buy"}"#);
    }

    #[test]
    fn anything_else_is_malformed() {
        for garbage in [
            &b"<html>"[..],
            br#"{"content":[],"usage":{"input_tokens":1,"output_tokens":0}}"#,
            br#"{"choices":[{"message":{"content":"an openai answer"}}]}"#,
            br#"{"content":[{"type":"text","text":"x"}]}"#,
        ] {
            assert!(
                matches!(parse(garbage), Err(ModelError::Malformed(_))),
                "{}",
                String::from_utf8_lossy(garbage)
            );
        }
    }
}
