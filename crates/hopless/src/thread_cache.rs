//! The fast path: per thread, per class, a magazine of free block pointers.
//!
//! Alloc is `slots[--count]`, free is `slots[count++] = p`. Nothing here takes a lock, does an atomic
//! read-modify-write, or loads or stores the memory of a block: "what is free next" is in this metadata,
//! not inside the free block (the SLUB "extra hop" this project exists to remove). When a magazine is
//! empty or full the caller falls to the `#[cold]` slow path in `heap`, which refills half a magazine from
//! the central heap or flushes the older half back to it.

use crate::size_class::{MAG_CAPACITY, MAG_MAX, NUM_CLASSES};
#[cfg(feature = "stats")]
use crate::stats::ThreadCounters;

/// Free blocks of one class owned by one thread. One or more cache lines of its own.
///
/// Invariant: `count <= cap <= MAG_MAX`; `slots[..count]` are distinct free blocks of this class, each
/// in use by nobody and not free in its slab's bitmap.
#[repr(C, align(64))]
pub struct Magazine {
    pub count: u32,
    /// Zero in the static empty cache, so its fast paths always fall through to set-up.
    pub cap: u32,
    pub slots: [*mut u8; MAG_MAX],
}

/// One thread's cache. Allocated from the page source, never through the allocator's public path; parked
/// for the next thread when its thread exits.
#[repr(C)]
pub struct ThreadCache {
    pub mags: [Magazine; NUM_CLASSES],
    #[cfg(feature = "stats")]
    pub counters: [ThreadCounters; NUM_CLASSES],
    /// Every cache ever made (for stats), and the parked ones.
    pub next_all: *mut ThreadCache,
    pub next_parked: *mut ThreadCache,
}

impl ThreadCache {
    /// The cache of a thread that has not allocated yet: every capacity zero. (Used to initialise
    /// statics and fresh caches; its counters are never shared through the constant.)
    #[allow(clippy::declare_interior_mutable_const)]
    pub const EMPTY: ThreadCache = {
        // SAFETY: every field is an integer, an array of integers and raw pointers, or (with stats)
        // atomics: all-zero is a valid value of each.
        unsafe { core::mem::zeroed() }
    };

    /// Sets capacities on a zeroed cache.
    pub fn init(&mut self) {
        for (m, &cap) in self.mags.iter_mut().zip(MAG_CAPACITY.iter()) {
            m.count = 0;
            m.cap = cap;
        }
    }

    /// The magazine of `class`.
    ///
    /// # Safety
    ///
    /// `tc` is a live cache of the calling thread (or the static empty one) and `class < NUM_CLASSES`.
    #[inline(always)]
    pub unsafe fn mag(tc: *mut ThreadCache, class: usize) -> *mut Magazine {
        // SAFETY: in bounds per the caller; no reference is created.
        unsafe { (&raw mut (*tc).mags).cast::<Magazine>().add(class) }
    }

    /// Pops a block, or returns null when the magazine is empty.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`].
    #[inline(always)]
    pub unsafe fn pop(tc: *mut ThreadCache, class: usize) -> *mut u8 {
        // SAFETY: per the caller, `m` is a magazine only this thread touches.
        unsafe {
            let m = Self::mag(tc, class);
            let n = (*m).count;
            if n == 0 {
                return core::ptr::null_mut();
            }
            let n = n - 1;
            (*m).count = n;
            // n < count <= MAG_MAX.
            *(&raw const (*m).slots).cast::<*mut u8>().add(n as usize)
        }
    }

    /// Pushes a block; false when the magazine is full (and nothing was written).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`]; `p` is a block of `class` that the caller gives up.
    #[inline(always)]
    pub unsafe fn push(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller, `m` is a magazine only this thread touches; count < cap <= MAG_MAX.
        unsafe {
            let m = Self::mag(tc, class);
            let n = (*m).count;
            if n >= (*m).cap {
                return false;
            }
            *(&raw mut (*m).slots).cast::<*mut u8>().add(n as usize) = p;
            (*m).count = n + 1;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magazine_is_lifo_and_bounded() {
        let mut tc = Box::new(ThreadCache::EMPTY);
        let tcp: *mut ThreadCache = &mut *tc;
        let mut blocks = [0u64; 70];
        // SAFETY: a test-owned cache; block pointers are never dereferenced.
        unsafe {
            assert!(ThreadCache::pop(tcp, 3).is_null());
            assert!(
                !ThreadCache::push(tcp, 3, blocks.as_mut_ptr().cast()),
                "empty cache takes nothing"
            );
            (*tcp).init();
            let cap = MAG_CAPACITY[3] as usize;
            for i in 0..cap {
                assert!(ThreadCache::push(tcp, 3, blocks.as_mut_ptr().add(i).cast()));
            }
            assert!(!ThreadCache::push(tcp, 3, blocks.as_mut_ptr().add(cap).cast()));
            for i in (0..cap).rev() {
                assert_eq!(ThreadCache::pop(tcp, 3), blocks.as_mut_ptr().add(i).cast());
            }
            assert!(ThreadCache::pop(tcp, 3).is_null());
        }
    }
}
