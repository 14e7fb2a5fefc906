//! The lock the central heap holds for one batch move.
//!
//! A test-and-test-and-set spin lock with `pause`, falling back to `sched_yield` after a while. The seed
//! used a ticket lock; on these 2-core machines with more runnable threads than cores a ticket lock hands
//! the lock, in order, to a waiter that may be descheduled, and everyone behind it waits a whole time
//! slice. A TTAS lock lets whichever waiter is running take it. Critical sections are short (a batch of at
//! most 64 pointers) and never allocate, so spinning is the right first response.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

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

/// A spin lock protecting a `T`.
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time (acquire/release on `locked`).
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the value; `T: Send` is all that requires.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock; the guard releases it.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
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

    /// Waits for the lock; false when the calling thread holds it already for `fork` (the guard must not
    /// release it then).
    #[cold]
    #[inline(never)]
    fn lock_slow(&self) -> bool {
        if held_for_fork_by_me() {
            return false;
        }
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins < 64 {
                    for _ in 0..(1 << (spins / 16).min(4)) {
                        core::hint::spin_loop();
                    }
                    spins += 1;
                } else {
                    crate::platform::yield_now();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
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
        self.locked.store(false, Ordering::Release);
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
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
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
