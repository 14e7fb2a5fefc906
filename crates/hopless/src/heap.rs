//! The heap: central classes, slab pools, large blocks and the registry of thread caches, tied together.
//! Everything here but [`Heap::free_ptr`]'s lookup is the slow path (`#[cold]`): refills, flushes, thread
//! cache set-up and retirement, large blocks, realloc, batches, trimming and stats.
//!
//! `Heap` is generic over its [`PageSource`], so the same code runs as the global allocator over
//! [`OsPages`](crate::platform::OsPages) and under Miri over [`SystemPages`](crate::platform::SystemPages),
//! driven by explicit thread caches instead of thread-local ones.

use core::ptr;

use crate::central::{ClassHeap, SlabPool, KEEP_EMPTY_SMALL};
use crate::large::LargeCache;
use crate::lock::SpinLock;
use crate::platform::{PageSource, PAGE_SIZE};
use crate::report::Msg;
use crate::segment::{
    segment_of, slab_of, FreeError, SegmentKind, Slab, SlabState, SEGMENT_MAGIC, SEGMENT_MAP,
};
use crate::size_class::{self, class_size, is_medium, MAG_MAX, NUM_CLASSES};
use crate::stats::stat;
use crate::thread_cache::ThreadCache;

/// The registry of thread caches: every one ever made (for stats) and the parked ones (for reuse).
struct Caches {
    all: *mut ThreadCache,
    parked: *mut ThreadCache,
    made: u64,
}

// SAFETY: the cache pointers are only followed under the registry lock (or by their owning thread).
unsafe impl Send for Caches {}

pub struct Heap<P: PageSource> {
    source: P,
    classes: [ClassHeap; NUM_CLASSES],
    small: SlabPool,
    medium: SlabPool,
    large: LargeCache,
    caches: SpinLock<Caches>,
}

/// How many blocks a refill moves: half a magazine (the seed's batch of 32 for small classes).
#[inline]
fn batch(class: usize) -> usize {
    (size_class::MAG_CAPACITY[class] as usize / 2).max(1)
}

impl<P: PageSource> Heap<P> {
    pub const fn new(source: P) -> Self {
        Heap {
            source,
            classes: [const { ClassHeap::new() }; NUM_CLASSES],
            small: SlabPool::new(SegmentKind::Small),
            medium: SlabPool::new(SegmentKind::Medium),
            large: LargeCache::new(),
            caches: SpinLock::new(Caches {
                all: ptr::null_mut(),
                parked: ptr::null_mut(),
                made: 0,
            }),
        }
    }

    pub fn source(&self) -> &P {
        &self.source
    }

