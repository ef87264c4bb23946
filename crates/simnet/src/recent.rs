//! The transactions this process landed last, as `getTransaction` answers them, kept in memory
//! after their batch commits. A sender asks for its transaction right after sending it (a live
//! swap settles from it), and a landed transaction never changes: answering from here spares
//! the database a read of the rendered transaction, which on PostgreSQL is a round trip per
//! swap. A transaction another node landed, or one evicted, is read from the ledger as before.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Landings kept: a few seconds of swaps at full speed, a few megabytes of rendered JSON.
pub(crate) const KEPT: usize = 1024;

/// A landed transaction as the ledger stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Landed {
    pub slot: i64,
    pub executed_at: i64,
    /// The jsonParsed transaction, as text.
    pub rendered: Arc<str>,
}

/// The last [`KEPT`] landings, oldest evicted first.
#[derive(Default)]
pub(crate) struct RecentLandings {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_signature: HashMap<Arc<str>, Landed>,
    order: VecDeque<Arc<str>>,
}

impl RecentLandings {
    /// Remember `signature`'s landing (once its batch has committed).
    pub(crate) fn insert(&self, signature: &str, landed: Landed) {
        // A poisoned lock only means another thread panicked mid-insert: the map is still a
        // map, and a missing entry is read from the ledger.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let signature: Arc<str> = signature.into();
        if inner
            .by_signature
            .insert(signature.clone(), landed)
            .is_none()
        {
            inner.order.push_back(signature);
        }
        while inner.order.len() > KEPT {
            if let Some(oldest) = inner.order.pop_front() {
                inner.by_signature.remove(&oldest);
            }
        }
    }

    /// `signature`'s landing, if this process landed it recently.
    pub(crate) fn get(&self, signature: &str) -> Option<Landed> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.by_signature.get(signature).cloned()
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use super::*;

    fn landed(slot: i64) -> Landed {
        Landed {
            slot,
            executed_at: slot * 400,
            rendered: format!("{{\"slot\":{slot}}}").into(),
        }
    }

    #[test]
    fn keeps_the_last_landings_and_evicts_the_oldest() {
        let recent = RecentLandings::default();
        for slot in 0..(KEPT as i64 + 10) {
            recent.insert(&format!("sig{slot}"), landed(slot));
        }
        assert_eq!(recent.get("sig0"), None);
        assert_eq!(recent.get("sig9"), None);
        assert_eq!(recent.get("sig10").unwrap(), landed(10));
        let newest = KEPT as i64 + 9;
        assert_eq!(recent.get(&format!("sig{newest}")).unwrap(), landed(newest));
    }

    #[test]
    fn a_signature_remembered_twice_is_one_entry() {
        let recent = RecentLandings::default();
        recent.insert("a", landed(1));
        recent.insert("a", landed(1));
        for slot in 0..(KEPT as i64 - 1) {
            recent.insert(&format!("sig{slot}"), landed(slot));
        }
        // "a" was counted once, so it is still the oldest of exactly KEPT.
        assert_eq!(recent.get("a").unwrap(), landed(1));
        recent.insert("one more", landed(2));
        assert_eq!(recent.get("a"), None);
    }
}
