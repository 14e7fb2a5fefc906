//! The free path past the magazine push, one file read top-down. [`Heap::free_ptr`] finds what the
//! address is (`address::locate`, exact) and checks it is a block start handed out before
//! (`Slab::check_free`); [`Heap::free_checked`] pushes it with its free key (see `cache::free_key`), and
//! the push's outcome ([`Push::settle`](crate::cache::Push::settle)) sends a full magazine to
//! [`Heap::free_full`], which checks the key and goes on to [`Heap::free_flush`]: the newer half of the
//! magazine goes back to its slabs ([`Heap::flush_from_magazine`], [`Heap::flush_from`],
//! [`Heap::flush`]), through the class heap (`central::flush`), and the block takes its place. A flush
//! back to the slab leaves the keys as they are (see `cache::free_key`); frees that go to the slab
//! without a magazine write the slab mark ([`Heap::flush_marked`]).
//!
//! A key already in the block sends the free to [`Heap::free_suspect`], which looks where the key says;
//! large blocks go to [`Heap::free_large`]. Everything that reports goes through
//! `report::report_bad_free`, which never allocates.

use core::ptr;

use super::Heap;
use crate::address::{locate, Located};
use crate::cache::{key_epoch, read_key, slab_mark, write_key, KeySays, OwnKey, ThreadCache};
use crate::platform::PageSource;
use crate::report::report_bad_free;
use crate::scratch;
use crate::segment::{segment_of, slab_of, FreeError, SegmentHeader, Slab, SEGMENT_MAGIC};
use crate::size_class::BATCH_MAX;
use crate::stats::stat;

impl<P: PageSource> Heap<P> {
    /// Frees any block by its address alone: the segment header says small, medium or large, and for a
    /// slab block the slab header says its class. Pointers that are not in-use blocks of this heap
    /// (foreign, interior, metadata, never handed out, freed already) are reported, and the process
    /// stops, before anything could hand the block out twice.
    ///
    /// # Safety
    ///
    /// `p` is a block from this heap that nobody uses any more (or a fault to report); `tc` as for
    /// [`Heap::free_checked`].
    #[inline]
    pub(crate) unsafe fn free_ptr(&self, tc: *mut ThreadCache, p: *mut u8) {
        match locate(p) {
            Located::Foreign => report_bad_free(FreeError::Foreign, p, usize::MAX, ptr::null_mut()),
            // SAFETY: a large block's header (mapped: `locate` found it in the map).
            Located::Large(seg) => unsafe { self.free_large(seg, p) },
            Located::Slab(seg) => {
                // SAFETY: `locate` found `p` in a live small/medium segment.
                let class = match unsafe { Slab::check_free(seg, p) } {
                    Ok(c) => c,
                    // SAFETY: as above.
                    Err(e) => report_bad_free(e, p, usize::MAX, unsafe { slab_of(seg, p) }),
                };
                // SAFETY: `p` is a handed-out block of `class`; whether it is free already is checked.
                unsafe { self.free_checked(tc, class, p) }
            }
        }
    }

    /// Frees a block of known class through `tc` (null: uncached), checking first that it is not free
    /// already (its free key; see `cache::free_key`).
    ///
    /// # Safety
    ///
    /// `p` is a block of `class` of this heap handed out at least once (a block freed already is
    /// reported); `tc` is null or a live cache of the calling thread.
    #[inline]
    pub(crate) unsafe fn free_checked(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        if tc.is_null() {
            // Straight to the slab: its bitmap catches a block that is free there; a key says where
            // else it may be.
            // SAFETY: per the caller.
            unsafe {
                if read_key(p) != KeySays::Nothing {
                    return self.free_suspect(tc, class, p);
                }
                self.flush_marked(class, &[p]);
            }
            return;
        }
        // SAFETY: per the caller.
        unsafe {
            ThreadCache::push_keyed(tc, class, p).settle(
                tc,
                class,
                || self.free_suspect(tc, class, p),
                || self.free_full(tc, class, p),
            )
        }
    }

