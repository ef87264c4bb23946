//! The `v1/public` family's one error type and body:
//! `{"success": false, "error": {"code", "message", "details"}}`.
//!
//! Services shared with the platform API return [`ApiError`]; `?` turns it into the v1 form here,
//! so a handler of this family can never answer in the other family's shape.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::http::ApiError;

#[derive(Debug, thiserror::Error)]
pub(super) enum V1Error {
    /// 401 UNAUTHORIZED: no key, or one that is unknown, revoked or expired.
    #[error("{0}")]
    Unauthorized(String),
    /// 403 FORBIDDEN: the key lacks the permission the route needs.
    #[error("{0}")]
    Forbidden(String),
    /// 404 AGENT_NOT_FOUND: no such agent among the caller's (never says whether it exists).
    #[error("agent `{0}` not found")]
    AgentNotFound(String),
    /// 404 NOT_FOUND: another resource, or no route.
    #[error("{0}")]
    NotFound(String),
    /// 400 VALIDATION_ERROR; `field` names what to fix.
    #[error("{message}")]
    Validation {
        field: Option<String>,
        message: String,
    },
    /// 402 INSUFFICIENT_FUNDS: the agent's wallet needs funding.
    #[error("{0}")]
    InsufficientFunds(String),
    /// 405 METHOD_NOT_ALLOWED.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// 409 CONFLICT: e.g. the 11th active key.
    #[error("{0}")]
    Conflict(String),
    /// 413 PAYLOAD_TOO_LARGE: an upload over the size cap.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 429 RATE_LIMITED.
    #[error("rate limit exceeded: retry in {retry_after} s")]
    RateLimited { retry_after: u64 },
    /// 503 UNAVAILABLE: a dependency is down.
    #[error("{0}")]
    Unavailable(String),
    /// 500 INTERNAL_ERROR: details go to the log only.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl V1Error {
    pub(super) fn field(field: &str, message: impl Into<String>) -> Self {
        V1Error::Validation {
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    pub(super) fn status(&self) -> StatusCode {
        match self {
            V1Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            V1Error::Forbidden(_) => StatusCode::FORBIDDEN,
            V1Error::AgentNotFound(_) | V1Error::NotFound(_) => StatusCode::NOT_FOUND,
            V1Error::Validation { .. } => StatusCode::BAD_REQUEST,
            V1Error::InsufficientFunds(_) => StatusCode::PAYMENT_REQUIRED,
            V1Error::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            V1Error::Conflict(_) => StatusCode::CONFLICT,
            V1Error::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            V1Error::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            V1Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            V1Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine-readable code (docs/api.md lists them).
    pub(super) fn code(&self) -> &'static str {
        match self {
            V1Error::Unauthorized(_) => "UNAUTHORIZED",
            V1Error::Forbidden(_) => "FORBIDDEN",
            V1Error::AgentNotFound(_) => "AGENT_NOT_FOUND",
            V1Error::NotFound(_) => "NOT_FOUND",
            V1Error::Validation { .. } => "VALIDATION_ERROR",
            V1Error::InsufficientFunds(_) => "INSUFFICIENT_FUNDS",
            V1Error::MethodNotAllowed(_) => "METHOD_NOT_ALLOWED",
            V1Error::Conflict(_) => "CONFLICT",
            V1Error::PayloadTooLarge(_) => "PAYLOAD_TOO_LARGE",
            V1Error::RateLimited { .. } => "RATE_LIMITED",
            V1Error::Unavailable(_) => "UNAVAILABLE",
            V1Error::Internal(_) => "INTERNAL_ERROR",
        }
    }

    fn details(&self) -> Value {
        match self {
            V1Error::Validation {
                field: Some(field), ..
            } => json!({ "field": field }),
            V1Error::AgentNotFound(agent_id) => json!({ "agentId": agent_id }),
            V1Error::RateLimited { retry_after } => json!({ "retryAfter": retry_after }),
            _ => json!({}),
        }
    }
}

impl From<ApiError> for V1Error {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::BadRequest(message) | ApiError::Unprocessable(message) => {
                V1Error::Validation {
                    field: None,
                    message,
                }
            }
            ApiError::Unauthorized(message) => V1Error::Unauthorized(message),
            ApiError::PaymentRequired(message) => V1Error::InsufficientFunds(message),
            ApiError::Forbidden(message) => V1Error::Forbidden(message),
            ApiError::NotFound(message) | ApiError::Gone(message) => V1Error::NotFound(message),
            ApiError::MethodNotAllowed(message) => V1Error::MethodNotAllowed(message),
            ApiError::Conflict(message) => V1Error::Conflict(message),
            ApiError::RateLimited { retry_after } => V1Error::RateLimited { retry_after },
            ApiError::TooManyStreams(_) => V1Error::RateLimited { retry_after: 10 },
            ApiError::Unavailable(message) => V1Error::Unavailable(message),
            ApiError::Internal(source) => V1Error::Internal(source),
        }
    }
}

impl From<crate::http::rate_limit::Limited> for V1Error {
    fn from(limited: crate::http::rate_limit::Limited) -> Self {
        V1Error::RateLimited {
            retry_after: limited.retry_after,
        }
    }
}

impl From<sqlx::Error> for V1Error {
    fn from(error: sqlx::Error) -> Self {
        ApiError::from(error).into()
    }
}

impl From<crate::db::StoreError> for V1Error {
    fn from(error: crate::db::StoreError) -> Self {
        ApiError::from(error).into()
    }
}

impl IntoResponse for V1Error {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            V1Error::Internal(source) => tracing::error!(error = ?source, "internal error"),
            other if status.is_server_error() => tracing::warn!(error = %other, "server error"),
            _ => {}
        }
        let body = V1ErrorBody {
            success: false,
            error: V1ErrorDetail {
                code: self.code(),
                message: self.to_string(),
                details: self.details(),
            },
        };
        let mut response = (status, Json(body)).into_response();
        let retry_after = match self {
            V1Error::RateLimited { retry_after } => Some(retry_after),
            V1Error::Unavailable(_) => Some(crate::http::error::UNAVAILABLE_RETRY_AFTER),
            _ => None,
        };
        if let Some(retry_after) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}

