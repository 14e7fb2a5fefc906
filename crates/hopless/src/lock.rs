//! The lock the central heap holds for one batch move.
//!
//! A spin lock that sleeps when spinning did not get it: a test-and-test-and-set spin with `pause` for a
//! short while, then a futex wait (the three-state mutex: free, held, held with sleepers). Not a ticket
//! lock: on a 2-core machine with more runnable threads than cores a ticket lock hands the lock, in
//! order, to a waiter that may be descheduled, and everyone behind it waits a whole time slice. A TTAS
//! lock lets whichever waiter is running take it. Critical sections are short (a batch of
//! at most 64 pointers) and never allocate, so spinning is the right first response; but when thousands
//! of threads exit at once on two cores, the holder is often preempted, and waiters that only yielded
//! would keep every core busy asking the scheduler instead of letting the holder run.
//! A sleeper costs the holder one `FUTEX_WAKE` at release.

use crate::sync::{AtomicU32, Ordering};
use core::cell::UnsafeCell;

// The thread that holds every allocator lock across a `fork()`, from hopless's prepare handler to its
// parent/child handlers, has its `tls::HOLDS_FORK_LOCKS` word set. Other `pthread_atfork` handlers of
// the program run in that window on the same thread and may allocate (glibc allows it): their lock
// requests find the lock taken by this thread, between operations, and go ahead without taking it again.

/// Marks the calling thread as the holder of every lock (after taking them all for `fork`).
pub fn set_fork_holder() {
    crate::tls::write::<{ crate::tls::HOLDS_FORK_LOCKS }>(1);
}

/// Clears the mark (before releasing the locks after `fork`).
pub fn clear_fork_holder() {
    crate::tls::write::<{ crate::tls::HOLDS_FORK_LOCKS }>(0);
}

#[cold]
fn held_for_fork_by_me() -> bool {
    crate::tls::read::<{ crate::tls::HOLDS_FORK_LOCKS }>() != 0
}

/// `SpinLock::state`: nobody holds it.
const FREE: u32 = 0;
/// Held, and nobody sleeps on it.
const HELD: u32 = 1;
/// Held, and a waiter may be asleep on it (the release wakes one).
const SLEEPERS: u32 = 2;

/// Waits on a held lock spinning before going to sleep (each wait `1 << (spins / 16)` pauses: 1, 2, 4
/// and 8): 240 pauses, about 3 µs on the Intel Xeon VMs (13.5 ns a `pause`). (One under loom, whose
/// search grows with every step.)
const SPINS: u32 = if cfg!(loom) { 1 } else { 64 };

/// A spin lock protecting a `T`.
pub struct SpinLock<T> {
    state: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time (acquire/release on `locked`).
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the value; `T: Send` is all that requires.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Self {
        Self {
            state: AtomicU32::new(FREE),
            value: UnsafeCell::new(value),
        }
    }

    /// loom's atomics cannot be made in a `const` context.
    #[cfg(loom)]
    pub fn new(value: T) -> Self {
        Self {
            state: AtomicU32::new(FREE),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock; the guard releases it.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .state
            .compare_exchange_weak(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return SpinGuard {
                lock: self,
                release: self.lock_slow(),
            };
        }
        SpinGuard {
            lock: self,
            release: true,
        }
    }

    /// Takes the lock if it is free, without waiting.
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        self.state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then_some(SpinGuard {
                lock: self,
                release: true,
            })
    }

    /// Waits for the lock; false when the calling thread holds it already for `fork` (the guard must not
    /// release it then).
    #[cold]
    #[inline(never)]
    fn lock_slow(&self) -> bool {
        if held_for_fork_by_me() {
            return false;
        }
        for spins in 0..SPINS {
            for _ in 0..(1u32 << (spins / 16).min(4)) {
                core::hint::spin_loop();
            }
            if self.state.load(Ordering::Relaxed) == FREE
                && self
                    .state
                    .compare_exchange_weak(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return true;
            }
        }
        // Sleep until it is free. Taking it from here always leaves SLEEPERS: another waiter may be
        // asleep behind this one, and its wake-up must not be lost (the release wakes one if it finds
        // SLEEPERS; at worst that wake finds nobody).
        while self.state.swap(SLEEPERS, Ordering::Acquire) != FREE {
            crate::platform::futex_wait(&self.state, SLEEPERS);
        }
        true
    }

    /// Releases the lock (the guard's drop and [`SpinLock::raw_unlock`]).
    #[inline]
    fn release(&self) {
        if self.state.swap(FREE, Ordering::Release) == SLEEPERS {
            crate::platform::futex_wake_one(&self.state);
        }
    }

    /// The value, through an exclusive borrow of the lock (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// Takes the lock without a guard (for `fork` handlers, which lock in one call and unlock in another).
    pub fn raw_lock(&self) {
        core::mem::forget(self.lock());
    }

    /// Releases a lock taken with [`SpinLock::raw_lock`].
    ///
    /// # Safety
    ///
    /// The caller took the lock with `raw_lock` (in this process) and holds no reference into the value.
    pub unsafe fn raw_unlock(&self) {
        self.release();
    }
}

/// Access to the value while the lock is held.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    /// False for a lock the thread holds for `fork` already: dropping the guard leaves it held.
    release: bool,
}

impl<T> core::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> core::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard exists only while this thread holds the lock, and `&mut self` is unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.release {
            self.lock.release();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SpinLock;

    #[test]
    fn counts_stay_exact_across_threads() {
        let lock = SpinLock::new(0u64);
        let per = if cfg!(miri) { 50 } else { 100_000 };
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..per {
                        *lock.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), 4 * per);
    }
}

/// loom models (run by `crates/hopless-loom` under `--cfg loom`, where `platform::futex_wait` blocks
/// until a `futex_wake_one` hands it a wake-up, and a wake with nobody asleep is lost, as in the kernel):
/// every interleaving of the three-state protocol, checked for mutual exclusion and for a waiter left
/// asleep with the lock free (loom reports a deadlock).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::SpinLock;
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;

    fn contend(threads: usize, preemption_bound: Option<usize>) {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = preemption_bound;
        model.check(move || {
            let lock = Arc::new(SpinLock::new(0u32));
            let inside = Arc::new(AtomicBool::new(false));
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (lock, inside) = (lock.clone(), inside.clone());
                    loom::thread::spawn(move || {
                        let mut g = lock.lock();
                        assert!(!inside.swap(true, Ordering::Relaxed), "two holders at once");
                        *g += 1;
                        inside.store(false, Ordering::Relaxed);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(*lock.lock(), threads as u32);
        });
    }

    #[test]
    fn two_threads_exclude_each_other_and_nobody_sleeps_forever() {
        contend(2, None);
    }

    /// With three threads the full search takes hours; at most 3 preemptions per run (loom's advice: most
    /// bugs need 2) it takes a second, and it still catches a release that wakes nobody, and a sleeper
    /// that takes the lock as "held" rather than "held with sleepers" (both tried).
    #[test]
    fn three_threads_exclude_each_other_and_nobody_sleeps_forever() {
        contend(3, Some(3));
    }
}
