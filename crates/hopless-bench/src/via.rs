//! `Via<G>`: any `GlobalAlloc` (glibc's `System`, jemalloc, mimalloc) as an `allocator_api2` allocator,
//! so the store can allocate every byte through the allocator under test.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

#[derive(Clone, Copy, Debug, Default)]
pub struct Via<G>(pub G);

// SAFETY: forwards to the GlobalAlloc, whose blocks satisfy the layouts asked for; zero-size requests get a
// dangling aligned pointer and are never passed on.
unsafe impl<G: GlobalAlloc> Allocator for Via<G> {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            let p = NonNull::new(std::ptr::without_provenance_mut(layout.align())).ok_or(AllocError)?;
            return Ok(NonNull::slice_from_raw_parts(p, 0));
        }
        // SAFETY: non-zero size.
        let p = unsafe { self.0.alloc(layout) };
        NonNull::new(p)
            .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
            .ok_or(AllocError)
    }

    #[inline]
    unsafe fn deallocate(&self, p: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: per the Allocator contract, `p` came from `allocate(layout)`.
            unsafe { self.0.dealloc(p.as_ptr(), layout) }
        }
    }
}

impl<G: GlobalAlloc + Clone + Send + Sync + 'static> hopless_kv::KvAlloc for Via<G> {}

/// mimalloc's `GlobalAlloc`, copyable (the crate's `MiMalloc` is not `Clone`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Mimalloc;

// SAFETY: forwards every call to mimalloc's own GlobalAlloc impl.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { mimalloc::MiMalloc.alloc(l) }
    }
    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded contract.
        unsafe { mimalloc::MiMalloc.dealloc(p, l) }
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(l) }
    }
    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { mimalloc::MiMalloc.realloc(p, l, n) }
    }
}
