//! Calling a tool: its arguments become the REST request (path, query, JSON body), which the API
//! router answers in process with the caller's key and address, exactly as it would answer the
//! same request over the network. The answer becomes the tool's result; a refusal becomes a tool
//! error carrying the API's own message (never a protocol error: a model must read why).

use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderValue, Method, StatusCode, header};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};
use tower::ServiceExt;

use super::catalog::{Audience, Extra, ToolSpec};
use super::schema::{Arguments, Place};
use crate::auth::keys::KeyFamily;

/// Largest API answer a tool passes on (a page of a list, a run's events).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// How long a tool waits, in all, on a payment that is not final yet (202) before it hands the
/// "pending" answer back; the API's `Retry-After` paces the retries.
const PENDING_PATIENCE: Duration = Duration::from_secs(30);

/// Who calls, as the gate found them (an extension of every `/mcp` request).
#[derive(Debug, Clone)]
pub(crate) struct McpCaller {
    pub account_id: String,
    pub family: KeyFamily,
    /// The key as presented, passed on to the API.
    pub key: String,
    /// The address rate limits and stream places count under.
    pub client_ip: std::net::IpAddr,
    pub peer: Option<ConnectInfo<std::net::SocketAddr>>,
    pub forwarded_for: Option<HeaderValue>,
}

impl McpCaller {
    /// Whether this caller's key is of the family `audience` needs.
    pub(crate) fn may_use(&self, audience: Audience) -> bool {
        match audience {
            Audience::Anyone => true,
            Audience::Account => self.family == KeyFamily::Account,
            Audience::Agents => self.family == KeyFamily::V1,
        }
    }
}

/// An API answer: its status and body as the API wrote it (JSON).
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    pub body: bytes::Bytes,
    pub retry_after: Option<u64>,
}

impl Answer {
    /// An answer made here rather than by the API: `status` with `{"error": message}`.
    pub(crate) fn refusal(status: StatusCode, message: &str) -> Self {
        Answer {
            status,
            body: json!({ "error": message }).to_string().into(),
            retry_after: None,
        }
    }

    /// The body as JSON (`null` when it is not JSON).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text, as it came.
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The API's message of a refusal (`{"error": "…"}` or the v1 `{"error": {"message": …}}`).
    pub(crate) fn message(&self) -> String {
        crate::web::internal::error_message(&self.json())
            .unwrap_or_else(|| format!("the server answered {}", self.status))
    }
}

/// The in-process API and today's date (for tools that default to today's dungeon).
#[derive(Clone)]
pub(crate) struct Api {
    pub router: Router,
}

impl Api {
    /// Send `method path` with `body` as `caller` (its key unless `key` replaces it, e.g. a run's
    /// key; no key at all for a v1 key on a public read) and read the answer.
    pub(crate) async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<&Value>,
        caller: &McpCaller,
        credential: Credential<'_>,
    ) -> Answer {
        let mut request = Request::new(match body {
            Some(body) => Body::from(body.to_string()),
            None => Body::empty(),
        });
        *request.method_mut() = method;
        match path_and_query.parse() {
            Ok(uri) => *request.uri_mut() = uri,
            Err(error) => {
                return Answer::refusal(
                    StatusCode::BAD_REQUEST,
                    &format!("not a valid request path: {error}"),
                );
            }
        }
        let headers = request.headers_mut();
        if body.is_some() {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        let key = match credential {
            Credential::Caller => Some(caller.key.as_str()),
            Credential::Key(key) => Some(key),
            Credential::Anonymous => None,
        };
        if let Some(key) = key
            && let Ok(value) = HeaderValue::from_str(&format!("Bearer {key}"))
        {
            headers.insert(header::AUTHORIZATION, value);
        }
        if let Some(forwarded) = &caller.forwarded_for {
            headers.insert("x-forwarded-for", forwarded.clone());
        }
        if let Some(peer) = caller.peer {
            request.extensions_mut().insert(peer);
        }
        let response = match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse().ok());
        let body = match to_bytes(response.into_body(), MAX_ANSWER_BYTES).await {
            Ok(bytes) => bytes,
            Err(error) => {
                return Answer::refusal(
                    StatusCode::BAD_GATEWAY,
                    &format!("the answer could not be read: {error}"),
                );
            }
        };
        Answer {
            status,
            body,
            retry_after,
        }
    }
}

