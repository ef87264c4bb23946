//! The web app's static files, compiled into the binary (no build step, no CDN, works offline).
//! Each is served at `/assets/<hash>/<name>`, where `<hash>` is the start of its SHA-256: a page
//! always links the current content, so the answer may be cached for a year (`immutable`); an
//! out-of-date hash still answers (a page rendered before an upgrade), but without long caching.
//! Every answer carries the content's `ETag` and a matching `If-None-Match` gets a 304.
//! Browsers that accept gzip get each file gzipped, compressed once per process.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::http::compression::{Compressible, accepts_gzip, mark_encoding};

/// One embedded file.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

/// An [`Asset`] entry: the file at `path` (relative to this file), compiled in.
macro_rules! asset {
    ($name:literal, $content_type:expr, $path:literal) => {
        Asset {
            name: $name,
            content_type: $content_type,
            bytes: include_bytes!($path),
        }
    };
}

const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Every file the pages link, by name.
pub static ASSETS: &[Asset] = &[
    asset!("app.css", CSS, "../../assets/app.css"),
    asset!("app.js", JS, "../../assets/app.js"),
    asset!("tournament.js", JS, "../../assets/tournament.js"),
    asset!("agents.js", JS, "../../assets/agents.js"),
    asset!("dungeon.js", JS, "../../assets/dungeon.js"),
    asset!("wallet.js", JS, "../../assets/wallet.js"),
    asset!(
        "uPlot.iife.min.js",
        JS,
        "../../assets/vendor/uplot/uPlot.iife.min.js"
    ),
    asset!(
        "uPlot.min.css",
        CSS,
        "../../assets/vendor/uplot/uPlot.min.css"
    ),
];

/// What serving an asset needs beyond its bytes, in `ASSETS` order: the first 16 hex digits of
/// its SHA-256, and the body, gzipped on first demand.
struct Served {
    hash: String,
    body: Compressible,
}

static SERVED: LazyLock<Vec<Served>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|asset| Served {
            hash: hex::encode(&Sha256::digest(asset.bytes)[..8]),
            body: Compressible::new(Bytes::from_static(asset.bytes)),
        })
        .collect()
});

fn find(name: &str) -> Option<(usize, &'static Asset)> {
    ASSETS
        .iter()
        .enumerate()
        .find(|(_, asset)| asset.name == name)
}

/// The URL a page links `name` by. A name that is not embedded is a bug caught by the tests
/// (every page is rendered there); it links a path that answers 404.
pub(super) fn url(name: &str) -> String {
    match find(name) {
        Some((index, asset)) => format!("/assets/{}/{}", SERVED[index].hash, asset.name),
        None => format!("/assets/missing/{name}"),
    }
}

pub(super) async fn serve(
    Path((hash, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some((index, asset)) = find(&name) else {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    };
    let served = &SERVED[index];
    let current = &served.hash;
    let cache = if &hash == current {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let (bytes, gzipped) = served.body.for_client(accepts_gzip(&headers));
    // The gzipped bytes are another representation, so they get their own tag; a client that
    // holds either form of the current content gets its 304.
    let etag = if gzipped {
        format!("\"{current}.gz\"")
    } else {
        format!("\"{current}\"")
    };
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|sent| {
            sent.split(',').any(|tag| {
                let tag = tag.trim().trim_start_matches("W/");
                tag.strip_prefix('"')
                    .and_then(|tag| tag.strip_suffix('"'))
                    .is_some_and(|tag| tag.trim_end_matches(".gz") == current)
            })
        });
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            )],
            bytes,
        )
            .into_response()
    };
    let response_headers = response.headers_mut();
    mark_encoding(response_headers, gzipped && !matches);
    response_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response_headers.insert(header::ETAG, value);
    }
    response_headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_a_distinct_url() {
        let mut urls: Vec<String> = ASSETS.iter().map(|asset| url(asset.name)).collect();
        urls.sort();
        urls.dedup();
        assert_eq!(urls.len(), ASSETS.len());
        assert!(url("app.css").starts_with("/assets/"));
        assert!(url("nope.js").contains("missing"));
    }
}
