//! A local server speaking a model provider's format (OpenAI chat completions or Anthropic
//! Messages): answers from a script and keeps every request it gets.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use crucible::models;
use serde_json::{Value, json};

/// What a fake provider answers to one request.
#[derive(Clone)]
pub enum Reply {
    /// 200 with a well-formed answer in the provider's format, saying this.
    Answer(String),
    /// This status and body, with an optional `Retry-After`.
    Raw(u16, String, Option<&'static str>),
    /// Nothing for this long.
    Silent(Duration),
}

#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// A local server speaking one provider format: answers from a script (then `Answer("ok")`)
/// and keeps every request it gets.
#[derive(Clone)]
pub struct FakeProvider {
    anthropic: bool,
    script: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    pub base: String,
}

impl FakeProvider {
    pub async fn start(anthropic: bool, script: Vec<Reply>) -> FakeProvider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let provider = FakeProvider {
            anthropic,
            script: Arc::new(Mutex::new(script.into())),
            seen: Arc::default(),
            base: format!("http://{}/v1", listener.local_addr().expect("addr")),
        };
        let router = axum::Router::new()
            .fallback(answer)
            .with_state(provider.clone());
        tokio::spawn(async move { axum::serve(listener, router).await.expect("provider") });
        provider
    }

    pub async fn openai(script: Vec<Reply>) -> FakeProvider {
        Self::start(false, script).await
    }

    pub async fn anthropic(script: Vec<Reply>) -> FakeProvider {
        Self::start(true, script).await
    }

    /// `vendor=<this server>` for the host's configuration.
    pub fn endpoint(&self, vendor: &str) -> models::EndpointSetting {
        models::endpoints::parse_setting(&format!("{vendor}={}", self.base)).expect("setting")
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

async fn answer(
    State(provider): State<FakeProvider>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    provider.seen.lock().expect("lock").push(Seen {
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = provider.script.lock().expect("lock").pop_front();
    match reply.unwrap_or_else(|| Reply::Answer("ok".into())) {
        Reply::Answer(text) if provider.anthropic => axum::Json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 21, "output_tokens": 5},
        }))
        .into_response(),
        Reply::Answer(text) => axum::Json(json!({
            "id": "c1", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 17, "completion_tokens": 3, "total_tokens": 20},
        }))
        .into_response(),
        Reply::Raw(status, body, retry_after) => {
            let mut response =
                (StatusCode::from_u16(status).expect("status"), body).into_response();
            if let Some(wait) = retry_after {
                response
                    .headers_mut()
                    .insert("retry-after", wait.parse().expect("header"));
            }
            response
        }
        Reply::Silent(delay) => {
            tokio::time::sleep(delay).await;
            StatusCode::OK.into_response()
        }
    }
}

impl Reply {
    /// A well-formed answer saying `text`.
    pub fn answer(text: impl Into<String>) -> Reply {
        Reply::Answer(text.into())
    }
}

impl FakeProvider {
    /// Add replies to the end of the script.
    pub fn then(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.lock().expect("lock").extend(replies);
    }
}
