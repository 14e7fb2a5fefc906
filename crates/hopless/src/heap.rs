//! The heap: central classes, slab pools, large blocks and the registry of thread caches, tied together.
//! Everything here but [`Heap::free_ptr`]'s lookup is the slow path (`#[cold]`): refills, flushes, thread
//! cache set-up and retirement, large blocks, realloc, batches, trimming and stats.
//!
//! Frees are checked before a block can be handed out twice: [`Heap::free_ptr`] finds what the address is
//! (`segment::locate`, exact), checks it is a block start handed out before (`Slab::check_free`), and
//! [`Heap::free_checked`] pushes it with its free key (see `thread_cache`); a key already there sends it
//! to [`Heap::free_suspect`], which looks where the key says. Everything that reports goes through
//! `report_bad_free`, which never allocates.
//!
//! Thread caches: made from the page source, given an id (`thread_cache::CACHE_TABLE`) while ids last,
//! parked when their thread exits (magazine pages given back), and reclaimed from threads that died
//! without the exit hook (`find_orphan`).
//!
//! `Heap` is generic over its [`PageSource`], so the same code runs as the global allocator over
//! [`OsPages`](crate::platform::OsPages) and under Miri over [`SystemPages`](crate::platform::SystemPages),
//! driven by explicit thread caches instead of thread-local ones.

use core::ptr;
use core::sync::atomic::Ordering;

#[cfg(feature = "debug")]
mod hardened;

use crate::central::{ClassHeap, SlabPool, KEEP_EMPTY_SMALL};
use crate::large::LargeCache;
use crate::lock::SpinLock;
use crate::platform::{PageSource, PAGE_SIZE};
use crate::report::Msg;
use crate::segment::{
    locate, segment_of, slab_of, FreeError, Located, SegmentHeader, SegmentKind, Slab, SlabState,
    SEGMENT_MAGIC, SEGMENT_MAP,
};
use crate::size_class::{self, class_size, is_medium, MAG_MAX, NUM_CLASSES};
use crate::stats::stat;
use crate::thread_cache::{
    read_key, slab_mark, write_key, KeySays, Push, ThreadCache, CACHE_TABLE, MAX_CACHE_ID,
};

/// The registry of thread caches: every one it holds (live or parked), and the parked ones (for reuse).
struct Caches {
    all: *mut ThreadCache,
    parked: *mut ThreadCache,
    /// Caches on `parked`.
    parked_len: usize,
    /// Where the next search for a cache whose thread died unretired resumes (a cache on `all`, or null).
    cursor: *mut ThreadCache,
    /// The next cache id to give out (ids start at 1).
    next_id: usize,
    made: u64,
}

/// Parked caches kept for new threads (their first page stays mapped); a thread that exits past this
/// unmaps its cache. With the `stats` feature caches are never unmapped: their counters are the stats.
const MAX_PARKED: usize = 64;

