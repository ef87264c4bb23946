//! Time is injected: everything that asks "what time is it" asks a [`Clock`], so expiry,
//! lifecycles and schedules are tested by moving a [`ManualClock`] instead of sleeping.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// The source of the current time for the whole server.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// Wall-clock time.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The system clock moved by a fixed offset: a node whose clock disagrees with its peers', for
/// the fault tests of clock skew (`--clock-offset-ms`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OffsetClock {
    offset: Duration,
}

impl OffsetClock {
    pub(crate) fn new(offset_ms: i64) -> Self {
        OffsetClock {
            offset: Duration::milliseconds(offset_ms),
        }
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset
    }
}

/// A clock that only moves when told to; for tests and simulations.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Milliseconds since the Unix epoch: how every timestamp is stored, on SQLite and PostgreSQL alike.
pub fn to_millis(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

/// The inverse of [`to_millis`]; out-of-range values (never written by us) clamp to the epoch.
pub(crate) fn from_millis(millis: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(millis).unwrap_or_default()
}

/// RFC 3339 with millisecond precision and a `Z` suffix: the one timestamp format of the API.
pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = from_millis(1_700_000_000_000);
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::minutes(5));
        assert_eq!(to_millis(clock.now()), 1_700_000_300_000);
        assert_eq!(rfc3339(clock.now()), "2023-11-14T22:18:20.000Z");
    }

    #[test]
    fn an_offset_clock_runs_ahead_or_behind_by_its_offset() {
        for offset_ms in [2_000_i64, -2_000] {
            let before = Utc::now();
            let skewed = OffsetClock::new(offset_ms).now();
            let after = Utc::now();
            assert!(skewed >= before + Duration::milliseconds(offset_ms));
            assert!(skewed <= after + Duration::milliseconds(offset_ms));
        }
    }
}
