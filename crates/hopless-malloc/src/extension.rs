//! hopless's own calls for C, declared in `include/hopless.h`: the batch calls, the usable size, trim,
//! huge pages and the counters, each a `hopless_` name over the [`Hopless`] API. The header is the
//! contract; each function here says how it keeps it.

use core::alloc::Layout;
use core::ffi::{c_char, c_int, c_void};
use core::ptr;

use hl::{Hopless, Stats};

use crate::malloc::{malloc_align, set_errno};

/// `struct hopless_stats` of `hopless.h`: one snapshot's totals. Fields are only ever added at the end,
/// so that a program built against an older, shorter struct still gets the fields it knows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HoplessStats {
    /// The bytes of the struct [`hopless_stats`] filled in.
    pub size: usize,
    /// Blocks handed to the program and not freed: small, medium and large.
    pub bytes_in_use: usize,
    /// Free blocks cached in threads' magazines.
    pub bytes_cached: usize,
    /// Everything held for blocks (`mallinfo2`'s `arena`).
    pub bytes_held: usize,
    /// The classes' slabs, and the free slabs the pools keep resident.
    pub slab_bytes: usize,
    pub free_slab_bytes: usize,
    /// Large blocks in use (bytes and blocks), free large pages kept, and the most bytes and blocks
    /// ever in use at once.
    pub large_bytes_in_use: usize,
    pub large_blocks_in_use: usize,
    pub large_cached_bytes: usize,
    pub large_peak_bytes: usize,
    pub large_peak_blocks: usize,
    /// Segments reserved, slabs purged back to the OS, thread caches made.
    pub segments: usize,
    pub purged_slabs: usize,
    pub thread_caches: usize,
    /// The memory limit (0: none), what counts against it, and the requests it refused.
    pub limit: usize,
    pub limit_held_bytes: usize,
    pub limit_refusals: usize,
}

impl HoplessStats {
    fn of(st: &Stats) -> Self {
        HoplessStats {
            size: core::mem::size_of::<Self>(),
            bytes_in_use: st.bytes_handed_out() as usize,
            bytes_cached: st.magazine_bytes() as usize,
            bytes_held: st.bytes_held() as usize,
            slab_bytes: st.slab_bytes() as usize,
            free_slab_bytes: st.free_slab_bytes as usize,
            large_bytes_in_use: st.large_bytes_in_use as usize,
            large_blocks_in_use: st.large_blocks_in_use() as usize,
            large_cached_bytes: st.large_cached_bytes as usize,
            large_peak_bytes: st.large_peak_bytes as usize,
            large_peak_blocks: st.large_peak_blocks as usize,
            segments: st.segments as usize,
            purged_slabs: st.purged_slabs as usize,
            thread_caches: st.thread_caches as usize,
            limit: st.limit.unwrap_or(0),
            limit_held_bytes: st.limit_held_bytes as usize,
            limit_refusals: st.limit_refusals as usize,
        }
    }
}

/// Allocates `n` blocks of `size` bytes (C's alignment, as `malloc`) into `out[0..n]`: from the
/// thread's magazine first, the rest in one lock hold per class. Returns how many; fewer than `n` only
/// when memory ran out (`errno` is then `ENOMEM`, and `out` past the count is unspecified). `size` 0
/// gives blocks of one byte, as `malloc(0)` does. A null `out` (with `n > 0`) or an `n` no array can
/// hold returns 0 with `EINVAL`.
#[no_mangle]
pub unsafe extern "C" fn hopless_malloc_batch(size: usize, out: *mut *mut c_void, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    if out.is_null() || n > isize::MAX as usize / core::mem::size_of::<*mut c_void>() {
        set_errno(libc::EINVAL);
        return 0;
    }
    let Ok(layout) = Layout::from_size_align(size.max(1), malloc_align(size)) else {
        set_errno(libc::ENOMEM);
        return 0;
    };
    // SAFETY: the caller gives `n` writable pointer slots at `out` (the C contract), not null, and
    // `n` pointers fit in an allocation's `isize::MAX` bytes (checked).
    let slots = unsafe { core::slice::from_raw_parts_mut(out.cast::<*mut u8>(), n) };
    let got = Hopless.alloc_batch(layout, slots);
    if got < n {
        set_errno(libc::ENOMEM);
    }
    got
}

