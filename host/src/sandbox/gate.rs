//! A counting gate for blocking threads: at most `n` holders at once, waiting with a deadline.
//!
//! Compilation and runtime-guest ticks run on blocking threads (never on the async workers), so
//! they bound themselves with this rather than an async semaphore. A [`Permit`] is owned and
//! `Send`: a compilation that outlives its caller's time limit keeps its permit until it really
//! ends, so the bound holds for the work, not for the waiting.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(super) struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

/// One place in the gate, given back when dropped.
#[derive(Debug)]
pub(super) struct Permit(Arc<Gate>);

impl Gate {
    pub(super) fn new(places: usize) -> Arc<Self> {
        Arc::new(Gate {
            free: Mutex::new(places.max(1)),
            freed: Condvar::new(),
        })
    }

    fn free(&self) -> MutexGuard<'_, usize> {
        // The counter stays consistent even if a holder panicked: it is one integer.
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take a place, waiting at most `patience`; `None` if none came free in time.
    pub(super) fn enter(self: &Arc<Self>, patience: Duration) -> Option<Permit> {
        let deadline = Instant::now() + patience;
        let mut free = self.free();
        while *free == 0 {
            let left = deadline.checked_duration_since(Instant::now())?;
            free = self
                .freed
                .wait_timeout(free, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *free -= 1;
        Some(Permit(Arc::clone(self)))
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        *self.0.free() += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_at_most_its_places_and_frees_on_drop() {
        let gate = Gate::new(2);
        let a = gate.enter(Duration::ZERO).expect("first place");
        let _b = gate.enter(Duration::ZERO).expect("second place");
        assert!(gate.enter(Duration::from_millis(20)).is_none(), "full");
        drop(a);
        assert!(gate.enter(Duration::ZERO).is_some(), "freed by drop");
    }

    #[test]
    fn a_waiter_gets_the_place_another_thread_frees() {
        let gate = Gate::new(1);
        let held = gate.enter(Duration::ZERO).expect("place");
        let waiter = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || gate.enter(Duration::from_secs(5)).is_some())
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().expect("waiter thread"));
    }
}
