//! [`Hopless`] where hopless's heap does not run (anything but Linux on x86-64 or aarch64: macOS,
//! Windows, the BSDs, wasm, 32-bit Linux): every call goes to the system allocator
//! (`std::alloc::System`), so a program that names `Hopless` as its global allocator builds and runs
//! there unchanged, with the system's speed and behaviour. [`Hopless::is_native`] says which it got.
//!
//! Only the calls that carry a [`Layout`] are here: `GlobalAlloc`, `Allocator` and the batch calls. The
//! C-style calls without one (`free`, `usable_size`, `realloc_unsized`, `alloc_bytes`, `owns`, ...) are
//! what `libhopless.so` is built from; they exist where the heap runs, so a program that uses them fails
//! to build elsewhere instead of handing the system allocator a pointer it cannot free.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use std::alloc::System;

use allocator_api2::alloc::AllocError;

use crate::stats::Stats;

/// The hopless allocator. On this target it forwards every call to the system allocator (see
/// [`Hopless::is_native`]).
///
/// ```
/// #[global_allocator]
/// static GLOBAL: hopless::Hopless = hopless::Hopless;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hopless;

impl Hopless {
    /// Whether hopless's own heap serves this program: true on Linux for x86-64 and aarch64; false
    /// here, where every call goes to the system allocator.
    pub const fn is_native() -> bool {
        false
    }

    /// Allocates `out.len()` blocks of one layout; returns how many were allocated (fewer than asked
    /// only when memory ran out). A zero-size layout fills `out` with dangling, aligned pointers.
    pub fn alloc_batch(&self, layout: Layout, out: &mut [*mut u8]) -> usize {
        if layout.size() == 0 {
            out.fill(core::ptr::without_provenance_mut(layout.align()));
            return out.len();
        }
        for (i, o) in out.iter_mut().enumerate() {
            // SAFETY: non-zero size.
            *o = unsafe { System.alloc(layout) };
            if o.is_null() {
                return i;
            }
        }
        out.len()
    }

    /// Frees blocks allocated with `layout`.
    ///
    /// # Safety
    ///
    /// Every pointer was allocated by this allocator with `layout` and is not used afterwards.
    pub unsafe fn free_batch(&self, layout: Layout, blocks: &[*mut u8]) {
        if layout.size() == 0 {
            return;
        }
        for &p in blocks {
            // SAFETY: per the caller, a live block of `layout` from the system allocator.
            unsafe { System.dealloc(p, layout) };
        }
    }

    /// Writes the statistics table to stderr (all zero here: the system allocator keeps no counters
    /// hopless can read).
    pub fn print_stats() {
        eprint!("{}", Self::stats());
    }

    /// Writes one line describing the allocator's configuration to stderr.
    pub fn print_config() {
        eprintln!(
            "hopless: forwarding to the system allocator (hopless's heap runs on Linux for x86-64 and \
             aarch64)"
        );
    }

    /// Nothing to do: the system allocator has no hopless thread cache.
    pub fn flush_thread_cache() {}

    /// Nothing to do: the system allocator gives memory back on its own terms.
    pub fn trim() {}

    /// The system allocator chooses its own pages: nothing to do.
    pub fn set_huge_pages(_on: bool) {}

    /// A snapshot of the counters: all zero here.
    pub fn stats() -> Stats {
        Stats::default()
    }
}

// SAFETY: every call is the system allocator's, with the caller's own arguments.
unsafe impl GlobalAlloc for Hopless {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(p, layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { System.realloc(p, layout, new_size) }
    }
}

// SAFETY: zero-size requests get a dangling aligned pointer and never reach the system allocator; the
// rest are its own blocks, of the layout asked.
unsafe impl allocator_api2::alloc::Allocator for Hopless {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            let p = NonNull::<u8>::dangling().with_addr(layout.align().try_into().map_err(|_| AllocError)?);
            return Ok(NonNull::slice_from_raw_parts(p, 0));
        }
        // SAFETY: non-zero size.
        let p = unsafe { System.alloc(layout) };
        NonNull::new(p)
            .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
            .ok_or(AllocError)
    }

    #[inline]
    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return self.allocate(layout);
        }
        // SAFETY: non-zero size.
        let p = unsafe { System.alloc_zeroed(layout) };
        NonNull::new(p)
            .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
            .ok_or(AllocError)
    }

    #[inline]
    unsafe fn deallocate(&self, p: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: per the Allocator contract, `p` is a live block of `layout`, so the system's.
            unsafe { System.dealloc(p.as_ptr(), layout) }
        }
    }
}

