//! What a workload does to its blocks besides allocating and freeing them, which is each view's own: the
//! in-process view leaves them as the allocator handed them out ([`Bare`]); the C-ABI view writes and
//! reads their first word as a C program would ([`TaggedWord`]). A workload takes one as a type parameter,
//! so each view's timed loops do exactly what that view's own copy of the workload did.

use std::hint::black_box;

/// What a workload does to each block.
pub trait Touch {
    /// Called on each block a workload has just allocated; `tag` is a number the workload varies.
    ///
    /// # Safety
    ///
    /// `p` is a live block of at least 8 bytes, 8-byte aligned.
    unsafe fn fresh(p: *mut u8, tag: usize);

    /// Called instead of [`Touch::fresh`] on each of `random-churn`'s replacement blocks.
    ///
    /// # Safety
    ///
    /// As for [`Touch::fresh`].
    unsafe fn churned(p: *mut u8, tag: usize);

    /// A consumer thread's look at a block it is about to free; the consumers sum what it returns.
    ///
    /// # Safety
    ///
    /// As for [`Touch::fresh`], and the block went through [`Touch::fresh`].
    unsafe fn taken(p: *mut u8) -> usize;

    /// The pointer `lifo-100` frees, which nothing may have used: it must keep the optimiser from
    /// pairing the free with its allocation and dropping both.
    fn unused(p: *mut u8) -> *mut u8;
}

/// The in-process view: nothing written or read, except `random-churn`'s first byte of each replacement
/// block.
pub struct Bare;

impl Touch for Bare {
    #[inline(always)]
    unsafe fn fresh(_: *mut u8, _: usize) {}

    #[inline(always)]
    unsafe fn churned(p: *mut u8, tag: usize) {
        // SAFETY: per the caller, a live block of at least 8 bytes.
        unsafe { p.write(tag as u8) }
    }

    #[inline(always)]
    unsafe fn taken(_: *mut u8) -> usize {
        0
    }

    #[inline(always)]
    fn unused(p: *mut u8) -> *mut u8 {
        // Nothing touches the block, so only an opaque pointer keeps the pair (glibc's malloc and free,
        // which LLVM knows by name) from being optimised away.
        black_box(p)
    }
}

/// The C-ABI view: each block's first word written with the tag when allocated (as real programs write
/// what they allocate), and read by the thread that frees it in the cross-thread workloads.
pub struct TaggedWord;

impl Touch for TaggedWord {
    #[inline(always)]
    unsafe fn fresh(p: *mut u8, tag: usize) {
        // SAFETY: per the caller, at least 8 live bytes, aligned to 8.
        unsafe { p.cast::<usize>().write_volatile(tag) }
    }

    #[inline(always)]
    unsafe fn churned(p: *mut u8, tag: usize) {
        // SAFETY: the same contract as `fresh`.
        unsafe { Self::fresh(p, tag) }
    }

    #[inline(always)]
    unsafe fn taken(p: *mut u8) -> usize {
        // SAFETY: per the caller, at least 8 live bytes, aligned to 8, written by `fresh`.
        unsafe { p.cast::<usize>().read_volatile() }
    }

    #[inline(always)]
    fn unused(p: *mut u8) -> *mut u8 {
        // The tag write already uses the block.
        p
    }
}
