//! The runs this node played last, already parsed, so a turn does not re-read and re-parse its
//! run's whole state (docs/architecture.md, "Group commit").
//!
//! An entry is the game state of one run *at one version*. A turn takes its run out (so two
//! turns of one run on this node never share a copy), plays on it, and puts the new state back
//! under the version its write produced. The stored version is the guard: a turn whose run's
//! row has a different version than the cached one (another node played, an abandonment, a
//! restart) finds nothing here and reads the row; a write that loses the version race is never
//! cached. So the cache can be stale, never wrong.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::game::Run;

/// Runs kept at most. A full cache drops an arbitrary entry: runs are played in bursts, and a
/// miss costs one read and one parse.
const CAPACITY: usize = 4_096;

#[derive(Default)]
pub(crate) struct RunCache {
    runs: Mutex<HashMap<String, (i64, Run)>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl RunCache {
    /// The cached state of `run_id` if it is the one at `version`, taken out of the cache.
    pub(crate) fn take(&self, run_id: &str, version: i64) -> Option<Run> {
        let mut runs = self
            .runs
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let found = match runs.remove(run_id) {
            Some((cached, run)) if cached == version => Some(run),
            _ => None,
        };
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keep `run` as the state of `run_id` at `version`.
    pub(crate) fn put(&self, run_id: &str, version: i64, run: Run) {
        let mut runs = self
            .runs
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if runs.len() >= CAPACITY
            && !runs.contains_key(run_id)
            && let Some(evicted) = runs.keys().next().cloned()
        {
            runs.remove(&evicted);
        }
        runs.insert(run_id.to_owned(), (version, run));
    }

    /// Turns that found their run here, and turns that read it (`GET /metrics`).
    pub(crate) fn hits_and_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// Entries held (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.runs.lock().map(|runs| runs.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dungeon::game::{Class, DungeonMap};

    fn run(seed: u64) -> Run {
        let map = DungeonMap::for_date(2026, 11, 26, "test");
        Run::new(&map, Class::Fighter, seed)
    }

    #[test]
    fn only_the_version_it_was_stored_at_is_handed_out_and_only_once() {
        let cache = RunCache::default();
        cache.put("run_1", 3, run(1));
        assert!(cache.take("run_1", 2).is_none(), "an older version");
        assert!(cache.take("run_1", 3).is_none(), "a miss drops the entry");
        cache.put("run_1", 3, run(1));
        assert!(cache.take("run_1", 3).is_some());
        assert!(
            cache.take("run_1", 3).is_none(),
            "taken out while it is played"
        );
        assert_eq!(cache.hits_and_misses(), (1, 3));
    }

    #[test]
    fn a_full_cache_makes_room() {
        let cache = RunCache::default();
        let template = run(1);
        for n in 0..CAPACITY + 10 {
            cache.put(&format!("run_{n}"), 1, template.clone());
        }
        assert_eq!(cache.len(), CAPACITY);
    }
}
