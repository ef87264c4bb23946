//! The web app's way into the API: reads in process through the API router itself, and the
//! browser's writes forwarded from `/web-api/…` to `/api/…` once the cross-site guard passed.
//! Going through the router (not around it) keeps every rule of the API — credentials, scopes,
//! limits, validation — in force for the pages, with the API's own error messages.

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::{Web, csrf};
use crate::auth::WebAppSession;

/// Who asked for a page: the session cookie (as sent), the peer address, and — when the session
/// is live — the account and the session's cross-site token for the page's forms.
#[derive(Clone, Debug, Default)]
pub(crate) struct Visitor {
    cookie: Option<HeaderValue>,
    peer: Option<ConnectInfo<std::net::SocketAddr>>,
    pub account_id: Option<String>,
    pub csrf_token: Option<String>,
    /// Holds the admin role: the navigation shows the admin pages (the API decides what they may do).
    pub is_admin: bool,
}

impl Visitor {
    pub(crate) fn signed_in(&self) -> bool {
        self.account_id.is_some()
    }
}

impl axum::extract::FromRequestParts<Web> for Visitor {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        web: &Web,
    ) -> Result<Self, Self::Rejection> {
        let session_token = crate::auth::session::token_from_headers(&parts.headers);
        // An unreadable session store shows the page signed out rather than failing it; the
        // API calls the page makes report the outage in their own words.
        let account_id = match &session_token {
            Some(token) => {
                crate::auth::session::resolve(&web.state.store, &*web.state.clock, token)
                    .await
                    .unwrap_or_else(|error| {
                        tracing::warn!(%error, "session lookup failed while rendering a page");
                        None
                    })
            }
            None => None,
        };
        let is_admin = match &account_id {
            Some(account_id) => {
                sqlx::query_as::<_, (i64,)>("SELECT is_admin FROM accounts WHERE id = $1")
                    .bind(account_id)
                    .fetch_optional(web.state.store.read())
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|(flag,)| flag != 0)
            }
            None => false,
        };
        Ok(Visitor {
            is_admin,
            cookie: parts.headers.get(header::COOKIE).cloned(),
            peer: parts
                .extensions
                .get::<ConnectInfo<std::net::SocketAddr>>()
                .copied(),
            csrf_token: account_id
                .as_ref()
                .and(session_token.as_deref())
                .map(csrf::token_for),
            account_id,
        })
    }
}

/// Largest API answer a page reads (a page of a list, a run's replay).
const MAX_READ_BYTES: usize = 8 * 1024 * 1024;

/// The API router, called in process.
#[derive(Clone)]
pub(crate) struct Api {
    router: Router,
}

/// An API answer a page could not use: the status and the API's own message.
#[derive(Debug)]
pub(crate) struct Failed {
    pub status: StatusCode,
    pub message: String,
}

impl Api {
    pub(crate) fn new(router: Router) -> Self {
        Api { router }
    }

    /// The API router itself, to hand it a request unchanged.
    pub(crate) fn router(&self) -> Router {
        self.router.clone()
    }

    /// `GET path` as `visitor` (its session cookie and its address, so the API sees the same
    /// caller and counts the same rate limits).
    pub(crate) async fn get(&self, path: &str, visitor: &Visitor) -> Result<Value, Failed> {
        let mut request = Request::builder()
            .method(Method::GET)
            .uri(path)
            .body(Body::empty())
            .map_err(|error| Failed {
                status: StatusCode::BAD_REQUEST,
                message: error.to_string(),
            })?;
        if let Some(cookie) = &visitor.cookie {
            request.headers_mut().insert(header::COOKIE, cookie.clone());
        }
        if let Some(peer) = visitor.peer {
            request.extensions_mut().insert(peer);
        }
        if let Some(account_id) = &visitor.account_id {
            request.extensions_mut().insert(WebAppSession {
                account_id: account_id.clone(),
            });
        }
        let response = match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status();
        let bytes = to_bytes(response.into_body(), MAX_READ_BYTES)
            .await
            .map_err(|error| Failed {
                status: StatusCode::BAD_GATEWAY,
                message: error.to_string(),
            })?;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            Ok(body)
        } else {
            Err(Failed {
                status,
                message: error_message(&body)
                    .unwrap_or_else(|| format!("the server answered {status}")),
            })
        }
    }
}

/// The message of an API error body, platform (`{"error": "…"}`) or v1
/// (`{"error": {"message": "…"}}`).
pub(crate) fn error_message(body: &Value) -> Option<String> {
    match &body["error"] {
        Value::String(message) => Some(message.clone()),
        Value::Object(error) => error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// `/web-api/<rest>` → `/api/<rest>` after the cross-site guard, for every method but reads.
pub(super) async fn forward(State(web): State<Web>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    if !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS)
        && let Err(refused) = csrf::check(&parts.headers, None)
    {
        return refusal(refused);
    }
    let Some(uri) = api_uri(&parts.uri) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": format!("no route for {}", parts.uri.path())})),
        )
            .into_response();
    };
    parts.headers.remove(csrf::HEADER);
    // A fresh request: this route's own matched path (in the extensions) must not reach the
    // API's routes, which match the path afresh. Only the peer address is carried over.
    let mut forwarded = Request::new(body);
    *forwarded.method_mut() = parts.method;
    *forwarded.uri_mut() = uri;
    *forwarded.version_mut() = parts.version;
    *forwarded.headers_mut() = parts.headers;
    if let Some(peer) = parts.extensions.get::<ConnectInfo<std::net::SocketAddr>>() {
        forwarded.extensions_mut().insert(*peer);
    }
    let session_token = crate::auth::session::token_from_headers(forwarded.headers());
    if let Some(session) = signed_in(&web, session_token).await {
        forwarded.extensions_mut().insert(session);
    }
    match web.api.router.clone().oneshot(forwarded).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The account of the live session whose cookie value is `token`, for the v1 routes that otherwise take
/// only a key. A session that cannot be read (expired, or the store down) adds nothing: the
/// API then answers as it does to any caller without a credential.
async fn signed_in(web: &Web, token: Option<String>) -> Option<WebAppSession> {
    let token = token?;
    match crate::auth::session::resolve(&web.state.store, &*web.state.clock, &token).await {
        Ok(account_id) => account_id.map(|account_id| WebAppSession { account_id }),
        Err(error) => {
            tracing::warn!(%error, "session lookup failed while forwarding a web-app call");
            None
        }
    }
}

/// A refused write, in the platform's error body.
pub(super) fn refusal(refused: csrf::Refused) -> Response {
    (
        StatusCode::FORBIDDEN,
        axum::Json(json!({"error": refused.to_string()})),
    )
        .into_response()
}

fn api_uri(uri: &Uri) -> Option<Uri> {
    let rest = uri.path().strip_prefix("/web-api/")?;
    let path_and_query = match uri.query() {
        Some(query) => format!("/api/{rest}?{query}"),
        None => format!("/api/{rest}"),
    };
    path_and_query.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_to_the_same_api_path_with_its_query() {
        let uri: Uri = "/web-api/v1/api-keys?x=1".parse().expect("uri");
        assert_eq!(
            api_uri(&uri).map(|uri| uri.to_string()),
            Some("/api/v1/api-keys?x=1".into())
        );
    }

    #[test]
    fn reads_both_error_envelopes() {
        assert_eq!(
            error_message(&json!({"error": "nope"})).as_deref(),
            Some("nope")
        );
        assert_eq!(
            error_message(&json!({"success": false, "error": {"code": "X", "message": "v1 nope"}}))
                .as_deref(),
            Some("v1 nope")
        );
    }
}
