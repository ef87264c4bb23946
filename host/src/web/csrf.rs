//! The cross-site request guard of every cookie-authenticated write the web app makes.
//!
//! `SameSite=Lax` keeps the session cookie off cross-site sub-requests, but not off requests from
//! another port or sub-domain of the same site, and a top-level form post from such a page still
//! carries it. So each write is checked twice:
//!
//! 1. its `Origin` (or, when a browser sends none, its `Referer`) must be this server's own
//!    host; a write that names neither is refused too;
//! 2. when it carries a session cookie, it must also carry the session's token, either as the
//!    `X-CSRF-Token` header (the page's scripts) or as the `csrf` form field (plain forms).
//!    The token is derived from the session's secret cookie value, so a page on another origin,
//!    which cannot read the cookie, cannot compute it, and it needs no storage of its own.
//!
//! The API's own paths take the same cookie, so they pass the same check ([`guard_api_writes`]):
//! every `/api/…` write that the session cookie authenticates (it carries the cookie and presents
//! no API key) is refused unless it names this server and carries the session's token.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::auth::session;

/// The header the page scripts send the token in.
pub(super) const HEADER: &str = "x-csrf-token";
/// The field plain forms send the token in.
pub(super) const FIELD: &str = "csrf";

/// Why a write was refused; the message is shown to the person.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(super) enum Refused {
    #[error("this form was sent from another site ({0}); it was refused")]
    CrossOrigin(String),
    #[error("this form does not say which site sent it; it was refused")]
    NoOrigin,
    #[error("this form's security token is missing or out of date; reload the page and try again")]
    BadToken,
}

/// The token of the session whose cookie value is `session_token`.
pub(super) fn token_for(session_token: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"crucible web csrf v1\0");
    hasher.update(session_token.as_bytes());
    hex::encode(hasher.finalize())
}

/// Check a write: same origin, and the session's token when a session cookie is sent.
/// `form_token` is the `csrf` field of a form body, when the write is a plain form.
pub(super) fn check(headers: &HeaderMap, form_token: Option<&str>) -> Result<(), Refused> {
    check_origin(headers)?;
    let Some(session_token) = session::token_from_headers(headers) else {
        // No cookie, nothing cookie-authenticated to forge (sign-up and login land here).
        return Ok(());
    };
    let expected = token_for(&session_token);
    let sent = headers
        .get(HEADER)
        .and_then(|value| value.to_str().ok())
        .or(form_token)
        .unwrap_or_default();
    if bool::from(sent.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(Refused::BadToken)
    }
}

/// The cross-site guard of the API's own paths, a middleware in front of the API router: a
/// write to `/api/…` that a session cookie authenticates must pass [`check`] as `/web-api/…`
/// writes do. A request presenting an API key is authenticated by the key (a cross-site page
/// cannot send one without a preflight), and one without the cookie has nothing to forge, so
/// neither is checked. Refusals answer 403 in the path's error family. (`/web-api/…` writes are
/// checked before they are forwarded, and reach the API router directly.)
pub(crate) async fn guard_api_writes(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let on_api = path == "/api" || path.starts_with("/api/");
    let writes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let by_cookie = session::token_from_headers(request.headers()).is_some()
        && crate::auth::keys::presented(request.headers()).is_none();
    if on_api
        && writes
        && by_cookie
        && let Err(refused) = check(request.headers(), None)
    {
        return if path == "/api/v1" || path.starts_with("/api/v1/") {
            crate::v1::forbidden(refused.to_string())
        } else {
            super::internal::refusal(refused)
        };
    }
    next.run(request).await
}

fn check_origin(headers: &HeaderMap) -> Result<(), Refused> {
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let source = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|value| value.to_str().ok())
        .ok_or(Refused::NoOrigin)?;
    // `null` (sandboxed frames, some redirects) names no site at all.
    let source_host = url::Url::parse(source)
        .ok()
        .and_then(|url| {
            let host = url.host_str()?.to_owned();
            Some(match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .ok_or_else(|| Refused::CrossOrigin(source.to_owned()))?;
    if !host.is_empty() && source_host.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err(Refused::CrossOrigin(source.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).expect("header"));
        }
        map
    }

    #[test]
    fn same_origin_without_a_session_passes() {
        let sent = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert_eq!(check(&sent, None), Ok(()));
    }

    #[test]
    fn another_port_is_another_origin() {
        let sent = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:9090"),
        ]);
        assert!(matches!(check(&sent, None), Err(Refused::CrossOrigin(_))));
    }

    #[test]
    fn a_write_naming_no_origin_is_refused() {
        let sent = headers(&[("host", "127.0.0.1:8080")]);
        assert_eq!(check(&sent, None), Err(Refused::NoOrigin));
    }

    #[test]
    fn a_referer_stands_in_for_a_missing_origin() {
        let sent = headers(&[("host", "a.test"), ("referer", "http://a.test/keys")]);
        assert_eq!(check(&sent, None), Ok(()));
    }

    #[test]
    fn a_session_needs_its_own_token() {
        let token = token_for("secret-session");
        let base = [
            ("host", "a.test"),
            ("origin", "http://a.test"),
            ("cookie", "session-token=secret-session"),
        ];
        assert_eq!(check(&headers(&base), None), Err(Refused::BadToken));
        assert_eq!(check(&headers(&base), Some(&token)), Ok(()));
        let mut with_header = base.to_vec();
        with_header.push(("x-csrf-token", &token));
        assert_eq!(check(&headers(&with_header), None), Ok(()));
        let other = token_for("another-session");
        assert_eq!(check(&headers(&base), Some(&other)), Err(Refused::BadToken));
    }
}
