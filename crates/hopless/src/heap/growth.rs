//! Working sets larger than a magazine. A class whose blocks keep going out to the central heap and
//! coming back (a magazine that fills after its refills since its last flush brought a capacity's
//! worth) grows its magazine
//! instead of flushing (`ThreadCache::grow`: doubling, up to `MAG_GROWN` of the class and the cache's
//! `GROWN_BUDGET`), so a working set of thousands of blocks of one class stays in slots the fast
//! paths reach, each block keyed for its slot. Otherwise each block past the magazine would pay a flush
//! and a refill (its slab's bitmap edited under the class lock both ways) and, freed unwritten, a
//! double-free look at its next free (its key of an epoch the flush closed): 2.5 times the pair's cost
//! in the magazine.
//!
//! A grown magazine gives its growth back three ways: it halves when it fills without a refill since
//! its last flush (its class only freed now: `ThreadCache::shrink`); a decay pass here, at most once a
//! [`DECAY_MS`] and only from a slow path of the cache, halves every grown magazine that neither
//! refilled nor grew since the pass before, flushing the blocks above its new capacity; and a thread's
//! exit and `trim` flush every magazine back to its first capacity.

use super::Heap;
use crate::cache::ThreadCache;
use crate::platform::{now_ms, PageSource};
use crate::size_class::{MAG_CAPACITY, NUM_SMALL};

/// How often, at most, a cache with grown magazines looks for ones that stopped cycling (ms).
pub(crate) const DECAY_MS: u64 = 1000;

impl<P: PageSource> Heap<P> {
    /// At the start of a slow path of `tc`: when it has grown magazines and a decay pass is due, halves
    /// each that neither refilled nor grew since the last pass (see the module's docs).
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread, and no lock is held.
    #[inline]
    pub(crate) unsafe fn decay_if_due(&self, tc: *mut ThreadCache) {
        // SAFETY: per the caller, the cache's own fields.
        unsafe {
            if (*tc).grown_bytes == 0 {
                return;
            }
            let now = now_ms();
            if now < (*tc).decay_at {
                return;
            }
            (*tc).decay_at = now.saturating_add(DECAY_MS);
            self.decay(tc);
        }
    }

    /// One decay pass over the small classes (the only ones that grow).
    ///
    /// # Safety
    ///
    /// As for [`Heap::decay_if_due`].
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn decay(&self, tc: *mut ThreadCache) {
        for (class, &first) in MAG_CAPACITY.iter().enumerate().take(NUM_SMALL) {
            // SAFETY: per the caller, the magazine is the calling thread's own.
            unsafe {
                let m = ThreadCache::mag(tc, class);
                if (*m).cap > first && (*m).active == 0 {
                    let to = ((*m).cap / 2).max(first);
                    let n = ThreadCache::count(tc, class);
                    if n > to as usize {
                        self.flush_newest(tc, class, n - to as usize);
                    }
                    ThreadCache::give_up_growth(tc, class, to);
                }
                // Written only when set: a magazine its thread never used stays on the zero page.
                if (*m).active != 0 {
                    (*m).active = 0;
                }
            }
        }
    }
}
