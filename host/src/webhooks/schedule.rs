//! When to try a failed delivery again, and when to give up.
//!
//! After the n-th failed attempt the next one waits a random delay drawn uniformly from
//! `[10 s, min(1 h, 10 s × 2ⁿ)]`: an exponential ceiling (20 s, 40 s, 80 s, … 1 h) with full
//! jitter above a 10 s floor, so receivers that fail together are not retried together, and none
//! is retried sooner than 10 s. Retries go on until 24 h after the event was queued — the last
//! one lands on that mark — and a failure at or after it moves the delivery to the dead letter.

use chrono::{DateTime, Duration, Utc};
use rand::Rng;

/// The shortest wait between two attempts.
pub(crate) const BASE: Duration = Duration::seconds(10);
/// The longest wait between two attempts.
pub(crate) const CAP: Duration = Duration::hours(1);
/// How long after queueing a delivery is retried before it is dead-lettered.
pub(crate) const GIVE_UP_AFTER: Duration = Duration::hours(24);

/// What to do with a delivery whose attempt just failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterFailure {
    /// Try again at this time.
    RetryAt(DateTime<Utc>),
    /// Stop: 24 h have passed since the event was queued.
    GiveUp,
}

/// The upper bound of the wait after `failed_attempts` failures: 10 s doubling, capped at 1 h.
pub(crate) fn ceiling(failed_attempts: i64) -> Duration {
    let doublings = failed_attempts.clamp(1, 20) as u32;
    let millis = BASE
        .num_milliseconds()
        .saturating_mul(1_i64 << doublings)
        .min(CAP.num_milliseconds());
    Duration::milliseconds(millis)
}

/// A wait drawn uniformly from `[BASE, ceiling(failed_attempts)]`.
pub(crate) fn backoff(failed_attempts: i64, rng: &mut impl Rng) -> Duration {
    let low = BASE.num_milliseconds();
    let high = ceiling(failed_attempts).num_milliseconds();
    Duration::milliseconds(rng.gen_range(low..=high))
}

/// The decision after the `attempts`-th attempt failed at `now`, for an event queued at `created_at`.
pub(crate) fn after_failure(
    created_at: DateTime<Utc>,
    attempts: i64,
    now: DateTime<Utc>,
    rng: &mut impl Rng,
) -> AfterFailure {
    let deadline = created_at + GIVE_UP_AFTER;
    if now >= deadline {
        return AfterFailure::GiveUp;
    }
    AfterFailure::RetryAt((now + backoff(attempts, rng)).min(deadline))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn the_ceiling_doubles_from_20_s_up_to_an_hour() {
        let seconds: Vec<i64> = (1..=10).map(|n| ceiling(n).num_seconds()).collect();
        assert_eq!(seconds, [20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600]);
        assert_eq!(
            ceiling(0),
            Duration::seconds(20),
            "no attempt counts as one"
        );
        assert_eq!(ceiling(10_000), CAP);
    }

    #[test]
    fn every_wait_lies_between_the_floor_and_its_ceiling_and_they_spread() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for attempts in 1..=30 {
            let waits: Vec<Duration> = (0..200).map(|_| backoff(attempts, &mut rng)).collect();
            assert!(waits.iter().all(|w| *w >= BASE && *w <= ceiling(attempts)));
            let distinct: std::collections::BTreeSet<_> = waits.iter().collect();
            assert!(
                distinct.len() > 100,
                "jittered, not fixed: {}",
                distinct.len()
            );
        }
    }

    #[test]
    fn retries_stop_24_hours_after_queueing_with_a_last_try_on_the_mark() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let created = DateTime::from_timestamp(1_800_000_000, 0).expect("time");
        let deadline = created + GIVE_UP_AFTER;

        let early = after_failure(created, 1, created, &mut rng);
        let AfterFailure::RetryAt(at) = early else {
            panic!("retries at first: {early:?}");
        };
        assert!(at >= created + BASE && at <= created + Duration::seconds(20));

        let late = created + Duration::hours(23) + Duration::minutes(59);
        assert_eq!(
            after_failure(created, 60, late, &mut rng),
            AfterFailure::RetryAt(deadline),
            "the wait is cut to the deadline, so the last try lands on it"
        );
        assert_eq!(
            after_failure(created, 61, deadline, &mut rng),
            AfterFailure::GiveUp
        );
        assert_eq!(
            after_failure(created, 1, deadline + Duration::days(3), &mut rng),
            AfterFailure::GiveUp
        );
    }

    #[test]
    fn a_day_of_failures_makes_a_bounded_number_of_attempts() {
        // Simulate a receiver that never answers 2xx, attempting exactly when due.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let created = DateTime::from_timestamp(1_800_000_000, 0).expect("time");
        let (mut now, mut attempts) = (created, 1);
        while let AfterFailure::RetryAt(next) = after_failure(created, attempts, now, &mut rng) {
            assert!(next > now);
            now = next;
            attempts += 1;
        }
        assert_eq!(now, created + GIVE_UP_AFTER);
        assert!(
            (30..=150).contains(&attempts),
            "{attempts} attempts in 24 h"
        );
    }
}
