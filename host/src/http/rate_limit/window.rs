//! Admission instants per key, within one sliding window: the memory of a limiter.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use chrono::{DateTime, Duration, Utc};

/// Per key, the instants of admissions still inside the window, oldest first.
#[derive(Default)]
pub(super) struct Window {
    admitted: Mutex<HashMap<String, VecDeque<DateTime<Utc>>>>,
}

impl Window {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, VecDeque<DateTime<Utc>>>> {
        self.admitted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Record `n` admissions of `key` at `at` (admissions another node reported).
    pub(super) fn add(&self, key: &str, at: DateTime<Utc>, n: usize) {
        let mut admitted = self.lock();
        let recent = admitted.entry(key.to_owned()).or_default();
        // Reports arrive roughly in order; keep the deque sorted anyway.
        let position = recent.partition_point(|existing| *existing <= at);
        for _ in 0..n {
            recent.insert(position, at);
        }
    }

    /// The admissions of `key` still inside `window` at `now`, oldest first.
    pub(super) fn recent(
        &self,
        key: &str,
        now: DateTime<Utc>,
        window: Duration,
    ) -> Vec<DateTime<Utc>> {
        let mut admitted = self.lock();
        let Some(recent) = admitted.get_mut(key) else {
            return Vec::new();
        };
        prune(recent, now, window);
        recent.iter().copied().collect()
    }

    /// Forget keys with no admission inside the window, so memory follows the active clients.
    pub(super) fn retain_recent(&self, now: DateTime<Utc>, window: Duration) {
        let mut admitted = self.lock();
        admitted.retain(|_, recent| recent.back().is_some_and(|newest| *newest + window > now));
        admitted.shrink_to_fit();
    }

    #[cfg(test)]
    pub(super) fn keys(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }
}

/// Drop what left the window: an admission at `t` counts until `t + window` (exclusive).
pub(super) fn prune(recent: &mut VecDeque<DateTime<Utc>>, now: DateTime<Utc>, window: Duration) {
    while recent.front().is_some_and(|oldest| *oldest + window <= now) {
        recent.pop_front();
    }
}
