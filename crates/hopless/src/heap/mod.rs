//! The heap: central classes, slab pools, large blocks and the registry of thread caches, tied together.
//! Everything here is the slow path: refills, large blocks, realloc and trimming; the rest lives in one
//! file per concern:
//!
//! | file | what it holds |
//! |---|---|
//! | `batch.rs` | the batch API: many blocks of one layout per call, one lock hold per batch |
//! | `free.rs` | the free path past the magazine push, top-down: the checked free, a full magazine's flush down to the class heap, the free key's look, large-block frees |
//! | `growth.rs` | working sets larger than a magazine: magazines that grow, and their decay |
//! | `registry.rs` | the thread-cache registry: set-up, parking, orphans, retirement |
//! | `debug.rs` | debug mode's checked paths (no thread caches, the class lock, the op ring) |
//! | `hardened.rs` | hardened mode's checked paths (thread caches kept; guard words, redzones, poison) |
//! | `owned.rs` | thread-owned slabs: refills and flushes without the class lock, remote frees, hand-over |
//! | `fork.rs` | every lock taken and given back around `fork` |
//! | `stats.rs` | the counters' snapshot |
//!
//! `Heap` is generic over its [`PageSource`], so the same code runs as the global allocator over
//! [`OsPages`](crate::platform::OsPages) and under Miri over [`SystemPages`](crate::platform::SystemPages),
//! driven by explicit thread caches instead of thread-local ones.
//!
//! Invariants the other files rely on:
//! - every block is in exactly one place: handed out, in one magazine, or free in its slab's bitmap
//!   (`free.rs`'s double-free check and `ClassHeap::flush` rely on it);
//! - a thread cache with an id is never unmapped (`registry.rs`; free keys name it, `free_suspect` reads
//!   it);
//! - a small or medium segment is unmapped only when its heap is dropped, so never in the process heap
//!   (the C free path keeps the thread's last one in its `tls::SEGMENT_END` word without looking it up
//!   again);
//! - locks nest registry → class → pool, never the other way (`fork.rs` takes them in that order).

use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};

mod batch;
mod debug;
mod fork;
mod free;
mod growth;
#[cfg(test)]
mod growth_tests;
mod hardened;
mod owned;
#[cfg(test)]
mod owned_tests;
#[cfg(test)]
mod purge_tests;
mod registry;
#[cfg(test)]
mod sleep_tests;
mod stats;
#[cfg(test)]
mod tests;

use crate::address::{locate, Located};
use crate::cache::{Caches, ThreadCache, CACHE_BYTES};
use crate::central::{Checks, ClassHeap, SlabPool};
use crate::large::LargeCache;
use crate::lock::SpinLock;
use crate::platform::{HugeCatchUp, PageSource, Reservation, PAGE_SIZE};
use crate::report::report_bad_free;
use crate::scratch;
use crate::segment::{FreeError, SegmentKind, Slab, MAX_BLOCKS, SEGMENT_MAGIC, SMALL_SLAB_SHIFT};
use crate::size_class::{self, class_size, is_medium, BATCH_MAX, NUM_CLASSES};
use crate::stats::stat;

/// Whether the blocks of small class `class` fill its slab: a slab holds at most [`MAX_BLOCKS`] blocks,
/// so those of 8 to 48 B use 8 to 48 KiB of its 64 KiB and never touch the rest. Those classes take
/// their slabs from a pool of their own, whose segments keep small pages (an untouched small page costs
/// nothing; a huge page is resident whole).
#[inline]
fn fills_slab(class: usize) -> bool {
    class_size(class) * MAX_BLOCKS >= 1 << SMALL_SLAB_SHIFT
}

