//! The platform API's one error type. Every handler of the `/api/...` family returns
//! `Result<_, ApiError>`; the mapping to status and the documented body `{"error": "..."}`
//! (docs/api.md) happens once, here. Internal failures are logged with detail and answered
//! without it.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request itself is wrong; the message says what to change.
    #[error("{0}")]
    BadRequest(String),
    /// 401: no credential, or one that is unknown, revoked or expired.
    #[error("{0}")]
    Unauthorized(String),
    /// 402: the action needs funds the caller does not have.
    #[error("{0}")]
    PaymentRequired(String),
    /// 403: the credential is valid but not allowed to do this.
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such resource (or not one the caller may know of).
    #[error("{0}")]
    NotFound(String),
    /// 405: the path exists, the method does not.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// 409: conflicts with the current state (taken, full, already used).
    #[error("{0}")]
    Conflict(String),
    /// 410: existed, is closed for good.
    #[error("{0}")]
    Gone(String),
    /// 422: well-formed, but the referenced fact does not check out (e.g. a payment).
    #[error("{0}")]
    Unprocessable(String),
    /// 429: too many requests; `retry_after` is whole seconds until the next one is allowed.
    #[error("rate limit exceeded: retry in {retry_after} s")]
    RateLimited { retry_after: u64 },
    /// 429: the client holds as many open streams as it may; the message says how many.
    #[error("{0}")]
    TooManyStreams(String),
    /// 503: a dependency (database, chain) is unreachable.
    #[error("{0}")]
    Unavailable(String),
    /// 500: a bug or an unexpected failure; details go to the log only.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::BadRequest(message.into())
    }

    pub(crate) fn internal(error: impl Into<anyhow::Error>) -> Self {
        ApiError::Internal(error.into())
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::PaymentRequired(_) => StatusCode::PAYMENT_REQUIRED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited { .. } | ApiError::TooManyStreams(_) => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// Seconds a 503 asks the client to wait (`Retry-After`): the database or the chain is back,
/// or the node has capacity again, within seconds in the usual case.
pub(crate) const UNAVAILABLE_RETRY_AFTER: u64 = 5;

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        // Nothing was written (the statement failed, its transaction rolls back): the
        // request's fault, not the server's.
        if crate::db::is_nul_refused(&error) {
            return ApiError::BadRequest(NUL_REFUSED.into());
        }
        match crate::db::Outage::of(&error) {
            Some(outage) => {
                tracing::error!(%error, ?outage, "database unavailable");
                ApiError::Unavailable(outage.message().into())
            }
            None => ApiError::Internal(error.into()),
        }
    }
}

/// What a request whose text holds a NUL character is told.
const NUL_REFUSED: &str = "text must not contain the NUL character (U+0000)";

impl From<crate::db::StoreError> for ApiError {
    fn from(error: crate::db::StoreError) -> Self {
        match error {
            crate::db::StoreError::Query(inner) => inner.into(),
            other => ApiError::Internal(other.into()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            ApiError::Internal(source) => tracing::error!(error = ?source, "internal error"),
            other if status.is_server_error() => tracing::warn!(error = %other, "server error"),
            _ => {}
        }
        let limited = match &self {
            ApiError::RateLimited { retry_after } => {
                Some(("rate limit exceeded".to_owned(), *retry_after))
            }
            // A stream ends when its client closes it: ask again after a little while.
            ApiError::TooManyStreams(message) => Some((message.clone(), 10)),
            _ => None,
        };
        if let ApiError::Unavailable(message) = &self {
            let mut response = (status, Json(json!({ "error": message }))).into_response();
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(UNAVAILABLE_RETRY_AFTER),
            );
            return response;
        }
        match limited {
            Some((message, retry_after)) => {
                let body = json!({ "error": message, "retryAfter": retry_after });
                let mut response = (status, Json(body)).into_response();
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
                response
            }
            None => (status, Json(json!({ "error": self.to_string() }))).into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limited_carries_retry_after_in_body_and_header() {
        let response = ApiError::RateLimited { retry_after: 7 }.into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
    }

    #[test]
    fn internal_errors_hide_their_cause() {
        let error = ApiError::internal(anyhow::anyhow!("secret detail"));
        assert_eq!(error.to_string(), "internal error");
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