    fn pool(&self, class: usize) -> &SlabPool {
        if is_medium(class) {
            &self.medium
        } else {
            &self.small
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Central: batch moves between magazines and slabs.

    /// Moves up to `out.len()` free blocks of `class` out of its slabs. Returns how many (fewer only when
    /// the page source is out of memory).
    pub fn refill(&self, class: usize, out: &mut [*mut u8]) -> usize {
        let pool = self.pool(class);
        let mut g = self.classes[class].inner.lock();
        let mut got = 0;
        while got < out.len() {
            let mut s = g.partial.head;
            if s.is_null() {
                s = pool.get(&self.source);
                if s.is_null() {
                    break;
                }
                // SAFETY: a slab fresh from the pool is ours; we hold the class lock it will belong to.
                unsafe {
                    Slab::init(s, class, (*s).start, pool.slot_size());
                    #[cfg(feature = "debug")]
                    {
                        let mode = crate::debug::mode();
                        if mode & crate::debug::HARDENED != 0 {
                            // Every block becomes takeable at once; in debug mode they must all be poison
                            // (otherwise `Slab::take` poisons blocks as it carves them).
                            if mode & crate::debug::DEBUG != 0 {
                                ptr::write_bytes((*s).start, crate::debug::POISON, pool.slot_size());
                            }
                            Slab::make_all_carved(s);
                        }
                    }
                    g.partial.push_front(s);
                }
                g.slabs += 1;
                g.empty += 1;
            }
            // SAFETY: `s` is on this class's partial list and we hold the class lock.
            unsafe {
                if (*s).free == (*s).capacity {
                    g.empty -= 1;
                }
                #[cfg(feature = "debug")]
                if crate::debug::hardened() {
                    got += Slab::take_random(s, &mut out[got..], crate::debug::random);
                } else {
                    got += Slab::take(s, &mut out[got..]);
                }
                #[cfg(not(feature = "debug"))]
                {
                    got += Slab::take(s, &mut out[got..]);
                }
                if (*s).free == 0 {
                    g.partial.remove(s);
                    (*s).state = SlabState::Full;
                }
            }
        }
        g.counters.refills += 1;
        g.counters.outstanding += got as u64;
        g.counters.peak_outstanding = g.counters.peak_outstanding.max(g.counters.outstanding);
        got
    }

    /// Returns blocks of `class` to their slabs. A block that is not an in-use block of this class is
    /// reported (double free, wrong size, foreign pointer) and the process aborts.
    ///
    /// # Safety
    ///
    /// Each pointer was handed out by this heap (or is a fault to report); no caller uses them again.
    pub unsafe fn flush(&self, class: usize, blocks: &[*mut u8]) {
        for chunk in blocks.chunks(MAG_MAX) {
            // SAFETY: forwarded.
            unsafe { self.flush_chunk(class, chunk) };
        }
    }

    /// # Safety
    ///
    /// As for [`Heap::flush`], with at most [`MAG_MAX`] blocks.
    unsafe fn flush_chunk(&self, class: usize, blocks: &[*mut u8]) {
        let pool = self.pool(class);
        let keep = if is_medium(class) { 0 } else { KEEP_EMPTY_SMALL };
        let want_kind = if is_medium(class) {
            SegmentKind::Medium
        } else {
            SegmentKind::Small
        };
        let mut victims = [ptr::null_mut::<Slab>(); MAG_MAX];
        let mut nv = 0;
        {
            let mut g = self.classes[class].inner.lock();
            for &p in blocks {
                if !SEGMENT_MAP.contains(p) {
                    report_bad_free(FreeError::Foreign, p, class, ptr::null_mut());
                }
                let seg = segment_of(p);
                // SAFETY: the segment map says `p` is in a live hopless segment, so its header is mapped.
                let (magic, kind) = unsafe { ((*seg).magic, (*seg).kind) };
                if magic != SEGMENT_MAGIC || kind != want_kind {
                    report_bad_free(FreeError::BadSlab, p, class, ptr::null_mut());
                }
                // SAFETY: `seg` is a live segment of the class's kind.
                let s = unsafe { slab_of(seg, p) };
                // SAFETY: we hold the class lock and `s` is `p`'s slab.
                if let Err(e) = unsafe { Slab::put(s, class, p) } {
                    report_bad_free(e, p, class, s);
                }
                // SAFETY: `s` belongs to this class, whose lock we hold.
                unsafe {
                    if (*s).state == SlabState::Full {
                        (*s).state = SlabState::Partial;
                        g.partial.push_front(s);
                    }
                    if (*s).free == (*s).capacity {
                        if g.empty < keep {
                            g.empty += 1;
                        } else {
                            g.partial.remove(s);
                            g.slabs -= 1;
                            let v = pool.put(s);
                            if !v.is_null() {
                                victims[nv] = v;
                                nv += 1;
                            }
                        }
                    }
                }
            }
            g.counters.flushes += 1;
            g.counters.outstanding -= blocks.len() as u64;
        }
        for &v in &victims[..nv] {
            // SAFETY: `put` handed these back to purge, and we hold no lock.
            unsafe { pool.purge(&self.source, v) };
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Thread caches.

    /// A cache for a new thread: a parked one, or a new one from the page source (never from the
    /// allocator's public path). Null when out of memory.
    pub fn new_thread_cache(&self) -> *mut ThreadCache {
        {
            let mut g = self.caches.lock();
            let tc = g.parked;
            if !tc.is_null() {
                // SAFETY: parked caches are valid and owned by the registry.
                g.parked = unsafe { (*tc).next_parked };
                return tc;
            }
        }
        let size = core::mem::size_of::<ThreadCache>().next_multiple_of(PAGE_SIZE);
        let tc = self.source.reserve(size, PAGE_SIZE).cast::<ThreadCache>();
        if tc.is_null() {
            return tc;
        }
        // SAFETY: fresh zeroed memory, big and aligned enough; all-zero is a valid ThreadCache.
        unsafe { (*tc).init() };
        let mut g = self.caches.lock();
        // SAFETY: `tc` is valid and not yet shared.
        unsafe { (*tc).next_all = g.all };
        g.all = tc;
        g.made += 1;
        tc
    }

    /// Returns every block of a cache to the central heap.
    ///
    /// # Safety
    ///
    /// `tc` is a live cache that only the calling thread uses.
    pub unsafe fn flush_all(&self, tc: *mut ThreadCache) {
        for class in 0..NUM_CLASSES {
            // SAFETY: the magazine is the calling thread's; its slots[..count] are blocks of `class`.
            unsafe {
                let m = ThreadCache::mag(tc, class);
                let n = (*m).count as usize;
                if n > 0 {
                    (*m).count = 0;
                    self.flush(class, &(&(*m).slots)[..n]);
                }
            }
        }
    }

    /// Returns an exiting thread's blocks and parks its cache for the next thread.
    ///
    /// # Safety
    ///
    /// `tc` came from [`Heap::new_thread_cache`] and nothing uses it after this call.
    pub unsafe fn retire_thread_cache(&self, tc: *mut ThreadCache) {
        // SAFETY: per the caller.
        unsafe { self.flush_all(tc) };
        let mut g = self.caches.lock();
        // SAFETY: the cache is ours to file.
        unsafe { (*tc).next_parked = g.parked };
        g.parked = tc;
    }

    // ---------------------------------------------------------------------------------------------------
    // Slow paths of the magazine fast path.

    /// The magazine of `class` is empty: refill half of it and return one block (null when out of memory).
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread.
    #[cold]
    #[inline(never)]
    pub unsafe fn alloc_refill(&self, tc: *mut ThreadCache, class: usize) -> *mut u8 {
        // SAFETY: the magazine is the calling thread's own.
        unsafe {
            let m = ThreadCache::mag(tc, class);
            debug_assert_eq!((*m).count, 0);
            let n = self.refill(class, &mut (&mut (*m).slots)[..batch(class)]);
            (*m).count = n as u32;
            stat!((*tc).counters[class].alloc_slow.bump());
            ThreadCache::pop(tc, class)
        }
    }

    /// The magazine of `class` is full: flush its older half, then keep `p`.
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread; `p` a block of `class` being freed.
    #[cold]
    #[inline(never)]
    pub unsafe fn free_flush(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: the magazine is the calling thread's own; the older half is slots[..half].
        unsafe {
            let m = ThreadCache::mag(tc, class);
            let count = (*m).count as usize;
            let half = count.div_ceil(2);
            self.flush(class, &(&(*m).slots)[..half]);
            (*m).slots.copy_within(half..count, 0);
            (*m).count = (count - half) as u32;
            stat!((*tc).counters[class].free_slow.bump());
            let pushed = ThreadCache::push(tc, class, p);
            debug_assert!(pushed);
        }
    }

    /// One block without a thread cache (a thread past its exit, or whose cache could not be made).
    pub fn alloc_uncached(&self, class: usize) -> *mut u8 {
        let mut one = [ptr::null_mut(); 1];
        self.refill(class, &mut one);
        one[0]
    }

    // ---------------------------------------------------------------------------------------------------
    // General entry points.

    /// Allocates `size` bytes aligned to `align` through `tc` (null `tc`: uncached). Null on failure.
    ///
    /// # Safety
    ///
    /// `tc` is null or a live cache of the calling thread; `align` is a power of two; `size > 0`.
    pub unsafe fn alloc(&self, tc: *mut ThreadCache, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        let Some(class) = size_class::class_for(size, align) else {
            return self.large.alloc(&self.source, size, align, zeroed);
        };
        let p = if tc.is_null() {
            self.alloc_uncached(class)
        } else {
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
        };
        if zeroed && !p.is_null() {
            // SAFETY: a block of `class` has at least `size` writable bytes.
            unsafe { ptr::write_bytes(p, 0, size) };
        }
        p
    }

    /// Frees a block of known class through `tc` (null: uncached).
    ///
    /// # Safety
    ///
    /// `p` is an in-use block of `class` from this heap; `tc` is null or a live cache of the calling thread.
    #[inline]
    pub unsafe fn free_class(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        if tc.is_null() {
            // SAFETY: per the caller.
            unsafe { self.flush(class, &[p]) };
            return;
        }
        // SAFETY: per the caller.
        unsafe {
            if ThreadCache::push(tc, class, p) {
                stat!((*tc).counters[class].free_fast.bump());
            } else {
                self.free_flush(tc, class, p);
            }
        }
    }

    /// Frees any block by its address alone: the segment header says small, medium or large, and for a
    /// slab block the slab header says its class. Pointers that are not ours are reported.
    ///
    /// # Safety
    ///
    /// `p` is a block from this heap that nobody uses any more (or a fault to report); `tc` as for
    /// [`Heap::free_class`].
    #[inline]
    pub unsafe fn free_ptr(&self, tc: *mut ThreadCache, p: *mut u8) {
        if !SEGMENT_MAP.contains(p) {
            report_bad_free(FreeError::Foreign, p, usize::MAX, ptr::null_mut());
        }
        let seg = segment_of(p);
        // SAFETY: the segment map says `p` is in a live hopless segment: its header is mapped.
        let (magic, kind) = unsafe { ((*seg).magic, (*seg).kind) };
        if magic != SEGMENT_MAGIC {
            report_bad_free(FreeError::BadSlab, p, usize::MAX, ptr::null_mut());
        }
        match kind {
            SegmentKind::Large => {
                // SAFETY: a large block's header, and the block is being freed.
                unsafe {
                    if p != seg.cast::<u8>().add((*seg).data_offset) {
                        report_bad_free(FreeError::NotBlockStart, p, usize::MAX, ptr::null_mut());
                    }
                    self.large.free(&self.source, seg)
                }
            }
            SegmentKind::Small | SegmentKind::Medium => {
                // SAFETY: a small/medium segment; the slab's class is stable while `p` is in use.
                let class = unsafe { (*slab_of(seg, p)).class as usize };
                if class >= NUM_CLASSES {
                    report_bad_free(FreeError::BadSlab, p, class, ptr::null_mut());
                }
                // SAFETY: `p` is a block of `class` (the flush re-checks this against the bitmap).
                unsafe { self.free_class(tc, class, p) }
            }
        }
    }

    /// Usable bytes of a block (its class size, or a large block's mapping minus its header).
    ///
    /// # Safety
    ///
    /// `p` is an in-use block of this heap.
    pub unsafe fn usable_size(&self, p: *mut u8) -> usize {
        let seg = segment_of(p);
        // SAFETY: per the caller, the segment is live.
        unsafe {
            match (*seg).kind {
                SegmentKind::Large => (*seg).usable - (p.addr() - seg.addr() - (*seg).data_offset),
                _ => class_size((*slab_of(seg, p)).class as usize),
            }
        }
    }

    /// Resizes a block allocated with (`old_size`, `align`). In place while the new size maps to the same
    /// class (or, for a large block, fits its mapping and uses at least half of it); otherwise allocates,
    /// copies and frees. Null on failure, with the old block untouched.
    ///
    /// # Safety
    ///
    /// `p` is an in-use block of this heap allocated with this size and alignment; `tc` as for
    /// [`Heap::alloc`]; `new_size > 0`.
    pub unsafe fn realloc(
        &self,
        tc: *mut ThreadCache,
        p: *mut u8,
        old_size: usize,
        align: usize,
        new_size: usize,
    ) -> *mut u8 {
        let old_class = size_class::class_for(old_size, align);
        match old_class {
            Some(c) if size_class::class_for(new_size, align) == Some(c) => return p,
            None => {
                // SAFETY: `p` is a live large block (its layout has no class).
                let usable = unsafe { self.usable_size(p) };
                let large_again = size_class::class_for(new_size, align).is_none();
                if large_again && new_size <= usable && new_size > usable / 2 {
                    return p;
                }
            }
            Some(_) => {}
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

    /// Fills `out` with blocks of (`size`, `align`); returns how many (all, unless out of memory). Blocks
    /// come from the magazine first, the rest straight from the central heap in one lock hold per class.
    ///
    /// # Safety
    ///
    /// As for [`Heap::alloc`].
    pub unsafe fn alloc_batch(
        &self,
        tc: *mut ThreadCache,
        size: usize,
        align: usize,
        out: &mut [*mut u8],
    ) -> usize {
        let Some(class) = size_class::class_for(size, align) else {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = self.large.alloc(&self.source, size, align, false);
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
                out[got] = p;
                got += 1;
            }
            // SAFETY: per the caller, `tc` is live.
            stat!(unsafe { (*tc).counters[class].alloc_fast.add(got as u64) });
        }
        while got < out.len() {
            let n = self.refill(class, &mut out[got..]);
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
    pub unsafe fn free_batch(&self, tc: *mut ThreadCache, size: usize, align: usize, blocks: &[*mut u8]) {
        let Some(class) = size_class::class_for(size, align) else {
            for &p in blocks {
                // SAFETY: per the caller.
                unsafe { self.free_ptr(tc, p) };
            }
            return;
        };
        let mut i = 0;
        if !tc.is_null() {
            // SAFETY: per the caller.
            while i < blocks.len() && unsafe { ThreadCache::push(tc, class, blocks[i]) } {
                i += 1;
            }
            // SAFETY: per the caller, `tc` is live.
            stat!(unsafe { (*tc).counters[class].free_fast.add(i as u64) });
        }
        if i < blocks.len() {
            stat!(if !tc.is_null() {
                // SAFETY: per the caller.
                unsafe { (*tc).counters[class].free_slow.add((blocks.len() - i) as u64) }
            });
            // SAFETY: per the caller.
            unsafe { self.flush(class, &blocks[i..]) };
        }
    }

    /// Gives back to the OS everything it can: fully free slabs every class keeps, every dirty slab in
    /// the pools, and the large-mapping cache. Blocks in thread caches stay there (flush your own first).
    pub fn trim(&self) {
        for class in 0..NUM_CLASSES {
            let pool = self.pool(class);
            loop {
                let mut victim = ptr::null_mut();
                {
                    let mut g = self.classes[class].inner.lock();
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
                    unsafe { pool.purge(&self.source, victim) };
                }
            }
        }
        for pool in [&self.small, &self.medium] {
            loop {
                let v = pool.take_dirty();
                if v.is_null() {
                    break;
                }
                // SAFETY: `take_dirty` handed it over; no lock held.
                unsafe { pool.purge(&self.source, v) };
            }
        }
        self.large.clear(&self.source);
    }

    /// A snapshot of every counter. Thread counters are read without stopping their threads.
    pub fn stats(&self) -> crate::stats::Stats {
        let mut st = crate::stats::Stats::default();
        for (class, c) in st.classes.iter_mut().enumerate() {
            let g = self.classes[class].inner.lock();
            c.refills = g.counters.refills;
            c.flushes = g.counters.flushes;
            c.slabs = g.slabs as u64;
            c.outstanding_blocks = g.counters.outstanding;
            c.peak_bytes = g.counters.peak_outstanding * class_size(class) as u64;
        }
        {
            let g = self.caches.lock();
            st.thread_caches = g.made;
            #[cfg(feature = "stats")]
            {
                let mut tc = g.all;
                while !tc.is_null() {
                    // SAFETY: caches on the `all` list are never freed; counters are atomics.
                    unsafe {
                        for (class, c) in st.classes.iter_mut().enumerate() {
                            let k = &(*tc).counters[class];
                            c.alloc_fast += k.alloc_fast.get();
                            c.alloc_slow += k.alloc_slow.get();
                            c.free_fast += k.free_fast.get();
                            c.free_slow += k.free_slow.get();
                        }
                        tc = (*tc).next_all;
                    }
                }
            }
        }
        for (class, c) in st.classes.iter_mut().enumerate() {
            // A refill counts as one slow alloc that moved a batch; frees mirror that.
            let allocs = c.alloc_fast + c.alloc_slow;
            let frees = c.free_fast + c.free_slow;
            c.bytes_in_use = allocs.saturating_sub(frees) * class_size(class) as u64;
        }
        self.large.with_counters(|l| {
            st.large_allocs = l.allocs;
            st.large_frees = l.frees;
            st.large_cache_hits = l.hits;
            st.large_bytes_in_use = l.bytes_in_use;
            st.large_peak_bytes = l.peak_bytes;
        });
        for pool in [&self.small, &self.medium] {
            let g = pool.inner.lock();
            st.segments += g.segments;
            st.purged_slabs += g.purged;
        }
        st
    }

    /// Debug mode: a checked allocation straight from the central heap (see [`crate::debug`]).
    #[cfg(feature = "debug")]
    #[cold]
    #[inline(never)]
    pub fn debug_alloc(&self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        use crate::debug;
        match debug::class_for(size, align) {
            Some(class) => {
                let mut one = [ptr::null_mut(); 1];
                if self.refill(class, &mut one) == 0 {
                    return ptr::null_mut();
                }
                // SAFETY: a block of `class` just taken from its slab.
                unsafe { debug::prepare(one[0], class, size, zeroed) };
                one[0]
            }
            None => {
                let Some(need) = size.checked_add(debug::REDZONE_MIN + 8) else {
                    return ptr::null_mut();
                };
                let p = self.large.alloc(&self.source, need, align, zeroed);
                if p.is_null() {
                    return p;
                }
                // SAFETY: a live large block of at least `need` bytes; its usable size is known.
                unsafe {
                    let usable = self.usable_size(p);
                    ptr::write_bytes(p.add(size), debug::REDZONE, usable - 8 - size);
                    p.add(usable - 8).cast::<u64>().write_unaligned(size as u64);
                }
                debug::record(debug::OpKind::Alloc, p, 0xff);
                p
            }
        }
    }

    /// Debug mode: the requested size of a block (what `usable_size` reports then).
    ///
    /// # Safety
    ///
    /// `p` is a live debug-mode block.
    #[cfg(feature = "debug")]
    pub unsafe fn debug_size(&self, p: *mut u8) -> usize {
        // SAFETY: per the caller, the block (slab or large) ends with its size trailer.
        unsafe { p.add(self.usable_size(p) - 8).cast::<u64>().read_unaligned() as usize }
    }

    /// Debug mode: a checked free (see [`crate::debug`]).
    ///
    /// # Safety
    ///
    /// None beyond the program's claim that `p` is a live block: every other case is reported.
    #[cfg(feature = "debug")]
    #[cold]
    #[inline(never)]
    pub unsafe fn debug_free(&self, p: *mut u8) {
        use crate::debug;
        // SAFETY: check_headers validates everything it reads through the segment map first.
        match unsafe { debug::check_headers(p) } {
            None => {
                let seg = segment_of(p);
                // SAFETY: a live large block (its header magic was checked).
                unsafe {
                    if p != seg.cast::<u8>().add((*seg).data_offset) {
                        debug::fault(
                            "free of a pointer that is not the start of a block",
                            p,
                            usize::MAX,
                            None,
                        );
                    }
                    let usable = self.usable_size(p);
                    let size = p.add(usable - 8).cast::<u64>().read_unaligned() as usize;
                    if size > usable - 8 {
                        debug::fault(
                            "the block's size trailer is damaged",
                            p,
                            usize::MAX,
                            Some(usable - 8),
                        );
                    }
                    let red = core::slice::from_raw_parts(p.add(size), usable - 8 - size);
                    if let Some(off) = debug::first_not(red, debug::REDZONE) {
                        debug::fault(
                            "buffer overflow into the redzone",
                            p,
                            usize::MAX,
                            Some(size + off),
                        );
                    }
                    debug::record(debug::OpKind::Free, p, 0xff);
                    self.large.free(&self.source, seg);
                }
            }
            Some(class) => {
                let seg = segment_of(p);
                // SAFETY: check_headers found a live slab of `class` with `p` at a block start.
                let s = unsafe { slab_of(seg, p) };
                {
                    let _g = self.classes[class].inner.lock();
                    // SAFETY: we hold the class lock that owns the bitmap.
                    let (free, never) = unsafe {
                        let i = (*s).index_of(p);
                        (
                            (*s).bitmap[i / 64] & (1 << (i % 64)) != 0,
                            i >= (*s).carved as usize,
                        )
                    };
                    if free {
                        debug::fault("double free", p, class, None);
                    }
                    if never {
                        debug::fault("free of a block that was never allocated", p, class, None);
                    }
                }
                // SAFETY: an in-use block of `class`; the program gives it up.
                unsafe { debug::check_and_poison(p, class) };
                debug::record(debug::OpKind::Free, p, class);
                // SAFETY: as above; the flush re-checks the bitmap under the lock.
                unsafe { self.flush(class, &[p]) };
            }
        }
    }

    /// Takes every lock (before `fork`), in a fixed order.
    pub fn lock_all(&self) {
        self.caches.raw_lock();
        for c in &self.classes {
            c.inner.raw_lock();
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
    pub unsafe fn unlock_all(&self) {
        // SAFETY: per the caller.
        unsafe {
            self.large.unlock_raw();
            self.medium.inner.raw_unlock();
            self.small.inner.raw_unlock();
            for c in &self.classes {
                c.inner.raw_unlock();
            }
            self.caches.raw_unlock();
        }
    }
}

impl<P: PageSource> Drop for Heap<P> {
    /// Releases every segment, cached mapping and thread cache. Blocks still allocated from this heap
    /// become dangling: drop a heap only when nothing it handed out is in use (tests, embedded arenas).
    fn drop(&mut self) {
        self.large.clear(&self.source);
        // SAFETY: `&mut self`: no thread cache or block of this heap is in use any more.
        unsafe {
            self.small.release_all(&self.source);
            self.medium.release_all(&self.source);
        }
        let size = core::mem::size_of::<ThreadCache>().next_multiple_of(PAGE_SIZE);
        let g = self.caches.get_mut();
        let mut tc = g.all;
        while !tc.is_null() {
            // SAFETY: every cache on `all` came from `reserve(size, PAGE_SIZE)` and is unused now.
            unsafe {
                let next = (*tc).next_all;
                self.source.release(tc.cast(), size, PAGE_SIZE);
                tc = next;
            }
        }
        g.all = ptr::null_mut();
        g.parked = ptr::null_mut();
    }
}

/// Reports a bad free with everything the heap knows, and aborts.
#[cold]
#[inline(never)]
pub(crate) fn report_bad_free(e: FreeError, p: *mut u8, class: usize, slab: *mut Slab) -> ! {
    #[cfg(feature = "debug")]
    if crate::debug::debug_on() {
        crate::debug::fault(e.describe(), p, class, None);
    }
    let mut m = Msg::new();
    m.str("hopless: fatal: ")
        .str(e.describe())
        .str("\n  pointer: ")
        .hex(p.addr());
    if class < NUM_CLASSES {
        m.str("\n  class: ")
            .dec(class as u64)
            .str(" (")
            .dec(class_size(class) as u64)
            .str(" bytes)");
    }
    m.str("\n  segment: ").hex(segment_of(p).addr());
    if !slab.is_null() {
        // SAFETY: `slab` was found from `p`'s segment header, which is mapped.
        let s = unsafe { &*slab };
        m.str("\n  slab: ")
            .hex(s.start.addr())
            .str(" (slab class ")
            .dec(s.class as u64)
            .str(", block ")
            .dec(s.index_of(p) as u64)
            .str(" of ")
            .dec(s.capacity as u64)
            .str(", ")
            .dec(s.free as u64)
            .str(" free)");
    }
    m.str("\n");
    m.fatal()
}