/// The fields `fork`'s handlers write (every lock: the class heaps, the pools, the large cache, the
/// registry) come first and together, from a page boundary, so a fork touches as few pages as they
/// need (3): each one it writes is copied once in the parent and once in the child.
#[repr(C, align(4096))]
pub struct Heap<P: PageSource> {
    classes: [ClassHeap; NUM_CLASSES],
    /// The slabs of the classes whose blocks fill only part of one ([`fills_slab`]: 8 to 48 B), which keep
    /// small pages.
    tiny: SlabPool,
    small: SlabPool,
    medium: SlabPool,
    large: LargeCache,
    caches: SpinLock<Caches>,
    /// Whether thread caches own slabs (`owned.rs`; off by default, `HOPLESS_OWNED_SLABS=1` turns it
    /// on). Set before the first allocation only: a cache that owns slabs and stopped refilling from
    /// them would leave the blocks freed into them remotely there until its thread exits.
    owned_on: AtomicBool,
    /// Whether the segments reserved before the huge-page mark was passed have had its advice.
    huge_caught_up: HugeCatchUp,
    source: P,
}

/// How many blocks a refill moves: half a magazine (64 for a small class).
#[inline]
fn batch(class: usize) -> usize {
    (size_class::MAG_CAPACITY.get(class).copied().unwrap_or(2) as usize / 2).max(1)
}

impl<P: PageSource> Heap<P> {
    pub const fn new(source: P) -> Self {
        Heap {
            source,
            classes: [const { ClassHeap::new() }; NUM_CLASSES],
            owned_on: AtomicBool::new(false),
            huge_caught_up: HugeCatchUp::new(),
            tiny: SlabPool::new(SegmentKind::Small, Reservation::SparseSlabs),
            small: SlabPool::new(SegmentKind::Small, Reservation::Slabs),
            medium: SlabPool::new(SegmentKind::Medium, Reservation::SparseSlabs),
            large: LargeCache::new(),
            caches: SpinLock::new(Caches::new()),
        }
    }

    fn pool(&self, class: usize) -> &SlabPool {
        if is_medium(class) {
            &self.medium
        } else if fills_slab(class) {
            &self.small
        } else {
            &self.tiny
        }
    }

    /// Every slab pool, in the order their locks are taken together (`fork`).
    fn pools(&self) -> [&SlabPool; 3] {
        [&self.tiny, &self.small, &self.medium]
    }

    fn class(&self, class: usize) -> &ClassHeap {
        match self.classes.get(class) {
            Some(c) => c,
            None => report_bad_free(FreeError::BadSlab, ptr::null_mut(), class, ptr::null_mut()),
        }
    }

    /// Turns thread-owned slabs on or off (before the first allocation; see `owned_on`).
    pub(crate) fn set_owned_slabs(&self, on: bool) {
        self.owned_on.store(on, Ordering::Relaxed);
    }

    /// Whether thread-owned slabs are on.
    pub(crate) fn owned_slabs_enabled(&self) -> bool {
        self.owned_on.load(Ordering::Relaxed)
    }

