//! Where a workload's blocks come from: the one trait every allocator workload is generic over, and its
//! impl for each Rust `GlobalAlloc` (the in-process view). The C-ABI view's impl, the process's `malloc`
//! and `free`, is `cabi/malloc.rs`.
//!
//! The workloads are monomorphised for each impl, so the timed loops call the allocator as directly as
//! before there was a trait: no dynamic dispatch per operation.

use std::alloc::{GlobalAlloc, Layout};

/// The largest block a workload asks for; any size up to this, rounded up to 8, fits a `Layout`.
pub const MAX_BLOCK: usize = 1 << 30;

/// How a workload allocates and frees a block (at least 8-byte aligned).
pub trait Blocks: Sync {
    /// What `free` must be told of a block's size: its `Layout` for a Rust allocator; nothing (`()`) for
    /// C's `free`, which finds the size from the pointer. A workload keeps one beside each live block, so
    /// the C view's arrays of live blocks hold bare pointers, as a C program's would.
    type Size: Copy + Send + Sync;

    /// The [`Self::Size`] of a block of `bytes` bytes (at most [`MAX_BLOCK`]).
    fn size(bytes: usize) -> Self::Size;

    /// A block of `bytes` bytes.
    ///
    /// # Safety
    ///
    /// `bytes` is in `1..=MAX_BLOCK`.
    unsafe fn alloc(&self, bytes: usize) -> *mut u8;

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `p` came from this allocator's [`Blocks::alloc`] with the bytes `size` was made from, and is not
    /// used again.
    unsafe fn free(&self, p: *mut u8, size: Self::Size);
}

impl<A: GlobalAlloc + Sync> Blocks for A {
    type Size = Layout;

    #[inline(always)]
    fn size(bytes: usize) -> Layout {
        Layout::from_size_align(bytes, 8).unwrap()
    }

    #[inline(always)]
    unsafe fn alloc(&self, bytes: usize) -> *mut u8 {
        debug_assert!((1..=MAX_BLOCK).contains(&bytes));
        // SAFETY: 8 is a power of two and `bytes` (at most MAX_BLOCK, per the caller) rounded up to it is
        // far below isize::MAX; the size is non-zero, as GlobalAlloc::alloc asks.
        unsafe { GlobalAlloc::alloc(self, Layout::from_size_align_unchecked(bytes, 8)) }
    }

    #[inline(always)]
    unsafe fn free(&self, p: *mut u8, size: Layout) {
        // SAFETY: per the caller, `p` came from `alloc` with this layout's size, so with this layout.
        unsafe { GlobalAlloc::dealloc(self, p, size) }
    }
}
