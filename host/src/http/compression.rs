//! Gzip for answers that are built once and sent many times: cached public answers and the
//! web app's embedded assets. Each body is compressed at most once, the first time a client that
//! accepts gzip asks for it; clients that do not send `Accept-Encoding: gzip` get it as it is.
//! Per-request compression of everything else is left out on purpose: it would cost more CPU
//! than the bytes it saves on the answers that are not reused.

use std::sync::OnceLock;

use axum::http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, VARY};
use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;

/// Bodies smaller than this go out as they are: a gzip header and trailer cost 18 bytes, and
/// below about a kilobyte JSON barely shrinks while compressing still costs time.
const MIN_GZIP_BYTES: usize = 1024;

/// A body as it is, and gzipped once somebody asked for it.
pub struct Compressible {
    plain: Bytes,
    /// `None` inside when compressing did not make the body smaller.
    gzip: OnceLock<Option<Bytes>>,
}

impl Compressible {
    pub fn new(plain: Bytes) -> Self {
        Compressible {
            plain,
            gzip: OnceLock::new(),
        }
    }

    /// The body to send to a client, and whether it is gzipped.
    pub fn for_client(&self, accepts_gzip: bool) -> (Bytes, bool) {
        if accepts_gzip
            && self.plain.len() >= MIN_GZIP_BYTES
            && let Some(gzip) = self.gzip.get_or_init(|| gzip(&self.plain))
        {
            return (gzip.clone(), true);
        }
        (self.plain.clone(), false)
    }
}

/// Say how the answer is encoded, and that it varies with `Accept-Encoding` either way, so a
/// shared cache in front of the node keeps the two forms apart.
pub(crate) fn mark_encoding(headers: &mut HeaderMap, gzipped: bool) {
    headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
    if gzipped {
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
}

/// `bytes` gzipped, or `None` if that is not smaller.
fn gzip(bytes: &[u8]) -> Option<Bytes> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::default(),
    );
    // Writing to a Vec cannot fail; if the encoder ever did, plain JSON is still a right answer.
    encoder.write_all(bytes).ok()?;
    let compressed = encoder.finish().ok()?;
    (compressed.len() < bytes.len()).then(|| Bytes::from(compressed))
}

/// Whether `Accept-Encoding` lets us answer in gzip: `gzip` (or its old alias `x-gzip`) with a
/// non-zero weight, or `*` with a non-zero weight when gzip is not listed itself (RFC 9110,
/// section 12.5.3). No header means identity only.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut gzip = None;
    let mut any = None;
    for value in headers.get_all(ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let weight = parts
                .filter_map(|param| {
                    let (name, value) = param.split_once('=')?;
                    name.trim()
                        .eq_ignore_ascii_case("q")
                        .then(|| value.trim().parse::<f32>().ok())
                        .flatten()
                })
                .next()
                .unwrap_or(1.0);
            let accepted = weight > 0.0;
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                gzip = Some(gzip.unwrap_or(false) || accepted);
            } else if coding == "*" {
                any = Some(accepted);
            }
        }
    }
    gzip.or(any).unwrap_or(false)
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn accept_encoding_is_read_as_rfc_9110_says() {
        let cases: &[(&[&str], bool)] = &[
            (&[], false),
            (&["gzip"], true),
            (&["gzip, deflate, br, zstd"], true),
            (&["br;q=1.0, GZIP;q=0.5"], true),
            (&["x-gzip"], true),
            (&["gzip;q=0"], false),
            (&["gzip; q=0.000"], false),
            (&["identity"], false),
            (&["br", "gzip"], true),
            (&["*"], true),
            (&["*;q=0"], false),
            (&["*, gzip;q=0"], false),
            (&["gzip;q=0, *"], false),
            (&["deflate, *;q=0.1"], true),
            (&["gzip;q=nonsense"], true),
        ];
        for (values, expected) in cases {
            assert_eq!(accepts_gzip(&headers(values)), *expected, "{values:?}");
        }
    }

    fn decompress(bytes: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn a_body_is_gzipped_once_and_decompresses_to_the_json() {
        let json: String = (0..200)
            .map(|rank| format!(r#"{{"rank":{rank},"wallet":"W{rank}","pnl":"0.00"}},"#))
            .collect();
        let body = Compressible::new(Bytes::from(json.clone()));
        let (first, gzipped) = body.for_client(true);
        assert!(gzipped);
        assert!(
            first.len() < json.len() / 3,
            "{} of {}",
            first.len(),
            json.len()
        );
        assert_eq!(decompress(&first), json.as_bytes());
        let (second, _) = body.for_client(true);
        assert_eq!(
            first.as_ptr(),
            second.as_ptr(),
            "compressed once, then shared"
        );
        let (plain, gzipped) = body.for_client(false);
        assert!(!gzipped);
        assert_eq!(plain, json.as_bytes());
    }

    #[test]
    fn small_or_incompressible_bodies_go_out_as_they_are() {
        let small = Compressible::new(Bytes::from_static(br#"{"tournaments":[]}"#));
        assert!(!small.for_client(true).1);
        // Bytes with no repetition do not shrink: the JSON is sent rather than a bigger gzip.
        use sha2::Digest;
        let noise: Vec<u8> = (0..128u32)
            .flat_map(|i| sha2::Sha256::digest(i.to_le_bytes()))
            .collect();
        let noisy = Compressible::new(Bytes::from(noise.clone()));
        let (bytes, gzipped) = noisy.for_client(true);
        assert!(!gzipped);
        assert_eq!(bytes, noise);
    }
}
