//! A class's share of the central heap: its slabs with free blocks, under the class lock, held only for
//! one batch move. A refill takes blocks out (and new slabs from the pool); `flush.rs` brings them back.

use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::Ordering;

use super::pool::SlabPool;
use crate::lock::SpinLock;
use crate::platform::PageSource;
use crate::report::report_bad_free;
use crate::segment::{FreeError, Slab, SlabList, SlabState};
use crate::stats::CentralCounters;

/// What the checked modes ask of the layers below the heap (all off in the default mode). The heap
/// passes it down, so these layers never look the modes up themselves.
#[derive(Clone, Copy)]
pub(crate) struct Checks {
    /// Fill each block with this byte as a slab first carves it (debug mode: poison until handed out).
    pub carve_fill: Option<u8>,
    /// A new slab makes all its blocks takeable at once and hands them out in random order, drawing
    /// from `random_source` (hardened mode).
    pub random: bool,
    pub random_source: fn() -> u64,
    /// Called on each new slab (its header, class and slot size) before its first block is taken, under
    /// the class lock (the checked modes poison it).
    pub new_slab: Option<unsafe fn(*mut Slab, usize, usize)>,
    /// A purge keeps the slot's last page (hardened mode keeps a guard word there).
    pub keep_last_page: bool,
}

impl Checks {
    pub(crate) const NONE: Checks = Checks {
        carve_fill: None,
        random: false,
        random_source: || 0,
        new_slab: None,
        keep_last_page: false,
    };
}

/// Fully free slabs a small class keeps for itself (medium classes keep none: their slabs are 512 KiB).
pub const KEEP_EMPTY_SMALL: u32 = 1;

/// Slabs a refill from the pool purges at most, of those that waited out the delay (a few `madvise`
/// calls on a path that is slow anyway; `put` purges one each time a slab falls free, and a large free
/// all that are due).
pub const PURGES_PER_CHECK: usize = 8;

/// One class's share of the central heap.
#[repr(C, align(128))]
pub struct ClassHeap {
    pub inner: SpinLock<ClassInner>,
}

/// A class's slabs, under the class lock. Invariants (relied on by `ClassHeap::refill`,
/// `ClassHeap::flush` and `Heap::trim`):
/// - `partial` holds exactly the class's slabs with `free > 0`, each in state `Partial`; the class's other
///   slabs are `Full` and on no list; `slabs` counts both;
/// - `empty` is the number of slabs on `partial` with `free == capacity`, at most [`KEEP_EMPTY_SMALL`] for
///   a small class after a flush (medium classes keep none); a slab beyond that goes back to its pool;
/// - `counters.outstanding` is the number of the class's blocks out of its slabs (handed out or in
///   magazines).
pub struct ClassInner {
    /// Slabs of this class with at least one free block.
    pub partial: SlabList,
    /// Slabs on `partial` that are entirely free.
    pub empty: u32,
    /// Slabs this class holds.
    pub slabs: u32,
    pub counters: CentralCounters,
}

impl ClassHeap {
    pub const fn new() -> Self {
        ClassHeap {
            inner: SpinLock::new(ClassInner {
                partial: SlabList::new(),
                empty: 0,
                slabs: 0,
                counters: CentralCounters {
                    refills: 0,
                    flushes: 0,
                    outstanding: 0,
                    peak_outstanding: 0,
                },
            }),
        }
    }

