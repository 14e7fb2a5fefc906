//! The registry's state: the list of every thread cache (live or parked), the parked ones kept for new
//! threads, and the table of caches by id that free keys name. The heap's registry lock guards
//! [`Caches`]; what it does with them (set-up, parking, retirement) is `heap::registry`'s.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use super::free_key::MAX_CACHE_ID;
use super::owned::token_id;
use super::thread_cache::ThreadCache;
use crate::platform::PAGE_SIZE;

/// Every thread cache with an id, by id (never unmapped once here, but by the drop of a heap other than
/// the process's, which empties its entries first).
pub static CACHE_TABLE: [AtomicPtr<ThreadCache>; MAX_CACHE_ID] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CACHE_ID];

/// The address of the heap each id's cache belongs to, 0 before an id is given and after its heap is
/// dropped. A word that only looks like a free key (a program's data, one in 32 million) may name any
/// id: the double-free look follows an id to its cache only for a cache of its own heap, so that a test
/// heap never reads a cache another heap's drop gave back.
pub static CACHE_HEAP: [AtomicUsize; MAX_CACHE_ID] = [const { AtomicUsize::new(0) }; MAX_CACHE_ID];

/// The next id to give a cache, counted for the whole process rather than per heap: the table above is
/// the process's, so two heaps (tests build several) must not hand out the same id, or one heap's free
/// key could name the other's cache. Ids start at 1 (0: no id); past [`MAX_CACHE_ID`] a cache has none.
pub static NEXT_CACHE_ID: AtomicUsize = AtomicUsize::new(1);

/// The registry of thread caches: every one it holds (live or parked), and the parked ones (for reuse).
pub(crate) struct Caches {
    pub(crate) all: *mut ThreadCache,
    pub(crate) parked: *mut ThreadCache,
    /// Caches on `parked`.
    pub(crate) parked_len: usize,
    /// Parked caches (or caches being parked) that keep their magazine pages: at most [`MAX_WARM`].
    pub(crate) warm: usize,
    /// Where the next search for a cache whose thread died unretired resumes (a cache on `all`, or null).
    pub(crate) cursor: *mut ThreadCache,
    pub(crate) made: u64,
}

/// Parked caches kept for new threads (their first page stays mapped); a thread that exits past this
/// unmaps its cache. With the `stats` feature caches are never unmapped: their counters are the stats.
pub(crate) const MAX_PARKED: usize = 64;

/// Parked caches that keep their magazine pages resident (see `Heap::retire_thread_cache`): at most
/// this many times a cache's magazines (only the pages its thread used: a page for each class, up to
/// 128 KiB for a grown magazine) stay mapped for threads that are not there.
pub(crate) const MAX_WARM: usize = 4;

/// The bytes a thread cache takes from the page source: whole pages.
pub(crate) const CACHE_BYTES: usize = core::mem::size_of::<ThreadCache>().next_multiple_of(PAGE_SIZE);

/// Live caches checked for a dead owner each time a new cache would otherwise be mapped.
pub(crate) const ORPHAN_PROBES: usize = 4;

// SAFETY: the cache pointers are only followed under the registry lock (or by their owning thread).
unsafe impl Send for Caches {}

impl Caches {
    /// No cache yet; ids start at 1.
    pub(crate) const fn new() -> Self {
        Caches {
            all: ptr::null_mut(),
            parked: ptr::null_mut(),
            parked_len: 0,
            warm: 0,
            cursor: ptr::null_mut(),
            made: 0,
        }
    }
}

/// Tells the cache a token names that a block of one of its slabs of `class` was freed remotely (the
/// first such free since its last fold). A stale token (the cache taken by another thread since) only
/// costs that thread a look at its own slabs.
pub fn hint_owner(token: u32, class: usize) {
    let Some(slot) = CACHE_TABLE.get(token_id(token)) else {
        return;
    };
    let tc = slot.load(Ordering::Acquire);
    if tc.is_null() {
        return;
    }
    // SAFETY: caches with an id are never unmapped (`heap::registry`), and the hints are atomics any
    // thread may write.
    if let Some(h) = unsafe { (*tc).remote_hint.get(class) } {
        h.store(1, Ordering::Release);
    }
}
