//! The fast path: the thread's cache pointer and `GlobalAlloc`'s alloc and free, a screenful of code.
//!
//! **Neither path touches the block it hands out.** Allocation pops a pointer from the thread's magazine
//! (`slots[--count]`); nothing is read from or written to the block, so the next allocation does not
//! wait on a cache line of free memory, unlike SLUB's next-free-pointer load. A free writes one word
//! into the block (its free key, the double-free check: see `thread_cache`), a line the program just
//! used. Everything else falls to `slow.rs`, out of line and `#[cold]`.
//!
//! A thread's cache pointer is one of its words (`crate::tls`): on x86-64 Linux a single `%fs`-relative
//! load of the initial-exec TLS model, never a call to `__tls_get_addr`. A new thread's pointer is the
//! static empty cache,
//! whose magazines all have capacity 0: its first alloc or free falls to the slow path, which takes a
//! cache from the heap's registry and registers the thread's exit hook. The checked modes keep every
//! thread on the empty cache, so the fast path needs no mode test.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;

use crate::global::{Hopless, HEAP};
use crate::segment::{slab_segment, SegmentHeader, Slab, SEGMENT_SIZE};
use crate::size_class::{self, small_class, SMALL_MAX};
use crate::slow::{
    alloc_general, alloc_slow, cache_or_init, free_slow, free_suspect, free_unsized_slow, hardened_cache,
};
use crate::stats::stat;
use crate::thread_cache::{class_at_mag_offset, opaque, Push, ThreadCache, MALLOC_MAG_OFFSET};

/// The cache every thread starts with: capacity 0 everywhere, never written.
pub(crate) struct EmptyCache(UnsafeCell<ThreadCache>);
// SAFETY: sharing `&EmptyCache` between threads is sound because nothing ever writes through it:
// 1. its magazines have `cap == 0` and `count == 0` (`ThreadCache::EMPTY`), so `pop` returns null before
//    any store and `push`/`push_keyed` return before storing (`n >= cap`);
// 2. `ThreadCache::open`, the only writer of `cap`, is called only on a cache from the registry (the slow
//    paths check `tc != empty()` or get theirs from `cache_or_init`);
// 3. the counters (feature `stats`) are bumped only on a live cache: the fast path counts only after a
//    pop or push succeeded, which never happens here.
unsafe impl Sync for EmptyCache {}
pub(crate) static EMPTY_CACHE: EmptyCache = EmptyCache(UnsafeCell::new(ThreadCache::EMPTY));

/// Whether the calling thread's exit destructor has run (its later allocations bypass the cache).
#[inline]
pub(crate) fn retired() -> bool {
    crate::tls::read::<{ crate::tls::RETIRED }>() != 0
}

/// Hardened mode: the thread's cache, used only by the checked paths (`CACHE` stays the empty one, so
/// the fast path always falls through to them); null until set up.
#[inline]
pub(crate) fn hardened_cache_of_thread() -> *mut ThreadCache {
    crate::tls::read_ptr::<{ crate::tls::HARDENED }, ThreadCache>()
}

/// Sets the thread's hardened-mode cache.
#[inline]
pub(crate) fn set_hardened_cache(tc: *mut ThreadCache) {
    crate::tls::write_ptr::<{ crate::tls::HARDENED }, ThreadCache>(tc);
}

/// Marks the thread as past its exit destructor and drops both its caches from its words.
pub(crate) fn retire_thread() {
    set_current(empty());
    set_hardened_cache(ptr::null_mut());
    crate::tls::write::<{ crate::tls::RETIRED }>(1);
}

/// The calling thread's cache (the empty one until its first slow-path operation).
#[inline(always)]
pub(crate) fn current() -> *mut ThreadCache {
    let tc = tls::get();
    if tc.is_null() {
        empty()
    } else {
        tc
    }
}

/// Makes `tc` the calling thread's cache (the empty one: `empty()`). Giving up a cache forgets the last
/// segment too (see `tls`: a remembered segment implies a live cache).
#[inline]
pub(crate) fn set_current(tc: *mut ThreadCache) {
    if tc == empty() {
        tls::set_segment_end(0);
        tls::set(ptr::null_mut());
    } else {
        tls::set(tc);
    }
}

/// The thread's cache pointer and last segment live in its words (`crate::tls`). The segment is the
/// last small or medium segment of the process heap its C free path found in the segment map, as the
/// segment's last byte address (`segment | (SEGMENT_SIZE - 1)`), 0 for none. A pointer whose address
/// ORed with the mask equals it needs no map lookup; no pointer's does while it is 0, so both words start
/// as zero. Such a segment is never unmapped (the process heap is never dropped), so the answer never
/// goes stale. It is set only while the thread has a live cache, and cleared when the thread gives its
/// cache up (`set_current`): a hit therefore means the cache pointer is not null.
mod tls {
    use super::ThreadCache;
    use crate::tls::{read, read_ptr, write, write_ptr, CACHE, SEGMENT_END};

