//! Calls a vendor's endpoint: builds the request in the endpoint's format, sends the key the
//! way that API expects it, and maps every answer to a [`Completion`] or a [`ModelError`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};

use super::backoff::Backoff;
use super::endpoints::{ApiFormat, Endpoint, Endpoints};
use super::error::ModelError;
use super::request::{Answer, Completion, ModelRequest};
use super::{anthropic_messages, openai_chat};
use crate::clock::Clock;
use crate::secret::Secret;

/// Largest answer read from a provider; a completion is a few kilobytes.
const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;
/// Longest provider reason kept in a [`ModelError::Refused`].
const MAX_REASON_CHARS: usize = 200;

/// The host's model providers: endpoints, default keys, one HTTP client and the vendors
/// backed off after a 429.
pub struct Models {
    endpoints: Endpoints,
    default_keys: BTreeMap<String, Secret>,
    http: reqwest::Client,
    timeout: Duration,
    backoff: Backoff,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Models")
            .field("endpoints", &self.endpoints)
            .field("default_keys", &self.default_keys.keys())
            .finish_non_exhaustive()
    }
}

impl Models {
    pub fn new(
        endpoints: Endpoints,
        default_keys: BTreeMap<String, Secret>,
        timeout: Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, reqwest::Error> {
        // No redirects and no proxy from the environment: a key goes to its vendor's configured
        // address and nowhere else.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("crucible/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Models {
            endpoints,
            default_keys,
            http,
            timeout,
            backoff: Backoff::default(),
            clock,
        })
    }

    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The host's own key of `vendor` (`CRUCIBLE_MODEL_KEY_<VENDOR>`), if set.
    pub fn default_key(&self, vendor: &str) -> Option<&Secret> {
        self.default_keys.get(vendor)
    }

    /// Ask the vendor's endpoint for one completion, with `key` (`None`: the vendor takes
    /// none, or there is none).
    pub async fn complete(
        &self,
        key: Option<&Secret>,
        request: &ModelRequest,
    ) -> Result<Completion, ModelError> {
        let endpoint = self
            .endpoints
            .get(&request.vendor)
            .ok_or_else(|| ModelError::NoEndpoint(request.vendor.clone()))?;
        if endpoint.needs_key && key.is_none() {
            return Err(ModelError::NoKey(request.vendor.clone()));
        }
        if let Some(wait) = self.backoff.remaining(&endpoint.vendor, self.clock.now()) {
            return Err(ModelError::Refused {
                status: 429,
                reason: format!("rate limited by the provider: retry in {wait} s"),
            });
        }
        let (url, body) = match endpoint.format {
            ApiFormat::OpenAiChat => (openai_chat::PATH, openai_chat::body(request)),
            ApiFormat::AnthropicMessages => {
                (anthropic_messages::PATH, anthropic_messages::body(request))
            }
        };
        let url = format!("{}{url}", endpoint.base_url);
        let headers = headers(endpoint, key)?;
        let started = Instant::now();
        let response = self
            .http
            .post(url)
            .headers(headers)
            .timeout(self.timeout)
            .json(&body)
            .send()
            .await
            .map_err(|error| transport_error(&error))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let bytes = read_capped(response).await?;
        let latency = started.elapsed();
        if status.as_u16() == 429 {
            let wait =
                self.backoff
                    .back_off(&endpoint.vendor, retry_after.as_deref(), self.clock.now());
            tracing::info!(vendor = %endpoint.vendor, wait, "model provider rate-limited us");
            return Err(ModelError::Refused {
                status: 429,
                reason: format!("rate limited by the provider: retry in {wait} s"),
            });
        }
        if !status.is_success() {
            return Err(ModelError::Refused {
                status: status.as_u16(),
                reason: reason(&bytes, status, key),
            });
        }
        let answer: Answer = match endpoint.format {
            ApiFormat::OpenAiChat => openai_chat::parse(&bytes)?,
            ApiFormat::AnthropicMessages => anthropic_messages::parse(&bytes)?,
        };
        Ok(Completion {
            text: answer.text,
            prompt_tokens: answer.prompt_tokens,
            completion_tokens: answer.completion_tokens,
            latency,
        })
    }
}

