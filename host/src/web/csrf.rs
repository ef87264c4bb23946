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

use axum::http::{HeaderMap, header};
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
