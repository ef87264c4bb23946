//! Public answers served from the node's cache, as JSON or gzipped JSON.
//!
//! A leaderboard page is tens of kilobytes of JSON and is read far more often than it changes,
//! so copying it to the socket is most of what serving it costs. Each cached body is therefore
//! compressed at most once, the first time a client that accepts gzip asks for it
//! ([`Compressible`]), and every later such client gets the compressed bytes
//! (docs/architecture.md, "Read caches").

use axum::http::HeaderMap;
use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::cache::Caches;
use crate::http::ApiError;
use crate::http::compression::{Compressible, accepts_gzip, mark_encoding};

/// A public answer as JSON, from the node's cache when nothing changed since it was built.
/// `key` must name everything the answer depends on (path and query); `load` returns the
/// answer and the instant it turns stale with time alone, if any. The answer is gzipped for
/// clients that accept it, and says that it varies with `Accept-Encoding` either way so a
/// shared cache in front of the node keeps the two apart.
pub async fn public_json<T, F>(
    caches: &Caches,
    headers: &HeaderMap,
    key: &str,
    load: F,
) -> Result<Response, ApiError>
where
    T: serde::Serialize,
    F: std::future::Future<Output = Result<(T, Option<chrono::DateTime<chrono::Utc>>), ApiError>>,
{
    let body = caches
        .public
        .get_or_load(key, async {
            let (value, stale_at) = load.await?;
            let json =
                serde_json::to_vec(&value).map_err(|error| ApiError::Internal(error.into()))?;
            Ok::<_, ApiError>((Compressible::new(Bytes::from(json)), stale_at))
        })
        .await?;
    let (bytes, gzipped) = body.for_client(accepts_gzip(headers));
    let mut response = bytes.into_response();
    let response_headers = response.headers_mut();
    response_headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    mark_encoding(response_headers, gzipped);
    Ok(response)
}
