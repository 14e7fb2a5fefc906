//! Every slow path of the process allocator, out of line and `#[cold]`: a thread's first operation
//! (its cache set up), an empty or full magazine, a free whose key needs a look, sizes and alignments
//! the fast path does not take, and the checked modes (debug, hardened), which the fast path always
//! falls through to.

use core::ptr;

use crate::address::{locate, Located};
use crate::cache::ThreadCache;
use crate::process::background;
use crate::process::{
    current, current_or_null, empty, for_each_cache_of_thread, hardened_cache_of_thread, process_init,
    register_exit, retired, set_current, set_hardened_cache, HEAP,
};

/// The calling thread's cache, set up on first use; null when the thread has no cache (past its exit
/// destructor, or out of memory): callers then go straight to the central heap.
#[cold]
#[inline(never)]
pub(crate) fn cache_or_init() -> *mut ThreadCache {
    let tc = current();
    if tc != empty() {
        return tc;
    }
    if retired() {
        return ptr::null_mut();
    }
    // The checked modes keep every thread on the empty cache, so every operation reaches a checked path.
    if crate::mode::checked() {
        return ptr::null_mut();
    }
    process_init();
    let tc = HEAP.new_thread_cache(crate::platform::current_tid());
    if tc.is_null() {
        return tc;
    }
    // SAFETY: a cache just handed to this thread alone.
    unsafe { start_countdown(tc) };
    // Published before the exit hook is registered: `pthread_setspecific` allocates for keys past the
    // first 32, and that allocation must find this cache rather than set up another one.
    set_current(tc);
    register_exit(tc);
    tc
}

/// Seeds a new holder's sampling generator and draws its first countdown (see `profile`), so that a
/// thread's first allocation is not sampled by default and no two threads draw alike.
///
/// # Safety
///
/// `tc` is a live cache the calling thread has just taken.
unsafe fn start_countdown(tc: *mut ThreadCache) {
    // SAFETY: per the caller, fields only this thread touches.
    unsafe {
        (*tc).sample_rng ^= (tc.addr() as u64)
            ^ ((crate::platform::current_tid() as u64) << 32)
            ^ crate::platform::process_random() as u64;
        (*tc).sample_left = crate::profile::next_countdown(&mut (*tc).sample_rng);
    }
}

/// Hardened mode: the calling thread's cache for the checked paths, set up on first use; null past the
/// thread's exit destructor or out of memory (the checked paths then go uncached).
#[cold]
pub(crate) fn hardened_cache() -> *mut ThreadCache {
    let tc = hardened_cache_of_thread();
    if !tc.is_null() || retired() {
        return tc;
    }
    process_init();
    let tc = HEAP.new_thread_cache(crate::platform::current_tid());
    if tc.is_null() {
        return tc;
    }
    // Published first, as in `cache_or_init`.
    set_hardened_cache(tc);
    register_exit(tc);
    tc
}

/// A checked mode's allocation (debug or hardened), or `None` when neither is on.
#[inline]
pub(crate) fn checked_alloc(size: usize, align: usize, zeroed: bool) -> Option<*mut u8> {
    let mode = crate::mode::mode();
    if mode & crate::mode::DEBUG != 0 {
        Some(HEAP.debug_alloc(size, align, zeroed))
    } else if mode & crate::mode::HARDENED != 0 {
        // SAFETY: the cache is this thread's or null.
        Some(unsafe { HEAP.hardened_alloc(hardened_cache(), size, align, zeroed) })
    } else {
        None
    }
}

/// A checked mode's free; false (nothing done) when neither mode is on.
///
/// # Safety
///
/// `p` is the program's claim of a live block (anything else is reported).
#[inline]
pub(crate) unsafe fn checked_free(p: *mut u8) -> bool {
    if !crate::mode::checked_on() {
        return false;
    }
    // SAFETY: both check everything they are given; the cache is this thread's or null.
    unsafe {
        if crate::mode::debug_on() {
            HEAP.debug_free(p);
        } else {
            HEAP.hardened_free(hardened_cache(), p);
        }
    }
    true
}

/// A checked mode's realloc, or `None` when neither is on. Debug mode never resizes in place: the old
/// block is checked and poisoned. `old_size` is the block's size when the caller knows it (a
/// `GlobalAlloc` layout); without it, the debug header tells, and a pointer that is not hopless's copies
/// nothing and is reported by the free.
///
/// # Safety
///
/// `p` is the program's claim of a live block (anything else is reported); `new_size > 0`; `align` a
/// power of two.
#[inline]
pub(crate) unsafe fn checked_realloc(
    p: *mut u8,
    old_size: Option<usize>,
    new_size: usize,
    align: usize,
) -> Option<*mut u8> {
    if !crate::mode::checked_on() {
        return None;
    }
    if !crate::mode::debug_on() {
        // SAFETY: per the caller (anything else is reported); the cache is this thread's or null.
        return Some(unsafe { HEAP.hardened_realloc(hardened_cache(), p, new_size, align) });
    }
    let old = match old_size {
        Some(n) => n,
        // SAFETY: a hopless block, live per the caller.
        None if !matches!(locate(p), Located::Foreign) => unsafe { HEAP.debug_size(p) },
        None => 0,
    };
    let q = HEAP.debug_alloc(new_size, align, false);
    if !q.is_null() {
        // SAFETY: both blocks hold min(old, new) bytes; `p` is given up.
        unsafe {
            core::ptr::copy_nonoverlapping(p, q, old.min(new_size));
            HEAP.debug_free(p);
        }
    }
    Some(q)
}

