//! The accept loop: HTTP/1.1 and HTTP/2 connections served by hyper with the limits a public
//! server needs, which `axum::serve` leaves unset.
//!
//! - A connection that opens with HTTP/2's preface (prior knowledge, "h2c": what a proxy in
//!   front speaks to an upstream, or any client told the server speaks it) is served as HTTP/2,
//!   so many requests — above all many event streams — share one socket: a browser behind an
//!   HTTP/2 proxy is not held to six streams per host, and one node holds far more streams than
//!   it has file descriptors. Anything else is HTTP/1.1.
//!
//! - A client must send a request's headers within `header_read_timeout` of being ready for
//!   them — on a new connection and between requests on a kept-alive one — or the connection is
//!   closed. Without this, a client that sends one byte at a time (slowloris) or connects and says
//!   nothing holds a socket and a task forever.
//! - HTTP/2 connections carry at most [`H2_STREAMS_PER_CONNECTION`] requests at once, are
//!   pinged when quiet (a peer that does not answer within [`H2_PING_TIMEOUT`] is dropped), and
//!   are closed once `header_read_timeout` passes with no request in flight and none begun, as an
//!   HTTP/1.1 connection is between requests ([`super::idle`]).
//! - On shutdown the listener closes first, then every connection finishes the request it is
//!   serving (open streams are told to end, see [`super::streams`]) and closes, for at most
//!   `drain_timeout`; what is still open then is dropped.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::Service;

use super::idle::{Activity, Counted};

/// Requests one HTTP/2 connection may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`).
/// Every stream is still one of the node's and its client's event-stream places.
const H2_STREAMS_PER_CONNECTION: u32 = 256;
/// How long an HTTP/2 connection may be quiet before it is pinged.
const H2_PING_INTERVAL: Duration = Duration::from_secs(20);
/// How long a ping may go unanswered before the connection is dropped.
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);
/// What an HTTP/2 client sends first (RFC 9113, section 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How connections are served.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServeLimits {
    pub header_read_timeout: Duration,
    pub drain_timeout: Duration,
}

/// Serve `router` on `listener` until `shutdown` completes, then drain.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()>,
) {
    let mut make_service = router.into_make_service_with_connect_info::<SocketAddr>();
    // Every connection task holds a receiver: a change asks it to finish gracefully, and the
    // sender's `closed()` resolves once every task has ended (hyper-util's `GracefulShutdown`
    // does the same, but does not take connections that can be upgraded to websockets).
    let (draining, drain_signal) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Responses go out whole as soon as they are written: with Nagle's algorithm on, the
        // last partial segment of a large answer (a leaderboard page) could wait for the
        // client's delayed ACK.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set");
        }
        let service = match make_service.call(peer).await {
            Ok(service) => service,
            Err(never) => match never {},
        };
        let service = TowerToHyperService::new(service);
        let drain_signal = drain_signal.clone();
        tokio::spawn(async move {
            match protocol(&stream, limits.header_read_timeout).await {
                Some(Protocol::Http2) => {
                    let activity = Arc::new(Activity::default());
                    let service = Counted {
                        inner: service,
                        activity: activity.clone(),
                    };
                    let connection = http2::Builder::new(TokioExecutor::new())
                        .timer(TokioTimer::new())
                        .max_concurrent_streams(H2_STREAMS_PER_CONNECTION)
                        .keep_alive_interval(H2_PING_INTERVAL)
                        .keep_alive_timeout(H2_PING_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service);
                    let idle = Some((activity, limits.header_read_timeout));
                    drive(connection, drain_signal, peer, idle).await;
                }
                Some(Protocol::Http1) => {
                    let connection = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(limits.header_read_timeout)
                        .serve_connection(TokioIo::new(stream), service)
                        // The simnet's PubSub websocket is an HTTP/1.1 upgrade on this
                        // connection; once upgraded, the socket belongs to its handler, which
                        // ends it on shutdown itself.
                        .with_upgrades();
                    drive(connection, drain_signal, peer, None).await;
                }
                // Closed, or nothing said within the header timeout: dropped unserved.
                None => {}
            }
        });
    }
    drop(listener);
    drop(drain_signal);
    let _ = draining.send(true);
    tokio::select! {
        () = draining.closed() => {}
        () = tokio::time::sleep(limits.drain_timeout) => {
            tracing::warn!("connections still open after the drain timeout; dropping them");
        }
    }
}

/// The protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// Look at (without taking) what the client sent first: HTTP/2's preface, or anything else.
/// `None` when the connection closes, fails, or says too little within `timeout`, which holds
/// here as it does for HTTP/1.1's headers.
async fn protocol(stream: &TcpStream, timeout: Duration) -> Option<Protocol> {
    let look = async {
        let mut first = [0u8; H2_PREFACE.len()];
        loop {
            let seen = stream.peek(&mut first).await.ok()?;
            if seen == 0 {
                return None;
            }
            if first[..seen] != H2_PREFACE[..seen] {
                return Some(Protocol::Http1);
            }
            if seen == H2_PREFACE.len() {
                return Some(Protocol::Http2);
            }
            // A prefix of the preface so far (the preface comes in one segment from every
            // real client): a peek returns at once while nothing new has come, so wait a
            // moment rather than spin.
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    tokio::time::timeout(timeout, look).await.ok().flatten()
}

/// A hyper connection that can be asked to finish what it is serving and close.
trait Graceful: Future {
    fn finish(self: std::pin::Pin<&mut Self>);
}

impl<I, S, B> Graceful for http1::UpgradeableConnection<I, S>
where
    Self: Future,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn finish(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, B, E> Graceful for http2::Connection<I, S, E>
where
    Self: Future,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn finish(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Serve `connection` to its end, or until the node drains or (with `idle`) the connection
/// has had nothing to do for a whole timeout, then let it finish gracefully.
async fn drive<C, E>(
    connection: C,
    mut drain_signal: watch::Receiver<bool>,
    peer: SocketAddr,
    idle: Option<(Arc<Activity>, Duration)>,
) where
    C: Graceful<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let idle = async {
        let Some((activity, timeout)) = idle else {
            return std::future::pending().await;
        };
        let mut begun = 0;
        loop {
            tokio::time::sleep(timeout).await;
            let (idle, now) = activity.idle_since(begun);
            if idle {
                return;
            }
            begun = now;
        }
    };
    let mut connection = std::pin::pin!(connection);
    let outcome = tokio::select! {
        outcome = connection.as_mut() => outcome,
        _ = drain_signal.changed() => {
            connection.as_mut().finish();
            connection.await
        }
        () = idle => {
            connection.as_mut().finish();
            connection.await
        }
    };
    if let Err(error) = outcome {
        tracing::debug!(%error, %peer, "connection ended with an error");
    }
}
