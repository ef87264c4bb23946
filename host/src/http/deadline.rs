//! Every request is answered within a bound (`--request-timeout-ms`, 60 s by default).
//!
//! A database that goes away cleanly is met with a 503 at once (`db::Outage`). One cut off by
//! a partition is not: packets are dropped, not refused, so a query already sent on a pooled
//! connection waits until TCP gives up, which takes about fifteen minutes. This bound turns
//! that wait into a 503 with `Retry-After`, in the error form of the surface asked. Only the
//! wait for the response's head is bounded: an event stream, whose head goes out at once,
//! streams on.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// Answer `request` from `next`, or 503 once `limit` has passed without an answer.
pub(crate) async fn bound(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(path, ?limit, "request not answered in time; answered 503");
            let message = format!(
                "the server could not answer within {} s (its database may be unreachable); \
                 retry later",
                limit.as_secs_f64()
            );
            if path == "/api/v1" || path.starts_with("/api/v1/") {
                crate::v1::unavailable(message)
            } else {
                ApiError::Unavailable(message).into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::{Body, to_bytes};
    use axum::http::{Request as HttpRequest, StatusCode, header};
    use axum::routing::get;
    use tower::ServiceExt;

    fn app() -> Router {
        Router::new()
            .route("/api/slow", get(std::future::pending::<&'static str>))
            .route("/api/v1/slow", get(std::future::pending::<&'static str>))
            .route("/api/fast", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(
                Duration::from_millis(50),
                bound,
            ))
    }

    async fn call(path: &str) -> (StatusCode, Option<String>, serde_json::Value) {
        let response = app()
            .oneshot(HttpRequest::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("answered");
        let status = response.status();
        let retry = response
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().expect("ascii").to_owned());
        let body = to_bytes(response.into_body(), 1 << 16).await.expect("body");
        let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        (status, retry, json)
    }

    #[tokio::test]
    async fn a_request_that_hangs_is_answered_503_in_its_surfaces_error_form() {
        let (status, retry, body) = call("/api/slow").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry.as_deref(), Some("5"));
        assert!(
            body["error"].as_str().expect("message").contains("0.05 s"),
            "{body}"
        );

        let (status, retry, body) = call("/api/v1/slow").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry.as_deref(), Some("5"));
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "UNAVAILABLE");

        let (status, _, _) = call("/api/fast").await;
        assert_eq!(status, StatusCode::OK);
    }
}
