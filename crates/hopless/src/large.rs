//! Large blocks: above 256 KiB, or aligned to more than the largest class alignment.
//!
//! Up to [`MAX_SPAN`] (16 MiB) and aligned to at most 8 KiB, a block is a span of an arena (see
//! `arena`): its header in the span's first page, found from the block by the arena map and the
//! arena's span table. A freed span's slices go back to the arena's free runs, coalescing with free
//! neighbours, and keep their pages: the next large block of any size that fits there is served without
//! a page fault (a program churning blocks of random sizes up to 8 MiB paid 8.7× mimalloc's time per op
//! with one mapping per block, cached; level with it in arenas). A span grows in place into the free run
//! after it, or moves with a quarter more room; it shrinks in place.
//!
//! Bigger blocks, and blocks aligned to 16 KiB or more, or with a guard page (hardened mode), are a
//! mapping each, aligned to the segment size so that `free` finds its header the way it finds a slab's;
//! the block starts one page (or one alignment) after the header. A block aligned to the segment size
//! (4 MiB) or more would start at a segment boundary, where `free` would look for its header: such a
//! block gets a whole segment slot before it, with the header at that slot's start (`data_offset ==
//! SEGMENT_SIZE`), and [`crate::segment::locate`] looks one slot down for a pointer at a slot boundary.
//! Nothing else hopless hands out starts at a slot boundary. A cache of recently freed mappings (at most
//! [`CACHE_ENTRIES`], each at most [`CACHE_MAX_ENTRY`]) keeps their pages: a request takes the smallest
//! cached mapping of up to twice its size (trimming a tail of more than half the request), else the
//! biggest of at least three quarters of its size, grown by moving its pages (`mremap`). Resizing
//! ([`LargeCache::resize`]) moves pages, never bytes, with a quarter of the size as slack when growing.
//!
//! What free memory stays resident (cached mappings plus free dirty arena slices) follows what the
//! program holds: at most a quarter more than the most large bytes in use over the last [`RETAIN_MS`]
//! to twice that (at least [`CACHE_MIN_BYTES`], at most [`CACHE_MAX_BYTES`]). Each large free checks
//! it and gives back the excess: the oldest cached mappings are unmapped, then free arena slices purged
//! (`MADV_DONTNEED`), the emptiest arena's first; an arena left empty and clean is unmapped while
//! another remains. So a program that frees its large blocks and allocates them again at once (the
//! next phase of a batch job) finds their pages, while one that moves on gives them back at its next
//! large free. And when the small heap grows into a new segment, that much kept memory is given back
//! ([`LargeCache::slab_segments`]), so freed large blocks do not stay resident beside small objects that
//! took their place. A reused block is zeroed by hand for a zeroed allocation, up to what an earlier
//! user may have written; fresh pages are zero already.

use core::ptr;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arena::{self, Arena, ARENA_MAP, MAX_ALIGN, MAX_SPAN, SLICE};
use crate::lock::SpinLock;
use crate::platform::{now_ms, PageSource, PAGE_SIZE};
use crate::segment::{SegmentHeader, SegmentKind, SEGMENT_MAGIC, SEGMENT_MAP, SEGMENT_SIZE};

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
struct Entry {
    base: *mut u8,
    len: usize,
}

const NO_ENTRY: Entry = Entry {
    base: ptr::null_mut(),
    len: 0,
};

/// What the cache may hold when `in_use` bytes of large blocks are live (or were, recently: [`RETAIN_MS`]), counting the one being freed: a
/// quarter more than that (so a lone block's mapping, header page included, fits), within
/// [`CACHE_MIN_BYTES`]..=[`CACHE_MAX_BYTES`].
#[inline]
fn budget(in_use: u64) -> usize {
    let b = in_use.saturating_add(in_use / 4);
    (b.min(CACHE_MAX_BYTES as u64) as usize).max(CACHE_MIN_BYTES)
}

