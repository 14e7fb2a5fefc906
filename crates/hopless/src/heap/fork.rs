//! Every lock of the heap, taken before `fork` (in a fixed order: registry, classes, transfer slots (held
//! still, see `transfer`), pools, large) and given back after it in both processes.

use super::Heap;
use crate::platform::PageSource;

impl<P: PageSource> Heap<P> {
    /// Takes every lock (before `fork`), in a fixed order.
    pub(crate) fn lock_all(&self) {
        self.caches.raw_lock();
        for c in &self.classes {
            c.inner.raw_lock();
        }
        for t in &self.transfer {
            t.freeze();
        }
        self.small.inner.raw_lock();
        self.medium.inner.raw_lock();
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
            self.medium.inner.raw_unlock();
            self.small.inner.raw_unlock();
            for t in &self.transfer {
                t.thaw();
            }
            for c in &self.classes {
                c.inner.raw_unlock();
            }
            self.caches.raw_unlock();
        }
    }
}
