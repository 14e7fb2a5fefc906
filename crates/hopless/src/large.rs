//! Large blocks: above 256 KiB, or aligned to more than the largest class alignment. Each is a mapping of
//! its own, aligned to the segment size so that `free` finds its header the way it finds a slab's; the
//! block starts one page (or one alignment) after the header.
//!
//! A block aligned to the segment size (4 MiB) or more would start at a segment boundary, where `free`
//! would look for its header: such a block gets a whole segment slot before it, with the header at that
//! slot's start (`data_offset == SEGMENT_SIZE`), and [`crate::segment::locate`] looks one slot down for
//! a pointer at a slot boundary. Nothing else hopless hands out starts at a slot boundary.
//!
//! A small cache of recently freed mappings (at most [`CACHE_ENTRIES`], [`CACHE_MAX_BYTES`] of address
//! space, mappings up to [`CACHE_MAX_ENTRY`]) lets a loop of 1 MiB alloc/free reuse one mapping instead of
//! a `mmap`/`munmap` pair each time. Only [`CACHE_MAX_RESIDENT`] of it stays resident: a mapping freed past
//! that is purged (`MADV_DONTNEED`) before it is cached, so a program that freed large blocks and moved on
//! does not keep their memory. Memory fresh from `mmap` or purged is zero, so zeroed allocations skip the
//! memset there; a resident reused mapping is zeroed by hand.
//!
//! Resizing ([`LargeCache::resize`]) moves pages, never bytes: the mapping grows in place or is moved
//! by `mremap` to a new aligned place, and shrinks by unmapping its tail. Growth adds a quarter of the
//! mapping's size as slack, so a buffer grown a page at a time is remapped a logarithmic number of times.

use core::ptr;

use crate::lock::SpinLock;
use crate::platform::{PageSource, PAGE_SIZE};
use crate::segment::{SegmentHeader, SegmentKind, SEGMENT_MAGIC, SEGMENT_MAP, SEGMENT_SIZE};

pub const CACHE_ENTRIES: usize = 8;
pub const CACHE_MAX_BYTES: usize = 64 << 20;
pub const CACHE_MAX_ENTRY: usize = 32 << 20;
pub const CACHE_MAX_RESIDENT: usize = 4 << 20;

#[derive(Clone, Copy)]
struct Entry {
    base: *mut u8,
    len: usize,
    /// Still holds its pages (not purged since it was freed).
    resident: bool,
}

const NO_ENTRY: Entry = Entry {
    base: ptr::null_mut(),
    len: 0,
    resident: false,
};

pub struct LargeCache {
    inner: SpinLock<LargeInner>,
}

/// The cache and the counters, under the cache's lock. Invariants (relied on by [`LargeCache::alloc`]'s
/// best fit and [`LargeCache::free`]'s eviction):
/// - `entries[..n]` are whole cached mappings, oldest first, `n <= CACHE_ENTRIES`; none is in use, and
///   none is guarded (hardened) or segment-aligned (those are never cached);
/// - `bytes` is the sum of their lengths, at most `CACHE_MAX_BYTES`;
/// - `resident` is the sum of the resident ones' lengths plus the budget a `free` in progress has claimed
///   for a mapping it is about to insert, at most `CACHE_MAX_RESIDENT`;
/// - `bytes_in_use` counts the usable bytes of the large blocks handed out and not freed.
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

impl LargeInner {
    /// Removes entry `i` (shifting the younger ones down) and returns it.
    fn remove(&mut self, i: usize) -> Entry {
        let n = self.n.min(CACHE_ENTRIES);
        let Some(&e) = self.entries.get(i) else {
            return NO_ENTRY;
        };
        if i >= n {
            return NO_ENTRY;
        }
        self.entries.copy_within(i + 1..n, i);
        self.n = n - 1;
        self.bytes = self.bytes.saturating_sub(e.len);
        if e.resident {
            self.resident = self.resident.saturating_sub(e.len);
        }
        e
    }

    fn count_alloc(&mut self, usable: usize) {
        self.allocs = self.allocs.wrapping_add(1);
        self.bytes_in_use = self.bytes_in_use.wrapping_add(usable as u64);
        self.peak_bytes = self.peak_bytes.max(self.bytes_in_use);
    }

