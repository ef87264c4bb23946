//! The runs this node played last, already parsed, so a turn does not re-read and re-parse its
//! run's whole state (docs/architecture.md, "Group commit").
//!
//! An entry is the game state of one run *at one version*. A turn takes its run out (so two
//! turns of one run on this node never share a copy), plays on it, and puts the new state back
//! under the version its write produced. The stored version is the guard: a turn whose run's
//! row has a different version than the cached one (another node played, an abandonment, a
//! restart) finds nothing here and reads the row; a write that loses the version race is never
//! cached. So the cache can be stale, never wrong.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::game::Run;
use super::store::RunHead;

/// Runs kept at most. A full cache drops the run played longest ago: a miss costs a read, a
/// parse and a replay, and an arbitrary victim was as likely a run being played as an idle one
/// (with 1,536 runs in play among 5,100 met, a node's turns ran at about half their rate:
/// docs/benchmarks.md, session 62).
const CAPACITY: usize = 4_096;

#[derive(Default)]
pub(crate) struct RunCache {
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct Inner {
    /// By run id: the run's head and state as this node's last write left them (the head's
    /// version is the entry's version), and when it was put here ([`Inner::order`]).
    runs: HashMap<String, (RunHead, Run, u64)>,
    /// The runs held, by when each was put here. A turn takes its run out and puts it back, so
    /// the first is the run played longest ago.
    order: BTreeMap<u64, String>,
    /// When the next run is put here.
    next: u64,
    /// Run keys this node has checked against the database (by the key's SHA-256), to their
    /// run: a key belongs to one run for that run's life, so the pair never changes.
    keys: HashMap<String, String>,
}

impl RunCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The cached state of `run_id` if it is the one at `version`, taken out of the cache.
    pub(crate) fn take(&self, run_id: &str, version: i64) -> Option<Run> {
        let mut inner = self.lock();
        let found = match inner.runs.remove(run_id) {
            Some((head, run, put)) => {
                inner.order.remove(&put);
                (head.version == version).then_some(run)
            }
            None => None,
        };
        drop(inner);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keep `run` as the state of the run at `head` (its version included).
    pub(crate) fn put(&self, head: RunHead, run: Run) {
        let mut inner = self.lock();
        let put = inner.next;
        inner.next += 1;
        inner.order.insert(put, head.id.clone());
        if let Some((_, _, before)) = inner.runs.insert(head.id.clone(), (head, run, put)) {
            inner.order.remove(&before);
        }
        if inner.runs.len() > CAPACITY
            && let Some((_, oldest)) = inner.order.pop_first()
        {
            inner.runs.remove(&oldest);
        }
    }

    /// The head this node holds for the run of the key whose SHA-256 is `key_hash`, if the key
    /// was checked here and the run is held: a hint, as of this node's last write (a turn's
    /// version guard catches any write since).
    pub(crate) fn head_for_key(&self, key_hash: &str) -> Option<RunHead> {
        let inner = self.lock();
        let run_id = inner.keys.get(key_hash)?;
        inner.runs.get(run_id).map(|(head, _, _)| head.clone())
    }

    /// Remember that the key whose SHA-256 is `key_hash` opened `run_id` (checked against the
    /// database just now).
    pub(crate) fn remember_key(&self, key_hash: String, run_id: String) {
        let mut inner = self.lock();
        if inner.keys.len() >= 2 * CAPACITY {
            inner.keys.clear();
        }
        inner.keys.insert(key_hash, run_id);
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
        self.lock().runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dungeon::game::{Class, DungeonMap, RunStatus};

    fn run(seed: u64) -> Run {
        let map = DungeonMap::for_date(2026, 11, 26, "test");
        Run::new(&map, Class::Fighter, seed)
    }

    fn head(id: &str, version: i64) -> RunHead {
        RunHead {
            id: id.to_owned(),
            dungeon_id: "dgn_test".into(),
            wallet: "wallet".into(),
            class: "fighter".into(),
            status: RunStatus::Active,
            score: 0,
            deepest_floor: 1,
            turn_number: version,
            version,
            created_at: 0,
            last_action_at: 0,
            ended_at: None,
        }
    }

    #[test]
    fn only_the_version_it_was_stored_at_is_handed_out_and_only_once() {
        let cache = RunCache::default();
        cache.put(head("run_1", 3), run(1));
        assert!(cache.take("run_1", 2).is_none(), "an older version");
        assert!(cache.take("run_1", 3).is_none(), "a miss drops the entry");
        cache.put(head("run_1", 3), run(1));
        assert!(cache.take("run_1", 3).is_some());
        assert!(
            cache.take("run_1", 3).is_none(),
            "taken out while it is played"
        );
        assert_eq!(cache.hits_and_misses(), (1, 3));
    }

    #[test]
    fn a_key_leads_to_its_runs_head_only_once_checked_and_while_the_run_is_held() {
        let cache = RunCache::default();
        cache.put(head("run_1", 4), run(1));
        assert!(cache.head_for_key("hash_1").is_none(), "never checked here");
        cache.remember_key("hash_1".into(), "run_1".into());
        assert_eq!(cache.head_for_key("hash_1").map(|h| h.version), Some(4));
        assert!(cache.take("run_1", 4).is_some());
        assert!(
            cache.head_for_key("hash_1").is_none(),
            "the run is being played"
        );
    }

    #[test]
    fn a_full_cache_makes_room() {
        let cache = RunCache::default();
        let template = run(1);
        for n in 0..CAPACITY + 10 {
            cache.put(head(&format!("run_{n}"), 1), template.clone());
        }
        assert_eq!(cache.len(), CAPACITY);
        assert_eq!(cache.lock().order.len(), CAPACITY);
    }

    #[test]
    fn a_full_cache_drops_the_run_played_longest_ago() {
        let cache = RunCache::default();
        let template = run(1);
        for n in 0..CAPACITY {
            cache.put(head(&format!("run_{n}"), 1), template.clone());
        }
        // run_0, put first, is played again: run_1 is now the one played longest ago.
        assert!(cache.take("run_0", 1).is_some());
        cache.put(head("run_0", 2), template.clone());
        // Putting a run that is held already replaces it and drops nothing.
        cache.put(head("run_5", 1), template.clone());
        assert_eq!(cache.len(), CAPACITY);
        cache.put(head("run_new", 1), template.clone());
        assert_eq!(cache.len(), CAPACITY);
        assert!(cache.take("run_1", 1).is_none(), "dropped");
        assert!(cache.take("run_0", 2).is_some(), "played last, kept");
        assert!(cache.take("run_2", 1).is_some(), "kept");
        assert!(cache.take("run_5", 1).is_some(), "put again, kept");
        let inner = cache.lock();
        assert_eq!(
            inner.order.len(),
            inner.runs.len(),
            "one place in the order per run"
        );
    }
}
