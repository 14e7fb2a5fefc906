//! Large blocks: above 256 KiB, or aligned to more than 4 KiB. Each is a mapping of its own, aligned to
//! the segment size so that `free` finds its header the way it finds a slab's; the block starts one page
//! (or one alignment) after the header.
//!
//! A small cache of recently freed mappings (at most [`CACHE_ENTRIES`], [`CACHE_MAX_BYTES`] of address
//! space, mappings up to [`CACHE_MAX_ENTRY`]) lets a loop of 1 MiB alloc/free reuse one mapping instead of
//! a `mmap`/`munmap` pair each time. Only [`CACHE_MAX_RESIDENT`] of it stays resident: a mapping freed past
//! that is purged (`MADV_DONTNEED`) before it is cached, so a program that freed large blocks and moved on
//! does not keep their memory. Memory fresh from `mmap` or purged is zero, so zeroed allocations skip the
//! memset there; a resident reused mapping is zeroed by hand.

use core::ptr;

use crate::lock::SpinLock;
use crate::platform::{PageSource, PAGE_SIZE};
use crate::segment::{SegmentHeader, SegmentKind, SEGMENT_MAGIC, SEGMENT_MAP, SEGMENT_SIZE};

pub const CACHE_ENTRIES: usize = 8;
pub const CACHE_MAX_BYTES: usize = 64 << 20;
pub const CACHE_MAX_ENTRY: usize = 32 << 20;
pub const CACHE_MAX_RESIDENT: usize = 4 << 20;
/// Alignment limit: the block must start inside the first segment-size bytes of its mapping.
pub const MAX_LARGE_ALIGN: usize = SEGMENT_SIZE / 2;

#[derive(Clone, Copy)]
struct Entry {
    base: *mut u8,
    len: usize,
    /// Still holds its pages (not purged since it was freed).
    resident: bool,
}

pub struct LargeCache {
    inner: SpinLock<LargeInner>,
}

pub struct LargeInner {
    entries: [Entry; CACHE_ENTRIES],
    n: usize,
    bytes: usize,
    resident: usize,
    pub allocs: u64,
    pub frees: u64,
    pub hits: u64,
    pub bytes_in_use: u64,
    pub peak_bytes: u64,
}

// SAFETY: entries are mappings owned by the cache, touched only under its lock.
unsafe impl Send for LargeInner {}

/// Where a large block of `align` starts after its header.
#[inline]
pub fn data_offset(align: usize) -> usize {
    align.max(PAGE_SIZE)
}

impl LargeCache {
    pub const fn new() -> Self {
        LargeCache {
            inner: SpinLock::new(LargeInner {
                entries: [Entry {
                    base: ptr::null_mut(),
                    len: 0,
                    resident: false,
                }; CACHE_ENTRIES],
                n: 0,
                bytes: 0,
                resident: 0,
                allocs: 0,
                frees: 0,
                hits: 0,
                bytes_in_use: 0,
                peak_bytes: 0,
            }),
        }
    }

    /// Allocates a large block; null on failure (too big, alignment too big, or no memory).
    pub fn alloc<P: PageSource>(&self, source: &P, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        if align > MAX_LARGE_ALIGN {
            return ptr::null_mut();
        }
        let off = data_offset(align);
        #[cfg(feature = "debug")]
        let guard = if crate::debug::hardened() { PAGE_SIZE } else { 0 };
        #[cfg(not(feature = "debug"))]
        let guard = 0;
        let Some(need) = off
            .checked_add(size)
            .and_then(|n| n.checked_next_multiple_of(PAGE_SIZE))
            .and_then(|n| n.checked_add(guard))
        else {
            return ptr::null_mut();
        };
        if need > isize::MAX as usize {
            return ptr::null_mut();
        }
        let mut base = ptr::null_mut();
        let mut len = need;
        let mut dirty = false;
        if guard == 0 {
            let mut g = self.inner.lock();
            // Best fit among mappings no more than half again as big as needed.
            let mut best = usize::MAX;
            for i in 0..g.n {
                let e = g.entries[i];
                if e.len >= need
                    && e.len - need <= need / 2
                    && (best == usize::MAX || e.len < g.entries[best].len)
                {
                    best = i;
                }
            }
            if best != usize::MAX {
                let e = g.entries[best];
                let n = g.n;
                g.entries.copy_within(best + 1..n, best);
                g.n -= 1;
                g.bytes -= e.len;
                if e.resident {
                    g.resident -= e.len;
                }
                g.hits += 1;
                base = e.base;
                len = e.len;
                dirty = e.resident;
            }
        }
        let reused = !base.is_null();
        if !reused {
            base = source.reserve(need, SEGMENT_SIZE);
            if base.is_null() {
                return ptr::null_mut();
            }
            if !SEGMENT_MAP.insert(base.cast()) {
                // SAFETY: the reservation just made, unused.
                unsafe { source.release(base, need, SEGMENT_SIZE) };
                return ptr::null_mut();
            }
        }
        let seg = base.cast::<SegmentHeader>();
        // SAFETY: `base` is a mapping of `len >= off + size` bytes that only this thread owns now; its
        // first page holds the header and the block starts at `off` inside it.
        unsafe {
            seg.write(SegmentHeader {
                magic: SEGMENT_MAGIC,
                kind: SegmentKind::Large,
                slab_shift: 0,
                first_slot: 0,
                map_len: len,
                data_offset: off,
                usable: len - off - guard,
                map_align: SEGMENT_SIZE,
                next: ptr::null_mut(),
            });
            let p = base.add(off);
            if guard != 0 {
                // Hardened: the page after the block faults on any overflow.
                source.protect(base.add(len - guard), guard);
            }
            if zeroed && reused && dirty {
                ptr::write_bytes(p, 0, size);
            }
            let mut g = self.inner.lock();
            g.allocs += 1;
            g.bytes_in_use += (len - off) as u64;
            g.peak_bytes = g.peak_bytes.max(g.bytes_in_use);
            p
        }
    }