    fn count_free(&mut self, usable: usize) {
        self.frees = self.frees.wrapping_add(1);
        self.bytes_in_use = self.bytes_in_use.saturating_sub(usable as u64);
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
            inner: SpinLock::new(LargeInner {
                entries: [NO_ENTRY; CACHE_ENTRIES],
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

    /// Allocates a large block, with a `PROT_NONE` page after it if `guard_page` (hardened mode); null on
    /// failure (too big, or no memory).
    pub fn alloc<P: PageSource>(
        &self,
        source: &P,
        size: usize,
        align: usize,
        zeroed: bool,
        guard_page: bool,
    ) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        let off = data_offset(align);
        let guard = if guard_page { PAGE_SIZE } else { 0 };
        let Some(need) = off
            .checked_add(size)
            .and_then(|n| n.checked_next_multiple_of(PAGE_SIZE))
            .and_then(|n| n.checked_add(guard))
        else {
            return ptr::null_mut();
        };
        if need > isize::MAX as usize / 2 {
            return ptr::null_mut();
        }
        let huge = align >= SEGMENT_SIZE;
        let mut base = ptr::null_mut();
        let mut len = need;
        let mut dirty = false;
        if guard == 0 && !huge {
            let mut g = self.inner.lock();
            // Best fit among mappings no more than half again as big as needed.
            let mut best = None;
            let mut best_len = usize::MAX;
            for (i, e) in g.entries.iter().enumerate().take(g.n) {
                if e.len >= need && e.len - need <= need / 2 && e.len < best_len {
                    best = Some(i);
                    best_len = e.len;
                }
            }
            if let Some(i) = best {
                let e = g.remove(i);
                g.hits = g.hits.wrapping_add(1);
                base = e.base;
                len = e.len;
                dirty = e.resident;
            }
        }
        let reused = !base.is_null();
        if !reused {
            base = if huge {
                source.reserve_offset(need, align, SEGMENT_SIZE)
            } else {
                source.reserve(need, SEGMENT_SIZE)
            };
            if base.is_null() {
                return ptr::null_mut();
            }
            if !SEGMENT_MAP.insert(base.cast()) {
                // SAFETY: the reservation just made, unused.
                unsafe { source.release(base, need, SEGMENT_SIZE) };
                return ptr::null_mut();
            }
        }
        let usable = len - off - guard;
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
                usable,
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
            self.inner.lock().count_alloc(usable);
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
        let (len, usable, off) = unsafe { ((*seg).map_len, (*seg).usable, (*seg).data_offset) };
        // SAFETY: as above; clearing the magic makes a second free of the same block a reported fault.
        unsafe { (*seg).magic = 0 };
        let base = seg.cast::<u8>();
        let me = Entry {
            base,
            len,
            resident: true,
        };
        // Guarded mappings (hardened mode: usable + offset short of the length) are not cached, nor are
        // segment-aligned ones (their layout is particular) or big ones.
        let guarded = off.checked_add(usable) != Some(len);
        if len > CACHE_MAX_ENTRY || guarded || off >= SEGMENT_SIZE {
            self.inner.lock().count_free(usable);
            // SAFETY: the whole mapping, which nobody references any more.
            unsafe { release(source, me) };
            return;
        }
        // Claim resident budget (or not) under the lock, so racing frees never exceed it; purge outside
        // the lock: the mapping is still only ours.
        let resident = {
            let mut g = self.inner.lock();
            g.count_free(usable);
            if g.resident.saturating_add(len) <= CACHE_MAX_RESIDENT {
                g.resident += len;
                true
            } else {
                false
            }
        };
        if !resident {
            // SAFETY: the whole mapping is ours and unused; its header is rewritten when it is reused.
            unsafe { source.decommit(base, len) };
        }
        let me = Entry { resident, ..me };
        // Every entry may have to go to make room (8 at most), plus this mapping itself.
        let mut evicted = [NO_ENTRY; CACHE_ENTRIES + 1];
        let mut ne = 0;
        {
            let mut g = self.inner.lock();
            while g.n > 0 && (g.n >= CACHE_ENTRIES || g.bytes.saturating_add(len) > CACHE_MAX_BYTES) {
                let e = g.remove(0);
                if let Some(slot) = evicted.get_mut(ne) {
                    *slot = e;
                    ne += 1;
                }
            }
            let n = g.n;
            let fits = g.bytes.saturating_add(len) <= CACHE_MAX_BYTES;
            match g.entries.get_mut(n) {
                Some(slot) if fits => {
                    *slot = me;
                    g.n = n + 1;
                    g.bytes += len;
                    // The resident budget was claimed above.
                }
                _ => {
                    if resident {
                        g.resident = g.resident.saturating_sub(len);
                    }
                    if let Some(slot) = evicted.get_mut(ne) {
                        *slot = me;
                        ne += 1;
                    }
                }
            }
        }
        for e in evicted.iter().take(ne) {
            // SAFETY: evicted mappings are whole reservations that nobody references any more.
            unsafe { release(source, *e) };
        }
    }

    /// Resizes a large block in place or by moving its pages, to hold at least `new_size` bytes. Returns
    /// the block's (possibly new) address, or null when it cannot (the block is then untouched).
    ///
    /// # Safety
    ///
    /// `seg` is the header of a live large block that the caller owns and nobody else uses during the
    /// call; afterwards the caller uses the returned pointer only.
    pub unsafe fn resize<P: PageSource>(
        &self,
        source: &P,
        seg: *mut SegmentHeader,
        new_size: usize,
    ) -> *mut u8 {
        // SAFETY: per the caller, the header is valid and ours.
        let (len, usable, off) = unsafe { ((*seg).map_len, (*seg).usable, (*seg).data_offset) };
        if off.checked_add(usable) != Some(len) || off >= SEGMENT_SIZE {
            return ptr::null_mut(); // guarded or segment-aligned: the caller copies.
        }
        let Some(need) = off
            .checked_add(new_size)
            .and_then(|n| n.checked_next_multiple_of(PAGE_SIZE))
        else {
            return ptr::null_mut();
        };
        if need > isize::MAX as usize / 2 {
            return ptr::null_mut();
        }
        let new_len = if need > len {
            // Growth: leave room for the next few steps of a growing buffer.
            need.max((len + len / 4).next_multiple_of(PAGE_SIZE))
        } else {
            need
        };
        let base = seg.cast::<u8>();
        // SAFETY: the whole mapping is the caller's; the header moves with its pages.
        let nb = unsafe { source.resize(base, len, new_len, SEGMENT_SIZE) };
        if nb.is_null() {
            return nb;
        }
        if nb != base {
            if !SEGMENT_MAP.insert(nb.cast()) {
                // Outside the map's range: cannot be freed by address. Give it back and fail the resize
                // after moving the contents back is impossible, so keep it usable as a plain mapping
                // instead: this cannot happen for 47-bit addresses, which the map covers.
                crate::report::Msg::new()
                    .str("hopless: fatal: mremap returned an address outside the segment map\n")
                    .fatal();
            }
            SEGMENT_MAP.remove(seg);
        }
        let nseg = nb.cast::<SegmentHeader>();
        let new_usable = new_len - off;
        // SAFETY: the header is at the start of the (moved) mapping, which is ours.
        unsafe {
            (*nseg).map_len = new_len;
            (*nseg).usable = new_usable;
        }
        {
            let mut g = self.inner.lock();
            g.bytes_in_use = g
                .bytes_in_use
                .saturating_sub(usable as u64)
                .wrapping_add(new_usable as u64);
            g.peak_bytes = g.peak_bytes.max(g.bytes_in_use);
        }
        nb.wrapping_add(off)
    }

    /// Unmaps every cached mapping.
    pub fn clear<P: PageSource>(&self, source: &P) {
        loop {
            let e = {
                let mut g = self.inner.lock();
                if g.n == 0 {
                    return;
                }
                let last = g.n - 1;
                g.remove(last)
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

/// Unmaps a large mapping and forgets it in the segment map.
///
/// # Safety
///
/// `e` is a whole large mapping that nobody references any more.
unsafe fn release<P: PageSource>(source: &P, e: Entry) {
    if e.base.is_null() {
        return;
    }
    SEGMENT_MAP.remove(e.base.cast());
    // SAFETY: per the caller.
    unsafe { source.release(e.base, e.len, SEGMENT_SIZE) };
}

impl Default for LargeCache {
    fn default() -> Self {
        Self::new()
    }
}
