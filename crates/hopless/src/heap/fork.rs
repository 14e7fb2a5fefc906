//! Every lock of the heap, taken before `fork` (in a fixed order: registry, classes, transfer slots (held
//! still, see `transfer`), pools, large) and given back after it in both processes.
//!
//! What the handlers write, they write on both sides of the fork, so each page they touch costs a
//! copy-on-write fault in the parent and another in the child. The class locks sit in one 9 KiB array;
//! the transfer slots span about 230 KiB (56 pages), so they are held still only once they have been
//! turned on (`transfer_used`): while they are off, nothing can be put into them.

use super::Heap;
use crate::platform::PageSource;
use core::sync::atomic::Ordering;

impl<P: PageSource> Heap<P> {
    /// Takes every lock (before `fork`), in a fixed order.
    pub(crate) fn lock_all(&self) {
        self.caches.raw_lock();
        for c in &self.classes {
            c.inner.raw_lock();
        }
        if self.transfer_used.load(Ordering::SeqCst) {
            for t in &self.transfer {
                t.freeze();
            }
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
            // A slot frozen by `lock_all` is thawed; one `set_transfer` turned on in between is thawed
            // without having been frozen, which clears a bit that is not set.
            if self.transfer_used.load(Ordering::SeqCst) {
                for t in &self.transfer {
                    t.thaw();
                }
            }
            for c in &self.classes {
                c.inner.raw_unlock();
            }
            self.caches.raw_unlock();
        }
    }
}
