//! The large-block heap's state: [`LargeCache`] and, under its lock, [`LargeInner`] (the cache of
//! mappings, the arenas, the counters and the budget's window), with the invariants the other files of
//! `large` rely on; the layout of a large block's header.

use core::ptr;
use core::sync::atomic::{AtomicU64, AtomicUsize};

use super::arena::{Arena, SLICE};
use crate::lock::SpinLock;
use crate::platform::PAGE_SIZE;
use crate::segment::{SegmentHeader, SegmentKind, SEGMENT_MAGIC, SEGMENT_SIZE};

pub const CACHE_ENTRIES: usize = 64;
pub const CACHE_MIN_BYTES: usize = 4 << 20;
pub const CACHE_MAX_BYTES: usize = 256 << 20;
pub const CACHE_MAX_ENTRY: usize = 64 << 20;
/// How long the budget remembers a peak of large bytes in use: a program that frees its large blocks
/// and allocates them again within this time (the next phase of a batch job, the next request) finds
/// their pages still resident, as with mimalloc's purge delay; after 1 to 2 times this, the next large
/// free gives back what the budget no longer covers.
pub const RETAIN_MS: u64 = 100;

#[derive(Clone, Copy)]
pub(super) struct Entry {
    pub(super) base: *mut u8,
    pub(super) len: usize,
}

pub(super) const NO_ENTRY: Entry = Entry {
    base: ptr::null_mut(),
    len: 0,
};

pub struct LargeCache {
    pub(super) inner: SpinLock<LargeInner>,
    /// The small and medium segments reserved when [`LargeCache::slab_segments`] last looked.
    pub(super) slab_segments_seen: AtomicUsize,
    /// Whether the arenas reserved before the huge-page mark was passed have had its advice.
    pub(super) huge_caught_up: crate::platform::HugeCatchUp,
}

/// The cache and the counters, under the cache's lock. Invariants (relied on by [`LargeCache::alloc`]'s
/// placement and [`LargeCache::free`]'s eviction):
/// - `entries[..n]` are whole cached mappings, oldest first, `n <= CACHE_ENTRIES`; none is in use, none
///   is guarded (hardened) or segment-aligned (those are never cached), and each still holds the pages
///   its last user touched;
/// - `bytes` is the sum of their lengths, at most `CACHE_MAX_BYTES` (and at most the [`budget`] of the
///   last free);
/// - `bytes_in_use` counts the usable bytes of the large blocks handed out and not freed;
/// - `arenas` lists every arena of this heap, oldest first; `bytes` plus their free dirty slices (which
///   may be resident) is what the budget bounds ([`LargeInner::cached_bytes`]).
pub struct LargeInner {
    pub(super) entries: [Entry; CACHE_ENTRIES],
    pub(super) n: usize,
    pub(super) bytes: usize,
    pub(super) arenas: *mut Arena,
    pub allocs: u64,
    pub frees: u64,
    pub hits: u64,
    pub bytes_in_use: u64,
    pub peak_bytes: u64,
    /// The most large blocks in use at once (`allocs - frees` at its highest).
    pub peak_blocks: u64,
    /// The most large bytes in use since `window_at` (ms of [`now_ms`]), and in the window before.
    pub(super) window_peak: u64,
    pub(super) prev_peak: u64,
    pub(super) window_at: u64,
}

// SAFETY: entries are mappings owned by the cache, touched only under its lock.
unsafe impl Send for LargeInner {}

impl LargeInner {
    /// Bytes of free memory kept resident: the cached mappings and the arenas' free dirty slices.
    pub fn cached_bytes(&self) -> usize {
        let mut slices = 0;
        let mut a = self.arenas;
        while !a.is_null() {
            // SAFETY: the arenas on the list are live and, under the lock, ours to read.
            unsafe {
                slices += (*a).dirty_free;
                a = (*a).next;
            }
        }
        self.bytes + slices * SLICE
    }
}

/// The header of a large block: a mapping or span of `len` bytes, the block `off` bytes in.
pub(super) const fn large_header(len: usize, off: usize, usable: usize) -> SegmentHeader {
    SegmentHeader {
        magic: SEGMENT_MAGIC,
        kind: SegmentKind::Large,
        slab_shift: 0,
        first_slot: 0,
        clean: 0,
        sample: 0,
        map_len: len,
        data_offset: off,
        usable,
        next: ptr::null_mut(),
        left_huge: AtomicU64::new(0),
    }
}

/// Where a large block of `align` starts after its header.
#[inline]
pub fn data_offset(align: usize) -> usize {
    if align >= SEGMENT_SIZE {
        SEGMENT_SIZE
    } else {
        align.max(PAGE_SIZE)
    }
}

impl LargeCache {
    pub const fn new() -> Self {
        LargeCache {
            slab_segments_seen: AtomicUsize::new(0),
            huge_caught_up: crate::platform::HugeCatchUp::new(),
            inner: SpinLock::new(LargeInner {
                entries: [NO_ENTRY; CACHE_ENTRIES],
                n: 0,
                bytes: 0,
                arenas: ptr::null_mut(),
                allocs: 0,
                frees: 0,
                hits: 0,
                bytes_in_use: 0,
                peak_bytes: 0,
                peak_blocks: 0,
                window_peak: 0,
                prev_peak: 0,
                window_at: 0,
            }),
        }
    }

    /// Takes the lock without a guard (for `fork`).
    pub fn lock_raw(&self) {
        self.inner.raw_lock();
    }

    /// # Safety
    ///
    /// The caller took the lock with [`LargeCache::lock_raw`].
    pub unsafe fn unlock_raw(&self) {
        // SAFETY: per the caller.
        unsafe { self.inner.raw_unlock() }
    }

    pub fn with_counters<R>(&self, f: impl FnOnce(&LargeInner) -> R) -> R {
        f(&self.inner.lock())
    }

    #[cfg(test)]
    pub fn with_counters_mut<R>(&self, f: impl FnOnce(&mut LargeInner) -> R) -> R {
        f(&mut self.inner.lock())
    }
}

impl Default for LargeCache {
    fn default() -> Self {
        Self::new()
    }
}
