//! A deterministic, deny-by-default WASI 0.2 for components that import it (Rust `std`,
//! componentize-py, jco guests).
//!
//! Owns the per-tick [`WasiCtx`]: what a guest sees through `wasi:*` is a pure function of the
//! tick's inputs, so a backtest replays a live tick exactly and two nodes agree.
//!
//! - no preopened directories (every path fails), no sockets, no name lookups;
//! - `wasi:http` is linked (componentize-js imports it by default) but sends nothing: every
//!   outgoing request is answered `HTTP-request-denied`, an error the guest sees and may handle,
//!   as a refused socket is;
//! - empty environment and arguments, stdin closed;
//! - the wall and monotonic clocks read the tick's `now`, then advance 1 µs per read (a guest
//!   that loops on "has time passed" still terminates, through fuel as always);
//! - `random`, `insecure` and `insecure-seed` are ChaCha20 streams seeded from SHA-256 of the
//!   agent id and the tick time (one label per interface), never the host's entropy;
//! - stdout and stderr become log lines of the tick under the same caps as `host.log`.
//!
//! Components that import no WASI never reach this module: they are linked without it and their
//! store carries no context (the fast path of the built-in strategies).

use std::cell::Cell;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};
use sha2::{Digest as _, Sha256};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError, StreamResult};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx};
use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

use super::tick::{LogSink, Pushed};

/// What the WASI view of one tick is derived from.
#[derive(Debug, Clone, Copy)]
pub(super) struct WasiSeed {
    /// SHA-256 of the agent id (fixed per agent; hashed once per tick, not per read).
    pub agent: [u8; 32],
    /// The tick's time, Unix milliseconds.
    pub now: i64,
}

impl WasiSeed {
    pub(super) fn new(agent_id: &str, now: i64) -> Self {
        WasiSeed {
            agent: Sha256::digest(agent_id.as_bytes()).into(),
            now,
        }
    }

    /// 32 bytes of seed for one use (`label`), so the three random interfaces are independent.
    fn derive(&self, label: &str) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(b"crucible/wasi/");
        hash.update(label.as_bytes());
        hash.update(self.agent);
        hash.update(self.now.to_le_bytes());
        hash.finalize().into()
    }

    /// The tick's time in nanoseconds since the epoch (0 for times before it).
    fn now_nanos(&self) -> u64 {
        u64::try_from(self.now)
            .unwrap_or(0)
            .saturating_mul(1_000_000)
    }
}

/// Build the context of one tick. `logs` is the tick's log sink, shared with `host.log`.
pub(super) fn context(seed: WasiSeed, logs: &Arc<Mutex<LogSink>>) -> WasiCtx {
    let insecure_seed = seed.derive("insecure-seed");
    let mut low = [0u8; 16];
    low.copy_from_slice(&insecure_seed[..16]);
    let mut builder = WasiCtx::builder();
    builder
        .wall_clock(TickClock::new(seed.now_nanos()))
        .monotonic_clock(TickClock::new(seed.now_nanos()))
        .secure_random(SeededRng(ChaCha20Rng::from_seed(seed.derive("random"))))
        .insecure_random(SeededRng(ChaCha20Rng::from_seed(seed.derive("insecure"))))
        .insecure_random_seed(u128::from_le_bytes(low))
        // One call may not make the host allocate more than a guest could hold anyway.
        .max_random_size(1 << 20)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .stdout(LogStream {
            sink: Arc::clone(logs),
            level: "info",
        })
        .stderr(LogStream {
            sink: Arc::clone(logs),
            level: "error",
        });
    // No `preopened_dir`, `env`, `arg` or `inherit_*`: the defaults are empty, and stdin closed.
    builder.build()
}

/// The `wasi:http` of a tick: an outgoing request is refused before anything is resolved or
/// connected, so a strategy reaches no network however it asks.
pub(super) struct NoOutgoingHttp;

/// What the HTTP hooks hand back for the request's body once it is sent (never, here).
type Sent = Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>;

impl WasiHttpHooks for NoOutgoingHttp {
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Sent,
    ) -> Box<
        dyn Future<Output = Result<(http::Response<WasiBody>, Sent), wasmtime_wasi_http::Error>>
            + Send,
    > {
        Box::new(std::future::ready(Err(
            wasmtime_wasi_http::Error::HttpRequestDenied,
        )))
    }
}

