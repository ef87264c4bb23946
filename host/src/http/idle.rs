//! Whether an HTTP/2 connection is idle. An HTTP/1.1 connection between requests is closed by
//! hyper's header-read timeout; HTTP/2 has no such timeout, and a peer that answers pings could
//! hold a socket forever without asking anything. So the accept loop wraps an HTTP/2
//! connection's service in [`Counted`], which counts the requests in flight — until their
//! response bodies end, so an open event stream keeps its connection busy — and closes the
//! connection once a whole timeout passes with none in flight and none begun
//! ([`Activity::idle_since`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, SizeHint};
use hyper::{Request, Response};

/// A connection's requests: how many are in flight, and how many have begun.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    in_flight: AtomicUsize,
    begun: AtomicU64,
}

impl Activity {
    /// True when nothing is in flight and no request began since `begun` (what this returned
    /// as its second value last time). The count of requests begun so far, for the next call.
    pub(crate) fn idle_since(&self, begun: u64) -> (bool, u64) {
        let now = self.begun.load(Ordering::Acquire);
        (
            now == begun && self.in_flight.load(Ordering::Acquire) == 0,
            now,
        )
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.begun.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }
}

/// One request in flight; dropped with its response's body (or with the request, unanswered).
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `inner`, counting its requests in `activity`.
#[derive(Debug, Clone)]
pub(crate) struct Counted<S> {
    pub inner: S,
    pub activity: Arc<Activity>,
}

impl<S, B> hyper::service::Service<Request<hyper::body::Incoming>> for Counted<S>
where
    S: hyper::service::Service<Request<hyper::body::Incoming>, Response = Response<B>>,
    S::Future: Send + 'static,
    B: Body + Unpin,
{
    type Response = Response<CountedBody<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn call(&self, request: Request<hyper::body::Incoming>) -> Self::Future {
        let in_flight = self.activity.begin();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| CountedBody {
                inner: body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// A response body that keeps its request counted until it ends or is dropped.
#[derive(Debug)]
pub(crate) struct CountedBody<B> {
    inner: B,
    _in_flight: InFlight,
}

impl<B: Body + Unpin> Body for CountedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_only_with_nothing_in_flight_and_nothing_begun_since() {
        let activity = Arc::new(Activity::default());
        let (idle, seen) = activity.idle_since(0);
        assert!(idle, "a new connection that asked nothing");
        let request = activity.begin();
        let (idle, seen) = activity.idle_since(seen);
        assert!(!idle, "a request in flight");
        drop(request);
        assert!(!activity.idle_since(0).0, "a request began since");
        assert!(activity.idle_since(seen).0, "nothing since the last look");
    }
}
