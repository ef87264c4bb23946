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
/// Keys remembered per generation ([`Inner::keys`]). Forgetting them all at once, as this cache
/// did, sent every run in play back to the database for its key at the next turn; with two
/// generations only keys unused for a whole generation go.
const KEYS_PER_GENERATION: usize = 2 * CAPACITY;

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
    /// run: a key belongs to one run for that run's life, so the pair never changes. Kept in
    /// two generations ([`KEYS_PER_GENERATION`]): new and recently used keys here, the ones
    /// before in `old_keys`.
    keys: HashMap<String, String>,
    /// The generation before `keys`: a key found here moves back to `keys`; the keys still here
    /// when `keys` fills are forgotten.
    old_keys: HashMap<String, String>,
}

impl Inner {
    /// Remember `key_hash` as `run_id`'s key in the young generation, which, when full, becomes
    /// the old one: a key unused for a whole generation is forgotten, and one in use never is.
    fn insert_key(&mut self, key_hash: String, run_id: String) {
        if self.keys.len() >= KEYS_PER_GENERATION {
            self.old_keys = std::mem::take(&mut self.keys);
        }
        self.keys.insert(key_hash, run_id);
    }
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
        let mut guard = self.lock();
        let inner = &mut *guard;
        if !inner.keys.contains_key(key_hash) {
            let (key_hash, run_id) = inner.old_keys.remove_entry(key_hash)?;
            inner.insert_key(key_hash, run_id);
        }
        let run_id = inner.keys.get(key_hash)?;
        inner.runs.get(run_id).map(|(head, _, _)| head.clone())
    }

    /// Remember that the key whose SHA-256 is `key_hash` opened `run_id` (checked against the
    /// database just now).
    pub(crate) fn remember_key(&self, key_hash: String, run_id: String) {
        self.lock().insert_key(key_hash, run_id);
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
    fn a_key_in_use_is_never_forgotten_and_an_unused_one_is_after_two_generations() {
        let cache = RunCache::default();
        cache.put(head("run_played", 1), run(1));
        cache.put(head("run_idle", 1), run(2));
        cache.remember_key("hash_played".into(), "run_played".into());
        cache.remember_key("hash_idle".into(), "run_idle".into());
        // Many more keys checked here than a generation holds, the played run's key used
        // along the way (as each of its turns does).
        for n in 0..3 * KEYS_PER_GENERATION {
            cache.remember_key(format!("hash_{n}"), format!("run_{n}"));
            if n % 1_000 == 0 {
                assert!(
                    cache.head_for_key("hash_played").is_some(),
                    "after {n} keys"
                );
            }
        }
        assert!(cache.head_for_key("hash_played").is_some());
        assert!(
            cache.head_for_key("hash_idle").is_none(),
            "unused for two generations"
        );
        let inner = cache.lock();
        assert!(inner.keys.len() <= KEYS_PER_GENERATION);
        assert!(inner.old_keys.len() <= KEYS_PER_GENERATION);
    }

    #[test]
    fn a_key_of_the_old_generation_is_found_and_kept() {
        let cache = RunCache::default();
        cache.put(head("run_1", 1), run(1));
        cache.remember_key("hash_1".into(), "run_1".into());
        for n in 0..KEYS_PER_GENERATION {
            cache.remember_key(format!("hash_{n}_other"), format!("run_{n}"));
        }
        assert!(cache.lock().old_keys.contains_key("hash_1"), "aged");
        assert!(cache.head_for_key("hash_1").is_some(), "found in the old");
        assert!(cache.lock().keys.contains_key("hash_1"), "moved back");
        assert!(!cache.lock().old_keys.contains_key("hash_1"));
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
