//! One cache of answers by key, emptied whole when its data changes.
//!
//! The race every such cache must close: a request reads the database, a writer changes the
//! row and announces it (the cache is emptied), and only then does the request store what it
//! read — now stale. So a request takes a [`Ticket`] (the cache's generation) *before* it reads,
//! and [`ReadCache::put`] drops the value when the generation moved meanwhile.
//!
//! And the herd: when a popular answer expires under load, hundreds of requests miss at once.
//! [`ReadCache::get_or_load`] lets one of them read the database while the others for the same
//! key wait for it and take what it stored.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::clock::Clock;

/// The cache's generation when a request started reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

struct Entry<V> {
    value: Arc<V>,
    /// Served until then; after, the next request reloads it.
    fresh_until: DateTime<Utc>,
    /// Until then, while one request reloads an entry that only aged out (nothing announced a
    /// change and no edge of the clock passed), the others are answered with it rather than
    /// wait: the staleness bound grows by one load, and no herd queues behind it.
    usable_until: DateTime<Utc>,
}

/// What a request that missed does: load the key, or wait for whoever does.
enum Claim<'a, V> {
    Load(Flight<'a, V>),
    Wait(tokio::sync::watch::Receiver<bool>),
}

/// A load under way. However it ends — stored, failed, or its request dropped mid-way — the
/// key is no longer being loaded and its waiters wake to look again.
struct Flight<'a, V> {
    cache: &'a ReadCache<V>,
    key: String,
}

impl<V> Flight<'_, V> {
    fn done(self) {}
}

impl<V> Drop for Flight<'_, V> {
    fn drop(&mut self) {
        let sender = self
            .cache
            .loading
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&self.key);
        if let Some(sender) = sender {
            sender.send_replace(true);
        }
    }
}

struct Inner<V> {
    generation: u64,
    entries: HashMap<String, Entry<V>>,
}

pub struct ReadCache<V> {
    enabled: bool,
    clock: Arc<dyn Clock>,
    max_age: chrono::Duration,
    capacity: usize,
    inner: RwLock<Inner<V>>,
    /// Answers served from memory, and answers that had to be read (`GET /metrics`).
    hits: AtomicU64,
    misses: AtomicU64,
    /// The keys being loaded, each with the channel its waiters are woken through.
    loading: Mutex<HashMap<String, tokio::sync::watch::Sender<bool>>>,
}

impl<V> ReadCache<V> {
    pub fn new(clock: Arc<dyn Clock>, enabled: bool, max_age: Duration, capacity: usize) -> Self {
        ReadCache {
            enabled,
            clock,
            max_age: chrono::Duration::from_std(max_age).unwrap_or(chrono::Duration::zero()),
            capacity: capacity.max(1),
            inner: RwLock::new(Inner {
                generation: 0,
                entries: HashMap::new(),
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            loading: Mutex::new(HashMap::new()),
        }
    }

    /// The value under `key`, if it is still fresh.
    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        if !self.enabled {
            return None;
        }
        self.entry_until(key, |entry| entry.fresh_until)
    }

    /// The value under `key` if it only aged out: usable while another request reloads it.
    fn aged(&self, key: &str) -> Option<Arc<V>> {
        self.entry_until(key, |entry| entry.usable_until)
    }

    /// The value under `key` while the instant `until` reads from its entry is still ahead.
    fn entry_until(&self, key: &str, until: impl Fn(&Entry<V>) -> DateTime<Utc>) -> Option<Arc<V>> {
        let now = self.clock.now();
        let inner = self
            .inner
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        inner
            .entries
            .get(key)
            .filter(|entry| now < until(entry))
            .map(|entry| entry.value.clone())
    }

    /// Take before reading what will be stored.
    pub fn ticket(&self) -> Ticket {
        Ticket(
            self.inner
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .generation,
        )
    }

    /// Keep `value` under `key` until the cache is emptied, the maximum age passes, or
    /// `stale_at` (when the value turns stale with time alone). Dropped when the cache was
    /// emptied since `ticket` was taken.
    pub fn put(&self, ticket: Ticket, key: String, value: Arc<V>, stale_at: Option<DateTime<Utc>>) {
        if !self.enabled {
            return;
        }
        let now = self.clock.now();
        let aged = now + self.max_age;
        let fresh_until = stale_at.map_or(aged, |at| at.min(aged));
        let usable_until = stale_at.unwrap_or(DateTime::<Utc>::MAX_UTC);
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if inner.generation != ticket.0 || fresh_until <= now {
            return;
        }
        if inner.entries.len() >= self.capacity && !inner.entries.contains_key(&key) {
            inner.entries.clear();
        }
        inner.entries.insert(
            key,
            Entry {
                value,
                fresh_until,
                usable_until,
            },
        );
    }

    /// Forget everything, including what requests now reading would store.
    pub fn invalidate_all(&self) {
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.generation = inner.generation.wrapping_add(1);
        inner.entries.clear();
    }

    /// The cached value, or `load`'s (stored when it says how long it stays fresh). While one
    /// request loads a key, the others asking for it wait, and are all woken at once when it
    /// is stored.
    pub async fn get_or_load<E, F>(&self, key: &str, load: F) -> Result<Arc<V>, E>
    where
        F: Future<Output = Result<(V, Option<DateTime<Utc>>), E>>,
    {
        if !self.enabled {
            return load.await.map(|(value, _)| Arc::new(value));
        }
        loop {
            if let Some(value) = self.get(key) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(value);
            }
            match self.claim(key) {
                Claim::Wait(mut loaded) => {
                    if let Some(value) = self.aged(key) {
                        self.hits.fetch_add(1, Ordering::Relaxed);
                        return Ok(value);
                    }
                    // Woken when the loader stored the value, failed, or was cancelled (the
                    // sender dropped): in every case, look again.
                    let _ = loaded.wait_for(|done| *done).await;
                }
                Claim::Load(flight) => {
                    self.misses.fetch_add(1, Ordering::Relaxed);
                    let ticket = self.ticket();
                    let (value, stale_at) = load.await?;
                    let value = Arc::new(value);
                    self.put(ticket, key.to_owned(), value.clone(), stale_at);
                    flight.done();
                    return Ok(value);
                }
            }
        }
    }