    #[inline(always)]
    pub(super) fn get() -> *mut ThreadCache {
        read_ptr::<CACHE, ThreadCache>()
    }

    #[inline(always)]
    pub(super) fn set(tc: *mut ThreadCache) {
        write_ptr::<CACHE, ThreadCache>(tc);
    }

    #[inline(always)]
    pub(super) fn segment_end() -> usize {
        read::<SEGMENT_END>()
    }

    #[inline(always)]
    pub(super) fn set_segment_end(end: usize) {
        write::<SEGMENT_END>(end);
    }
}

#[inline(always)]
pub(crate) fn empty() -> *mut ThreadCache {
    EMPTY_CACHE.0.get()
}

/// The fast path of every allocation: a pop from the thread's magazine of the class. The checked modes
/// need no test here: they never give a thread a cache, so this pop always falls to `alloc_slow`, which
/// checks the mode (and the same for frees).
///
/// # Safety
///
/// `0 < size <= SMALL_MAX` and `align <= 16` is a power of two.
#[inline(always)]
pub(crate) unsafe fn alloc_small(size: usize, align: usize) -> *mut u8 {
    let class = small_class(size.max(align));
    // SAFETY: per the caller.
    match unsafe { alloc_cached(class) } {
        Some(p) => p,
        // SAFETY: class in range; per the caller.
        None => unsafe { alloc_slow(class, size, align) },
    }
}

/// A pop from the thread's magazine of `class`; `None` when it is empty (or the thread has the empty
/// cache).
///
/// # Safety
///
/// `class < NUM_CLASSES`.
#[inline(always)]
pub(crate) unsafe fn alloc_cached(class: usize) -> Option<*mut u8> {
    let tc = current();
    // SAFETY: `tc` is this thread's cache or the empty one; `class` is in range.
    let p = unsafe { ThreadCache::try_pop(tc, class) }?;
    // SAFETY: `tc` is live: the empty cache never yields a block.
    stat!(unsafe { (*tc).counters[class].alloc_fast.bump() });
    Some(p)
}

/// C's `malloc(size)` from the thread's magazine, `None` when that takes more (see
/// [`Hopless::malloc_cached`]): one table load for the magazine's offset, no class index.
#[inline(always)]
pub(crate) fn malloc_cached(size: usize) -> Option<*mut u8> {
    if size > SMALL_MAX {
        return None;
    }
    let off = *MALLOC_MAG_OFFSET.get((size + 7) >> 3)?;
    // Null is the empty cache, which would answer `None` too.
    let tc = tls::get();
    if tc.is_null() {
        return None;
    }
    // SAFETY: `tc` is this thread's live cache and `off` a magazine's offset in it.
    let p = unsafe { ThreadCache::try_pop_in(ThreadCache::mag_at(tc, off)) }?;
    // SAFETY: `tc` is live.
    stat!(unsafe { (*tc).counters[class_at_mag_offset(off)].alloc_fast.bump() });
    Some(p)
}

/// The fast path of a free without its size (C's `free`): the segment (the thread's last one, else the
/// segment map, out of line), one slab header, the magazine push. Everything else (null, no cache yet,
/// the checked modes, large blocks, and any pointer that is not a handed-out block start, to be
/// reported) goes to `free_unsized_slow`, out of line, as do a full magazine and a key that needs a
/// look. Every way out is a return or a tail call, so the function saves no registers.
///
/// # Safety
///
/// `p` is null, or a block of this allocator the program gives up (anything else is reported).
#[inline(always)]
pub(crate) unsafe fn free_unsized(p: *mut u8) {
    // Null needs no test of its own: `0 | mask` is no segment's end (no segment starts at address 0) and
    // address 0 is never in the segment map, so it reaches the slow path, which returns.
    let end = p.addr() | (SEGMENT_SIZE - 1);
    if end != tls::segment_end() {
        // SAFETY: forwarded.
        return unsafe { free_in_another_segment(p, end) };
    }
    // SAFETY: a remembered segment means a live cache (see `tls`); `end` is `p`'s segment's.
    unsafe { free_in_segment(tls::get(), p, end) }
}

/// [`free_unsized`] for a pointer outside the thread's remembered segment: the segment map says whether
/// it is in a small or medium segment of the process heap, which is then remembered, if the thread has
/// a cache.
///
/// # Safety
///
/// As for [`free_unsized`]; `end` is `p.addr() | (SEGMENT_SIZE - 1)`.
#[cold]
#[inline(never)]
unsafe fn free_in_another_segment(p: *mut u8, end: usize) {
    let tc = tls::get();
    // SAFETY: per the caller (`slab_segment` checks the map before reading a header).
    if tc.is_null() || unsafe { slab_segment(p) }.is_none() {
        // SAFETY: forwarded.
        return unsafe { free_unsized_slow(p) };
    }
    tls::set_segment_end(end);
    // SAFETY: `tc` is this thread's live cache; `p`'s segment was just found in the map.
    unsafe { free_in_segment(tc, p, end) }
}

