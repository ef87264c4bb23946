//! The HTTP client webhooks go out through: hyper's pooled HTTP/1.1 client, with TLS by rustls
//! and the Mozilla roots, and names resolved to public addresses only unless the host allows
//! private ones ([`egress`]). Redirects are never followed: a 3xx is a failed attempt (the owner
//! should fix the URL, and we must not be bounced to addresses the owner did not give). Proxies
//! from the environment are never used: a `*_PROXY` variable must not route tenants'
//! deliveries, or their signed bodies, through another host.
//!
//! The rest of the server calls out through reqwest. Webhooks do not: a delivery is one small
//! POST repeated thousands of times a second, and reqwest's layers around the same hyper client
//! (its request builder, its redirect and retry policies, and its turning a parsed URL back into
//! text and into a URI for every request) took about a fifth of the delivery thread's time
//! (docs/benchmarks.md, "Hot durable writes"). Here a URL becomes a URI once per claim
//! ([`Destination`]), and a request is the few headers it carries.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, USER_AGENT};
use http::{HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;

use super::egress;
use super::signing::{DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, SignedRequest};

const AGENT: &str = concat!("Crucible-Webhooks/", env!("CARGO_PKG_VERSION"));
// The headers' names, checked once at compile time rather than on every request.
const DELIVERY: HeaderName = HeaderName::from_static(DELIVERY_HEADER);
const EVENT: HeaderName = HeaderName::from_static(EVENT_HEADER);
const SIGNATURE: HeaderName = HeaderName::from_static(SIGNATURE_HEADER);

/// Where one webhook URL's requests go: its URI, parsed once for every row of a claim that
/// names it, and its destination (scheme, host and port) for the per-destination limit. A URL
/// that cannot be sent to at all (it does not parse, or names a private address the host does
/// not allow) keeps the reason, and each of its rows fails with it.
pub(super) struct Destination {
    pub(super) key: String,
    pub(super) uri: Result<Uri, Unreachable>,
}

/// Why a URL's rows are not sent.
#[derive(Debug)]
pub(super) enum Unreachable {
    /// Its host is a private or reserved address (an IP literal, checked before sending).
    Refused(String),
    /// It is not a URL an HTTP request can go to.
    Invalid(String),
}

impl Destination {
    /// Parse `url` as browsers do (WHATWG: the decimal, octal and hex spellings of an IPv4 host
    /// arrive as the address they mean), check a literal host unless private addresses are
    /// allowed, and turn it into the URI hyper sends.
    pub(super) fn of(url: &str, allow_private: bool) -> Self {
        let parsed = match url::Url::parse(url) {
            Ok(parsed) => parsed,
            Err(error) => {
                return Destination {
                    key: url.to_owned(),
                    uri: Err(Unreachable::Invalid(format!("bad webhook URL: {error}"))),
                };
            }
        };
        let key = format!(
            "{}://{}:{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or_default(),
            parsed.port_or_known_default().unwrap_or_default()
        );
        let checked = if allow_private {
            Ok(())
        } else {
            egress::check_parsed(&parsed).map_err(Unreachable::Refused)
        };
        let uri = checked.and_then(|()| {
            // The serialised URL is normalised (the host as the address it means, the path
            // percent-encoded), so it is also a valid URI.
            parsed
                .as_str()
                .parse::<Uri>()
                .map_err(|error| Unreachable::Invalid(format!("bad webhook URL: {error}")))
        });
        Destination { key, uri }
    }
}

/// How a request failed.
pub(super) enum SendError {
    /// No response head within the timeout.
    Timeout,
    /// The resolver found no public address for the name ([`egress`]).
    Refused(String),
    /// No connection could be made; the detail for the log.
    Connect(String),
    /// Any other failure; the detail for the log.
    Other(String),
}

type Connector = HttpsConnector<HttpConnector<Resolver>>;

/// The process's client for webhooks: one connection pool for every delivery.
pub(super) struct Sender {
    client: Client<Connector, Full<Bytes>>,
}

impl Sender {
    /// The process's sender: one for public addresses only, one for any address.
    pub(super) fn shared(allow_private: bool) -> Result<&'static Sender, String> {
        static PUBLIC_ONLY: OnceLock<Result<Sender, String>> = OnceLock::new();
        static ANY_ADDRESS: OnceLock<Result<Sender, String>> = OnceLock::new();
        let cell = if allow_private {
            &ANY_ADDRESS
        } else {
            &PUBLIC_ONLY
        };
        cell.get_or_init(|| Sender::new(allow_private))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn new(allow_private: bool) -> Result<Self, String> {
        let mut http = HttpConnector::new_with_resolver(Resolver {
            public_only: !allow_private,
        });
        // The request is written whole at once: waiting to coalesce it only adds a round trip.
        http.set_nodelay(true);
        // https URLs are handed to the TLS layer, which wraps this connector.
        http.enforce_http(false);
        let provider = rustls::crypto::ring::default_provider();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|error| format!("cannot set up TLS for webhooks: {error}"))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Sender { client })
    }

    /// POST `signed` to `uri` for the delivery `id` of `event`: the response's status, once its
    /// head arrives within `timeout` (its body is not read).
    pub(super) async fn post(
        &self,
        uri: Uri,
        id: &str,
        event: &str,
        signed: SignedRequest,
        timeout: Duration,
    ) -> Result<StatusCode, SendError> {
        let request = request(uri, id, event, signed)?;
        let response = tokio::time::timeout(timeout, self.client.request(request))
            .await
            .map_err(|_elapsed| SendError::Timeout)?
            .map_err(|error| failure(&error))?;
        Ok(response.status())
    }
}

