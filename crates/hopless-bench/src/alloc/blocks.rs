//! Where a workload's blocks come from: the one trait every allocator workload is generic over, and its
//! impl for each Rust `GlobalAlloc` (the in-process view). The C-ABI view's impl, the process's `malloc`
//! and `free`, is `cabi/malloc.rs`.
//!
//! The workloads are monomorphised for each impl, so the timed loops call the allocator as directly as
//! before there was a trait: no dynamic dispatch per operation.

use std::alloc::{GlobalAlloc, Layout};

/// How a workload allocates and frees a block (8-byte aligned, at least).
pub trait Blocks: Sync {
    /// What `alloc` is asked for: a `Layout` for a Rust allocator, the byte count for C's `malloc`. The
    /// workloads that hide the request from the optimiser hide this, so each view hides what it always
    /// did.
    type Request: Copy + Send + Sync;

    /// What `free` must be told of a block's size: its `Layout` for a Rust allocator; nothing (`()`) for
    /// C's `free`, which finds the size from the pointer. A workload keeps one beside each live block, so
    /// the C view's arrays of live blocks hold bare pointers, as a C program's would.
    type Size: Copy + Send + Sync;

    /// The request for a block of `bytes` bytes.
    fn request(bytes: usize) -> Self::Request;

    /// The [`Self::Size`] of a block of `bytes` bytes.
    fn size(bytes: usize) -> Self::Size;

    /// A block, as `request` asks.
    ///
    /// # Safety
    ///
    /// The request is for a non-zero number of bytes.
    unsafe fn alloc(&self, request: Self::Request) -> *mut u8;

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `p` came from this allocator's [`Blocks::alloc`] for the bytes `size` was made from, and is not
    /// used again.
    unsafe fn free(&self, p: *mut u8, size: Self::Size);
}

impl<A: GlobalAlloc + Sync> Blocks for A {
    type Request = Layout;
    type Size = Layout;

    #[inline(always)]
    fn request(bytes: usize) -> Layout {
        Layout::from_size_align(bytes, 8).unwrap()
    }

    #[inline(always)]
    fn size(bytes: usize) -> Layout {
        Layout::from_size_align(bytes, 8).unwrap()
    }

    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: per the caller, a non-zero size.
        unsafe { GlobalAlloc::alloc(self, layout) }
    }

    #[inline(always)]
    unsafe fn free(&self, p: *mut u8, layout: Layout) {
        // SAFETY: per the caller, `p` came from `alloc` with this layout.
        unsafe { GlobalAlloc::dealloc(self, p, layout) }
    }
}
