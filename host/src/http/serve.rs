//! The accept loop: HTTP/1.1 connections served by hyper with the limits a public server needs,
//! which `axum::serve` leaves unset.
//!
//! - A client must send a request's headers within `header_read_timeout` of being ready for
//!   them — on a new connection and between requests on a kept-alive one — or the connection is
//!   closed. Without this, a client that sends one byte at a time (slowloris) or connects and says
//!   nothing holds a socket and a task forever.
//! - On shutdown the listener closes first, then every connection finishes the request it is
//!   serving (open streams are told to end, see [`super::streams`]) and closes, for at most
//!   `drain_timeout`; what is still open then is dropped.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::Service;

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
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
            // The simnet's PubSub websocket is an HTTP/1.1 upgrade on this connection; once
            // upgraded, the socket belongs to its handler, which ends it on shutdown itself.
            .with_upgrades();
        let mut drain_signal = drain_signal.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let outcome = tokio::select! {
                outcome = connection.as_mut() => outcome,
                _ = drain_signal.changed() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = outcome {
                tracing::debug!(%error, %peer, "connection ended with an error");
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