    /// [`ThreadCache::push_keyed`] found no room: check the key, then flush and keep the block.
    ///
    /// # Safety
    ///
    /// As for [`Heap::free_checked`], with `tc` live.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn free_full(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: per the caller.
        unsafe {
            if read_key(p) != KeySays::Nothing {
                return self.free_suspect(tc, class, p);
            }
            self.free_flush(tc, class, p)
        }
    }

    /// The magazine of `class` is full (or not opened yet): it grows when its class cycles through the
    /// central heap (`ThreadCache::grow`), else it flushes down to half its capacity (halved first
    /// when grown and only freed into since its last flush); then it keeps `p`, whose double-free
    /// check is done.
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread; `p` a block of `class` being freed.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn free_flush(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: the magazine is the calling thread's own; no lock is held.
        unsafe {
            self.decay_if_due(tc);
            ThreadCache::open(tc, class);
            stat!((*tc).counters[class].free_slow.bump());
            if ThreadCache::push_checked(tc, class, p) {
                return;
            }
            if ThreadCache::grow(tc, class) && ThreadCache::push_checked(tc, class, p) {
                return;
            }
            let keep = ThreadCache::shrink(tc, class);
            self.flush_newest(tc, class, ThreadCache::count(tc, class).saturating_sub(keep));
            if !ThreadCache::push_checked(tc, class, p) {
                self.flush_marked(class, &[p]);
            }
        }
    }

    /// Flushes the newest `k` blocks of the magazine of `class` (all of them, if it holds fewer), a
    /// scratch buffer at a time, in one flush epoch.
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread; `class < NUM_CLASSES`.
    pub(crate) unsafe fn flush_newest(&self, tc: *mut ThreadCache, class: usize, k: usize) {
        let mut buf = scratch::buffer::<*mut u8, BATCH_MAX>();
        // SAFETY: the magazine is the calling thread's own; each take wrote the first `n` of `buf`,
        // and nothing but these takes changes the magazine between them.
        unsafe {
            let mut n = ThreadCache::take_newest(tc, class, k.min(BATCH_MAX), &mut buf);
            let mut left = k;
            while n > 0 {
                self.flush_from_magazine(tc, class, scratch::written(&buf, n));
                left -= n;
                n = ThreadCache::take_more(tc, class, left.min(BATCH_MAX), &mut buf);
            }
        }
    }

    /// [`Heap::flush`] for blocks out of a magazine. In the default mode nothing is written into the
    /// blocks: each keeps the key its free wrote (or whatever a refill found in it), and the slot it
    /// left holds it tagged ([`ThreadCache::take_newest`]), so a later free of it that finds the key
    /// does not take it for a block popped from that slot, and the slow path's look finds it free in
    /// its bitmap. Writing a mark into each block would cost a store to a line the cache has mostly
    /// lost by then: in `fifo-lifo-1600` (a working set of 4 KiB blocks puts every block's first word
    /// in one set of the L1 cache) a quarter of the run's L1 write misses, and about 6% of its time. The checked modes push without keys: each block that holds a slot key
    /// (one the default mode pushed, before the mode was chosen) gets the slab mark.
    ///
    /// # Safety
    ///
    /// As for [`Heap::flush`]; the blocks come from a magazine of `tc`.
    ///
    /// Out of line: inlined into the loop over a magazine's batches ([`Heap::flush_newest`]), the class
    /// flush's and the owned flush's buffers would share one frame with the batch's, three more stack
    /// pages for every thread's exit to touch.
    #[inline(never)]
    pub(crate) unsafe fn flush_from_magazine(&self, tc: *mut ThreadCache, class: usize, blocks: &[*mut u8]) {
        if crate::mode::checked_on() {
            for &p in blocks {
                // SAFETY: per the caller, free blocks of this heap: their first words are ours.
                unsafe {
                    if matches!(read_key(p), KeySays::Slot { .. }) {
                        write_key(p, slab_mark(p));
                    }
                }
            }
        }
        // SAFETY: forwarded.
        unsafe { self.flush_from(tc, class, blocks) };
    }

    /// [`Heap::flush`] for blocks out of `tc`'s magazine: into the slabs it owns without the class
    /// lock when it owns slabs (`owned.rs`), else as `flush`.
    ///
    /// # Safety
    ///
    /// As for [`Heap::flush`]; `tc` is null or a live cache of the calling thread.
    pub(crate) unsafe fn flush_from(&self, tc: *mut ThreadCache, class: usize, blocks: &[*mut u8]) {
        // SAFETY: forwarded.
        unsafe {
            if self.owns_slabs(tc, class) {
                self.flush_owned(tc, class, blocks);
            } else {
                self.flush(class, blocks);
            }
        }
    }

    /// Returns blocks of `class` to their slabs. A block that is not an in-use block of this class is
    /// reported (double free, wrong size, foreign pointer) and the process aborts.
    ///
    /// # Safety
    ///
    /// Each pointer was handed out by this heap (or is a fault to report); no caller uses them again.
    pub unsafe fn flush(&self, class: usize, blocks: &[*mut u8]) {
        let checks = self.checks();
        for chunk in blocks.chunks(BATCH_MAX) {
            // SAFETY: forwarded.
            unsafe {
                self.class(class)
                    .flush(class, self.pool(class), &self.source, checks, chunk)
            };
        }
    }

    /// [`Heap::flush`], first marking each block as being in its slab (see `cache::free_key`).
    ///
    /// # Safety
    ///
    /// As for [`Heap::flush`]; the blocks are not debug-mode blocks (whose contents are checked poison).
    pub(crate) unsafe fn flush_marked(&self, class: usize, blocks: &[*mut u8]) {
        for &p in blocks {
            // SAFETY: per the caller, a block of this heap being freed: its first word is ours.
            unsafe { write_key(p, slab_mark(p)) };
        }
        // SAFETY: forwarded.
        unsafe { self.flush(class, blocks) };
    }

    /// The first word of a block being freed is a free key: look where it says the block is. Found
    /// there: a double free, reported. Otherwise the block was handed out since (and that word never
    /// written): free it.
    ///
    /// # Safety
    ///
    /// As for [`Heap::free_checked`].
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn free_suspect(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        if !tc.is_null() {
            // SAFETY: per the caller, `p` is a block of this heap and `tc` the calling thread's.
            match unsafe { ThreadCache::own_key_says(tc, class, p) } {
                // SAFETY: as above.
                OwnKey::Popped => return unsafe { self.push_freed(tc, class, p) },
                // SAFETY: as above; a thread's own key means a live cache (the empty one has no id).
                OwnKey::Stale => return unsafe { self.free_stale(tc, class, p) },
                OwnKey::Look => {}
            }
        }
        // SAFETY: per the caller, `p` is a block of this heap.
        let says = unsafe { read_key(p) };
        let free = match says {
            KeySays::Nothing => false,
            // Flushed to its slab since its last free: free there, or refilled into this thread's
            // magazine and not handed out yet. (Refilled into another thread's magazine and still
            // there: left to that block's next flush, unless that thread keyed its refill; see
            // `cache::free_key`.)
            // SAFETY: as above; `tc` is the calling thread's, in the default mode (the only one whose
            // frees come here) or the empty cache.
            KeySays::Slab => unsafe {
                self.free_in_slab(p) || (!tc.is_null() && ThreadCache::check_refilled(tc, class, p))
            },
            // In that slot of that cache, or a stale key: the block was popped from there and handed
            // out, or flushed to its slab (a flush leaves the key), and perhaps refilled since.
            KeySays::Slot { id, slot } => {
                // SAFETY: as above.
                let epoch = unsafe { key_epoch(p) };
                let (held, flushed) = match self.own_cache(id) {
                    // SAFETY: this heap's caches with an id stay mapped while it lives; `holds_at` and
                    // `may_have_flushed` read through atomics.
                    Some(c) => unsafe {
                        (
                            ThreadCache::holds_at(c, class, slot, p),
                            ThreadCache::may_have_flushed(c, class, slot, epoch),
                        )
                    },
                    _ => (self.in_any_magazine(class, p), true),
                };
                held || (flushed
                    // SAFETY: as for the slab mark above: `p` is a block of this heap, `tc` null or
                    // the calling thread's cache.
                    && unsafe {
                        self.free_in_slab(p) || (!tc.is_null() && ThreadCache::check_refilled(tc, class, p))
                    })
            }
        };
        if free {
            report_bad_free(FreeError::DoubleFree, p, class, self.slab_for_report(p));
        }
        if tc.is_null() {
            // SAFETY: per the caller; checked above.
            return unsafe { self.flush_marked(class, &[p]) };
        }
        // SAFETY: in use after all; the magazine is the calling thread's.
        unsafe { self.push_freed(tc, class, p) }
    }

    /// Pushes a block whose double-free check is done into this thread's magazine, flushing first when
    /// it is full.
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache; `p` a block of `class` found in use.
    unsafe fn push_freed(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: per the caller.
        unsafe {
            if ThreadCache::push_checked(tc, class, p) {
                stat!((*tc).counters[class].free_fast.bump());
            } else {
                self.free_flush(tc, class, p);
            }
        }
    }

    /// [`OwnKey::Stale`]: `p` holds this thread's key of a slot that no longer holds it, from before a
    /// flush that may have taken it. Free in its slab, or refilled into this thread's magazine: a
    /// double free, reported. Otherwise it was popped and handed out since: pushed.
    ///
    /// # Safety
    ///
    /// As for [`Heap::free_checked`], with `tc` the calling thread's live cache.
    unsafe fn free_stale(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: per the caller.
        unsafe {
            if self.free_in_slab(p) || ThreadCache::check_refilled(tc, class, p) {
                report_bad_free(FreeError::DoubleFree, p, class, self.slab_for_report(p));
            }
            self.push_freed(tc, class, p);
        }
    }

    /// Whether `p` is free in its slab's bitmap (read without the lock: exact for a block the caller
    /// holds, see [`Slab::is_free`]).
    ///
    /// # Safety
    ///
    /// `p` is a block in a live segment of this heap.
    pub(super) unsafe fn free_in_slab(&self, p: *mut u8) -> bool {
        // SAFETY: per the caller, a live small/medium segment holds `p`.
        unsafe {
            let s = slab_of(segment_of(p), p);
            (*s).magic == crate::segment::SLAB_MAGIC && Slab::is_free(s, p)
        }
    }

    /// The slab of a block in a small or medium segment (for reports).
    pub(super) fn slab_for_report(&self, p: *mut u8) -> *mut Slab {
        match locate(p) {
            // SAFETY: a live small/medium segment holds `p`.
            Located::Slab(seg) => unsafe { slab_of(seg, p) },
            _ => ptr::null_mut(),
        }
    }

    /// # Safety
    ///
    /// `seg` is a mapped large-block header and `p` lies in its mapping.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn free_large(&self, seg: *mut SegmentHeader, p: *mut u8) {
        // SAFETY: per the caller.
        unsafe {
            if (*seg).magic != SEGMENT_MAGIC {
                report_bad_free(FreeError::LargeNotInUse, p, usize::MAX, ptr::null_mut());
            }
            if p != seg.cast::<u8>().wrapping_add((*seg).data_offset) {
                let e = if p.addr() < seg.addr() + (*seg).data_offset {
                    FreeError::Metadata
                } else {
                    FreeError::NotBlockStart
                };
                report_bad_free(e, p, usize::MAX, ptr::null_mut());
            }
            if (*seg).sample != 0 {
                crate::profile::forget((*seg).sample);
            }
            self.large.free(&self.source, seg);
        }
        // Where large memory is given back, every empty slab that waited out the purge delay goes too
        // (a slab purged here has been unused for the delay, so this is at most one `madvise` per slab
        // per delay): a program past a phase of small blocks gives them back without a trim.
        self.purge_expired();
    }

    /// Purges every empty slab that waited out the purge delay in any pool (with no lock held).
    pub(crate) fn purge_expired(&self) {
        let keep_last_page = self.checks().keep_last_page;
        for pool in self.pools() {
            pool.purge_expired(&self.source, keep_last_page, pool.max_dirty(), pool.max_dirty());
        }
    }
}
