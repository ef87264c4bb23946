//! A counting gate: at most `n` holders at once, waiting with a deadline, from a blocking
//! thread ([`Gate::enter`]) or from a task ([`Gate::enter_async`]) alike.
//!
//! Compilation and synchronous runtime-guest ticks run on blocking threads and wait on a condvar;
//! ticks of model components are futures on the async workers and must not block one, so they
//! wait on a `Notify`. One count serves both, so a bound (e.g. runtime ticks in memory at once)
//! holds across the two engines. A [`Permit`] is owned and `Send`: a compilation that outlives
//! its caller's time limit keeps its permit until it really ends, so the bound holds for the
//! work, not for the waiting.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

#[derive(Debug)]
pub(super) struct Gate {
    free: Mutex<usize>,
    /// Wakes a thread waiting in `enter`.
    freed: Condvar,
    /// Wakes a task waiting in `enter_async`.
    freed_async: Notify,
}

/// One place in the gate, given back when dropped.
#[derive(Debug)]
pub(super) struct Permit(Arc<Gate>);

impl Gate {
    pub(super) fn new(places: usize) -> Arc<Self> {
        Arc::new(Gate {
            free: Mutex::new(places.max(1)),
            freed: Condvar::new(),
            freed_async: Notify::new(),
        })
    }

    /// Take a place if one is free now.
    fn try_enter(self: &Arc<Self>) -> Option<Permit> {
        let mut free = self.free();
        if *free == 0 {
            return None;
        }
        *free -= 1;
        Some(Permit(Arc::clone(self)))
    }

    /// Take a place, waiting at most `patience` without blocking the thread; `None` if none
    /// came free in time.
    pub(super) async fn enter_async(self: &Arc<Self>, patience: Duration) -> Option<Permit> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            // Registered before looking, so a place freed in between still wakes this task.
            let freed = self.freed_async.notified();
            let mut freed = std::pin::pin!(freed);
            freed.as_mut().enable();
            if let Some(permit) = self.try_enter() {
                return Some(permit);
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                return self.try_enter();
            }
        }
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
        // One of each kind: a woken waiter that finds the place taken waits again, and a
        // `Notify` permit nobody awaited only makes the next async waiter look once more.
        self.0.freed.notify_one();
        self.0.freed_async.notify_one();
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

    #[tokio::test(flavor = "current_thread")]
    async fn an_async_waiter_gets_a_freed_place_and_times_out_on_a_full_gate() {
        let gate = Gate::new(1);
        let held = gate.enter(Duration::ZERO).expect("place");
        assert!(
            gate.enter_async(Duration::from_millis(20)).await.is_none(),
            "full"
        );
        let waiter = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.enter_async(Duration::from_secs(5)).await.is_some() })
        };
        tokio::task::yield_now().await;
        drop(held);
        assert!(waiter.await.expect("waiter task"));
        // The waiter's permit was dropped with its task: the place is free again.
        assert!(gate.enter(Duration::ZERO).is_some());
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