pub struct LargeCache {
    inner: SpinLock<LargeInner>,
    /// The small and medium segments reserved when [`LargeCache::slab_segments`] last looked.
    slab_segments_seen: AtomicUsize,
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
    entries: [Entry; CACHE_ENTRIES],
    n: usize,
    bytes: usize,
    arenas: *mut Arena,
    pub allocs: u64,
    pub frees: u64,
    pub hits: u64,
    pub bytes_in_use: u64,
    pub peak_bytes: u64,
    /// The most large bytes in use since `window_at` (ms of [`now_ms`]), and in the window before.
    window_peak: u64,
    prev_peak: u64,
    window_at: u64,
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
        e
    }

    /// The cached mapping to serve a block of `need` bytes of mapping: the smallest at least that big
    /// and at most twice it (a long tail is trimmed), else the biggest at least three quarters of it (it
    /// is grown: its pages move, only the new ones fault in).
    fn pick(&self, need: usize) -> Option<usize> {
        let mut fits = None;
        let mut fits_len = usize::MAX;
        let mut grow = None;
        let mut grow_len = 0;
        for (i, e) in self.entries.iter().enumerate().take(self.n) {
            if e.len >= need {
                if e.len - need <= need && e.len < fits_len {
                    fits = Some(i);
                    fits_len = e.len;
                }
            } else if e.len >= need - need / 4 && e.len > grow_len {
                grow = Some(i);
                grow_len = e.len;
            }
        }
        fits.or(grow)
    }

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

    /// Takes a free run of `n` slices as a span in use, in the oldest arena where it faults in the fewest
    /// clean slices (see [`arena::first_fit`]): (arena, start slice, how many bytes from the span's start
    /// may be non-zero).
    fn arena_take(&mut self, n: usize) -> Option<(*mut Arena, usize, usize)> {
        let mut best: Option<(*mut Arena, usize, usize)> = None;
        let mut a = self.arenas;
        while !a.is_null() {
            // SAFETY: the arenas on the list are live and, under the lock, ours to read.
            unsafe {
                if (*a).free_slices >= n {
                    if let Some((s, clean)) = arena::first_fit(a, n) {
                        if best.is_none_or(|(_, _, c)| clean < c) {
                            best = Some((a, s, clean));
                            if clean == 0 {
                                break;
                            }
                        }
                    }
                }
                a = (*a).next;
            }
        }
        let (a, s, _) = best?;
        // SAFETY: a listed arena; the run is free.
        let dirty = unsafe { arena::take(a, s, n) };
        Some((a, s, dirty))
    }

    /// Evicts the oldest cached mappings, then takes free dirty arena slices out to purge, until what is
    /// kept fits in `room` bytes (or `purge` is full).
    fn trim_to(&mut self, room: usize, evicted: &mut Evicted, purge: &mut Purge) {
        while self.n > 0 && self.cached_bytes() > room {
            evicted.push(self.remove(0));
        }
        while self.cached_bytes() > room && !purge.is_full() {
            let want = (self.cached_bytes() - room).div_ceil(SLICE);
            let Some(run) = self.take_purge(want) else {
                break;
            };
            purge.push(run);
        }
    }

    /// Takes a run of at most `max` free dirty slices out to purge, from the emptiest arena that has one.
    fn take_purge(&mut self, max: usize) -> Option<Run> {
        let mut pick: *mut Arena = ptr::null_mut();
        let mut a = self.arenas;
        while !a.is_null() {
            // SAFETY: listed arenas are live; the lock is held.
            unsafe {
                if (*a).dirty_free > 0 && (pick.is_null() || (*a).free_slices > (*pick).free_slices) {
                    pick = a;
                }
                a = (*a).next;
            }
        }
        if pick.is_null() {
            return None;
        }
        // SAFETY: a listed arena, under the lock.
        let (s, n) = unsafe { arena::take_purge(pick, max) }?;
        Some(Run {
            arena: pick,
            start: s,
            len: n,
        })
    }

    /// Unlinks `a` if it is empty and clean and another arena remains; returns it to be unmapped once
    /// the lock is released, or null.
    fn unlink_if_unused(&mut self, a: *mut Arena) -> *mut Arena {
        // SAFETY: listed arenas are live; the lock is held.
        let unused = unsafe {
            arena::is_empty(a) && (*a).dirty_free == 0 && (self.arenas != a || !(*a).next.is_null())
        };
        if unused {
            self.unlink_where(|x| x == a)
        } else {
            ptr::null_mut()
        }
    }

    /// Unlinks every arena `pick` chooses; returns them chained through `next` (null: none).
    fn unlink_where(&mut self, mut pick: impl FnMut(*mut Arena) -> bool) -> *mut Arena {
        let mut gone: *mut Arena = ptr::null_mut();
        let mut link: *mut *mut Arena = &mut self.arenas;
        // SAFETY: `link` points at the list head or a listed arena's `next`; listed arenas are live, and
        // the lock is held (`&mut self`).
        unsafe {
            while !(*link).is_null() {
                let a = *link;
                if pick(a) {
                    *link = (*a).next;
                    (*a).next = gone;
                    gone = a;
                } else {
                    link = &mut (*a).next;
                }
            }
        }
        gone
    }

    fn count_alloc(&mut self, usable: usize, hit: bool) {
        self.allocs = self.allocs.wrapping_add(1);
        self.hits = self.hits.wrapping_add(u64::from(hit));
        self.bytes_in_use = self.bytes_in_use.wrapping_add(usable as u64);
        self.peak_bytes = self.peak_bytes.max(self.bytes_in_use);
        self.window_peak = self.window_peak.max(self.bytes_in_use);
    }

    /// What the budget follows at time `now` (ms): the most large bytes in use in the current window of
    /// [`RETAIN_MS`] and the one before it (a window older than that is forgotten).
    pub fn recent_in_use(&mut self, now: u64) -> u64 {
        let age = now.wrapping_sub(self.window_at);
        if age >= RETAIN_MS {
            self.prev_peak = if age < 2 * RETAIN_MS { self.window_peak } else { 0 };
            self.window_peak = self.bytes_in_use;
            self.window_at = now;
        }
        self.bytes_in_use.max(self.window_peak).max(self.prev_peak)
    }

    fn count_free(&mut self, usable: usize) {
        self.frees = self.frees.wrapping_add(1);
        self.bytes_in_use = self.bytes_in_use.saturating_sub(usable as u64);
    }
}