    /// Frees a large block given its header.
    ///
    /// # Safety
    ///
    /// `seg` is the header of a live large block, which nobody uses any more.
    pub unsafe fn free<P: PageSource>(&self, source: &P, seg: *mut SegmentHeader) {
        // SAFETY: per the caller, the header is valid and ours.
        let (len, usable) = unsafe { ((*seg).map_len, (*seg).usable) };
        // SAFETY: as above; clearing the magic makes a second free of the same block a reported fault.
        unsafe { (*seg).magic = 0 };
        let base = seg.cast::<u8>();
        // Guarded mappings (hardened mode) are not cached: their last page is inaccessible.
        if len > CACHE_MAX_ENTRY || len - usable > data_offset_of(seg) {
            // SAFETY: the whole mapping, which nobody references any more.
            unsafe {
                release(
                    source,
                    Entry {
                        base,
                        len,
                        resident: true,
                    },
                )
            };
            let mut g = self.inner.lock();
            g.frees += 1;
            g.bytes_in_use -= usable as u64;
            return;
        }
        // Past the resident budget, purge before caching (outside the lock: the mapping is still ours).
        let resident = self.inner.lock().resident + len <= CACHE_MAX_RESIDENT;
        if !resident {
            // SAFETY: the whole mapping is ours and unused; its header is rewritten when it is reused.
            unsafe { source.decommit(base, len) };
        }
        let mut evicted = [Entry {
            base: ptr::null_mut(),
            len: 0,
            resident: false,
        }; 2];
        let mut ne = 0;
        {
            let mut g = self.inner.lock();
            g.frees += 1;
            g.bytes_in_use -= usable as u64;
            while g.n > 0 && ne < evicted.len() && (g.n == CACHE_ENTRIES || g.bytes + len > CACHE_MAX_BYTES) {
                let e = g.entries[0];
                let n = g.n;
                g.entries.copy_within(1..n, 0);
                g.n -= 1;
                g.bytes -= e.len;
                if e.resident {
                    g.resident -= e.len;
                }
                evicted[ne] = e;
                ne += 1;
            }
            if g.n < CACHE_ENTRIES && g.bytes + len <= CACHE_MAX_BYTES {
                let n = g.n;
                g.entries[n] = Entry { base, len, resident };
                g.n += 1;
                g.bytes += len;
                if resident {
                    g.resident += len;
                }
            } else {
                evicted[ne] = Entry { base, len, resident };
                ne += 1;
            }
        }
        for &e in &evicted[..ne] {
            // SAFETY: evicted mappings are whole reservations that nobody references any more.
            unsafe { release(source, e) };
        }
    }

    /// Unmaps every cached mapping.
    pub fn clear<P: PageSource>(&self, source: &P) {
        loop {
            let e = {
                let mut g = self.inner.lock();
                if g.n == 0 {
                    return;
                }
                g.n -= 1;
                let e = g.entries[g.n];
                g.bytes -= e.len;
                if e.resident {
                    g.resident -= e.len;
                }
                e
            };
            // SAFETY: a cached mapping is a whole reservation nobody references.
            unsafe { release(source, e) };
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
}

/// The block offset recorded in a large block's header.
fn data_offset_of(seg: *mut SegmentHeader) -> usize {
    // SAFETY: callers pass the header of a live large block.
    unsafe { (*seg).data_offset }
}

/// Unmaps a large mapping and forgets it in the segment map.
///
/// # Safety
///
/// `e` is a whole large mapping that nobody references any more.
unsafe fn release<P: PageSource>(source: &P, e: Entry) {
    SEGMENT_MAP.remove(e.base.cast());
    // SAFETY: per the caller.
    unsafe { source.release(e.base, e.len, SEGMENT_SIZE) };
}

impl Default for LargeCache {
    fn default() -> Self {
        Self::new()
    }
}
