//! The fast paths: an allocation pops a pointer from the thread's magazine of its class, a free pushes
//! one. This is the screenful a reviewer reads first; everything else falls to `slow`, out of line and
//! `#[cold]`.
//!
//! **Neither path touches the block it hands out.** Allocation pops a pointer from the thread's magazine
//! (`slots[--count]`); nothing is read from or written to the block, so the next allocation does not
//! wait on a cache line of free memory, unlike SLUB's next-free-pointer load. A free writes one word
//! into the block (its free key, the double-free check: see `cache::free_key`), a line the program just
//! used.
//!
//! The thread's cache pointer and last segment are its words (`process`); a new thread has the empty
//! cache, whose magazines all have capacity 0, so its first alloc or free falls to the slow path. The
//! checked modes keep every thread on the empty cache, so the fast path needs no mode test.

use crate::cache::{class_at_mag_offset, opaque, Magazine, Popped, ThreadCache, MALLOC_MAG_OFFSET};
use crate::process::{current, current_or_null, segment_end, set_segment_end};
use crate::segment::{slab_segment, SegmentHeader, Slab, SEGMENT_SIZE};
use crate::size_class::{small_class, SMALL_MAX};
use core::sync::atomic::Ordering;

use crate::profile::SEEN;
use crate::sample::sampled;
use crate::slow::{alloc_slow, free_slow, free_suspect, free_unsized_slow};
use crate::stats::stat;

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
    match unsafe { alloc_cached(class, size) } {
        Some(p) => p,
        // SAFETY: class in range; per the caller.
        None => unsafe { alloc_slow(class, size, align) },
    }
}

/// A pop from the thread's magazine of `class` for `size` bytes; `None` when it is empty (or the thread
/// has the empty cache). The size comes off the sampling countdown (`profile`): the allocation that
/// runs it out goes to `sample::sampled`.
///
/// # Safety
///
/// `class < NUM_CLASSES` is the class of `size` (with an alignment of at most 16).
#[inline(always)]
pub(crate) unsafe fn alloc_cached(class: usize, size: usize) -> Option<*mut u8> {
    let tc = current();
    // SAFETY: `tc` is this thread's cache or the empty one; `class` is in range.
    let m = unsafe { ThreadCache::mag(tc, class) };
    // SAFETY: as above.
    unsafe { counted_pop(tc, m, size) }
}

/// The pop of a fast path from `tc`'s magazine `m`, with the sampling countdown: `None` when the
/// magazine is empty (the slow path then counts the allocation).
///
/// # Safety
///
/// `tc` is the calling thread's cache or the empty one (which never yields a block); `m` one of its
/// magazines, of a class whose blocks hold `size` bytes aligned to 16.
#[inline(always)]
unsafe fn counted_pop(tc: *mut ThreadCache, m: *mut Magazine, size: usize) -> Option<*mut u8> {
    // SAFETY: per the caller.
    let p = match unsafe { ThreadCache::pop_in(m) } {
        Popped::Hit(p) => p,
        // SAFETY: as above; a block was popped, so `tc` is live.
        Popped::Stale(p) => return Some(unsafe { stale_pop(tc, p, size) }),
        Popped::Empty => return None,
    };
    // SAFETY: `tc` is live (it yielded a block); `p` is a block of `size` bytes, not handed out yet.
    stat!(unsafe {
        (*tc).counters[class_at_mag_offset(m.byte_offset_from(tc) as u32)]
            .alloc_fast
            .bump()
    });
    // SAFETY: as above.
    if unsafe { ThreadCache::charge(tc, size) } {
        // SAFETY: as above.
        return Some(unsafe { sampled(tc, p, size, 16, false, 0) });
    }
    Some(p)
}

/// [`counted_pop`]'s way out when the magazine's `top` copy was stale: the rest of it, out of line, so
/// the fast path keeps nothing across a call.
///
/// # Safety
///
/// As for [`counted_pop`], with `tc` live and `p` the block popped.
#[cold]
#[inline(never)]
unsafe fn stale_pop(tc: *mut ThreadCache, p: *mut u8, size: usize) -> *mut u8 {
    // SAFETY: per the caller.
    unsafe {
        if ThreadCache::charge(tc, size) {
            return sampled(tc, p, size, 16, false, 0);
        }
    }
    p
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
    let tc = current_or_null();
    if tc.is_null() {
        return None;
    }
    // SAFETY: `tc` is this thread's live cache and `off` a magazine's offset in it, of a class whose
    // blocks hold `size` bytes aligned as `malloc`'s.
    unsafe { counted_pop(tc, ThreadCache::mag_at(tc, off), size) }
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
    if end != segment_end() {
        // SAFETY: forwarded.
        return unsafe { free_in_another_segment(p, end) };
    }
    // SAFETY: a remembered segment means a live cache (see `process::segment_end`); `end` is `p`'s segment's.
    unsafe { free_in_segment(current_or_null(), p, end) }
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
    let tc = current_or_null();
    // SAFETY: per the caller (`slab_segment` checks the map before reading a header).
    if tc.is_null() || unsafe { slab_segment(p) }.is_none() {
        // SAFETY: forwarded.
        return unsafe { free_unsized_slow(p) };
    }
    set_segment_end(end);
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
        // magazine is at `off`; whether it is free already is the key's check. The class is worked out
        // on each way out, not once before them: there, it would cost the push two instructions.
        unsafe {
            ThreadCache::push_keyed_in(tc, ThreadCache::mag_at(tc, off), p).settle(
                tc,
                class_at_mag_offset(off),
                || free_suspect(class_at_mag_offset(off), p),
                || free_slow(class_at_mag_offset(off), p),
            );
            return;
        }
    }
    // SAFETY: forwarded.
    unsafe { free_unsized_slow(p) }
}

/// The fast path of a sized free (`GlobalAlloc::dealloc`) of a small block: the push into the thread's
/// magazine of its class, the key's check, or the slow path when the magazine is full (or the thread has
/// the empty cache, which has room nowhere).
///
/// # Safety
///
/// `p` is a live block of `class` that the caller gives up: at least 8 bytes, aligned to 8.
#[inline(always)]
pub(crate) unsafe fn free_sized(class: usize, p: *mut u8) {
    if SEEN.load(Ordering::Relaxed) {
        // SAFETY: forwarded.
        return unsafe { free_sized_sampling(p) };
    }
    let tc = current();
    // SAFETY: `tc` is this thread's cache or the empty one (never room there, so debug mode and threads
    // without a cache take the slow path); `p` per the caller.
    unsafe {
        ThreadCache::push_keyed(tc, class, p).settle(
            tc,
            class,
            || free_suspect(class, p),
            || free_slow(class, p),
        )
    }
}

/// [`free_sized`] once a block has been sampled: `p` may be a sampled block (a large block of its own,
/// whatever its layout says), so it is freed as C's `free` frees it, from its address.
///
/// # Safety
///
/// As for [`free_sized`].
#[cold]
#[inline(never)]
unsafe fn free_sized_sampling(p: *mut u8) {
    // SAFETY: forwarded; a live block of this allocator.
    unsafe { free_unsized(p) }
}