/// Live caches checked for a dead owner each time a new cache would otherwise be mapped.
const ORPHAN_PROBES: usize = 4;

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
    (size_class::MAG_CAPACITY.get(class).copied().unwrap_or(2) as usize / 2).max(1)
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
                parked_len: 0,
                cursor: ptr::null_mut(),
                next_id: 1,
                made: 0,
            }),
        }
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
        let mut g = self.class(class).inner.lock();
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
                            // Every block becomes takeable at once, so they must all be poison now
                            // (otherwise debug mode's `Slab::take` poisons blocks as it carves them).
                            if mode & crate::debug::DEBUG != 0 {
                                ptr::write_bytes((*s).start, crate::debug::POISON, pool.slot_size());
                            } else {
                                hardened::poison_new_slab(s, class);
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
                    got += Slab::take_random(s, out.get_mut(got..).unwrap_or_default(), crate::debug::random);
                } else {
                    got += Slab::take(s, out.get_mut(got..).unwrap_or_default());
                }
                #[cfg(not(feature = "debug"))]
                {
                    got += Slab::take(s, out.get_mut(got..).unwrap_or_default());
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

    /// [`Heap::flush`], first marking each block as being in its slab (see `thread_cache`'s free key).
    ///
    /// # Safety
    ///
    /// As for [`Heap::flush`]; the blocks are not debug-mode blocks (whose contents are checked poison).
    pub unsafe fn flush_marked(&self, class: usize, blocks: &[*mut u8]) {
        for &p in blocks {
            // SAFETY: per the caller, a block of this heap being freed: its first word is ours.
            unsafe { write_key(p, slab_mark(p)) };
        }
        // SAFETY: forwarded.
        unsafe { self.flush(class, blocks) };
    }

    /// [`Heap::flush_marked`] for blocks out of a magazine: only a block that holds a slot key needs the
    /// mark. One a refill put there and nobody took carries its mark already, or nothing at all (a
    /// fresh block, whose page a write would make resident for nothing; a read maps the zero page).
    ///
    /// # Safety
    ///
    /// As for [`Heap::flush`]; the blocks come from a magazine.
    pub unsafe fn flush_from_magazine(&self, class: usize, blocks: &[*mut u8]) {
        for &p in blocks {
            // SAFETY: per the caller, free blocks of this heap: their first words are ours.
            unsafe {
                if matches!(read_key(p), KeySays::Slot { .. }) {
                    write_key(p, slab_mark(p));
                }
            }
        }
        // SAFETY: forwarded.
        unsafe { self.flush(class, blocks) };
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
            let mut g = self.class(class).inner.lock();
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
                                if let Some(slot) = victims.get_mut(nv) {
                                    *slot = v;
                                    nv += 1;
                                }
                            }
                        }
                    }
                }
            }
            g.counters.flushes += 1;
            g.counters.outstanding -= blocks.len() as u64;
        }
        for &v in victims.iter().take(nv) {
            // SAFETY: `put` handed these back to purge, and we hold no lock.
            unsafe { pool.purge(&self.source, v) };
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Thread caches.

    /// A cache for a new thread: a parked one, the cache of a thread that died without retiring it, or a
    /// new one from the page source (never from the allocator's public path). Null when out of memory.
    /// `tid` is the calling thread's kernel id.
    pub fn new_thread_cache(&self, tid: i32) -> *mut ThreadCache {
        let orphan = {
            let mut g = self.caches.lock();
            let tc = g.parked;
            if !tc.is_null() {
                // SAFETY: parked caches are valid and owned by the registry.
                unsafe {
                    g.parked = (*tc).next_parked;
                    g.parked_len = g.parked_len.saturating_sub(1);
                    (*tc).owner_tid.store(tid, Ordering::Relaxed);
                    (*tc).live.store(true, Ordering::Relaxed);
                }
                return tc;
            }
            self.find_orphan(&mut g, tid)
        };
        if !orphan.is_null() {
            // SAFETY: its thread is gone and the registry handed it to us alone: its blocks are free
            // blocks nobody else can reach.
            unsafe { self.flush_all(orphan) };
            return orphan;
        }
        let size = core::mem::size_of::<ThreadCache>().next_multiple_of(PAGE_SIZE);
        let tc = self.source.reserve(size, PAGE_SIZE).cast::<ThreadCache>();
        if tc.is_null() {
            return tc;
        }
        // SAFETY: fresh zeroed memory, big and aligned enough; all-zero is a valid ThreadCache (every
        // capacity zero: magazines open as their classes are first used).
        unsafe {
            (*tc).owner_tid.store(tid, Ordering::Relaxed);
            (*tc).live.store(true, Ordering::Relaxed);
        }
        let mut g = self.caches.lock();
        // SAFETY: `tc` is valid and not yet shared.
        unsafe { (*tc).next_all = g.all };
        g.all = tc;
        g.made = g.made.wrapping_add(1);
        // An id names the cache in free keys: it must stay mapped from now on (see `retire`).
        if g.next_id < MAX_CACHE_ID {
            g.next_id = g.next_id.max(1);
            if let Some(slot) = CACHE_TABLE.get(g.next_id) {
                // SAFETY: not yet shared.
                unsafe { (*tc).id = g.next_id as u32 };
                slot.store(tc, Ordering::Release);
                g.next_id += 1;
            }
        }
        tc
    }

    /// Looks at a few live caches for one whose owner thread no longer exists (a thread whose first
    /// allocation came in the last round of TSD destructors never runs hopless's exit hook; nor do the
    /// other threads of a parent in a `fork` child). Hands it over to `tid`, or returns null.
    fn find_orphan(&self, g: &mut Caches, tid: i32) -> *mut ThreadCache {
        for _ in 0..ORPHAN_PROBES {
            let mut tc = g.cursor;
            if tc.is_null() {
                tc = g.all;
            }
            if tc.is_null() {
                return tc;
            }
            // SAFETY: caches on `all` are mapped while the registry lock is held.
            unsafe {
                g.cursor = (*tc).next_all;
                if (*tc).live.load(Ordering::Relaxed)
                    && !self.source.thread_alive((*tc).owner_tid.load(Ordering::Relaxed))
                {
                    (*tc).owner_tid.store(tid, Ordering::Relaxed);
                    return tc;
                }
            }
        }
        ptr::null_mut()
    }

    /// Returns every block of a cache to the central heap.
    ///
    /// # Safety
    ///
    /// `tc` is a live cache that only the calling thread uses.
    pub unsafe fn flush_all(&self, tc: *mut ThreadCache) {
        let mut buf = [ptr::null_mut(); MAG_MAX];
        for class in 0..NUM_CLASSES {
            // SAFETY: the magazine is the calling thread's; its blocks are blocks of `class`.
            unsafe {
                let n = ThreadCache::take_oldest(tc, class, MAG_MAX, &mut buf);
                if let Some(blocks) = buf.get(..n) {
                    if n > 0 {
                        self.flush_from_magazine(class, blocks);
                    }
                }
            }
        }
    }

    /// Returns an exiting thread's blocks, gives its magazine pages back, and parks its cache for the next
    /// thread (or unmaps it when enough are parked).
    ///
    /// # Safety
    ///
    /// `tc` came from [`Heap::new_thread_cache`] and nothing uses it after this call.
    pub unsafe fn retire_thread_cache(&self, tc: *mut ThreadCache) {
        // SAFETY: per the caller.
        unsafe { self.flush_all(tc) };
        let size = core::mem::size_of::<ThreadCache>().next_multiple_of(PAGE_SIZE);
        // The magazines after the first page: zero again, so each class reopens on first use. Concurrent
        // readers (the double-free check) see empty magazines either way.
        // SAFETY: whole pages of the cache's own reservation, holding only magazines, all empty now.
        unsafe {
            let first = (&raw mut (*tc).mags).cast::<u8>();
            let from = first.addr().next_multiple_of(PAGE_SIZE) - tc.addr();
            if from < size {
                self.source.decommit(tc.cast::<u8>().add(from), size - from);
            }
        }
        let mut release = false;
        {
            let mut g = self.caches.lock();
            // SAFETY: the cache is ours to file; the registry lock guards the lists.
            unsafe {
                (*tc).live.store(false, Ordering::Relaxed);
                // A cache with an id is never unmapped: free keys may name it, and other threads read
                // its magazines to check them. Its first page stays resident; ids are bounded.
                if g.parked_len < MAX_PARKED || (*tc).id != 0 || cfg!(feature = "stats") {
                    (*tc).next_parked = g.parked;
                    g.parked = tc;
                    g.parked_len += 1;
                } else {
                    // Unlink it from `all`.
                    let mut link: *mut *mut ThreadCache = &raw mut g.all;
                    while !(*link).is_null() && *link != tc {
                        link = &raw mut (**link).next_all;
                    }
                    if *link == tc {
                        *link = (*tc).next_all;
                        if g.cursor == tc {
                            g.cursor = (*tc).next_all;
                        }
                        release = true;
                    }
                }
            }
        }
        if release {
            // SAFETY: unlinked from every list under the lock; nobody can reach it any more.
            unsafe { self.source.release(tc.cast(), size, PAGE_SIZE) };
        }
    }

    /// Updates a forking thread's cache in the child (its kernel thread id changed).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache.
    pub unsafe fn adopt_after_fork(&self, tc: *mut ThreadCache, tid: i32) {
        // SAFETY: per the caller.
        unsafe { (*tc).owner_tid.store(tid, Ordering::Relaxed) };
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
        let mut buf = [ptr::null_mut(); MAG_MAX];
        let want = batch(class).min(MAG_MAX);
        // SAFETY: the magazine is the calling thread's own, and empty.
        unsafe {
            ThreadCache::open(tc, class);
            let n = match buf.get_mut(..want) {
                Some(out) => self.refill(class, out),
                None => 0,
            };
            if let Some(blocks) = buf.get(..n) {
                ThreadCache::fill(tc, class, blocks);
            }
            stat!((*tc).counters[class].alloc_slow.bump());
            ThreadCache::pop(tc, class)
        }
    }

    /// The magazine of `class` is full (or not opened yet): flush its older half, then keep `p`, whose
    /// double-free check is done.
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread; `p` a block of `class` being freed.
    #[cold]
    #[inline(never)]
    pub unsafe fn free_flush(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        let mut buf = [ptr::null_mut(); MAG_MAX];
        // SAFETY: the magazine is the calling thread's own.
        unsafe {
            ThreadCache::open(tc, class);
            stat!((*tc).counters[class].free_slow.bump());
            if ThreadCache::push_checked(tc, class, p) {
                return;
            }
            let half = ThreadCache::count(tc, class).div_ceil(2);
            let n = ThreadCache::take_oldest(tc, class, half, &mut buf);
            if let Some(blocks) = buf.get(..n) {
                self.flush_from_magazine(class, blocks);
            }
            if !ThreadCache::push_checked(tc, class, p) {
                self.flush_marked(class, &[p]);
            }
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

    /// Frees a block of known class through `tc` (null: uncached), checking first that it is not free
    /// already (its free key; see `thread_cache`).
    ///
    /// # Safety
    ///
    /// `p` is a block of `class` of this heap handed out at least once (a block freed already is
    /// reported); `tc` is null or a live cache of the calling thread.
    #[inline]
    pub unsafe fn free_checked(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
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
            match ThreadCache::push_keyed(tc, class, p) {
                Push::Done => {
                    stat!((*tc).counters[class].free_fast.bump());
                }
                Push::Suspect => self.free_suspect(tc, class, p),
                Push::Full => self.free_full(tc, class, p),
            }
        }
    }

    /// [`ThreadCache::push_keyed`] found no room: check the key, then flush and keep the block.
    ///
    /// # Safety
    ///
    /// As for [`Heap::free_checked`], with `tc` live.
    #[cold]
    #[inline(never)]
    unsafe fn free_full(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: per the caller.
        unsafe {
            if read_key(p) != KeySays::Nothing {
                return self.free_suspect(tc, class, p);
            }
            self.free_flush(tc, class, p)
        }
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
    pub unsafe fn free_suspect(&self, tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: per the caller, `p` is a block of this heap.
        let says = unsafe { read_key(p) };
        let free = match says {
            KeySays::Nothing => false,
            // Flushed to its slab since its last free: free there, or refilled into this thread's
            // magazine and not handed out yet. (Refilled into another thread's magazine and still
            // there: left to that block's next flush; see `thread_cache`.)
            // SAFETY: as above; `tc` is the calling thread's.
            KeySays::Slab => unsafe {
                (!tc.is_null() && ThreadCache::holds_refilled(tc, class, p)) || self.free_in_slab(p)
            },
            KeySays::Slot { id, slot } => match CACHE_TABLE.get(id).map(|c| c.load(Ordering::Acquire)) {
                // SAFETY: caches with an id are never unmapped; `holds_at` reads through atomics.
                Some(c) if !c.is_null() => unsafe { ThreadCache::holds_at(c, class, slot, p) },
                _ => self.in_any_magazine(class, p),
            },
        };
        if free {
            report_bad_free(FreeError::DoubleFree, p, class, self.slab_for_report(p));
        }
        if tc.is_null() {
            // SAFETY: per the caller; checked above.
            return unsafe { self.flush_marked(class, &[p]) };
        }
        // SAFETY: in use after all; the magazine is the calling thread's.
        unsafe {
            if ThreadCache::push_checked(tc, class, p) {
                stat!((*tc).counters[class].free_fast.bump());
            } else {
                self.free_flush(tc, class, p);
            }
        }
    }

    /// Whether `p` is free in its slab's bitmap (read without the lock: exact for a block the caller
    /// holds, see [`Slab::is_free`]).
    ///
    /// # Safety
    ///
    /// `p` is a block in a live segment of this heap.
    unsafe fn free_in_slab(&self, p: *mut u8) -> bool {
        // SAFETY: per the caller, a live small/medium segment holds `p`.
        unsafe {
            let s = slab_of(segment_of(p), p);
            (*s).magic == crate::segment::SLAB_MAGIC && Slab::is_free(s, p)
        }
    }

    /// Whether any thread's magazine of `class` holds `p` (a key from a cache without an id).
    fn in_any_magazine(&self, class: usize, p: *mut u8) -> bool {
        let g = self.caches.lock();
        let mut c = g.all;
        while !c.is_null() {
            // SAFETY: caches on `all` stay mapped while the registry lock is held; `holds` reads a
            // magazine another thread may be changing, through atomics.
            unsafe {
                if (*c).live.load(Ordering::Relaxed) && ThreadCache::holds(c, class, p) {
                    return true;
                }
                c = (*c).next_all;
            }
        }
        false
    }

    /// The slab of a block in a small or medium segment (for reports).
    fn slab_for_report(&self, p: *mut u8) -> *mut Slab {
        match locate(p) {
            // SAFETY: a live small/medium segment holds `p`.
            Located::Slab(seg) => unsafe { slab_of(seg, p) },
            _ => ptr::null_mut(),
        }
    }

    fn class(&self, class: usize) -> &ClassHeap {
        match self.classes.get(class) {
            Some(c) => c,
            None => report_bad_free(FreeError::BadSlab, ptr::null_mut(), class, ptr::null_mut()),
        }
    }

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
    pub unsafe fn free_ptr(&self, tc: *mut ThreadCache, p: *mut u8) {
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

    /// # Safety
    ///
    /// `seg` is a mapped large-block header and `p` lies in its mapping.
    #[cold]
    #[inline(never)]
    unsafe fn free_large(&self, seg: *mut SegmentHeader, p: *mut u8) {
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
            self.large.free(&self.source, seg)
        }
    }

    /// Usable bytes of a block (its class size, or a large block's mapping minus its header); 0 for a
    /// pointer that is not the start of a block of this heap.
    ///
    /// # Safety
    ///
    /// `p` is an in-use block of this heap, or not a hopless pointer at all.
    pub unsafe fn usable_size(&self, p: *mut u8) -> usize {
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
    pub unsafe fn realloc(
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
    pub unsafe fn realloc_large(&self, p: *mut u8, new_size: usize) -> Option<*mut u8> {
        let Located::Large(seg) = locate(p) else {
            return None;
        };
        // SAFETY: a live large block's header.
        let usable = unsafe { (*seg).usable };
        if new_size <= usable && new_size > usable / 2 {
            return Some(p);
        }
        // SAFETY: per the caller, the block is ours alone.
        let q = unsafe { self.large.resize(&self.source, seg, new_size) };
        (!q.is_null()).then_some(q)
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
            let mut buf = [ptr::null_mut(); MAG_MAX];
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
                if n == MAG_MAX {
                    // SAFETY: as above.
                    unsafe { self.flush_marked(class, &buf) };
                    n = 0;
                }
            }
            // SAFETY: as above.
            unsafe { self.flush_marked(class, buf.get(..n).unwrap_or(&[])) };
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
            let g = self.class(class).inner.lock();
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
                let p = self.checked_large_alloc(size, align, zeroed, 0);
                if !p.is_null() {
                    debug::record(debug::OpKind::Alloc, p, 0xff);
                }
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
        if let Located::Large(seg) = locate(p) {
            // SAFETY: a mapped large-block header.
            return unsafe { self.checked_large_size(seg, p) }.unwrap_or(0);
        }
        // SAFETY: per the caller, a slab block ends with its size trailer.
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
                let seg = match locate(p) {
                    Located::Large(seg) => seg,
                    _ => segment_of(p),
                };
                // SAFETY: check_headers found a mapped large-block header holding `p`.
                unsafe { self.checked_large_free(seg, p) }
            }
            Some(class) => {
                let seg = segment_of(p);
                // SAFETY: check_headers found a live slab of `class` with `p` at a block start.
                let s = unsafe { slab_of(seg, p) };
                {
                    let _g = self.class(class).inner.lock();
                    // SAFETY: we hold the class lock that owns the bitmap.
                    let (free, never) = unsafe {
                        let i = (*s).index_of(p);
                        (
                            (*s).bitmap
                                .get(i / 64)
                                .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0),
                            i >= (*s).carved.load(Ordering::Relaxed) as usize,
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
    // A header that belongs to no slab (the header area's own slots) has nothing to say.
    let magic = if slab.is_null() {
        0
    } else {
        // SAFETY: `slab` was found from `p`'s segment header, which is mapped.
        unsafe { (*slab).magic }
    };
    if matches!(magic, crate::segment::SLAB_MAGIC | crate::segment::SLAB_POOLED) {
        // SAFETY: as above.
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