/// The header of a large block: a mapping or span of `len` bytes, the block `off` bytes in.
const fn large_header(len: usize, off: usize, usable: usize) -> SegmentHeader {
    SegmentHeader {
        magic: SEGMENT_MAGIC,
        kind: SegmentKind::Large,
        slab_shift: 0,
        first_slot: 0,
        map_len: len,
        data_offset: off,
        usable,
        next: ptr::null_mut(),
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
                window_peak: 0,
                prev_peak: 0,
                window_at: 0,
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
        if !guard_page && align <= MAX_ALIGN {
            if let Some(span) = off
                .checked_add(size)
                .and_then(|n| n.checked_next_multiple_of(SLICE))
                .filter(|&n| n <= MAX_SPAN)
            {
                return self.arena_alloc(source, size, off, span / SLICE, zeroed);
            }
        }
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
        // How much of the mapping an earlier user may have written (a reused one, up to its old length);
        // fresh pages read as zero.
        let mut dirty = 0;
        if guard == 0 && !huge {
            let taken = {
                let mut g = self.inner.lock();
                g.pick(need).map(|i| g.remove(i))
            };
            if let Some(e) = taken {
                let old_len = e.len;
                // SAFETY: a cached mapping is a whole reservation that nobody references; it is ours now.
                let e = unsafe { fit(source, e, need) };
                if !e.base.is_null() {
                    base = e.base;
                    len = e.len;
                    dirty = old_len.min(len);
                }
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
            seg.write(large_header(len, off, usable));
            let p = base.add(off);
            if guard != 0 {
                // Hardened: the page after the block faults on any overflow.
                source.protect(base.add(len - guard), guard);
            }
            if zeroed && dirty > off {
                // Pages a grown mapping gained are fresh, hence zero already.
                ptr::write_bytes(p, 0, size.min(dirty - off));
            }
            self.inner.lock().count_alloc(usable, reused);
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
        if ARENA_MAP.contains(seg.cast()) {
            // SAFETY: per the caller; the map says the header is an arena block's.
            return unsafe { self.arena_free(source, seg, usable) };
        }
        let me = Entry {
            base: seg.cast(),
            len,
        };
        // Guarded mappings (hardened mode: usable + offset short of the length) are not cached, nor are
        // segment-aligned ones (their layout is particular) or big ones.
        let guarded = off.checked_add(usable) != Some(len);
        let cacheable = len <= CACHE_MAX_ENTRY && !guarded && off < SEGMENT_SIZE;
        let mut evicted = Evicted::new();
        let mut purge = Purge::new();
        let now = now_ms();
        {
            let mut g = self.inner.lock();
            let cap = budget(g.recent_in_use(now));
            g.count_free(usable);
            let fits = cacheable && len <= cap;
            let room = if fits { cap - len } else { cap };
            while fits && g.n >= CACHE_ENTRIES {
                evicted.push(g.remove(0));
            }
            g.trim_to(room, &mut evicted, &mut purge);
            let n = g.n;
            match g.entries.get_mut(n) {
                Some(slot) if fits => {
                    *slot = me;
                    g.n = n + 1;
                    g.bytes += len;
                }
                _ => evicted.push(me),
            }
        }
        // SAFETY: evicted mappings (and this one, when it is not cached) are whole reservations that
        // nobody references any more; the purge runs were taken out of their arenas' free sets.
        unsafe {
            evicted.release(source);
            purge.finish(self, source);
        }
    }

    /// A block of `size` bytes, `off` bytes into a span of `n` slices of an arena (a new arena when none
    /// has a free run that long).
    fn arena_alloc<P: PageSource>(
        &self,
        source: &P,
        size: usize,
        off: usize,
        n: usize,
        zeroed: bool,
    ) -> *mut u8 {
        let len = n * SLICE;
        let usable = len - off;
        let take = |g: &mut LargeInner| {
            let t = g.arena_take(n)?;
            g.count_alloc(usable, t.2 > 0);
            Some(t)
        };
        let (a, s, dirty) = loop {
            if let Some(t) = take(&mut self.inner.lock()) {
                break t;
            }
            let fresh = arena::create(source);
            if fresh.is_null() {
                return ptr::null_mut();
            }
            let mut g = self.inner.lock();
            // The list stays oldest first, so that blocks pack into the oldest arenas and the newest
            // empty out to be given back.
            let mut link: *mut *mut Arena = &mut g.arenas;
            // SAFETY: `link` points at the list head or a listed arena's `next` (live, under the lock);
            // the new arena is ours alone until it is linked.
            unsafe {
                while !(*link).is_null() {
                    link = &mut (**link).next;
                }
                *link = fresh;
            }
            if let Some(t) = take(&mut g) {
                break t;
            }
        };
        let seg = arena::span_at(a, s);
        // SAFETY: `take` made the span ours: `len` bytes of a live arena from `seg`, the block `off` bytes
        // in; `dirty` bounds the bytes an earlier user may have left non-zero.
        unsafe {
            seg.write(large_header(len, off, usable));
            let p = seg.cast::<u8>().add(off);
            if zeroed && dirty > off {
                ptr::write_bytes(p, 0, size.min(dirty - off));
            }
            p
        }
    }

    /// Frees an arena block: its span joins the free runs; the budget may purge free slices and unmap
    /// an arena left unused.
    ///
    /// # Safety
    ///
    /// `seg` heads a live span of one of this heap's arenas, which nobody uses any more.
    unsafe fn arena_free<P: PageSource>(&self, source: &P, seg: *mut SegmentHeader, usable: usize) {
        let a = arena::arena_of(seg);
        let s = arena::slice_of(a, seg);
        let mut evicted = Evicted::new();
        let mut purge = Purge::new();
        let now = now_ms();
        let unused = {
            let mut g = self.inner.lock();
            // SAFETY: per the caller, a listed arena; the lock is held.
            let n = unsafe { arena::give(a, s) };
            if n == 0 {
                drop(g);
                crate::report::Msg::new()
                    .str("hopless: fatal: a large block freed twice at once (double free) at ")
                    .hex(seg.addr())
                    .str("\n")
                    .fatal();
            }
            let cap = budget(g.recent_in_use(now));
            g.count_free(usable);
            g.trim_to(cap, &mut evicted, &mut purge);
            g.unlink_if_unused(a)
        };
        // SAFETY: evicted mappings and purge runs were taken out under the lock; an unlinked arena is
        // empty and on no list.
        unsafe {
            evicted.release(source);
            purge.finish(self, source);
            if !unused.is_null() {
                arena::release(source, unused);
            }
        }
    }

    /// Resizes an arena block: in place (shrinking, or growing into the free run after it, with a
    /// quarter more room), else by moving it with that room. Null when the new size is too big for an
    /// arena (the caller copies it into a mapping of its own) or no memory.
    ///
    /// # Safety
    ///
    /// As for [`LargeCache::resize`], for an arena block.
    unsafe fn arena_resize<P: PageSource>(
        &self,
        source: &P,
        seg: *mut SegmentHeader,
        new_size: usize,
    ) -> *mut u8 {
        // SAFETY: per the caller, the header is valid and ours.
        let (len, usable, off) = unsafe { ((*seg).map_len, (*seg).usable, (*seg).data_offset) };
        let p = seg.cast::<u8>().wrapping_add(off);
        let Some(need) = off
            .checked_add(new_size)
            .and_then(|n| n.checked_next_multiple_of(SLICE))
            .filter(|&n| n <= MAX_SPAN)
        else {
            return ptr::null_mut();
        };
        let a = arena::arena_of(seg);
        let s = arena::slice_of(a, seg);
        let (n, m) = (len / SLICE, need / SLICE);
        if m == n {
            return p;
        }
        let resized = {
            let mut g = self.inner.lock();
            // SAFETY: a listed arena, under the lock; the span is ours (`n` slices from `s`).
            let k = unsafe {
                if m < n {
                    arena::shrink(a, s, n, m);
                    Some(m)
                } else {
                    let want = m.max(n + n / 4).min(MAX_SPAN / SLICE);
                    arena::grow(a, s, n, m, want)
                }
            };
            if let Some(k) = k {
                g.bytes_in_use = g
                    .bytes_in_use
                    .saturating_sub(usable as u64)
                    .wrapping_add((k * SLICE - off) as u64);
                g.peak_bytes = g.peak_bytes.max(g.bytes_in_use);
            }
            k
        };
        if let Some(k) = resized {
            // SAFETY: the header of the caller's block.
            unsafe {
                (*seg).map_len = k * SLICE;
                (*seg).usable = k * SLICE - off;
            }
            return p;
        }
        // Move, with a quarter more room, so a buffer growing in small steps is copied a logarithmic
        // number of times.
        let mut q = self.alloc(
            source,
            new_size.max(usable.saturating_add(usable / 4)),
            off,
            false,
            false,
        );
        if q.is_null() {
            q = self.alloc(source, new_size, off, false, false);
        }
        if !q.is_null() {
            // SAFETY: the old block's `usable` bytes (less than `new_size`: it grows) are the caller's; the
            // new block is distinct and at least that big; then the old one is given up.
            unsafe {
                ptr::copy_nonoverlapping(p, q, usable.min(new_size));
                self.free(source, seg);
            }
        }
        q
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
        if ARENA_MAP.contains(seg.cast()) {
            // SAFETY: per the caller; the map says it is an arena block.
            return unsafe { self.arena_resize(source, seg, new_size) };
        }
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
        // SAFETY: the whole mapping is the caller's; the header moves with its pages.
        let nb = unsafe { remap(source, seg.cast(), len, new_len) };
        if nb.is_null() {
            return nb;
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

    /// The small and medium pools have reserved `segments` segments in all. For each one reserved since
    /// the last call, the cache gives back one segment's worth of its oldest mappings: freed large
    /// blocks make way for the small heap's growth instead of sitting resident beside it.
    #[inline]
    pub fn slab_segments<P: PageSource>(&self, source: &P, segments: usize) {
        let seen = self.slab_segments_seen.load(Ordering::Relaxed);
        if seen != segments
            && self
                .slab_segments_seen
                .compare_exchange(seen, segments, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.shed(source, segments.wrapping_sub(seen).saturating_mul(SEGMENT_SIZE));
        }
    }

    /// Gives back at least `bytes` of kept free memory (or all): the oldest cached mappings are unmapped,
    /// then free arena slices purged.
    #[cold]
    #[inline(never)]
    fn shed<P: PageSource>(&self, source: &P, bytes: usize) {
        let mut evicted = Evicted::new();
        let mut freed = 0usize;
        {
            let mut g = self.inner.lock();
            while g.n > 0 && freed < bytes {
                let e = g.remove(0);
                freed = freed.saturating_add(e.len);
                evicted.push(e);
            }
        }
        // SAFETY: evicted mappings are whole reservations that nobody references any more.
        unsafe { evicted.release(source) };
        while freed < bytes {
            let mut purge = Purge::new();
            {
                let mut g = self.inner.lock();
                while freed < bytes && !purge.is_full() {
                    let Some(run) = g.take_purge((bytes - freed).div_ceil(SLICE)) else {
                        break;
                    };
                    freed = freed.saturating_add(run.len * SLICE);
                    purge.push(run);
                }
            }
            if purge.n == 0 {
                break;
            }
            // SAFETY: the runs were taken out of their arenas' free sets under the lock.
            unsafe { purge.finish(self, source) };
        }
    }

    /// Unmaps every cached mapping, purges every free arena slice and unmaps the empty arenas.
    pub fn clear<P: PageSource>(&self, source: &P) {
        self.shed(source, usize::MAX);
        self.release_arenas(source, false);
    }

    /// Unmaps the empty arenas, or every arena if `all` (for a heap being dropped: its blocks are gone).
    pub fn release_arenas<P: PageSource>(&self, source: &P, all: bool) {
        // SAFETY: listed arenas are live; `unlink_where` calls this under the lock.
        let mut gone = self
            .inner
            .lock()
            .unlink_where(|a| all || unsafe { arena::is_empty(a) });
        while !gone.is_null() {
            // SAFETY: unlinked above, so no one else reaches it; per the caller nothing in it is used.
            unsafe {
                let next = (*gone).next;
                arena::release(source, gone);
                gone = next;
            }
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

/// A run of free arena slices taken out to purge.
#[derive(Clone, Copy)]
struct Run {
    arena: *mut Arena,
    start: usize,
    len: usize,
}

const PURGE_RUNS: usize = 16;

/// Runs taken out of their arenas under the lock, to purge once it is released and give back clean.
struct Purge {
    runs: [Run; PURGE_RUNS],
    n: usize,
}

impl Purge {
    const fn new() -> Self {
        Purge {
            runs: [Run {
                arena: ptr::null_mut(),
                start: 0,
                len: 0,
            }; PURGE_RUNS],
            n: 0,
        }
    }

    fn is_full(&self) -> bool {
        self.n >= PURGE_RUNS
    }

    fn push(&mut self, r: Run) {
        if let Some(slot) = self.runs.get_mut(self.n) {
            *slot = r;
            self.n += 1;
        }
    }

    /// Decommits the runs (no lock held), then gives them back clean and unmaps arenas left unused.
    ///
    /// # Safety
    ///
    /// Every run was taken out of a listed arena of `cache` with `take_purge`, and not yet given back.
    unsafe fn finish<P: PageSource>(&mut self, cache: &LargeCache, source: &P) {
        if self.n == 0 {
            return;
        }
        for r in self.runs.iter().take(self.n) {
            // SAFETY: per the caller, nobody else may use the run's slices until they are given back.
            unsafe { source.decommit(arena::span_at(r.arena, r.start).cast(), r.len * SLICE) };
        }
        let mut unused = [ptr::null_mut::<Arena>(); PURGE_RUNS];
        {
            let mut g = cache.inner.lock();
            for (r, u) in self.runs.iter().take(self.n).zip(unused.iter_mut()) {
                // SAFETY: per the caller; the arena stays listed while a run of it is out.
                unsafe { arena::return_purged(r.arena, r.start, r.len) };
                *u = g.unlink_if_unused(r.arena);
            }
        }
        for &u in unused.iter().filter(|u| !u.is_null()) {
            // SAFETY: unlinked under the lock: empty, on no list.
            unsafe { arena::release(source, u) };
        }
        self.n = 0;
    }
}

/// Mappings taken out of the cache under its lock, to unmap once it is released: every entry at most,
/// plus the mapping being freed.
struct Evicted {
    list: [Entry; CACHE_ENTRIES + 1],
    n: usize,
}

impl Evicted {
    const fn new() -> Self {
        Evicted {
            list: [NO_ENTRY; CACHE_ENTRIES + 1],
            n: 0,
        }
    }

    fn push(&mut self, e: Entry) {
        if let Some(slot) = self.list.get_mut(self.n) {
            *slot = e;
            self.n += 1;
        }
    }

    /// # Safety
    ///
    /// Every pushed entry is a whole large mapping that nobody references any more.
    unsafe fn release<P: PageSource>(&self, source: &P) {
        for e in self.list.iter().take(self.n) {
            // SAFETY: per the caller.
            unsafe { release(source, *e) };
        }
    }
}

/// Makes a cached mapping `need` bytes long: trims a tail of more than half of `need` (a shorter one stays
/// as the block's slack), or grows it (in place, or by moving its pages to a new aligned place). Returns
/// the mapping as it is now; a null base when it could not grow (it is then released). A source that
/// cannot resize leaves a bigger mapping as it is.
///
/// # Safety
///
/// `e` is a whole large mapping that nobody references any more, now the caller's.
unsafe fn fit<P: PageSource>(source: &P, e: Entry, need: usize) -> Entry {
    if e.len >= need && e.len - need <= need / 2 {
        return e;
    }
    // SAFETY: per the caller, the whole reservation is ours and unused.
    let nb = unsafe { remap(source, e.base, e.len, need) };
    if nb.is_null() {
        if e.len > need {
            return e;
        }
        // SAFETY: as above; it is still the whole reservation.
        unsafe { release(source, e) };
        return NO_ENTRY;
    }
    Entry { base: nb, len: need }
}

/// Resizes a large mapping (in place, or by moving its pages to a new aligned place) and keeps the
/// segment map right. Null when it cannot; the mapping is then untouched and still in the map.
///
/// The old address leaves the map before the move: once the kernel has moved the pages, another thread's
/// new mapping may land there, and must not lose its entry to a late removal of ours.
///
/// # Safety
///
/// `base` and `len` are a whole large mapping that the caller owns and nobody else references.
unsafe fn remap<P: PageSource>(source: &P, base: *mut u8, len: usize, new_len: usize) -> *mut u8 {
    SEGMENT_MAP.remove(base.cast());
    // SAFETY: per the caller; the header moves with the pages.
    let nb = unsafe { source.resize(base, len, new_len, SEGMENT_SIZE) };
    let live = if nb.is_null() { base } else { nb };
    if !SEGMENT_MAP.insert(live.cast()) {
        // Outside the map's range: the block could not be freed by address. The old mapping was in the
        // map, and a moved one lands where `reserve` puts every mapping, which the map covers for 47-bit
        // addresses: this cannot happen.
        crate::report::Msg::new()
            .str("hopless: fatal: mremap returned an address outside the segment map\n")
            .fatal();
    }
    nb
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
