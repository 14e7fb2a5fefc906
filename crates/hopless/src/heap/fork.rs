//! Every lock of the heap, taken before `fork` (in a fixed order: registry, classes, pools, large) and
//! given back after it in both processes.
//!
//! What the handlers write, they write on both sides of the fork, so each page they touch costs a
//! copy-on-write fault in the parent and another in the child; the class locks sit in one 9 KiB array.

use super::Heap;
use crate::platform::PageSource;

impl<P: PageSource> Heap<P> {
    /// Takes every lock (before `fork`), in a fixed order.
    pub(crate) fn lock_all(&self) {
        self.caches.raw_lock();
        for c in &self.classes {
            c.inner.raw_lock();
        }
        for pool in self.pools() {
            pool.inner.raw_lock();
        }
        self.large.lock_raw();
    }

    /// Releases every lock [`Heap::lock_all`] took (in the parent after `fork`, or in the child).
    ///
    /// # Safety
    ///
    /// The calling thread took them with `lock_all` (or is the only thread of a child made by `fork`
    /// after `lock_all`).
    pub(crate) unsafe fn unlock_all(&self) {
        // SAFETY: per the caller.
        unsafe {
            self.large.unlock_raw();
            for pool in self.pools().into_iter().rev() {
                pool.inner.raw_unlock();
            }
            for c in &self.classes {
                c.inner.raw_unlock();
            }
            self.caches.raw_unlock();
        }
    }
}