/// Sets the checked modes: there are none here (they are the heap's), so always false.
pub fn set_mode(_debug: bool, _hardened: bool) -> bool {
    false
}

// Built and run on the native targets too (`lib.rs` compiles this file there under test), so the
// forwarding code is exercised where CI can run it.
/// Heap profiling where hopless's heap does not run: nothing is sampled, and a dump says so.
pub mod profile {
    use core::ffi::CStr;

    /// Does nothing here (the system allocator serves every call).
    pub fn start(_bytes: usize) {}

    /// Does nothing here.
    pub fn stop() {}

    /// Always false here.
    pub fn is_active() -> bool {
        false
    }

    /// The mean sampling interval hopless's heap would use.
    pub fn interval() -> usize {
        512 << 10
    }

    /// Fails here: there is no profile to write.
    pub fn dump(_path: &CStr) -> Result<(), DumpError> {
        Err(DumpError(38)) // ENOSYS on Linux; a number that means "not supported" elsewhere too
    }

    /// Why [`dump`] failed: an OS error number.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DumpError(i32);

    impl DumpError {
        /// The OS's error number.
        pub fn raw_os_error(&self) -> i32 {
            self.0
        }
    }

    impl core::fmt::Display for DumpError {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(
                f,
                "no heap profile here: hopless forwards to the system allocator"
            )
        }
    }

    impl core::error::Error for DumpError {}
}

#[cfg(test)]
mod tests {
    use super::Hopless;
    use allocator_api2::alloc::Allocator;
    use core::alloc::{GlobalAlloc, Layout};

    #[test]
    fn blocks_round_trip_through_the_system_allocator() {
        for (size, align) in [(1usize, 1usize), (24, 8), (100, 64), (5000, 4096), (70_000, 16)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero sizes; every block is freed with its layout.
            unsafe {
                let p = Hopless.alloc_zeroed(layout);
                assert!(!p.is_null() && p.addr() % align == 0);
                assert!(core::slice::from_raw_parts(p, size).iter().all(|&b| b == 0));
                p.write_bytes(0xab, size);
                let q = Hopless.realloc(p, layout, size * 2);
                assert!(!q.is_null() && q.addr() % align == 0 && q.read() == 0xab);
                Hopless.dealloc(q, Layout::from_size_align(size * 2, align).unwrap());
            }
            let b = Hopless.allocate(layout).unwrap();
            // SAFETY: allocated just above with `layout`.
            unsafe { Hopless.deallocate(b.cast(), layout) };
        }
        let zst = Hopless.allocate(Layout::from_size_align(0, 32).unwrap()).unwrap();
        assert_eq!(zst.cast::<u8>().as_ptr().addr(), 32);
    }

    #[test]
    fn batches_and_the_rest_of_the_face() {
        assert!(!Hopless::is_native());
        let layout = Layout::from_size_align(48, 16).unwrap();
        let mut blocks = [core::ptr::null_mut(); 20];
        assert_eq!(Hopless.alloc_batch(layout, &mut blocks), 20);
        assert!(blocks.iter().all(|p| !p.is_null() && p.addr() % 16 == 0));
        // SAFETY: the batch just allocated with `layout`.
        unsafe { Hopless.free_batch(layout, &blocks) };
        Hopless::trim();
        Hopless::set_huge_pages(true);
        Hopless::flush_thread_cache();
        Hopless::print_config();
        Hopless::print_stats();
        assert_eq!(Hopless::stats().bytes_in_use(), 0);
        assert!(!super::set_mode(true, false));
    }

    #[test]
    fn no_profile_where_the_system_allocator_serves() {
        use super::profile;
        profile::start(1);
        assert!(!profile::is_active());
        assert_eq!(profile::interval(), 512 << 10);
        let e = profile::dump(c"/nonexistent/profile").unwrap_err();
        assert_eq!(e.raw_os_error(), 38);
        assert!(e.to_string().contains("system allocator"));
        profile::stop();
    }
}
