//! What a thread cache keeps of the slabs it owns (`docs/central-heap.md`, "Thread-owned slabs"): per class the lists of its slabs and the counters of blocks moved without the class lock,
//! and the tokens that name a cache as a slab's owner. (The token and the remote-free hints are fields
//! of `ThreadCache`; `registry::hint_owner` finds a cache by its token.) The slabs themselves, and what
//! is done with them, are `heap/owned.rs`'s: this layer sits below `segment` and keeps them as opaque
//! pointers.
//!
//! A token names a cache and the thread that holds it: the cache id in the low [`TOKEN_ID_BITS`] bits,
//! the cache's incarnation above (bumped each time a thread takes the cache). A slab owned under an
//! earlier incarnation names nobody: a `fork` child leaves the slabs of its parent's other threads that
//! way (their owners may have been changing them when the process forked).

use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use super::free_key::MAX_CACHE_ID;

/// Bits of a token that hold the cache id (ids are below [`MAX_CACHE_ID`] < 2^9).
pub const TOKEN_ID_BITS: u32 = 9;
const _: () = assert!(MAX_CACHE_ID <= 1 << TOKEN_ID_BITS);

/// Bumped in a `fork` child: caches whose `generation` is older belonged to threads of the parent.
pub static FORK_GENERATION: AtomicU32 = AtomicU32::new(0);

/// One class's owned slabs in a thread cache. Written only by the thread holding the cache (or by the
/// thread that takes it over once its own is gone); the counters are atomics so the stats snapshot may
/// read them from another thread.
#[repr(C)]
pub struct OwnedSlabs {
    /// The owned slabs with free blocks, then those with none: each the first `segment::Slab` of a
    /// list linked through its `prev` and `next`, or null.
    pub partial: *mut (),
    pub full: *mut (),
    /// Slabs on both lists.
    pub len: u32,
    /// Refills and flushes served by owned slabs (no class lock), and the blocks they moved out of
    /// their slabs less those that came back into one (negative when blocks of an owned slab came
    /// back through the class after its hand-over; summed with the class's for the stats).
    pub refills: AtomicU64,
    pub flushes: AtomicU64,
    pub outstanding: AtomicI64,
}

impl OwnedSlabs {
    /// Adds `n` (may be negative) to a counter only this cache's holder writes: a load and a store, no
    /// read-modify-write.
    #[inline]
    pub fn add(counter: &AtomicI64, n: i64) {
        counter.store(counter.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    /// Adds one to a counter only this cache's holder writes.
    #[inline]
    pub fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

/// The cache id a token names.
#[inline]
pub fn token_id(token: u32) -> usize {
    (token & ((1 << TOKEN_ID_BITS) - 1)) as usize
}
