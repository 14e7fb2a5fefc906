//! The batch API: many blocks of one layout per call, from the thread's
//! magazine first and then straight from the central heap, one lock hold per batch; frees the same way.

use core::ptr;

use super::Heap;
use crate::cache::{read_key, KeySays, Push, ThreadCache};
use crate::platform::PageSource;
use crate::size_class::{self, BATCH_MAX};
use crate::stats::stat;

impl<P: PageSource> Heap<P> {
    /// Fills `out` with blocks of (`size`, `align`); returns how many (all, unless out of memory). Blocks
    /// come from the magazine first, the rest straight from the central heap in one lock hold per class.
    ///
    /// # Safety
    ///
    /// As for [`Heap::alloc`].
    pub(crate) unsafe fn alloc_batch(
        &self,
        tc: *mut ThreadCache,
        size: usize,
        align: usize,
        out: &mut [*mut u8],
    ) -> usize {
        let Some(class) = size_class::class_for(size, align) else {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = self.large.alloc(&self.source, size, align, false, false);
                if slot.is_null() {
                    return i;
                }
            }
            return out.len();
        };
        let mut got = 0;
        if !tc.is_null() {
            while got < out.len() {
                // SAFETY: per the caller.
                let p = unsafe { ThreadCache::pop(tc, class) };
                if p.is_null() {
                    break;
                }
                if let Some(o) = out.get_mut(got) {
                    *o = p;
                }
                got += 1;
            }
            // SAFETY: per the caller, `tc` is live.
            stat!(unsafe { (*tc).counters[class].alloc_fast.add(got as u64) });
        }
        while got < out.len() {
            let n = self.refill(class, out.get_mut(got..).unwrap_or_default());
            if n == 0 {
                break;
            }
            stat!(if !tc.is_null() {
                // SAFETY: per the caller.
                unsafe { (*tc).counters[class].alloc_slow.add(n as u64) }
            });
            got += n;
        }
        got
    }

    /// Frees blocks allocated with (`size`, `align`): into the magazine while it has room, the rest
    /// straight to the central heap, a magazine's worth per lock hold.
    ///
    /// # Safety
    ///
    /// Every pointer is an in-use block of this heap allocated with this size and alignment; `tc` as for
    /// [`Heap::alloc`].
    pub(crate) unsafe fn free_batch(
        &self,
        tc: *mut ThreadCache,
        size: usize,
        align: usize,
        blocks: &[*mut u8],
    ) {
        let Some(class) = size_class::class_for(size, align) else {
            for &p in blocks {
                // SAFETY: per the caller.
                unsafe { self.free_ptr(tc, p) };
            }
            return;
        };
        let mut i = 0;
        if !tc.is_null() {
            // SAFETY: per the caller, `tc` is the calling thread's live cache.
            unsafe { ThreadCache::open(tc, class) };
            let mut pushed = 0u64;
            while let Some(&p) = blocks.get(i) {
                // SAFETY: per the caller, `p` is a block of `class` being freed.
                unsafe {
                    match ThreadCache::push_keyed(tc, class, p) {
                        Push::Done => pushed += 1,
                        // Counted by the check itself.
                        Push::Suspect => self.free_suspect(tc, class, p),
                        Push::Full => break,
                    }
                }
                i += 1;
            }
            let _ = pushed;
            // SAFETY: per the caller, `tc` is live.
            stat!(unsafe { (*tc).counters[class].free_fast.add(pushed) });
        }
        if i < blocks.len() {
            stat!(if !tc.is_null() {
                // SAFETY: per the caller.
                unsafe { (*tc).counters[class].free_slow.add((blocks.len() - i) as u64) }
            });
            // Blocks with a key are checked one by one; the rest go to their slabs, whose bitmaps check
            // them, a magazine's worth per lock hold.
            let mut buf = [ptr::null_mut(); BATCH_MAX];
            let mut n = 0;
            for &p in blocks.get(i..).unwrap_or(&[]) {
                // SAFETY: per the caller, blocks of `class` of this heap.
                unsafe {
                    if read_key(p) != KeySays::Nothing {
                        self.free_suspect(ptr::null_mut(), class, p);
                        continue;
                    }
                }
                if let Some(slot) = buf.get_mut(n) {
                    *slot = p;
                    n += 1;
                }
                if n == BATCH_MAX {
                    // SAFETY: as above.
                    unsafe { self.flush_marked(class, &buf) };
                    n = 0;
                }
            }
            // SAFETY: as above.
            unsafe { self.flush_marked(class, buf.get(..n).unwrap_or(&[])) };
        }
    }
}
