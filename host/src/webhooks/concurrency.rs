//! How many requests one destination may have in flight, adapted to how it answers: additive
//! increase, multiplicative decrease, as TCP's congestion window does and as Vector's adaptive
//! request concurrency does for its sinks (docs/architecture.md, "A webhook").
//!
//! A destination starts at [`INITIAL`] requests at once. Each window of about one round trip in
//! which it was kept at its limit, answered every request and did not slow down lets it have
//! one more, up to [`MAX`]: a receiver that keeps up with more gets more. A timeout, a refused
//! or broken connection, or an answer that says it is overloaded (429, 502, 503, 504) halves
//! the limit, once per window, down to one request; a round trip twice as long as usual takes
//! one away. So a receiver that hangs or fails holds fewer of the worker's slots than it
//! started with, and one that recovers climbs back a request per round trip.

use std::time::{Duration, Instant};

/// Requests in flight to a destination the worker has not heard from yet.
pub const INITIAL: usize = 16;
/// Requests in flight to one destination at most, however well it answers: a quarter of the
/// worker's, so that a receiver which turns from fast to hanging ties up no more than that
/// until its first timeouts halve it.
pub const MAX: usize = 64;
/// Never fewer: a failing receiver is still tried, one request at a time.
const MIN: usize = 1;
/// A window lasts about one round trip, and never less than this: a local receiver answering
/// in 100 µs would otherwise move the limit on every few requests, on noise.
const SHORTEST_WINDOW: Duration = Duration::from_millis(5);
/// A window whose mean round trip is more than this many times the usual one means the
/// receiver is slowing down under what it is sent.
const SLOWER: u32 = 2;

/// How a request to the destination ended, as far as its limit is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// It answered (any status but those below) after this long.
    Answered(Duration),
    /// It timed out, its connection failed, or it answered 429, 502, 503 or 504.
    Overloaded,
}

impl Answer {
    /// The answer with `status`, after `took`.
    pub fn status(status: u16, took: Duration) -> Answer {
        match status {
            429 | 502 | 503 | 504 => Answer::Overloaded,
            _ => Answer::Answered(took),
        }
    }
}

/// One destination's limit and what it has seen in the current window.
#[derive(Debug)]
pub struct Limit {
    limit: usize,
    /// The usual round trip: a moving average of the means of the windows that went well.
    usual: Option<Duration>,
    window: Window,
}

#[derive(Debug)]
struct Window {
    began: Instant,
    answered: u32,
    took: Duration,
    /// A request started with the destination at its limit: it could have used more.
    limited: bool,
    /// The limit was halved in this window already.
    halved: bool,
}

impl Window {
    fn new(began: Instant) -> Window {
        Window {
            began,
            answered: 0,
            took: Duration::ZERO,
            limited: false,
            halved: false,
        }
    }
}

impl Limit {
    pub fn new(now: Instant) -> Limit {
        Limit {
            limit: INITIAL,
            usual: None,
            window: Window::new(now),
        }
    }

    /// Requests it may have in flight now.
    pub fn current(&self) -> usize {
        self.limit
    }

    /// A request was started; `in_flight` counts it.
    pub fn started(&mut self, in_flight: usize) {
        if in_flight >= self.limit {
            self.window.limited = true;
        }
    }

    /// A request ended at `now` with `answer`.
    pub fn ended(&mut self, now: Instant, answer: Answer) {
        match answer {
            Answer::Overloaded => {
                if !self.window.halved {
                    self.limit = (self.limit / 2).max(MIN);
                    self.window.halved = true;
                }
            }
            Answer::Answered(took) => {
                self.window.answered += 1;
                self.window.took += took;
            }
        }
        let length = self.usual.unwrap_or(SHORTEST_WINDOW).max(SHORTEST_WINDOW);
        if now.duration_since(self.window.began) >= length {
            self.close(now);
        }
    }

    /// End the window: one more request if it went well and the limit held it back, one fewer
    /// if its round trips were much slower than usual.
    fn close(&mut self, now: Instant) {
        let window = std::mem::replace(&mut self.window, Window::new(now));
        if window.halved || window.answered == 0 {
            return;
        }
        let mean = window.took / window.answered;
        let usual = *self.usual.get_or_insert(mean);
        if mean > usual * SLOWER {
            self.limit = (self.limit - 1).max(MIN);
        } else if window.limited {
            self.limit = (self.limit + 1).min(MAX);
        }
        // An eighth of the new mean, as TCP smooths its round-trip time: a receiver that has
        // become slower for good is soon measured against its new pace.
        self.usual = Some((usual * 7 + mean) / 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// `windows` windows of two answers taking `took` each, the destination at its
    /// limit throughout; the time after the last.
    fn busy(limit: &mut Limit, mut now: Instant, windows: usize, took: Duration) -> Instant {
        for _ in 0..windows {
            let end = now + took.max(SHORTEST_WINDOW);
            limit.started(limit.current());
            limit.ended(now + took / 2, Answer::Answered(took));
            limit.ended(end, Answer::Answered(took));
            now = end;
        }
        now
    }

    #[test]
    fn a_receiver_that_keeps_up_gets_one_more_request_a_round_trip_up_to_the_most() {
        let start = Instant::now();
        let mut limit = Limit::new(start);
        assert_eq!(limit.current(), INITIAL);
        busy(&mut limit, start, 10, MS);
        assert_eq!(limit.current(), INITIAL + 10);
        busy(&mut limit, start + Duration::from_secs(1), 200, MS);
        assert_eq!(limit.current(), MAX);
    }

    #[test]
    fn a_limit_that_held_nothing_back_does_not_grow() {
        let start = Instant::now();
        let mut limit = Limit::new(start);
        let mut now = start;
        for _ in 0..20 {
            limit.started(1);
            now += SHORTEST_WINDOW;
            limit.ended(now, Answer::Answered(MS));
        }
        assert_eq!(limit.current(), INITIAL);
    }

    #[test]
    fn timeouts_and_overload_halve_it_once_a_window_down_to_one() {
        let start = Instant::now();
        let mut limit = Limit::new(start);
        // Sixteen requests time out together: one halving, not sixteen.
        for _ in 0..16 {
            limit.ended(start + MS, Answer::Overloaded);
        }
        assert_eq!(limit.current(), INITIAL / 2);
        let mut now = start;
        for _ in 0..10 {
            now += Duration::from_millis(6);
            limit.ended(now, Answer::Overloaded);
        }
        assert_eq!(limit.current(), 1);
        // It recovers a request a round trip once it answers again.
        busy(&mut limit, now + MS, 5, MS);
        assert_eq!(limit.current(), 6);
    }

    #[test]
    fn overload_is_told_by_the_status() {
        for status in [429, 502, 503, 504] {
            assert_eq!(Answer::status(status, MS), Answer::Overloaded);
        }
        for status in [200, 204, 400, 404, 410, 500] {
            assert_eq!(Answer::status(status, MS), Answer::Answered(MS));
        }
    }

    #[test]
    fn a_receiver_slowing_down_loses_a_request_a_window() {
        let start = Instant::now();
        let mut limit = Limit::new(start);
        let now = busy(&mut limit, start, 4, MS);
        assert_eq!(limit.current(), INITIAL + 4);
        let now = busy(&mut limit, now, 2, 10 * MS);
        let slowed = limit.current();
        assert!(slowed < INITIAL + 4, "{slowed}");
        // Slower for good: measured against its new pace, it grows again.
        busy(&mut limit, now, 40, 10 * MS);
        assert!(limit.current() > slowed, "{}", limit.current());
    }
}