/// The rest of [`free_unsized`] once `p`'s segment is known: the slab header's check and the push.
///
/// # Safety
///
/// `tc` is the calling thread's live cache; `end` is `p.addr() | (SEGMENT_SIZE - 1)`, and `p`'s segment
/// a small or medium one of the process heap; `p` as for [`free_unsized`].
#[inline(always)]
unsafe fn free_in_segment(tc: *mut ThreadCache, p: *mut u8, end: usize) {
    // The segment is taken from `end` through `opaque`, so that the header's fields are read at fixed
    // offsets from it, instead of the compiler rebuilding the segment as `p - (p & mask)`.
    let seg = p
        .with_addr(opaque(end) - (SEGMENT_SIZE - 1))
        .cast::<SegmentHeader>();
    // SAFETY: `seg` is `p`'s segment, a live small or medium one (per the caller).
    if let Some(off) = unsafe { Slab::handed_out_in(seg, p) } {
        // SAFETY: `p` is a handed-out block start (at least 8 bytes, aligned to 8) of the class whose
        // magazine is at `off`; whether it is free already is the key's check.
        unsafe {
            match ThreadCache::push_keyed_in(tc, ThreadCache::mag_at(tc, off), p) {
                Push::Done => {
                    stat!((*tc).counters[class_at_mag_offset(off)].free_fast.bump());
                }
                Push::Suspect => free_suspect(class_at_mag_offset(off), p),
                Push::Full => free_slow(class_at_mag_offset(off), p),
            }
            return;
        }
    }
    // SAFETY: forwarded.
    unsafe { free_unsized_slow(p) }
}

/// The calling thread's cache, or null while it has none (the empty cache): one TLS load.
#[inline(always)]
pub(crate) fn current_or_null() -> *mut ThreadCache {
    tls::get()
}

// SAFETY: blocks come from the heap aligned and sized as their layout asks (the class table maps every
// (size, align) to a class that satisfies both, or to a large mapping); a block is handed out once until
// freed; failure returns null.
unsafe impl GlobalAlloc for Hopless {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        if size <= SMALL_MAX && align <= 16 {
            // SAFETY: a Layout's size is non-zero (GlobalAlloc contract).
            return unsafe { alloc_small(size, align) };
        }
        // SAFETY: a Layout's size is non-zero (GlobalAlloc contract) and its align a power of two.
        unsafe { alloc_general(size, align, false) }
    }

    #[inline(always)]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let (size, align) = (layout.size(), layout.align());
        if size <= SMALL_MAX && align <= 16 {
            let class = small_class(size.max(align));
            let tc = current();
            // SAFETY: `tc` is this thread's cache or the empty one (never room there, so debug mode and
            // threads without a cache take the slow path); per the GlobalAlloc contract `p` is a live
            // block of this layout, so of `class`: at least 8 bytes, aligned to 8.
            unsafe {
                match ThreadCache::push_keyed(tc, class, p) {
                    Push::Done => {
                        stat!((*tc).counters[class].free_fast.bump());
                        return;
                    }
                    Push::Suspect => return free_suspect(class, p),
                    Push::Full => return free_slow(class, p),
                }
            }
        }
        // SAFETY: as above; the header lookup finds the class or the large mapping.
        unsafe { Hopless::free(p) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() <= SMALL_MAX && layout.align() <= 16 {
            // SAFETY: forwarded contract.
            let p = unsafe { self.alloc(layout) };
            if !p.is_null() {
                // SAFETY: the block has at least `size` bytes.
                unsafe { ptr::write_bytes(p, 0, layout.size()) };
            }
            return p;
        }
        // SAFETY: forwarded contract; large blocks fresh from mmap skip the memset.
        unsafe { alloc_general(layout.size(), layout.align(), true) }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if crate::mode::checked_on() && !crate::mode::debug_on() {
            // SAFETY: per the caller; the cache is this thread's or null.
            return unsafe { HEAP.hardened_realloc(hardened_cache(), p, new_size, layout.align()) };
        }
        if crate::mode::debug_on() {
            // Debug mode never resizes in place: the old block is checked and poisoned.
            let q = HEAP.debug_alloc(new_size, layout.align(), false);
            if !q.is_null() {
                // SAFETY: both blocks hold min(old, new) bytes; `p` is given up.
                unsafe {
                    ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                    HEAP.debug_free(p);
                }
            }
            return q;
        }
        if let Some(c) = size_class::class_for(layout.size(), layout.align()) {
            if size_class::class_for(new_size, layout.align()) == Some(c) {
                return p;
            }
        }
        // SAFETY: forwarded contract (new_size > 0, p allocated with layout).
        unsafe { HEAP.realloc(cache_or_init(), p, layout.size(), layout.align(), new_size) }
    }
}
