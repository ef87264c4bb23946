//! Vendors that answered 429 (too many requests) are not called again until their
//! `Retry-After` has passed: one vendor's limit holds back only that vendor's calls. Kept in
//! this node's memory (a restart forgets it; the provider will say so again).

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// Wait when a 429 names no (readable) `Retry-After`.
const DEFAULT_WAIT_SECS: i64 = 10;
/// Longest wait honoured, so a wrong header cannot silence a vendor for days.
const MAX_WAIT_SECS: i64 = 600;

#[derive(Debug, Default)]
pub(crate) struct Backoff {
    until: Mutex<HashMap<String, DateTime<Utc>>>,
}

impl Backoff {
    /// Seconds left before `vendor` may be called again, if it is backed off at `now`.
    pub(crate) fn remaining(&self, vendor: &str, now: DateTime<Utc>) -> Option<i64> {
        let mut until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        match until.get(vendor) {
            Some(&end) if end > now => Some((end - now).num_seconds().max(1)),
            Some(_) => {
                until.remove(vendor);
                None
            }
            None => None,
        }
    }

    /// Back `vendor` off after a 429 carrying `retry_after` (the header's value, if any).
    /// Returns the wait in seconds.
    pub(crate) fn back_off(
        &self,
        vendor: &str,
        retry_after: Option<&str>,
        now: DateTime<Utc>,
    ) -> i64 {
        let wait = retry_after
            .and_then(|value| wait_secs(value, now))
            .unwrap_or(DEFAULT_WAIT_SECS)
            .clamp(1, MAX_WAIT_SECS);
        let end = now + Duration::seconds(wait);
        let mut until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        let slot = until.entry(vendor.to_owned()).or_insert(end);
        *slot = (*slot).max(end);
        wait
    }
}

/// `Retry-After` as seconds from `now`: a number of seconds or an HTTP date.
fn wait_secs(value: &str, now: DateTime<Utc>) -> Option<i64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| secs.ceil() as i64);
    }
    let date = DateTime::parse_from_rfc2822(value).ok()?;
    Some((date.with_timezone(&Utc) - now).num_seconds())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_429_holds_back_its_vendor_only_until_retry_after() {
        let backoff = Backoff::default();
        let now = Utc::now();
        assert_eq!(backoff.back_off("groq", Some("30"), now), 30);
        assert_eq!(backoff.remaining("groq", now), Some(30));
        assert_eq!(
            backoff.remaining("openai", now),
            None,
            "other vendors go on"
        );
        assert_eq!(
            backoff.remaining("groq", now + Duration::seconds(29)),
            Some(1)
        );
        assert_eq!(backoff.remaining("groq", now + Duration::seconds(30)), None);
    }

    #[test]
    fn retry_after_may_be_a_date_absent_or_absurd() {
        let backoff = Backoff::default();
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .expect("date")
            .with_timezone(&Utc);
        assert_eq!(
            backoff.back_off("a", Some("Thu, 01 Jan 2026 00:01:00 GMT"), now),
            60
        );
        assert_eq!(backoff.back_off("b", None, now), DEFAULT_WAIT_SECS);
        assert_eq!(backoff.back_off("c", Some("soon"), now), DEFAULT_WAIT_SECS);
        assert_eq!(backoff.back_off("d", Some("99999999"), now), MAX_WAIT_SECS);
        assert_eq!(backoff.back_off("e", Some("0"), now), 1);
        assert_eq!(backoff.back_off("f", Some("1.2"), now), 2);
    }

    #[test]
    fn a_shorter_retry_after_does_not_shorten_a_wait() {
        let backoff = Backoff::default();
        let now = Utc::now();
        backoff.back_off("groq", Some("60"), now);
        backoff.back_off("groq", Some("5"), now);
        assert_eq!(backoff.remaining("groq", now), Some(60));
    }
}
