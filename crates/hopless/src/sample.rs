//! The sampled allocation: what happens when an allocation runs its thread's sampling countdown out
//! (see `profile`). Out of line and `#[cold]`: with the default interval, one allocation in every
//! 512 KiB allocated comes here.
//!
//! The stack is walked first, with the thread marked (`ThreadCache::sampling`), so that whatever the
//! unwinder allocates is served as usual and not sampled again; no allocator lock is held meanwhile.
//! A large block is sampled where it is: its header names its record. Any other block is given back and
//! replaced by a large block of its own, so that its free can find its record without a lookup (a slab
//! block's free never reads more than its slab's header, and the C free's fast path takes only slab
//! blocks).

use crate::address::{locate, Located};
use crate::cache::ThreadCache;
use crate::platform::unwind;
use crate::process::HEAP;
use crate::profile;
use crate::segment::SegmentHeader;

/// `p`, just allocated through `tc` (`size` bytes aligned to `align`, zeroed if `zeroed`), ran the
/// thread's countdown out: draws the next count and, while profiling is on, samples the allocation.
/// Returns the block the program gets: `p` itself (a large block, now sampled; or no sample taken),
/// or a large block of its own, sampled, holding `p`'s first `keep` bytes (a realloc's contents),
/// with `p` freed. With `p` null (the C fast path samples before it takes a block), null means
/// "no sample taken: allocate the usual way".
///
/// # Safety
///
/// `tc` is the calling thread's live cache; `p` is null or a live block of this heap that the caller
/// owns and has not handed out yet, of at least `max(size, keep)` bytes (`keep` is 0 when `p` is
/// null).
#[cold]
#[inline(never)]
pub(crate) unsafe fn sampled(
    tc: *mut ThreadCache,
    p: *mut u8,
    size: usize,
    align: usize,
    zeroed: bool,
    keep: usize,
) -> *mut u8 {
    // SAFETY: per the caller, fields only this thread touches.
    unsafe {
        (*tc).sample_left = profile::next_countdown(&mut (*tc).sample_rng);
        if !profile::active() || (*tc).sampling {
            return p;
        }
        (*tc).sampling = true;
    }
    let mut frames = [0usize; profile::table::MAX_DEPTH];
    // This function's frame is left out: the stack starts at its caller.
    let n = unwind::walk(&mut frames, 1);
    let frames = frames.get(..n).unwrap_or_default();
    // SAFETY: per the caller.
    let q = unsafe { take(tc, p, size, align, zeroed, keep, frames) };
    // SAFETY: as above.
    unsafe { (*tc).sampling = false };
    q
}

/// The rest of [`sampled`], once the stack is known.
///
/// # Safety
///
/// As for [`sampled`].
unsafe fn take(
    tc: *mut ThreadCache,
    p: *mut u8,
    size: usize,
    align: usize,
    zeroed: bool,
    keep: usize,
    frames: &[usize],
) -> *mut u8 {
    if let (false, Located::Large(seg)) = (p.is_null(), locate(p)) {
        // SAFETY: `p` is a live large block (per the caller), `seg` its header.
        unsafe { name_sample(seg, frames, size) };
        return p;
    }
    let q = HEAP.alloc_own_block(size.max(keep), align, zeroed);
    let Located::Large(seg) = locate(q) else {
        return p; // no memory for it (or past the limit): not sampled
    };
    // SAFETY: `q` is a new large block of at least `max(size, keep)` bytes, `seg` its header; `p`
    // is null or holds `keep` bytes and is the caller's to give up, through the thread's own cache.
    unsafe {
        name_sample(seg, frames, size);
        if !p.is_null() {
            core::ptr::copy_nonoverlapping(p, q, keep);
            HEAP.free_ptr(tc, p);
        }
    }
    q
}

/// Remembers a large block as sampled, in place of what its header named before (a realloc in place).
///
/// # Safety
///
/// `seg` is the header of a live large block that the caller owns.
unsafe fn name_sample(seg: *mut SegmentHeader, frames: &[usize], size: usize) {
    let id = profile::remember(frames, size);
    // SAFETY: per the caller.
    unsafe {
        let old = (*seg).sample;
        (*seg).sample = id;
        if old != 0 {
            profile::forget(old);
        }
    }
}