    /// What the checked modes ask of the layers below (all off in the default mode).
    #[inline]
    fn checks(&self) -> Checks {
        let mode = crate::mode::mode();
        if mode == 0 {
            return Checks::NONE;
        }
        let debug = mode & crate::mode::DEBUG != 0;
        let hardened = mode & crate::mode::HARDENED != 0;
        let poison_new: unsafe fn(*mut Slab, usize, usize) = if debug {
            debug::poison_slot
        } else {
            hardened::poison_new_slab
        };
        Checks {
            carve_fill: debug.then_some(crate::debug::POISON),
            random: hardened,
            random_source: crate::debug::random,
            new_slab: hardened.then_some(poison_new),
            keep_last_page: hardened && !debug,
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Central: refills from the slabs (flushes back to them are in `free.rs`).

    /// Moves up to `out.len()` free blocks of `class` out of its slabs. Returns how many (fewer only when
    /// the page source is out of memory).
    pub fn refill(&self, class: usize, out: &mut [*mut u8]) -> usize {
        // SAFETY: `refill_into` writes only block pointers into `out`.
        self.refill_into(class, unsafe { scratch::as_buffer(out) })
    }

    /// [`Heap::refill`] into a buffer that need not be initialized: its first `n` entries (the count
    /// returned) are written.
    pub(crate) fn refill_into(&self, class: usize, out: &mut [MaybeUninit<*mut u8>]) -> usize {
        let n = self
            .class(class)
            .refill(class, self.pool(class), &self.source, self.checks(), out);
        self.note_segments();
        n
    }

    /// Tells the large-mapping cache how many segments the slabs hold (it gives pages back as they
    /// grow). Outside every lock: the cache may unmap.
    fn note_segments(&self) {
        let segments = self
            .pools()
            .iter()
            .map(|p| p.reserved.load(Ordering::Relaxed))
            .sum();
        self.large.slab_segments(&self.source, segments);
        if self.huge_caught_up.due(&self.source) {
            for pool in self.pools() {
                pool.advise_huge_all(&self.source);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Slow paths of the magazine pop.

    /// The magazine of `class` is empty: refill half of it and return one block (null when out of memory).
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn alloc_refill(&self, tc: *mut ThreadCache, class: usize) -> *mut u8 {
        let mut buf = scratch::buffer::<*mut u8, BATCH_MAX>();
        let want = batch(class).min(BATCH_MAX);
        // SAFETY: the magazine is the calling thread's own, and empty; no lock is held.
        unsafe {
            self.decay_if_due(tc);
            ThreadCache::open(tc, class);
            let n = match buf.get_mut(..want) {
                Some(out) if self.owns_slabs(tc, class) => self.refill_owned(tc, class, out),
                Some(out) => self.refill_into(class, out),
                None => 0,
            };
            // The refill wrote the first `n`.
            ThreadCache::fill(tc, class, scratch::written(&buf, n));
            stat!((*tc).counters[class].alloc_slow.bump());
            ThreadCache::pop(tc, class)
        }
    }

    /// One block without a thread cache (a thread past its exit, or whose cache could not be made).
    pub(crate) fn alloc_uncached(&self, class: usize) -> *mut u8 {
        let mut one = [ptr::null_mut(); 1];
        self.refill(class, &mut one);
        one[0]
    }

    /// One block of `class` through `tc` (null: uncached): from the magazine, else by a refill. Null
    /// when out of memory.
    ///
    /// # Safety
    ///
    /// `tc` is null or a live cache of the calling thread.
    #[inline]
    pub(crate) unsafe fn take_block(&self, tc: *mut ThreadCache, class: usize) -> *mut u8 {
        if tc.is_null() {
            return self.alloc_uncached(class);
        }
        // SAFETY: per the caller.
        unsafe {
            let p = ThreadCache::pop(tc, class);
            if p.is_null() {
                self.alloc_refill(tc, class)
            } else {
                stat!((*tc).counters[class].alloc_fast.bump());
                p
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // General entry points.

    /// Allocates `size` bytes aligned to `align` through `tc` (null `tc`: uncached). Null on failure.
    ///
    /// # Safety
    ///
    /// `tc` is null or a live cache of the calling thread; `align` is a power of two; `size > 0`.
    pub(crate) unsafe fn alloc(
        &self,
        tc: *mut ThreadCache,
        size: usize,
        align: usize,
        zeroed: bool,
    ) -> *mut u8 {
        let Some(class) = size_class::class_for(size, align) else {
            return self.large.alloc(&self.source, size, align, zeroed, false);
        };
        // SAFETY: per the caller.
        let p = unsafe { self.take_block(tc, class) };
        if zeroed && !p.is_null() {
            // SAFETY: a block of `class` has at least `size` writable bytes.
            unsafe { ptr::write_bytes(p, 0, size) };
        }
        p
    }

    /// A large block of `size` bytes whatever its size (a sampled allocation's: its header names its
    /// sample); null on failure.
    pub(crate) fn alloc_own_block(&self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        self.large.alloc(&self.source, size, align, zeroed, false)
    }

    /// Usable bytes of a block (its class size, or a large block's mapping minus its header); 0 for a
    /// pointer that is not the start of a block of this heap.
    ///
    /// # Safety
    ///
    /// `p` is an in-use block of this heap, or not a hopless pointer at all.
    pub(crate) unsafe fn usable_size(&self, p: *mut u8) -> usize {
        match locate(p) {
            Located::Foreign => 0,
            // SAFETY: a mapped large-block header.
            Located::Large(seg) => unsafe {
                let start = seg.addr() + (*seg).data_offset;
                if (*seg).magic != SEGMENT_MAGIC || p.addr() < start {
                    0
                } else {
                    (*seg).usable.saturating_sub(p.addr() - start)
                }
            },
            // SAFETY: a live small/medium segment holds `p`.
            Located::Slab(seg) => match unsafe { Slab::check_free(seg, p) } {
                Ok(class) => class_size(class),
                Err(_) => 0,
            },
        }
    }

    /// Resizes a block allocated with (`old_size`, `align`). In place while the new size maps to the same
    /// class; a large block that stays large is resized by moving its pages (never its bytes) or in place
    /// while the new size fits and uses at least half of it; otherwise allocates, copies and frees. Null
    /// on failure, with the old block untouched.
    ///
    /// # Safety
    ///
    /// `p` is an in-use block of this heap allocated with this size and alignment; `tc` as for
    /// [`Heap::alloc`]; `new_size > 0`.
    pub(crate) unsafe fn realloc(
        &self,
        tc: *mut ThreadCache,
        p: *mut u8,
        old_size: usize,
        align: usize,
        new_size: usize,
    ) -> *mut u8 {
        let old_class = size_class::class_for(old_size, align);
        let new_class = size_class::class_for(new_size, align);
        match old_class {
            Some(c) if new_class == Some(c) => return p,
            None if new_class.is_none() => {
                // SAFETY: `p` is a live large block (its layout has no class).
                if let Some(q) = unsafe { self.realloc_large(p, new_size) } {
                    return q;
                }
            }
            _ => {}
        }
        // SAFETY: per the caller.
        let q = unsafe { self.alloc(tc, new_size, align, false) };
        if !q.is_null() {
            // SAFETY: both blocks are at least min(old, new) bytes and distinct.
            unsafe {
                ptr::copy_nonoverlapping(p, q, old_size.min(new_size));
                self.free_ptr(tc, p);
            }
        }
        q
    }

    /// Resizes a live large block without copying: in place when the new size fits and uses at least half
    /// of it, else by resizing its mapping. `Some(null)` is never returned; `None` means "copy instead".
    ///
    /// # Safety
    ///
    /// `p` is a live large block of this heap that the caller owns.
    pub(crate) unsafe fn realloc_large(&self, p: *mut u8, new_size: usize) -> Option<*mut u8> {
        let Located::Large(seg) = locate(p) else {
            return None;
        };
        // SAFETY: a live large block's header.
        let (usable, sample) = unsafe { ((*seg).usable, (*seg).sample) };
        if new_size <= usable && new_size > usable / 2 {
            return Some(p);
        }
        // SAFETY: per the caller, the block is ours alone.
        let q = unsafe { self.large.resize(&self.source, seg, new_size) };
        if q.is_null() {
            return None;
        }
        if sample != 0 {
            // A sampled block keeps its record wherever it went (a span that moves gets a new header).
            if let Located::Large(moved) = locate(q) {
                // SAFETY: the header of the live block just resized, the caller's alone.
                unsafe { (*moved).sample = sample };
            }
        }
        Some(q)
    }

    /// Whether slabs that fall free are purged past a few kept dirty (on, the default) or all kept
    /// resident until [`Heap::trim`] (off: the SLUB experiment, whose timed loops must not page-fault).
    pub fn set_purging(&self, on: bool) {
        for pool in self.pools() {
            pool.keep_dirty.store(!on, core::sync::atomic::Ordering::Relaxed);
        }
    }

    /// How long a slab that falls free waits, resident, before it is purged (see `central`).
    #[cfg(test)]
    pub(crate) fn set_purge_delay_ms(&self, ms: u32) {
        for pool in self.pools() {
            pool.purge_delay_ms.store(ms, Ordering::Relaxed);
        }
    }

    /// Dirty slabs the small pool keeps at most however recently used (see `central`).
    #[cfg(test)]
    pub(crate) fn max_dirty_small(&self) -> usize {
        self.small.max_dirty()
    }

    /// Gives back to the OS everything it can: the fully free slabs every class keeps, every dirty slab
    /// in the pools, the large-mapping cache, and the magazine pages parked caches keep for the next
    /// threads. Blocks in thread caches stay there (flush your own first, and retire dead threads'
    /// caches with [`Heap::retire_orphans`]).
    pub fn trim(&self) {
        for class in 0..NUM_CLASSES {
            let pool = self.pool(class);
            loop {
                let mut victim = ptr::null_mut();
                {
                    let mut g = self.class(class).inner.lock();
                    let mut s = g.partial.head;
                    // SAFETY: class lock held; every slab on the list is this class's.
                    unsafe {
                        while !s.is_null() && (*s).free != (*s).capacity {
                            s = (*s).next;
                        }
                        if s.is_null() {
                            break;
                        }
                        g.partial.remove(s);
                        g.empty -= 1;
                        g.slabs -= 1;
                        let v = pool.put(s);
                        if !v.is_null() {
                            victim = v;
                        }
                    }
                }
                if !victim.is_null() {
                    // SAFETY: handed back by `put`; no lock held.
                    unsafe { pool.purge(&self.source, victim, self.checks().keep_last_page) };
                }
            }
        }
        let keep_last_page = self.checks().keep_last_page;
        for pool in self.pools() {
            // In batches, so that neighbouring slots go in one call (`SlabPool::purge_all`).
            // SAFETY: `take_dirty` hands over slabs of this pool to purge; no lock held.
            unsafe { pool.purge_up_to(&self.source, keep_last_page, usize::MAX, || pool.take_dirty()) };
            // Where segments asked for huge pages, a slab never used can be resident: the first touch
            // of its neighbour made the whole huge page resident, and purging the neighbour split it
            // into small pages that stay. That happens only when a clean slab is taken into use; then
            // each clean slab is purged once (the purge files it at the other end of the list).
            if self.source.huge_pages_used() && pool.clean_taken.swap(false, Ordering::Relaxed) {
                let clean = pool.clean_len();
                // SAFETY: `take_clean` hands over slabs of this pool to purge; no lock held.
                unsafe { pool.purge_up_to(&self.source, keep_last_page, clean, || pool.take_clean()) };
            }
        }
        self.large.clear(&self.source);
        self.cool_parked();
    }
}

impl<P: PageSource> Drop for Heap<P> {
    /// Releases every segment, cached mapping and thread cache. Blocks still allocated from this heap
    /// become dangling: drop a heap only when nothing it handed out is in use (tests, embedded arenas).
    fn drop(&mut self) {
        self.large.clear(&self.source);
        self.large.release_arenas(&self.source, true);
        // SAFETY: `&mut self`: no thread cache or block of this heap is in use any more.
        unsafe {
            self.tiny.release_all(&self.source);
            self.small.release_all(&self.source);
            self.medium.release_all(&self.source);
        }
        self.forget_cache_ids();
        let g = self.caches.get_mut();
        let mut tc = g.all;
        while !tc.is_null() {
            // SAFETY: every cache on `all` came from `reserve(CACHE_BYTES, PAGE_SIZE)` and is unused now.
            unsafe {
                let next = (*tc).next_all;
                self.source.release(tc.cast(), CACHE_BYTES, PAGE_SIZE);
                tc = next;
            }
        }
        g.all = ptr::null_mut();
        g.parked = ptr::null_mut();
        g.parked_len = 0;
        g.warm = 0;
    }
}