/// The magazine was empty (or this thread has no cache yet).
///
/// # Safety
///
/// `class` is the class of (`size`, `align`), a valid non-zero-size layout.
#[cold]
#[inline(never)]
pub(crate) unsafe fn alloc_slow(class: usize, size: usize, align: usize) -> *mut u8 {
    process_init();
    let take = || {
        if let Some(p) = checked_alloc(size, align, false) {
            return p;
        }
        // SAFETY: the cache is this thread's or null.
        unsafe { HEAP.take_block(cache_or_init(), class) }
    };
    let p = take();
    if p.is_null() {
        return again_after_trim(take);
    }
    background::start_if_due();
    // SAFETY: `p` is a new block of `size` bytes aligned to `align`, not handed out yet.
    unsafe { charge(p, size, align, false) }
}

/// Takes a slow path's allocation of `size` bytes off the thread's sampling countdown, and samples it
/// if that runs it out (see `sample`). Threads without a cache (the checked modes) are not sampled.
///
/// # Safety
///
/// `p` is null or a new block of this heap of `size` bytes aligned to `align` (zeroed if `zeroed`),
/// not handed out yet.
#[inline]
unsafe fn charge(p: *mut u8, size: usize, align: usize, zeroed: bool) -> *mut u8 {
    let tc = current_or_null();
    if p.is_null() || tc.is_null() {
        return p;
    }
    // SAFETY: `tc` is this thread's live cache; `p` per the caller.
    unsafe {
        if ThreadCache::charge(tc, size) {
            return crate::sample::sampled(tc, p, size, align, zeroed, 0);
        }
    }
    p
}

/// An allocation failed: under a memory limit, the calling thread's cached blocks go back to their
/// slabs, every free slab and cached mapping back to the OS (what `trim` does), and `alloc` runs once
/// more. Null without a limit (the page source itself had no memory; a trim frees no address space).
#[cold]
#[inline(never)]
pub(crate) fn again_after_trim(alloc: impl Fn() -> *mut u8) -> *mut u8 {
    if !crate::limit::is_set() {
        return ptr::null_mut();
    }
    // SAFETY: the thread's own live caches; no lock is held here (an allocation that failed has
    // released everything it took).
    for_each_cache_of_thread(|tc| unsafe { HEAP.flush_all(tc) });
    HEAP.trim();
    alloc()
}

/// The magazine was full (or this thread has no cache yet, or debug mode is on). The block's free key
/// has not been written.
///
/// # Safety
///
/// `p` is a live block of `class` that the caller gives up.
#[cold]
#[inline(never)]
pub(crate) unsafe fn free_slow(class: usize, p: *mut u8) {
    process_init();
    // SAFETY: forwarded; the checked modes check everything.
    if unsafe { checked_free(p) } {
        return;
    }
    // SAFETY: the caller frees a block of `class`; the cache is this thread's or null.
    unsafe { HEAP.free_checked(cache_or_init(), class, p) };
    background::poke();
}

/// The block's first word is a free key for another place (see `cache::free_key`).
///
/// # Safety
///
/// As for [`free_slow`].
#[cold]
#[inline(never)]
pub(crate) unsafe fn free_suspect(class: usize, p: *mut u8) {
    // SAFETY: forwarded; the cache is this thread's (the fast path found room in it).
    unsafe { HEAP.free_suspect(current(), class, p) }
}

/// A free without its size that `fast::free_unsized` did not take: null, a thread without a cache (its
/// first operation, past its exit, or a checked mode), a large block, or a pointer to check in full and
/// report.
///
/// # Safety
///
/// As for `fast::free_unsized`.
#[cold]
#[inline(never)]
pub(crate) unsafe fn free_unsized_slow(p: *mut u8) {
    if p.is_null() {
        return;
    }
    let mut tc = current_or_null();
    if tc.is_null() {
        // SAFETY: the checked modes check everything they are given.
        if unsafe { checked_free(p) } {
            return;
        }
        tc = cache_or_init();
    }
    // SAFETY: per the caller; `tc` is this thread's live cache or null.
    unsafe { HEAP.free_ptr(tc, p) };
    background::poke();
}

/// Everything the fast path does not take: alignment over 16, sizes over 4 KiB.
///
/// # Safety
///
/// `size > 0` and `align` a power of two (a valid layout).
#[cold]
#[inline(never)]
pub(crate) unsafe fn alloc_general(size: usize, align: usize, zeroed: bool) -> *mut u8 {
    process_init();
    let take = || {
        if let Some(p) = checked_alloc(size, align, zeroed) {
            return p;
        }
        // SAFETY: the cache is this thread's or null; size > 0 and align is a power of two (from a
        // Layout).
        unsafe { HEAP.alloc(cache_or_init(), size, align, zeroed) }
    };
    let mut p = take();
    if p.is_null() {
        p = again_after_trim(take);
    }
    background::start_if_due();
    // SAFETY: `p` is null or a new block of `size` bytes aligned to `align`, not handed out yet.
    unsafe { charge(p, size, align, zeroed) }
}
