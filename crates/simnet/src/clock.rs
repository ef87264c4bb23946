//! The simnet's clock. Finality, blockhash expiry and idle slots are all computed from it, so a
//! server that tests time by moving its own clock hands that clock in, and a standalone simnet
//! uses the wall clock.

/// Now, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// The current time (ms since the Unix epoch).
    fn now_ms(&self) -> i64;
}

/// Any `Fn() -> i64` is a clock: `Arc::new(move || to_millis(server_clock.now()))`.
impl<F: Fn() -> i64 + Send + Sync> Clock for F {
    fn now_ms(&self) -> i64 {
        self()
    }
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| {
                i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
            })
    }
}
