//! The registry of thread caches: a cache for a new thread (parked, orphaned or new from the page
//! source), its retirement when the thread exits (blocks returned, magazine pages given back, parked or
//! unmapped), and the search of every magazine a free key without a cache id calls for.
//!
//! Caches are made from the page source, given an id (`cache::CACHE_TABLE`) while ids last,
//! parked when their thread exits, and reclaimed from threads that died without the exit hook
//! (`find_orphan`).

use core::ptr;
use core::sync::atomic::Ordering;

use super::Heap;
use crate::cache::{
    Caches, ThreadCache, CACHE_BYTES, CACHE_HEAP, CACHE_TABLE, MAX_PARKED, MAX_WARM, NEXT_CACHE_ID,
    ORPHAN_PROBES,
};
use crate::platform::{PageSource, PAGE_SIZE};
use crate::size_class::{MAG_MAX, NUM_CLASSES};

impl<P: PageSource> Heap<P> {
    /// A cache for a new thread: a parked one, the cache of a thread that died without retiring it, or a
    /// new one from the page source (never from the allocator's public path). Null when out of memory.
    /// `tid` is the calling thread's kernel id.
    pub(crate) fn new_thread_cache(&self, tid: i32) -> *mut ThreadCache {
        let orphan = {
            let mut g = self.caches.lock();
            let tc = g.parked;
            if !tc.is_null() {
                // SAFETY: parked caches are valid and owned by the registry.
                unsafe {
                    g.parked = (*tc).next_parked;
                    g.parked_len = g.parked_len.saturating_sub(1);
                    g.warm = g.warm.saturating_sub((*tc).warm as usize);
                    (*tc).warm = 0;
                    (*tc).owner_tid.store(tid, Ordering::Relaxed);
                    (*tc).live.store(true, Ordering::Relaxed);
                    // Parked: its slabs went to their classes when its thread exited.
                    ThreadCache::renew_token(tc);
                }
                return tc;
            }
            self.find_orphan(&mut g, tid)
        };
        if !orphan.is_null() {
            // SAFETY: its thread is gone and the registry handed it to us alone.
            unsafe { self.empty_orphan(orphan) };
            return orphan;
        }
        let tc = self.source.reserve(CACHE_BYTES, PAGE_SIZE).cast::<ThreadCache>();
        if tc.is_null() {
            return tc;
        }
        // SAFETY: the whole reservation just made. Its magazines lie 128 KiB apart and a thread touches a
        // page or two of each class it uses: on huge pages, each would be 2 MiB resident.
        unsafe { self.source.keep_small(tc.cast(), CACHE_BYTES) };
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
        // The counter only grows, so it stays past the table once it gets there (no wrap in 2^64 caches).
        let id = NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed);
        if let (Some(slot), Some(owner)) = (CACHE_TABLE.get(id), CACHE_HEAP.get(id)) {
            // SAFETY: not yet shared.
            unsafe {
                (*tc).id = id as u32;
                ThreadCache::renew_token(tc);
            }
            owner.store(self.addr(), Ordering::Relaxed);
            slot.store(tc, Ordering::Release);
        }
        tc
    }

    /// Looks at a few live caches for one whose owner thread no longer exists (a thread whose first
    /// allocation came in the last round of TSD destructors never runs hopless's exit hook; nor do the
    /// other threads of a parent in a `fork` child). Hands it over to `tid`, or returns null.
    pub(super) fn find_orphan(&self, g: &mut Caches, tid: i32) -> *mut ThreadCache {
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

    /// Retires every live cache whose thread no longer exists (see [`Heap::find_orphan`]): its blocks
    /// go back to their classes and it is parked. `trim` calls it: a `fork` child keeps the caches of
    /// the parent's other threads, full of blocks that no thread of the child will take until it makes
    /// as many threads. A cache of a live thread stays as it is: its owner pops and pushes without
    /// atomics, so no other thread may take its blocks.
    ///
    /// The calling thread's own caches must record its thread id (a child made by `clone` without
    /// `fork`'s handlers still has its parent's): `Hopless::trim` writes it first.
    pub(crate) fn retire_orphans(&self) {
        loop {
            let mut found = [ptr::null_mut::<ThreadCache>(); 16];
            let mut n = 0;
            {
                let g = self.caches.lock();
                let mut tc = g.all;
                // SAFETY: caches on `all` are mapped while the registry lock is held.
                unsafe {
                    while !tc.is_null() && n < found.len() {
                        if (*tc).live.load(Ordering::Relaxed)
                            && !self.source.thread_alive((*tc).owner_tid.load(Ordering::Relaxed))
                        {
                            // Claimed: an owner id of 0 reads as alive, so `find_orphan` leaves it.
                            (*tc).owner_tid.store(0, Ordering::Relaxed);
                            if let Some(slot) = found.get_mut(n) {
                                *slot = tc;
                            }
                            n += 1;
                        }
                        tc = (*tc).next_all;
                    }
                }
            }
            for &tc in found.get(..n).unwrap_or_default() {
                // SAFETY: its thread is gone and the claim above gave it to this thread alone; emptied,
                // it is retired as an exiting thread's cache is.
                unsafe {
                    self.empty_orphan(tc);
                    self.retire_thread_cache(tc);
                }
            }
            if n < found.len() {
                return;
            }
        }
    }

    /// Empties the cache of a thread that no longer exists and gives it a token for its next holder.
    ///
    /// # Safety
    ///
    /// `tc` is a live cache whose thread is gone, handed to the calling thread alone. Its blocks are
    /// then free blocks nobody else can reach, and its owned slabs are consistent, unless its thread was
    /// one of a parent process's (a `fork` child), which may have been changing them: those are
    /// forgotten first, and the flush frees into them remotely.
    unsafe fn empty_orphan(&self, tc: *mut ThreadCache) {
        // SAFETY: per the caller.
        unsafe {
            if ThreadCache::held_before_fork(tc) {
                self.forget_owned(tc);
                ThreadCache::renew_token(tc);
                self.flush_all(tc);
            } else {
                self.flush_all(tc);
                self.hand_over_owned(tc);
                ThreadCache::renew_token(tc);
            }
        }
    }

    /// Returns every block of a cache to the central heap.
    ///
    /// # Safety
    ///
    /// `tc` is a live cache that only the calling thread uses.
    /// Grown magazines go back to their first capacities.
    pub(crate) unsafe fn flush_all(&self, tc: *mut ThreadCache) {
        for class in 0..NUM_CLASSES {
            // SAFETY: the magazine is the calling thread's; its blocks are blocks of `class`.
            unsafe {
                self.flush_newest(tc, class, MAG_MAX);
                ThreadCache::give_up_growth(tc, class, 0);
            }
        }
    }

    /// Returns an exiting thread's blocks, gives its magazine pages back, and parks its cache for the next
    /// thread (or unmaps it when enough are parked).
    ///
    /// # Safety
    ///
    /// `tc` came from [`Heap::new_thread_cache`] and nothing uses it after this call.
    pub(crate) unsafe fn retire_thread_cache(&self, tc: *mut ThreadCache) {
        // SAFETY: per the caller; the flush returned the blocks of its own slabs first.
        unsafe {
            self.flush_all(tc);
            self.hand_over_owned(tc);
        }
        // Thread exit gives memory back: the flush may have emptied the slabs this thread alone carved,
        // and past a small cap those go to the OS now instead of after the purge delay (a program that
        // ends 2000 threads must not keep their slabs resident; one that ends a thread now and then pays
        // at most the few `madvise` calls it paid before purges waited).
        let keep_last_page = self.checks().keep_last_page;
        for pool in self.pools() {
            pool.purge_expired(&self.source, keep_last_page, pool.max_dirty(), pool.exit_dirty());
        }
        // The next thread most often comes soon (a thread per task or connection): a few parked caches
        // keep their magazine pages, so that thread neither faults them in again nor waits on the
        // `madvise` that gave them back, whose TLB shootdown interrupts every core running the process.
        // Past those few, the pages go back to the OS.
        let warm = {
            let mut g = self.caches.lock();
            let warm = g.warm < MAX_WARM;
            g.warm += usize::from(warm);
            warm
        };
        if !warm {
            // SAFETY: the cache is ours alone until it is parked below.
            unsafe { self.decommit_magazines(tc) };
        }
        let mut release = false;
        {
            let mut g = self.caches.lock();
            // SAFETY: the cache is ours to file; the registry lock guards the lists.
            unsafe {
                (*tc).live.store(false, Ordering::Relaxed);
                (*tc).warm = u32::from(warm);
                // A cache with an id is never unmapped: free keys may name it, and other threads read
                // its magazines to check them. Its first page stays resident; ids are bounded. A warm
                // cache is always parked (it is counted in `warm`).
                if warm || g.parked_len < MAX_PARKED || (*tc).id != 0 || cfg!(feature = "stats") {
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
            unsafe { self.source.release(tc.cast(), CACHE_BYTES, PAGE_SIZE) };
        }
    }

    /// Gives a cache's magazine pages after the first back to the OS; they read as zero again, so each of
    /// their classes reopens on first use. Concurrent readers (the double-free check) see empty magazines
    /// either way.
    ///
    /// # Safety
    ///
    /// `tc` is a cache from [`Heap::new_thread_cache`] whose magazines are all empty, and no thread uses
    /// it (it is being retired, or it was taken off the parked list).
    unsafe fn decommit_magazines(&self, tc: *mut ThreadCache) {
        // SAFETY: whole pages of the cache's own reservation, holding only magazines, all empty.
        unsafe {
            let first = (&raw mut (*tc).mags).cast::<u8>();
            let from = first.addr().next_multiple_of(PAGE_SIZE) - tc.addr();
            if from < CACHE_BYTES {
                self.source
                    .decommit(tc.cast::<u8>().add(from), CACHE_BYTES - from);
            }
        }
    }

    /// Gives the magazine pages of every warm parked cache back to the OS (`malloc_trim`). The caches
    /// are taken off the parked list while their pages go, so no new thread adopts one meanwhile, and
    /// no lock is held across the `madvise`.
    pub(super) fn cool_parked(&self) {
        let mut taken: *mut ThreadCache = ptr::null_mut();
        {
            let mut g = self.caches.lock();
            let mut n = 0;
            let mut link: *mut *mut ThreadCache = &raw mut g.parked;
            // SAFETY: the parked list and its caches' `warm` are guarded by the registry lock we hold;
            // `g` is not used while `link` is (the counts are updated after the walk).
            unsafe {
                while !(*link).is_null() {
                    let tc = *link;
                    if (*tc).warm != 0 {
                        *link = (*tc).next_parked;
                        (*tc).next_parked = taken;
                        taken = tc;
                        (*tc).warm = 0;
                        n += 1;
                    } else {
                        link = &raw mut (*tc).next_parked;
                    }
                }
            }
            g.warm = g.warm.saturating_sub(n);
            g.parked_len = g.parked_len.saturating_sub(n);
        }
        let mut c = taken;
        while !c.is_null() {
            // SAFETY: off every list but `all` (which only the registry walks, never touching magazines
            // of a cache that is not live), parked so empty, and ours alone until parked again.
            unsafe {
                self.decommit_magazines(c);
                c = (*c).next_parked;
            }
        }
        if taken.is_null() {
            return;
        }
        let mut g = self.caches.lock();
        // SAFETY: the taken caches are ours (linked through `next_parked`); the registry lock guards the
        // parked list they go back on, in one piece.
        unsafe {
            let mut n = 1;
            let mut last = taken;
            while !(*last).next_parked.is_null() {
                last = (*last).next_parked;
                n += 1;
            }
            (*last).next_parked = g.parked;
            g.parked = taken;
            g.parked_len += n;
        }
    }

    /// Updates a forking thread's cache in the child (its kernel thread id changed).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache.
    pub(crate) unsafe fn adopt_after_fork(&self, tc: *mut ThreadCache, tid: i32) {
        // SAFETY: per the caller; the child's fork handler bumped the generation first, and this
        // thread's owned slabs are consistent (it was the one forking, not changing them).
        unsafe {
            (*tc).owner_tid.store(tid, Ordering::Relaxed);
            (*tc).generation = crate::cache::FORK_GENERATION.load(Ordering::Relaxed);
            // A thread of the parent may have raised a slab's pending flag and not hinted yet when
            // the process forked: the child's next refill of each class looks at every owned slab.
            for h in &(*tc).remote_hint {
                h.store(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether any thread's magazine of `class` holds `p` (a key from a cache without an id).
    /// This heap's address, as [`CACHE_HEAP`] records the owner of each cache id.
    pub(super) fn addr(&self) -> usize {
        (self as *const Self).addr()
    }

    /// The cache with id `id`, if it is one of this heap's (see [`CACHE_HEAP`]).
    pub(super) fn own_cache(&self, id: usize) -> Option<*mut ThreadCache> {
        if CACHE_HEAP.get(id)?.load(Ordering::Relaxed) != self.addr() {
            return None;
        }
        let c = CACHE_TABLE.get(id)?.load(Ordering::Acquire);
        (!c.is_null()).then_some(c)
    }

    /// Forgets the ids of this heap's caches (its drop is about to give them back).
    pub(super) fn forget_cache_ids(&mut self) {
        let me = self.addr();
        for (owner, slot) in CACHE_HEAP.iter().zip(CACHE_TABLE.iter()) {
            if owner.load(Ordering::Relaxed) == me {
                owner.store(0, Ordering::Relaxed);
                slot.store(ptr::null_mut(), Ordering::Release);
            }
        }
    }

    pub(super) fn in_any_magazine(&self, class: usize, p: *mut u8) -> bool {
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
}
