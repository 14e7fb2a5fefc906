//! The fast path: per thread, per class, a magazine of free block pointers.
//!
//! Alloc is `slots[--count]`, free is `slots[count++] = p`. Nothing here takes a lock or does an atomic
//! read-modify-write, and allocation never loads or stores the memory of a block: "what is free next" is
//! in this metadata, not inside the free block (the SLUB "extra hop" this project exists to remove). A
//! free writes one word into the block it takes back, its double-free key ([`mark_freed`]), as glibc's
//! tcache does: the block was just in the caller's hands, so its line is warm. When a magazine is empty
//! or full the caller falls to the `#[cold]` slow path in `heap`, which refills half a magazine from the
//! central heap or flushes the older half back to it.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use crate::size_class::{MAG_CAPACITY, MAG_MAX, NUM_CLASSES};
#[cfg(feature = "stats")]
use crate::stats::ThreadCounters;

/// Free blocks of one class owned by one thread. One or more cache lines of its own.
///
/// Invariant: `count <= cap <= MAG_MAX`; `slots[..count]` are distinct free blocks of this class, each
/// in use by nobody and not free in its slab's bitmap. `cap` is zero until the thread first uses the
/// class (so a cache costs pages only for the classes its thread uses), and always in the static empty
/// cache, whose fast paths therefore fall through to set-up.
///
/// Only the owning thread writes a magazine. Another thread may read `count` and `slots[..count]` (the
/// double-free check looks for a block in every thread's cache), so the owner writes `count` with
/// release after the slots it covers, and single slots atomically; on x86-64 both are plain moves.
#[repr(C, align(64))]
pub struct Magazine {
    pub count: u32,
    pub cap: u32,
    pub slots: [*mut u8; MAG_MAX],
}

/// One thread's cache. Allocated from the page source, never through the allocator's public path; parked
/// for the next thread when its thread exits (its magazine pages given back), or unmapped past a limit.
/// The registry fields come first so that a parked cache keeps only its first page.
#[repr(C)]
pub struct ThreadCache {
    /// Every cache the registry holds (live and parked), and the parked ones.
    pub next_all: *mut ThreadCache,
    pub next_parked: *mut ThreadCache,
    /// The kernel thread id of the owner (for finding caches whose thread died without retiring them).
    pub owner_tid: AtomicI32,
    /// A thread uses this cache (false while parked).
    pub live: AtomicBool,
    #[cfg(feature = "stats")]
    pub counters: [ThreadCounters; NUM_CLASSES],
    pub mags: [Magazine; NUM_CLASSES],
}

/// What a free writes into the first word of the block it takes back: the block's address mixed with a
/// per-process secret. A free that finds this word already there suspects a double free and checks the
/// truth (see `Heap::free_suspect`); the allocation path never reads or clears it. glibc's tcache does
/// the same with its `key` field.
static FREE_SALT: AtomicUsize = AtomicUsize::new(0x5be2_d1c9_a36f_8e47);

/// Mixes per-process randomness into the salt (at start-up, before any block is freed).
pub fn seed_free_key(random: usize) {
    FREE_SALT.store(
        (random | 1).rotate_left(17) ^ 0x5be2_d1c9_a36f_8e47,
        Ordering::Relaxed,
    );
}

/// The key a free of `p` writes into its first word.
#[inline(always)]
pub fn free_key(p: *mut u8) -> usize {
    p.addr() ^ FREE_SALT.load(Ordering::Relaxed)
}

/// Marks `p` freed: writes its key unless it is there already. False means the key was there: `p` may
/// have been freed before (the caller confirms).
///
/// # Safety
///
/// `p` is a block of at least 8 bytes, aligned to 8, that the caller is freeing.
#[inline(always)]
pub unsafe fn mark_freed(p: *mut u8) -> bool {
    let key = free_key(p);
    let w = p.cast::<usize>();
    // SAFETY: per the caller, the block's first word is ours to read and write.
    unsafe {
        if w.read() == key {
            return false;
        }
        w.write(key);
    }
    true
}

impl ThreadCache {
    /// The cache of a thread that has not allocated yet: every capacity zero. (Used to initialise
    /// statics and fresh caches; its counters are never shared through the constant.)
    #[allow(clippy::declare_interior_mutable_const)]
    pub const EMPTY: ThreadCache = {
        // SAFETY: every field is an integer, an array of integers and raw pointers, or atomics: all-zero
        // is a valid value of each.
        unsafe { core::mem::zeroed() }
    };

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

