//! What every `/mcp` request passes before the protocol sees it, answered in the API's error
//! form: the `Host` and `Origin` it came with (a web page must not reach a server on the
//! visitor's machine or network by DNS rebinding), a live key (401 with `WWW-Authenticate`
//! otherwise), and a session that belongs to the key's account. Notification streams take a
//! place among the node's open streams, like the API's SSE streams.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use axum::http::StatusCode;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::call::McpCaller;
use super::sessions;
use crate::auth::keys::{self, KeyCheckError, KeyFamily};
use crate::http::ApiError;
use crate::http::rate_limit::ClientIp;
use crate::http::streams::StreamSlot;
use crate::state::AppState;

/// The gate's configuration: which hosts and origins may reach `/mcp`.
#[derive(Clone)]
pub(crate) struct Gate {
    pub state: AppState,
    /// Host names (without port) a request may name in `Host`.
    pub hosts: Arc<[String]>,
    /// The one origin (`scheme://host[:port]`) a browser page may call from: the public URL's.
    pub origin: Arc<str>,
    /// The sessions this node holds in memory.
    pub local: Arc<LocalSessionManager>,
}

impl Gate {
    pub(crate) fn new(state: AppState, local: Arc<LocalSessionManager>) -> Self {
        let public = url::Url::parse(&state.config.public_url).ok();
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|host| (*host).to_owned())
            .collect();
        if let Some(host) = public.as_ref().and_then(|url| url.host_str()) {
            let host = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        let origin = public
            .map(|url| url.origin().ascii_serialization())
            .unwrap_or_default();
        Gate {
            state,
            hosts: hosts.into(),
            origin: origin.into(),
            local,
        }
    }

    /// The `Host` header's name, if it is one of ours; why not otherwise.
    fn check_host(&self, headers: &HeaderMap) -> Result<(), String> {
        let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
            return Err("a Host header is required".into());
        };
        let name = match host.strip_prefix('[') {
            // [v6]:port
            Some(rest) => rest.split(']').next().unwrap_or_default(),
            None => host.split(':').next().unwrap_or_default(),
        };
        if self
            .hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name))
        {
            Ok(())
        } else {
            Err(format!(
                "Host `{host}` is not this server's (its public URL is {}); requests naming another host are refused",
                self.state.config.public_url
            ))
        }
    }

    /// A browser's `Origin`, if sent, must be the public URL's.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), String> {
        match headers
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or(""))
        {
            None => Ok(()),
            Some(origin) if !self.origin.is_empty() && origin == &*self.origin => Ok(()),
            Some(origin) => Err(format!(
                "pages from `{origin}` may not call this MCP server (only {})",
                self.origin
            )),
        }
    }
}

const REALM: &str = "Bearer realm=\"crucible-mcp\"";

/// 401 with the challenge RFC 6750 asks for: a bad key says `invalid_token`.
fn unauthorized(message: String, key_presented: bool) -> Response {
    let challenge = if key_presented {
        format!("{REALM}, error=\"invalid_token\"")
    } else {
        REALM.to_owned()
    };
    let mut response = ApiError::Unauthorized(message).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The key's account and family: an account key, else a v1 key.
async fn verify(state: &AppState, key: &str) -> Result<(String, KeyFamily), KeyCheckError> {
    match keys::verify(
        &state.store,
        &*state.clock,
        &state.caches,
        key,
        KeyFamily::Account,
    )
    .await
    {
        Ok(found) => Ok((found.account_id, KeyFamily::Account)),
        Err(KeyCheckError::Unknown) => keys::verify(
            &state.store,
            &*state.clock,
            &state.caches,
            key,
            KeyFamily::V1,
        )
        .await
        .map(|found| (found.account_id, KeyFamily::V1)),
        Err(other) => Err(other),
    }
}

/// The middleware in front of the MCP service.
pub(crate) async fn check(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Err(message) = gate
        .check_host(&parts.headers)
        .and_then(|()| gate.check_origin(&parts.headers))
    {
        return ApiError::Forbidden(message).into_response();
    }
    let Some(key) = keys::presented(&parts.headers) else {
        return unauthorized(
            "send an account key or a v1 key as `Authorization: Bearer svc_live_…`".into(),
            false,
        );
    };
    let (account_id, family) = match verify(&gate.state, &key).await {
        Ok(found) => found,
        Err(KeyCheckError::Store(error)) => return ApiError::from(error).into_response(),
        Err(KeyCheckError::Suspended) => {
            return ApiError::Forbidden(KeyCheckError::Suspended.to_string()).into_response();
        }
        Err(refused) => return unauthorized(refused.to_string(), true),
    };
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session {
        match sessions::owner(&gate.state.store, &*gate.state.clock, session).await {
            Ok(Some(owner)) if owner != account_id => {
                // Somebody else's session is, to this key, no session at all.
                return ApiError::NotFound(format!("no MCP session `{session}`")).into_response();
            }
            Ok(_) => {}
            Err(error) => return ApiError::from(error).into_response(),
        }
    }
    if parts.method == Method::DELETE
        && let Some(session) = &session
        && !gate
            .local
            .sessions
            .read()
            .await
            .contains_key(session.as_str())
    {
        // Ended on a node that does not hold it in memory: forgetting the stored session is
        // all there is to do (rmcp would call an unknown session an internal error).
        return match sessions::forget(&gate.state.store, session).await {
            Ok(()) => StatusCode::NO_CONTENT.into_response(),
            Err(error) => ApiError::from(error).into_response(),
        };
    }
    // A notification stream holds a connection for as long as the client keeps it.
    let slot = if parts.method == Method::GET {
        match StreamSlot::from_request_parts(&mut parts, &gate.state).await {
            Ok(slot) => Some(slot),
            Err(refused) => return refused.into_response(),
        }
    } else {
        None
    };
    let Ok(ClientIp(client_ip)) = ClientIp::from_request_parts(&mut parts, &gate.state).await;
    parts.extensions.insert(McpCaller {
        account_id: account_id.clone(),
        family,
        key,
        client_ip,
        peer: parts
            .extensions
            .get::<ConnectInfo<std::net::SocketAddr>>()
            .copied(),
        forwarded_for: parts.headers.get("x-forwarded-for").cloned(),
    });
    let opens_session = session.is_none() && parts.method == Method::POST;
    let ends_session = parts.method == Method::DELETE;
    let mut response = next.run(Request::from_parts(parts, body)).await;
    if ends_session && response.status() == StatusCode::ACCEPTED {
        // The session is gone, nothing follows: 204 (rmcp says 202, which clients log as odd).
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    if opens_session
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
        && let Err(error) =
            sessions::bind(&gate.state.store, &*gate.state.clock, id, &account_id).await
    {
        // The session still works on this node; another node will not restore it.
        tracing::warn!(%error, "MCP session not recorded");
    }
    match slot {
        None => response,
        Some(slot) => response.map(|body| {
            // The place is given back when the stream ends, however it ends.
            Body::from_stream(body.into_data_stream().map(move |chunk| {
                let _held = &slot;
                chunk
            }))
        }),
    }
}