/// A clock that starts at the tick's time and moves 1 µs per read.
struct TickClock {
    start: u64,
    reads: Cell<u64>,
}

impl TickClock {
    fn new(start: u64) -> Self {
        TickClock {
            start,
            reads: Cell::new(0),
        }
    }

    fn read(&self) -> u64 {
        let n = self.reads.get();
        self.reads.set(n + 1);
        self.start.saturating_add(n.saturating_mul(1_000))
    }
}

impl HostWallClock for TickClock {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_micros(1)
    }

    fn now(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.read())
    }
}

impl HostMonotonicClock for TickClock {
    fn resolution(&self) -> u64 {
        1_000
    }

    fn now(&self) -> u64 {
        self.read()
    }
}

/// ChaCha20 (rand_chacha, a fixed algorithm: the same seed gives the same bytes on every build)
/// behind the `rand_core` 0.10 trait wasmtime-wasi takes.
struct SeededRng(ChaCha20Rng);

impl rand_core_wasi::TryRng for SeededRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.0.next_u32())
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.0.fill_bytes(dst);
        Ok(())
    }
}

/// stdout or stderr of a guest: bytes are cut into lines that go to the tick's log at `level`.
#[derive(Clone)]
struct LogStream {
    sink: Arc<Mutex<LogSink>>,
    level: &'static str,
}

/// Bytes one `write` may carry (the guest is told through `check-write`).
const WRITE_PERMIT: usize = 64 << 10;

impl LogStream {
    fn write_bytes(&self, bytes: &[u8]) -> Result<(), &'static str> {
        // As in `TickState::logs`: a poisoned sink still holds valid lines.
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        match sink.write_stdio(self.level, bytes) {
            Pushed::Ok => Ok(()),
            Pushed::Flood => Err("log flood"),
            Pushed::OutOfFuel => Err(super::tick::OUT_OF_LOG_FUEL),
        }
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for LogStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes).map_err(StreamError::trap)
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogStream {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for LogStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(
            self.write_bytes(buf)
                .map(|()| buf.len())
                .map_err(std::io::Error::other),
        )
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core_wasi::Rng as _;

    #[test]
    fn every_outgoing_http_request_is_denied() {
        let request = http::Request::builder()
            .uri("https://example.com/prices")
            .body(WasiBody::default())
            .expect("request");
        let sent = NoOutgoingHttp.send_request(request, None, Box::new(async { Ok(()) }));
        // Ready at once: nothing is resolved or connected, so no runtime is needed to poll it.
        let mut sent = Box::into_pin(sent);
        let waker = std::task::Waker::noop();
        match sent.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Ready(Err(wasmtime_wasi_http::Error::HttpRequestDenied)) => {}
            Poll::Ready(Err(other)) => panic!("another error: {other:?}"),
            Poll::Ready(Ok(_)) => panic!("a request was answered"),
            Poll::Pending => panic!("a request is pending"),
        }
    }

    #[test]
    fn clocks_start_at_the_tick_and_advance_one_microsecond_per_read() {
        let clock = TickClock::new(WasiSeed::new("a", 1_700_000_000_000).now_nanos());
        assert_eq!(
            HostWallClock::now(&clock),
            std::time::Duration::from_millis(1_700_000_000_000)
        );
        assert_eq!(
            HostMonotonicClock::now(&clock),
            1_700_000_000_000_000_000 + 1_000
        );
        // Before the epoch the clock reads 0 rather than wrapping.
        assert_eq!(WasiSeed::new("a", -5).now_nanos(), 0);
    }

    #[test]
    fn random_depends_on_agent_and_time_only() {
        let bytes = |agent: &str, now: i64, label: &str| {
            let mut rng = SeededRng(ChaCha20Rng::from_seed(
                WasiSeed::new(agent, now).derive(label),
            ));
            let mut out = [0u8; 16];
            rng.fill_bytes(&mut out);
            out
        };
        assert_eq!(bytes("a", 1, "random"), bytes("a", 1, "random"));
        assert_ne!(bytes("a", 1, "random"), bytes("b", 1, "random"));
        assert_ne!(bytes("a", 1, "random"), bytes("a", 2, "random"));
        assert_ne!(bytes("a", 1, "random"), bytes("a", 1, "insecure"));
    }
}