    /// Become the loader of `key`, or wait for the one there is.
    fn claim(&self, key: &str) -> Claim<'_, V> {
        let mut loading = self
            .loading
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(loaded) = loading.get(key) {
            return Claim::Wait(loaded.subscribe());
        }
        let (sender, _) = tokio::sync::watch::channel(false);
        loading.insert(key.to_owned(), sender);
        Claim::Load(Flight {
            cache: self,
            key: key.to_owned(),
        })
    }

    /// Answers served from memory and answers read, since the node started.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// Entries held (for tests and metrics).
    pub fn len(&self) -> usize {
        self.inner
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entries
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ManualClock, from_millis};

    fn cache(capacity: usize) -> (ReadCache<&'static str>, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(from_millis(1_700_000_000_000)));
        let cache = ReadCache::new(clock.clone(), true, Duration::from_secs(5), capacity);
        (cache, clock)
    }

    #[test]
    fn a_value_is_served_until_the_cache_is_emptied() {
        let (cache, _) = cache(10);
        cache.put(cache.ticket(), "k".into(), Arc::new("v"), None);
        assert_eq!(cache.get("k").as_deref(), Some(&"v"));
        cache.invalidate_all();
        assert_eq!(cache.get("k"), None);
    }

    #[test]
    fn a_value_read_before_a_change_is_not_stored_after_it() {
        let (cache, _) = cache(10);
        let ticket = cache.ticket();
        // The writer changed the data and announced it while the request was reading.
        cache.invalidate_all();
        cache.put(ticket, "k".into(), Arc::new("old"), None);
        assert_eq!(cache.get("k"), None);
    }

    #[test]
    fn values_turn_stale_at_their_instant_or_the_maximum_age() {
        let (cache, clock) = cache(10);
        let soon = clock.now() + chrono::Duration::seconds(2);
        cache.put(cache.ticket(), "timed".into(), Arc::new("a"), Some(soon));
        cache.put(cache.ticket(), "aged".into(), Arc::new("b"), None);
        clock.advance(chrono::Duration::seconds(2));
        assert_eq!(cache.get("timed"), None, "stale at its own instant");
        assert!(cache.get("aged").is_some());
        clock.advance(chrono::Duration::seconds(3));
        assert_eq!(cache.get("aged"), None, "stale at the maximum age");
        // Already stale when read: never stored.
        cache.put(
            cache.ticket(),
            "past".into(),
            Arc::new("c"),
            Some(clock.now()),
        );
        assert!(cache.is_empty() || cache.get("past").is_none());
    }

    #[tokio::test]
    async fn a_herd_of_misses_reads_the_database_once() {
        let (cache, _) = cache(10);
        let cache = Arc::new(cache);
        let loads = Arc::new(AtomicU64::new(0));
        let requests = (0..50).map(|_| {
            let (cache, loads) = (cache.clone(), loads.clone());
            tokio::spawn(async move {
                cache
                    .get_or_load("popular", async {
                        loads.fetch_add(1, Ordering::Relaxed);
                        tokio::task::yield_now().await;
                        Ok::<_, ()>(("answer", None))
                    })
                    .await
            })
        });
        for request in futures_util::future::join_all(requests).await {
            assert_eq!(request.expect("task").as_deref(), Ok(&"answer"));
        }
        assert_eq!(loads.load(Ordering::Relaxed), 1);
        assert_eq!(cache.hits_and_misses(), (49, 1));
        assert!(
            cache.loading.lock().expect("lock").is_empty(),
            "nothing left loading"
        );
    }

    #[tokio::test]
    async fn a_load_that_fails_or_is_dropped_leaves_the_key_to_the_next_request() {
        let (cache, _) = cache(10);
        let cache = Arc::new(cache);
        let stuck = {
            let cache = cache.clone();
            tokio::spawn(async move {
                cache
                    .get_or_load("k", std::future::pending::<Result<(&str, _), ()>>())
                    .await
            })
        };
        tokio::task::yield_now().await;
        let waiter = {
            let cache = cache.clone();
            tokio::spawn(async move {
                cache
                    .get_or_load("k", async { Ok::<_, ()>(("v", None)) })
                    .await
            })
        };
        tokio::task::yield_now().await;
        // The client of the stuck load hung up: its waiter loads instead.
        stuck.abort();
        assert_eq!(waiter.await.expect("task").as_deref(), Ok(&"v"));
        let failed = cache
            .get_or_load("e", async { Err::<(&str, _), _>("down") })
            .await;
        assert_eq!(failed, Err("down"));
        let next = cache
            .get_or_load("e", async { Ok::<_, &str>(("up", None)) })
            .await;
        assert_eq!(next.as_deref(), Ok(&"up"));
    }

    #[tokio::test]
    async fn while_an_aged_answer_reloads_the_others_get_it_but_never_past_a_clock_edge() {
        let (cache, clock) = cache(10);
        let cache = Arc::new(cache);
        let edge = clock.now() + chrono::Duration::seconds(60);
        cache.put(cache.ticket(), "aged".into(), Arc::new("old"), None);
        cache.put(cache.ticket(), "edged".into(), Arc::new("old"), Some(edge));
        clock.advance(chrono::Duration::seconds(5));
        for key in ["aged", "edged"] {
            let reloading = {
                let cache = cache.clone();
                tokio::spawn(async move {
                    cache
                        .get_or_load(key, async {
                            tokio::task::yield_now().await;
                            Ok::<_, ()>(("new", None))
                        })
                        .await
                })
            };
            tokio::task::yield_now().await;
            let meanwhile = cache
                .get_or_load(key, async { Ok::<_, ()>(("other", None)) })
                .await;
            assert_eq!(
                meanwhile.as_deref(),
                Ok(&"old"),
                "{key}: answered, not queued"
            );
            assert_eq!(reloading.await.expect("task").as_deref(), Ok(&"new"));
        }
        // Past its edge, an answer is never served while reloading: the others wait.
        cache.put(
            cache.ticket(),
            "edged".into(),
            Arc::new("old"),
            Some(clock.now() + chrono::Duration::seconds(1)),
        );
        clock.advance(chrono::Duration::seconds(1));
        assert_eq!(cache.aged("edged"), None);
    }

    #[test]
    fn a_full_cache_starts_over() {
        let (cache, _) = cache(2);
        for key in ["a", "b", "c"] {
            cache.put(cache.ticket(), key.into(), Arc::new("v"), None);
        }
        assert_eq!(cache.len(), 1);
        assert!(cache.get("c").is_some());
    }

    #[test]
    fn a_disabled_cache_keeps_nothing() {
        let clock = Arc::new(ManualClock::new(from_millis(0)));
        let cache = ReadCache::new(clock, false, Duration::from_secs(5), 10);
        cache.put(cache.ticket(), "k".into(), Arc::new(1), None);
        assert_eq!(cache.get("k"), None);
    }
}