/// The key where the endpoint's API expects it.
fn headers(endpoint: &Endpoint, key: Option<&Secret>) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let Some(key) = key else {
        return Ok(headers);
    };
    // Stored keys are checked to be visible ASCII; a host default could still be anything.
    let invalid = || ModelError::Refused {
        status: 0,
        reason: "the key cannot be sent in a header".into(),
    };
    match endpoint.format {
        ApiFormat::OpenAiChat => {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .map_err(|_| invalid())?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        ApiFormat::AnthropicMessages => {
            let mut value = HeaderValue::from_str(key.expose()).map_err(|_| invalid())?;
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(anthropic_messages::VERSION),
            );
        }
    }
    Ok(headers)
}

fn transport_error(error: &reqwest::Error) -> ModelError {
    if error.is_timeout() {
        ModelError::Timeout
    } else {
        tracing::debug!(error = %crate::redact::error(error), "model provider unreachable");
        ModelError::Refused {
            status: 0,
            reason: "the provider could not be reached".into(),
        }
    }
}

/// The body, up to [`MAX_ANSWER_BYTES`] (a larger answer is malformed).
async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, ModelError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| transport_error(&error))?
    {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(ModelError::Malformed("the answer is too large".into()));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// A short reason for a refusal: the provider's `error.message` (both formats put it there),
/// else the status's name; never the key, never control characters.
fn reason(bytes: &[u8], status: reqwest::StatusCode, key: Option<&Secret>) -> String {
    let message = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|body| body["error"]["message"].as_str().map(str::to_owned));
    let mut text = message
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned())
        .replace(|c: char| c.is_control(), " ");
    if let Some(key) = key.map(Secret::expose).filter(|key| !key.is_empty()) {
        text = text.replace(key, "[redacted]");
    }
    if text.chars().count() > MAX_REASON_CHARS {
        text = text.chars().take(MAX_REASON_CHARS).collect::<String>() + "…";
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::endpoints::Endpoints;

    #[test]
    fn each_format_sends_the_key_its_own_way() {
        let endpoints = Endpoints::default();
        let key = Secret::new("sk-test-123");
        let openai = headers(endpoints.get("openai").expect("openai"), Some(&key)).expect("ok");
        assert_eq!(openai["authorization"], "Bearer sk-test-123");
        assert!(openai["authorization"].is_sensitive());
        assert!(openai.get("x-api-key").is_none());
        let anthropic =
            headers(endpoints.get("anthropic").expect("anthropic"), Some(&key)).expect("ok");
        assert_eq!(anthropic["x-api-key"], "sk-test-123");
        assert_eq!(anthropic["anthropic-version"], "2023-06-01");
        assert!(anthropic.get("authorization").is_none());
        let keyless = headers(endpoints.get("ollama").expect("ollama"), None).expect("ok");
        assert!(keyless.get("authorization").is_none());
    }

    #[test]
    fn a_refusal_reason_is_short_and_never_the_key() {
        let key = Secret::new("sk-live-secret");
        let status = reqwest::StatusCode::UNAUTHORIZED;
        let body =
            br#"{"error":{"message":"Incorrect API key provided: sk-live-secret.\nSee docs"}}"#;
        let text = reason(body, status, Some(&key));
        assert_eq!(text, "Incorrect API key provided: [redacted]. See docs");
        assert_eq!(reason(b"<html>", status, Some(&key)), "Unauthorized");
        let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(500));
        assert_eq!(
            reason(long.as_bytes(), status, None).chars().count(),
            MAX_REASON_CHARS + 1
        );
    }

    #[tokio::test]
    async fn no_endpoint_and_no_key_are_known_before_any_call() {
        let models = Models::new(
            Endpoints::default(),
            BTreeMap::new(),
            Duration::from_secs(1),
            Arc::new(crate::clock::SystemClock),
        )
        .expect("client");
        let mut request = ModelRequest {
            vendor: "nobody".into(),
            model: "m".into(),
            personality: "p".into(),
            messages: Vec::new(),
            max_tokens: 10,
            temperature: 0.0,
            json_schema: None,
        };
        assert_eq!(
            models.complete(None, &request).await,
            Err(ModelError::NoEndpoint("nobody".into()))
        );
        request.vendor = "openai".into();
        assert_eq!(
            models.complete(None, &request).await,
            Err(ModelError::NoKey("openai".into()))
        );
    }
}