/// Frees `blocks[0..n]`: each one as `free` would, so any mix of hopless blocks of any sizes (from
/// `hopless_malloc_batch` or any other allocation call), and null entries are skipped. The blocks of a
/// class go into the thread's magazine while it has room, then back to their slabs in batches, as a
/// run of frees does. (The Rust `free_batch` takes one layout for all; C blocks carry no layout, and
/// `free` reads the class from the slab.) A pointer that is not a live hopless block is reported and
/// stops the process, as in `free`. A null `blocks` frees nothing.
#[no_mangle]
pub unsafe extern "C" fn hopless_free_batch(blocks: *mut *mut c_void, n: usize) {
    if blocks.is_null() {
        return;
    }
    for i in 0..n {
        // SAFETY: the caller gives `n` readable pointers at `blocks`, each a live block given up (or
        // null); anything else is reported by the free.
        unsafe { Hopless::free(blocks.add(i).read().cast()) };
    }
}

/// The usable size of a block, as `malloc_usable_size`: 0 for null or a pointer hopless did not hand
/// out.
#[no_mangle]
pub unsafe extern "C" fn hopless_usable_size(p: *mut c_void) -> usize {
    // SAFETY: the same contract.
    unsafe { crate::malloc::malloc_usable_size(p) }
}

/// [`Hopless::trim`]: the calling thread's cache, every free slab and every cached large page back.
#[no_mangle]
pub extern "C" fn hopless_trim() {
    Hopless::trim();
}

/// [`Hopless::set_limit`]: the memory limit in bytes, 0 for none (`HOPLESS_LIMIT` sets it at start). An
/// allocation that would pass it fails with `ENOMEM` after a trim was tried.
#[no_mangle]
pub extern "C" fn hopless_set_limit(bytes: usize) {
    Hopless::set_limit((bytes != 0).then_some(bytes));
}

/// [`Hopless::limit`]: the memory limit in bytes, 0 for none.
#[no_mangle]
pub extern "C" fn hopless_limit() -> usize {
    Hopless::limit().unwrap_or(0)
}

/// `hopless::profile::start`: samples one allocation per `interval` bytes allocated on average (0: the
/// default, 512 KiB), from now on (`HOPLESS_PROF=1` does it at start).
#[no_mangle]
pub extern "C" fn hopless_prof_start(interval: usize) {
    hl::profile::start(if interval == 0 {
        hl::profile::DEFAULT_INTERVAL
    } else {
        interval
    });
}

/// `hopless::profile::stop`: no more samples; what was sampled stays.
#[no_mangle]
pub extern "C" fn hopless_prof_stop() {
    hl::profile::stop();
}

/// `hopless::profile::dump`: writes the heap profile to `path` (pprof's format); 0, or the error number
/// (also left in `errno`). Allocates nothing.
#[no_mangle]
pub unsafe extern "C" fn hopless_prof_dump(path: *const c_char) -> c_int {
    if path.is_null() {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    // SAFETY: per the caller, a NUL-terminated path.
    let path = unsafe { core::ffi::CStr::from_ptr(path) };
    match hl::profile::dump(path) {
        Ok(()) => 0,
        Err(e) => {
            set_errno(e.raw_os_error());
            e.raw_os_error()
        }
    }
}

/// [`Hopless::set_huge_pages`]: nonzero turns transparent huge pages on for what is reserved from now
/// on, zero turns them off.
#[no_mangle]
pub extern "C" fn hopless_set_huge_pages(on: c_int) {
    Hopless::set_huge_pages(on != 0);
}

/// Fills `out` with a snapshot's totals, at most `size` bytes of it (the caller's
/// `sizeof(struct hopless_stats)`), and sets `out->size` to the bytes filled, the smaller of `size` and
/// this library's struct: a program built against an older header gets its fields, one built against
/// a newer gets those this library knows (the rest left as they were). Returns the bytes filled; 0
/// (nothing written) for a null `out` or a `size` too small for the `size` field.
#[no_mangle]
pub unsafe extern "C" fn hopless_stats(out: *mut HoplessStats, size: usize) -> usize {
    if out.is_null() || size < core::mem::size_of::<usize>() {
        return 0;
    }
    let mut s = HoplessStats::of(&Hopless::stats());
    s.size = size.min(core::mem::size_of::<HoplessStats>());
    // SAFETY: the caller gives `size` writable bytes at `out`, a pointer aligned for the struct (the
    // C contract), and `s.size` is at most that; `s` is a distinct local.
    unsafe { ptr::copy_nonoverlapping((&raw const s).cast::<u8>(), out.cast::<u8>(), s.size) };
    s.size
}

/// [`Hopless::print_stats`]: the slabinfo-style table on stderr, without allocating.
#[no_mangle]
pub extern "C" fn hopless_print_stats() {
    Hopless::print_stats();
}