    #[inline(always)]
    fn count_of(m: *mut Magazine) -> &'static AtomicU32 {
        // SAFETY: `m` is a valid magazine (callers' contract); its `count` is aligned for an atomic and
        // every concurrent access to it is atomic. The cache outlives every use of the reference.
        unsafe { AtomicU32::from_ptr(&raw mut (*m).count) }
    }

    #[inline(always)]
    fn slot_of(m: *mut Magazine, i: usize) -> &'static AtomicPtr<u8> {
        // SAFETY: as for `count_of`; `i < MAG_MAX` is the callers' contract.
        unsafe { AtomicPtr::from_ptr((&raw mut (*m).slots).cast::<*mut u8>().add(i)) }
    }

    /// Blocks in the magazine of `class`.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`].
    #[inline(always)]
    pub unsafe fn count(tc: *mut ThreadCache, class: usize) -> usize {
        // SAFETY: per the caller.
        Self::count_of(unsafe { Self::mag(tc, class) }).load(Ordering::Relaxed) as usize
    }

    /// Sets the capacity of `class` if the thread has not used it yet.
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread; `class < NUM_CLASSES`.
    #[inline]
    pub unsafe fn open(tc: *mut ThreadCache, class: usize) {
        // SAFETY: per the caller, the magazine is the calling thread's own.
        unsafe {
            let m = Self::mag(tc, class);
            if (*m).cap == 0 {
                (*m).cap = MAG_CAPACITY.get(class).copied().unwrap_or(2);
            }
        }
    }

    /// Pops a block, or returns null when the magazine is empty.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`].
    #[inline(always)]
    pub unsafe fn pop(tc: *mut ThreadCache, class: usize) -> *mut u8 {
        // SAFETY: per the caller, `m` is a magazine only this thread writes.
        let m = unsafe { Self::mag(tc, class) };
        let count = Self::count_of(m);
        let n = count.load(Ordering::Relaxed);
        if n == 0 {
            return core::ptr::null_mut();
        }
        let n = n - 1;
        count.store(n, Ordering::Relaxed);
        // n < count <= MAG_MAX.
        Self::slot_of(m, n as usize).load(Ordering::Relaxed)
    }

    /// Pushes a block; false when the magazine is full (and nothing was written).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`]; `p` is a block of `class` that the caller gives up.
    #[inline(always)]
    pub unsafe fn push(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller, `m` is a magazine only this thread writes; count < cap <= MAG_MAX.
        let m = unsafe { Self::mag(tc, class) };
        let count = Self::count_of(m);
        let n = count.load(Ordering::Relaxed);
        // SAFETY: as above.
        if n >= unsafe { (*m).cap } {
            return false;
        }
        Self::slot_of(m, n as usize).store(p, Ordering::Relaxed);
        count.store(n + 1, Ordering::Release);
        true
    }

    /// Whether the magazine of `class` has room for one more block (never in the empty cache).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`].
    #[inline(always)]
    pub unsafe fn has_room(tc: *mut ThreadCache, class: usize) -> bool {
        // SAFETY: per the caller.
        unsafe {
            let m = Self::mag(tc, class);
            Self::count_of(m).load(Ordering::Relaxed) < (*m).cap
        }
    }

    /// Pushes a block into a magazine [`ThreadCache::has_room`] said has room.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::push`], and the magazine has room.
    #[inline(always)]
    pub unsafe fn push_unchecked(tc: *mut ThreadCache, class: usize, p: *mut u8) {
        // SAFETY: per the caller, count < cap <= MAG_MAX.
        let m = unsafe { Self::mag(tc, class) };
        let count = Self::count_of(m);
        let n = count.load(Ordering::Relaxed);
        Self::slot_of(m, n as usize).store(p, Ordering::Relaxed);
        count.store(n + 1, Ordering::Release);
    }

    /// Fills an empty magazine with `blocks` (at most its capacity).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::open`]; the magazine is empty; `blocks` are free blocks of `class`.
    pub unsafe fn fill(tc: *mut ThreadCache, class: usize, blocks: &[*mut u8]) {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let n = blocks.len().min(MAG_MAX);
        for (i, &p) in blocks.iter().take(n).enumerate() {
            Self::slot_of(m, i).store(p, Ordering::Relaxed);
        }
        Self::count_of(m).store(n as u32, Ordering::Release);
    }

    /// Takes the oldest `k` blocks out of the magazine into `out` (which holds at least `k`), moving the
    /// rest down; returns how many it took.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::open`].
    pub unsafe fn take_oldest(tc: *mut ThreadCache, class: usize, k: usize, out: &mut [*mut u8]) -> usize {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let count = Self::count_of(m);
        let n = (count.load(Ordering::Relaxed) as usize).min(MAG_MAX);
        let k = k.min(n).min(out.len());
        for (i, o) in out.iter_mut().take(k).enumerate() {
            *o = Self::slot_of(m, i).load(Ordering::Relaxed);
        }
        // Lower the count first: a reader then never sees a slot below it change to a block it already
        // passed over... nor a block twice.
        count.store(0, Ordering::Release);
        for i in k..n {
            let p = Self::slot_of(m, i).load(Ordering::Relaxed);
            Self::slot_of(m, i - k).store(p, Ordering::Relaxed);
        }
        count.store((n - k) as u32, Ordering::Release);
        k
    }

    /// Whether the magazine of `class` holds `p`. Any thread may ask (the double-free check).
    ///
    /// # Safety
    ///
    /// `tc` is a cache of the registry that stays mapped during the call; `class < NUM_CLASSES`.
    pub unsafe fn holds(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let n = (Self::count_of(m).load(Ordering::Acquire) as usize).min(MAG_MAX);
        (0..n).any(|i| Self::slot_of(m, i).load(Ordering::Relaxed) == p)
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
            ThreadCache::open(tcp, 3);
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