    /// Moves up to `out.len()` free blocks of `class` (this class) out of its slabs, taking new slabs from
    /// `pool`. Returns how many (fewer only when the page source is out of memory).
    pub(crate) fn refill<P: PageSource>(
        &self,
        class: usize,
        pool: &SlabPool,
        source: &P,
        checks: Checks,
        out: &mut [MaybeUninit<*mut u8>],
    ) -> usize {
        let mut g = self.inner.lock();
        let mut got = 0;
        let mut visited_pool = false;
        while got < out.len() {
            let mut s = g.partial.head;
            if s.is_null() {
                s = pool.get(source);
                visited_pool = true;
                if s.is_null() {
                    break;
                }
                // SAFETY: a slab fresh from the pool is ours; we hold the class lock it will belong to.
                unsafe {
                    Slab::init(s, class, (*s).start, pool.slot_size());
                    if let Some(prepare) = checks.new_slab {
                        prepare(s, class, pool.slot_size());
                    }
                    if checks.random {
                        // Every block becomes takeable at once (`prepare` made them all ready).
                        Slab::make_all_carved(s);
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
                let rest = out.get_mut(got..).unwrap_or_default();
                got += if checks.random {
                    Slab::take_random(s, rest, checks.random_source)
                } else {
                    Slab::take(s, rest, checks.carve_fill)
                };
                if (*s).free == 0 {
                    g.partial.remove(s);
                    (*s).state = SlabState::Full;
                }
            }
        }
        g.counters.refills += 1;
        g.counters.outstanding = g.counters.outstanding.wrapping_add(got as i64);
        g.counters.peak_outstanding = g.counters.peak_outstanding.max(g.counters.outstanding);
        drop(g);
        if visited_pool {
            // A program that only allocates for a while still gives back what stayed dirty too long.
            pool.purge_expired(source, checks.keep_last_page, PURGES_PER_CHECK, pool.max_dirty());
        }
        got
    }

    /// A slab for a thread cache to own, with `token` as its owner: the class's partial slab with the
    /// most recent frees (its remote frees folded first), else a fresh one from `pool`. Null when the
    /// page source has no memory. Default mode only (no checks: an owned slab is carved in order).
    pub(crate) fn adopt<P: PageSource>(
        &self,
        class: usize,
        pool: &SlabPool,
        source: &P,
        token: u32,
    ) -> *mut Slab {
        let mut visited_pool = false;
        let s = {
            let mut g = self.inner.lock();
            let mut s = g.partial.head;
            if s.is_null() {
                s = pool.get(source);
                visited_pool = true;
                if s.is_null() {
                    return s;
                }
                // SAFETY: a slab fresh from the pool is ours; we hold the class lock it will belong to.
                unsafe { Slab::init(s, class, (*s).start, pool.slot_size()) };
                g.slabs += 1;
            } else {
                // SAFETY: class lock held; `s` is on the class's partial list, so the class's (no
                // owner): we are its writer.
                unsafe {
                    g.partial.remove(s);
                    // Counted as empty by what it was on the list, before the fold: a remote free
                    // whose fold request has not reached the lock yet may make it empty here.
                    if (*s).free == (*s).capacity {
                        g.empty -= 1;
                    }
                    match Slab::fold_remote(s) {
                        Ok(moved) => {
                            g.counters.outstanding = g.counters.outstanding.wrapping_sub(i64::from(moved));
                        }
                        Err(index) => {
                            report_bad_free(FreeError::DoubleFree, Slab::block_at(s, index), class, s)
                        }
                    }
                }
            }
            // SAFETY: off every list, under the class lock: ours to give. From the store on, frees
            // from other threads go to its remote bits; the owner's list links it through `prev` and
            // `next`.
            unsafe {
                (*s).state = SlabState::Owned;
                (*s).prev = ptr::null_mut();
                (*s).next = ptr::null_mut();
                (*s).was_owned = 1;
                (*s).owner.store(token, Ordering::SeqCst);
            }
            s
        };
        if visited_pool {
            pool.purge_expired(source, false, PURGES_PER_CHECK, pool.max_dirty());
        }
        s
    }

    /// Adds what a thread cache counted of this class's blocks without the lock (its thread exits).
    pub(crate) fn take_counts(&self, refills: u64, flushes: u64, outstanding: i64) {
        let mut g = self.inner.lock();
        g.counters.refills += refills;
        g.counters.flushes += flushes;
        g.counters.outstanding = g.counters.outstanding.wrapping_add(outstanding);
    }
}

impl Default for ClassHeap {
    fn default() -> Self {
        Self::new()
    }
}
