//! Open server-sent event streams, counted while they are open. A stream holds a connection and
//! a task for as long as the client keeps it, so without a cap one client (or a crowd) could hold
//! every socket the node has. A handler that streams takes a [`StreamSlot`]: it is refused when
//! its client already holds `max_per_client` streams (429) or the node holds `max_open` (503),
//! and it gives its place back when the stream ends, however it ends. On shutdown every stream
//! is told to close ([`Streams::close_all`]), so draining connections does not wait on clients
//! that would never hang up.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::IntoResponse;
use tokio::sync::watch;

use super::ApiError;
use super::rate_limit::ClientIp;
use crate::state::AppState;

#[derive(Debug)]
pub struct Streams {
    max_open: usize,
    max_per_client: usize,
    /// Open streams: in all, and per client address.
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
    closing: watch::Sender<bool>,
}

impl Streams {
    pub(crate) fn new(max_open: usize, max_per_client: usize) -> Self {
        Streams {
            max_open,
            max_per_client,
            open: Mutex::new((0, HashMap::new())),
            closing: watch::Sender::new(false),
        }
    }

    /// Take a place for a stream of `client`, or say why not.
    pub(crate) fn open(self: &Arc<Self>, client: IpAddr) -> Result<StreamSlot, ApiError> {
        if *self.closing.borrow() {
            return Err(ApiError::Unavailable("the server is shutting down".into()));
        }
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let (total, per_client) = &mut *open;
        let mine = per_client.get(&client).copied().unwrap_or(0);
        if mine >= self.max_per_client {
            return Err(ApiError::TooManyStreams(format!(
                "your address already holds {mine} open streams (at most {}); close one first",
                self.max_per_client
            )));
        }
        if *total >= self.max_open {
            return Err(ApiError::Unavailable(
                "this server holds as many streams as it can; try again shortly".into(),
            ));
        }
        *total += 1;
        per_client.insert(client, mine + 1);
        Ok(StreamSlot {
            streams: self.clone(),
            client,
            closing: self.closing.subscribe(),
        })
    }

    /// Streams open now (all, and of one client).
    pub fn count(&self, client: Option<IpAddr>) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        match client {
            None => open.0,
            Some(ip) => open.1.get(&ip).copied().unwrap_or(0),
        }
    }

    /// Tell every open stream to end, and refuse new ones (shutdown).
    pub(crate) fn close_all(&self) {
        self.closing.send_replace(true);
    }

    /// Turns true when the server asks streams to close (for streams that hold no slot of
    /// their own, e.g. the MCP service's).
    pub(crate) fn closing_signal(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    fn release(&self, client: IpAddr) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let (total, per_client) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(mine) = per_client.get_mut(&client) {
            *mine -= 1;
            if *mine == 0 {
                per_client.remove(&client);
            }
        }
    }
}

/// How soon a client should reconnect after the server closed its stream to shut down: by then
/// the load balancer sends it to another node, or this one is back.
pub(crate) const RECONNECT_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// The last frame of a stream closed for a shutdown: no event (a client dispatches nothing),
/// only the `retry:` hint an `EventSource` reconnects after.
pub(crate) fn reconnect_hint() -> axum::response::sse::Event {
    axum::response::sse::Event::default()
        .retry(RECONNECT_AFTER)
        .comment("the server is shutting down; reconnect")
}

/// One whole server-sent event, ready to be written to any number of streams: `event`, its
/// `id` if any, and `data` as one line of JSON (JSON text never holds a raw line break).
pub(crate) fn sse_frame(
    event: &str,
    id: Option<&str>,
    data: &impl serde::Serialize,
) -> serde_json::Result<bytes::Bytes> {
    let data = serde_json::to_string(data)?;
    let mut frame = String::with_capacity(data.len() + event.len() + 32);
    frame.push_str("event: ");
    frame.push_str(event);
    frame.push('\n');
    if let Some(id) = id {
        frame.push_str("id: ");
        frame.push_str(id);
        frame.push('\n');
    }
    frame.push_str("data: ");
    frame.push_str(&data);
    frame.push_str("\n\n");
    Ok(bytes::Bytes::from(frame))
}

/// A keep-alive: a comment, which clients ignore.
pub(crate) const SSE_KEEP_ALIVE: &[u8] = b":\n\n";

/// [`reconnect_hint`] as raw bytes, for streams that write their frames themselves.
pub(crate) fn reconnect_hint_frame() -> bytes::Bytes {
    bytes::Bytes::from(format!(
        "retry: {}\n: the server is shutting down; reconnect\n\n",
        RECONNECT_AFTER.as_millis()
    ))
}

/// A `text/event-stream` response whose body is `frames`, each written as it comes.
pub(crate) fn sse_response(
    frames: impl futures_util::Stream<Item = bytes::Bytes> + Send + 'static,
) -> axum::response::Response {
    use futures_util::StreamExt;
    let body = axum::body::Body::from_stream(frames.map(Ok::<_, std::convert::Infallible>));
    (
        [
            (axum::http::header::CONTENT_TYPE, "text/event-stream"),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A stream's place, held by the stream itself for as long as it runs.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    streams: Arc<Streams>,
    client: IpAddr,
    closing: watch::Receiver<bool>,
}

impl StreamSlot {
    /// Completes when the server asks streams to close.
    pub(crate) async fn closing(&mut self) {
        // An error means the sender is gone: the server is going away too.
        let _ = self.closing.wait_for(|closing| *closing).await;
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.streams.release(self.client);
    }
}

impl FromRequestParts<AppState> for StreamSlot {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Ok(client) = ClientIp::from_request_parts(parts, state).await;
        state.streams.open(client.limit_key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_capped_per_client_and_per_node_and_given_back_on_drop() {
        let streams = Arc::new(Streams::new(3, 2));
        let a: IpAddr = "203.0.113.1".parse().expect("ip");
        let b: IpAddr = "203.0.113.2".parse().expect("ip");
        let first = streams.open(a).expect("1st");
        let _second = streams.open(a).expect("2nd");
        assert!(matches!(streams.open(a), Err(ApiError::TooManyStreams(_))));
        let _third = streams.open(b).expect("another client");
        assert!(matches!(
            streams.open("203.0.113.3".parse().expect("ip")),
            Err(ApiError::Unavailable(_))
        ));
        drop(first);
        assert_eq!((streams.count(None), streams.count(Some(a))), (2, 1));
        streams.open(a).expect("a place was given back");
    }

    #[tokio::test]
    async fn closing_reaches_open_streams_and_refuses_new_ones() {
        let streams = Arc::new(Streams::new(10, 10));
        let mut slot = streams
            .open("203.0.113.1".parse().expect("ip"))
            .expect("open");
        streams.close_all();
        tokio::time::timeout(std::time::Duration::from_secs(1), slot.closing())
            .await
            .expect("told to close");
        assert!(streams.open("203.0.113.9".parse().expect("ip")).is_err());
    }
}