/// The request a delivery sends: its signed body and the headers that name and sign it.
fn request(
    uri: Uri,
    id: &str,
    event: &str,
    signed: SignedRequest,
) -> Result<Request<Full<Bytes>>, SendError> {
    let SignedRequest {
        body,
        signature_headers: [legacy, timestamped],
    } = signed;
    let value = |text: String| {
        HeaderValue::try_from(text)
            .map_err(|error| SendError::Other(format!("bad header value: {error}")))
    };
    let mut request = Request::new(Full::new(Bytes::from(body)));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.reserve(7);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(USER_AGENT, HeaderValue::from_static(AGENT));
    headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
    headers.insert(DELIVERY, value(id.to_owned())?);
    headers.insert(EVENT, value(event.to_owned())?);
    headers.append(SIGNATURE, value(legacy)?);
    headers.append(SIGNATURE, value(timestamped)?);
    Ok(request)
}

/// A client error as a [`SendError`], with its chain of causes for the log.
fn failure(error: &hyper_util::client::legacy::Error) -> SendError {
    let mut detail = error.to_string();
    let mut refused = None;
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        if let Some(ResolveError::Refused(reason)) = cause.downcast_ref::<ResolveError>() {
            refused = Some(reason.clone());
        }
        source = cause.source();
    }
    match refused {
        Some(reason) => SendError::Refused(reason),
        None if error.is_connect() => SendError::Connect(detail),
        None => SendError::Other(detail),
    }
}

/// Resolves a URL's host name; with `public_only`, to its public addresses only, so that a name
/// pointing at a private address cannot get past the check of literal hosts. IP literals never
/// reach it: the connector uses them as they are.
#[derive(Clone)]
struct Resolver {
    public_only: bool,
}

/// Why a name was not resolved.
#[derive(Debug)]
enum ResolveError {
    /// Every address of the name is private or reserved.
    Refused(String),
    /// The lookup itself failed.
    Lookup(std::io::Error),
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::Refused(reason) => f.write_str(reason),
            ResolveError::Lookup(error) => write!(f, "cannot resolve the host: {error}"),
        }
    }
}

impl std::error::Error for ResolveError {}

type Resolving =
    Pin<Box<dyn Future<Output = Result<std::vec::IntoIter<SocketAddr>, ResolveError>> + Send>>;

impl tower::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = ResolveError;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let public_only = self.public_only;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(ResolveError::Lookup)?;
            let addresses: Vec<SocketAddr> = resolved
                .filter(|address| !public_only || egress::is_public(address.ip()))
                .collect();
            if public_only && addresses.is_empty() {
                return Err(ResolveError::Refused(egress::refusal(&host)));
            }
            Ok(addresses.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_is_scheme_host_and_port_and_its_uri_is_normalised() {
        let destination = Destination::of("http://0x7f.0.0.1:9000/in?a=1", true);
        assert_eq!(destination.key, "http://127.0.0.1:9000");
        let uri = destination.uri.expect("a URI");
        assert_eq!(uri.to_string(), "http://127.0.0.1:9000/in?a=1");
        let destination = Destination::of("https://hooks.example.com/in", false);
        assert_eq!(destination.key, "https://hooks.example.com:443");
        assert!(destination.uri.is_ok());
    }

    #[test]
    fn private_literals_are_refused_unless_allowed_and_bad_urls_are_invalid() {
        let refused = Destination::of("http://2130706433/hook", false);
        assert!(
            matches!(refused.uri, Err(Unreachable::Refused(reason)) if reason.contains("private or reserved"))
        );
        assert!(Destination::of("http://2130706433/hook", true).uri.is_ok());
        let invalid = Destination::of("not a url", false);
        assert_eq!(invalid.key, "not a url");
        assert!(matches!(invalid.uri, Err(Unreachable::Invalid(_))));
    }

    #[tokio::test]
    async fn names_resolving_to_private_addresses_only_are_refused() {
        let mut public_only = Resolver { public_only: true };
        let name: Name = "localhost".parse().expect("a name");
        let refused = tower::Service::call(&mut public_only, name.clone()).await;
        assert!(matches!(refused, Err(ResolveError::Refused(_))));
        let mut any = Resolver { public_only: false };
        let resolved: Vec<SocketAddr> = tower::Service::call(&mut any, name)
            .await
            .expect("localhost resolves")
            .collect();
        assert!(resolved.iter().all(|address| address.ip().is_loopback()));
    }
}