/// Which key a request carries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Credential<'a> {
    Caller,
    Key(&'a str),
    Anonymous,
}

/// The credential a tool of `audience` sends for `caller`.
pub(crate) fn credential_for(audience: Audience, caller: &McpCaller) -> Credential<'static> {
    match (audience, caller.family) {
        // The platform API does not know v1 keys: their public reads go out anonymous.
        (Audience::Anyone, KeyFamily::V1) => Credential::Anonymous,
        _ => Credential::Caller,
    }
}

/// A request built from a tool's arguments.
#[derive(Debug, PartialEq)]
pub(crate) struct Built {
    pub path_and_query: String,
    pub body: Option<Value>,
}

/// Place `given` into `tool`'s REST request; `today` fills a left-out `dungeonId`.
pub(crate) fn build(
    tool: &ToolSpec,
    arguments: &Arguments,
    given: Map<String, Value>,
    today: &str,
) -> Result<Built, String> {
    let mut path = tool.path.to_owned();
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    let mut body = Map::new();
    let mut given = given;
    if tool.extra == Extra::TodayByDefault && !given.contains_key("dungeonId") {
        given.insert("dungeonId".into(), Value::String(today.to_owned()));
    }
    for (name, value) in given {
        let Some((place, rest_name)) = arguments.places.get(&name) else {
            return Err(format!(
                "`{name}` is not an argument of {}; it takes: {}",
                tool.name,
                arguments.names().join(", ")
            ));
        };
        match place {
            Place::Path => {
                let text = scalar(&name, &value)?;
                path = path.replace(&format!("{{{rest_name}}}"), &path_segment(&text));
            }
            Place::Query => {
                if value.is_null() {
                    continue;
                }
                query.append_pair(rest_name, &scalar(&name, &value)?);
            }
            Place::Body => {
                body.insert(rest_name.clone(), value);
            }
        }
    }
    if let Some(missing) = path
        .split('{')
        .nth(1)
        .and_then(|rest| rest.split('}').next())
    {
        return Err(format!(
            "`{}` is required",
            super::catalog::argument_name(missing)
        ));
    }
    match tool.extra {
        // The state needs no page of events: ask for the smallest.
        Extra::RunState => {
            query.append_pair("limit", "1");
        }
        Extra::None | Extra::TodayByDefault | Extra::RunKey | Extra::RunEvents => {}
    }
    let query = query.finish();
    let has_body = arguments
        .places
        .values()
        .any(|(place, _)| *place == Place::Body);
    Ok(Built {
        path_and_query: if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        },
        body: (has_body || (tool.method == Method::POST && !body.is_empty()))
            .then_some(Value::Object(body)),
    })
}

/// `text` as one path segment: unreserved characters as they are, every other byte escaped.
fn path_segment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A path or query value as text: strings as they are, numbers and booleans written out.
fn scalar(name: &str, value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        _ => Err(format!("`{name}` must be a string or a number")),
    }
}

/// Run `built` for `caller`, waiting out a payment that is not final yet (202) for a while.
pub(crate) async fn run(
    api: &Api,
    tool: &ToolSpec,
    built: &Built,
    caller: &McpCaller,
    credential: Credential<'_>,
) -> Answer {
    let started = tokio::time::Instant::now();
    loop {
        let answer = api
            .send(
                tool.method.clone(),
                &built.path_and_query,
                built.body.as_ref(),
                caller,
                credential,
            )
            .await;
        if answer.status != StatusCode::ACCEPTED {
            return answer;
        }
        let wait = Duration::from_secs(answer.retry_after.unwrap_or(1).clamp(1, 5));
        if started.elapsed() + wait > PENDING_PATIENCE {
            return answer;
        }
        tokio::time::sleep(wait).await;
    }
}

