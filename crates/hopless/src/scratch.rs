//! Stack buffers that a slow path writes before it reads them, left unzeroed.
//!
//! A refill and a flush each move up to [`BATCH_MAX`](crate::size_class::BATCH_MAX) block pointers (1 KiB)
//! through a buffer on the stack, and a flush keeps one more for the slabs it hands back to purge.
//! Zeroed first (`[ptr::null_mut(); BATCH_MAX]`), each cost a 1 KiB `memset` per batch: 2.4% of the
//! instructions of a working set of 1 600 blocks of one size, whose every block goes through a refill
//! and a flush. These buffers start unwritten, and only what was written is read.

use core::mem::MaybeUninit;

/// A buffer of `N` unwritten `T`s.
#[inline(always)]
pub const fn buffer<T, const N: usize>() -> [MaybeUninit<T>; N] {
    [const { MaybeUninit::uninit() }; N]
}

/// The first `n` entries of `buf` (all of it if `n` is larger).
///
/// # Safety
///
/// Each of those entries was written.
#[inline(always)]
pub unsafe fn written<T>(buf: &[MaybeUninit<T>], n: usize) -> &[T] {
    let n = n.min(buf.len());
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and the first `n <= buf.len()` entries are
    // initialized (per the caller); the slice borrows `buf`.
    unsafe { core::slice::from_raw_parts(buf.as_ptr().cast::<T>(), n) }
}

/// A slice of `T`s to write into, seen as a buffer.
///
/// # Safety
///
/// Whoever writes through the result writes only initialized `T`s (`MaybeUninit::write`), never
/// `MaybeUninit::uninit()`: the slice stays initialized for its owner.
#[inline(always)]
pub unsafe fn as_buffer<T: Copy>(s: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: same layout; the result borrows `s` mutably for its lifetime; per the caller, nothing
    // uninitialized is written through it.
    unsafe { core::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<MaybeUninit<T>>(), s.len()) }
}