/// The body of every refusal of this family.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct V1ErrorBody {
    /// Always `false`.
    success: bool,
    error: V1ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct V1ErrorDetail {
    /// `UNAUTHORIZED`, `FORBIDDEN`, `AGENT_NOT_FOUND`, `NOT_FOUND`, `VALIDATION_ERROR`,
    /// `INSUFFICIENT_FUNDS`, `METHOD_NOT_ALLOWED`, `CONFLICT`, `PAYLOAD_TOO_LARGE`,
    /// `RATE_LIMITED`, `UNAVAILABLE` or `INTERNAL_ERROR` (docs/api.md).
    code: &'static str,
    message: String,
    /// `field` for a validation error, `agentId` for a missing agent, `retryAfter` for a rate
    /// limit; otherwise empty.
    details: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_errors_keep_their_meaning_in_the_v1_form() {
        let error: V1Error = ApiError::PaymentRequired("fund it".into()).into();
        assert_eq!(
            (error.status(), error.code()),
            (StatusCode::PAYMENT_REQUIRED, "INSUFFICIENT_FUNDS")
        );
        let error: V1Error = ApiError::BadRequest("bad".into()).into();
        assert_eq!(error.code(), "VALIDATION_ERROR");
        let error: V1Error = ApiError::RateLimited { retry_after: 9 }.into();
        assert_eq!(error.details()["retryAfter"], 9);
    }

    #[test]
    fn validation_errors_name_their_field() {
        let error = V1Error::field("username", "taken");
        assert_eq!(error.details(), json!({ "field": "username" }));
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
    }
}