/// The tool's result for `answer`: the API's JSON as text (as the API wrote it, unless a run
/// tool cuts the page), or a tool error with the API's message and, as structured content, the
/// HTTP status the call would have had. Success carries no structured content: it would be the
/// same JSON twice (measured: about a fifth of a small read's cost, `benches/mcp_reads.rs`).
pub(crate) fn result(tool: &ToolSpec, answer: Answer) -> CallToolResult {
    if !answer.status.is_success() {
        let message = answer.message();
        let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
        result.structured_content =
            Some(json!({"error": message, "status": answer.status.as_u16()}));
        return result;
    }
    let text = match tool.extra {
        Extra::RunState | Extra::RunEvents => shape(tool.extra, answer.json()).to_string(),
        Extra::None | Extra::TodayByDefault | Extra::RunKey => answer.text(),
    };
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// What a run tool shows of the run page.
pub(crate) fn shape(extra: Extra, body: Value) -> Value {
    match (extra, body) {
        (Extra::RunState, Value::Object(mut page)) => {
            page.remove("events");
            page.remove("nextAfterSeq");
            Value::Object(page)
        }
        (Extra::RunEvents, Value::Object(page)) => {
            let keep = ["runId", "status", "events", "nextAfterSeq"];
            Value::Object(
                page.into_iter()
                    .filter(|(name, _)| keep.contains(&name.as_str()))
                    .collect(),
            )
        }
        (_, body) => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{catalog, schema};

    fn built(tool: &str, given: Value) -> Result<Built, String> {
        let document = serde_json::to_value(crate::http::openapi_document()).expect("document");
        let tool = catalog::find(tool).expect("tool");
        let arguments = schema::arguments(&document, tool).expect("arguments");
        let Value::Object(given) = given else {
            panic!("arguments are an object")
        };
        build(tool, &arguments, given, "2026-11-25")
    }

    #[test]
    fn path_query_and_body_are_filled() {
        let register = built(
            "register_for_tournament",
            json!({"tournamentId": "t 1", "registeredWallet": "W", "txSignature": null}),
        )
        .expect("builds");
        assert_eq!(register.path_and_query, "/api/tournaments/t%201/register");
        assert_eq!(
            register.body,
            Some(json!({"registeredWallet": "W", "txSignature": null}))
        );
        let list =
            built("list_tournaments", json!({"status": "live", "pageSize": 5})).expect("builds");
        assert!(list.path_and_query.starts_with("/api/tournaments?"));
        assert!(list.path_and_query.contains("status=live"));
        assert!(list.path_and_query.contains("pageSize=5"));
        assert_eq!(list.body, None);
    }

    #[test]
    fn todays_dungeon_is_the_default_and_state_asks_for_one_event() {
        let today = built("get_dungeon", json!({})).expect("builds");
        assert_eq!(today.path_and_query, "/api/dungeons/2026-11-25");
        let state = built("get_dungeon_run", json!({"runId": "run_1"})).expect("builds");
        assert_eq!(state.path_and_query, "/api/dungeons/runs/run_1?limit=1");
    }

    #[test]
    fn unknown_and_missing_arguments_are_named() {
        let unknown = built(
            "get_tournament",
            json!({"tournamentId": "t", "colour": "red"}),
        )
        .expect_err("refused");
        assert!(unknown.contains("`colour`"), "{unknown}");
        assert!(unknown.contains("tournamentId"), "{unknown}");
        let missing = built("get_tournament", json!({})).expect_err("refused");
        assert_eq!(missing, "`tournamentId` is required");
        let object =
            built("get_tournament", json!({"tournamentId": {"a": 1}})).expect_err("refused");
        assert!(object.contains("string or a number"), "{object}");
    }

    #[test]
    fn run_pages_are_cut_to_what_each_tool_shows() {
        let page = json!({"runId": "r", "status": "active", "state": {"hp": 3}, "events": [1], "nextAfterSeq": null});
        assert_eq!(
            shape(Extra::RunState, page.clone()),
            json!({"runId": "r", "status": "active", "state": {"hp": 3}})
        );
        assert_eq!(
            shape(Extra::RunEvents, page),
            json!({"runId": "r", "status": "active", "events": [1], "nextAfterSeq": null})
        );
    }
}
