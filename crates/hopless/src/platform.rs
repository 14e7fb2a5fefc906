//! The platform layer: where hopless gets pages from, and how it talks to the OS without allocating.
//!
//! Everything that makes a system call lives here, behind [`PageSource`]: the heap above it never calls
//! `mmap` itself. [`OsPages`] is the real source (anonymous `mmap`, `madvise(MADV_DONTNEED)`, `munmap`);
//! [`SystemPages`] serves the same contract from `std::alloc::System`, so the whole heap can run under Miri
//! or inside a test without touching the OS.

use core::ptr;

/// Page size the heap assumes for alignment of large blocks and of purges.
pub const PAGE_SIZE: usize = 4096;

/// Where the heap gets its memory.
///
/// # Safety
///
/// An implementation is called from inside the allocator, often while the caller holds one of its locks.
/// It must therefore never allocate through the global allocator (hopless may be it: a `println!`, a `Vec`
/// or a `Box` inside these methods re-enters the allocator and deadlocks or recurses), never panic, and
/// never call back into the heap. [`PageSource::reserve`] must return memory that is zero-filled, aligned
/// as asked, valid for reads and writes of `size` bytes and not handed out again until released.
pub unsafe trait PageSource: Sync {
    /// Returns `size` bytes aligned to `align` (a power of two, at least [`PAGE_SIZE`]; `size` a multiple
    /// of [`PAGE_SIZE`]), zero-filled; null when no memory can be had.
    fn reserve(&self, size: usize, align: usize) -> *mut u8;

    /// Gives a whole reservation back.
    ///
    /// # Safety
    ///
    /// `ptr`, `size` and `align` are exactly those of one earlier [`PageSource::reserve`] and nothing uses
    /// the range afterwards.
    unsafe fn release(&self, ptr: *mut u8, size: usize, align: usize);

    /// Returns the physical memory behind a page-aligned range inside a reservation; the range stays
    /// reserved and reads as zero afterwards.
    ///
    /// # Safety
    ///
    /// The range lies inside one reservation, is page-aligned, and nobody reads or writes it concurrently.
    unsafe fn decommit(&self, ptr: *mut u8, size: usize);

    /// Makes a page-aligned range inaccessible (a guard page; hardened mode). The default does nothing.
    ///
    /// # Safety
    ///
    /// The range lies inside one reservation, is page-aligned, and nothing will use it until released.
    unsafe fn protect(&self, _ptr: *mut u8, _size: usize) {}
}

/// Pages straight from the kernel: anonymous private mappings.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsPages;

// SAFETY: mmap/munmap/madvise are plain system calls that never allocate or panic; anonymous mappings are
// zero-filled and page-aligned, and `reserve` trims an over-sized mapping to the asked alignment.
unsafe impl PageSource for OsPages {
    fn reserve(&self, size: usize, align: usize) -> *mut u8 {
        let Some(len) = size.checked_add(align.saturating_sub(PAGE_SIZE)) else {
            return ptr::null_mut();
        };
        // SAFETY: an anonymous private mapping of `len` bytes at an address of the kernel's choosing has no
        // preconditions; the result is checked against MAP_FAILED.
        let raw = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return ptr::null_mut();
        }
        let raw = raw.cast::<u8>();
        if align <= PAGE_SIZE {
            return raw;
        }
        let addr = raw.addr();
        let aligned = (addr + align - 1) & !(align - 1);
        let head = aligned - addr;
        let tail = len - head - size;
        // SAFETY: `head` and `tail` are whole pages at the two ends of the mapping just made, outside the
        // aligned range that is returned; unmapping them cannot touch anything else.
        unsafe {
            if head != 0 {
                libc::munmap(raw.cast(), head);
            }
            if tail != 0 {
                libc::munmap(raw.add(head + size).cast(), tail);
            }
            raw.add(head)
        }
    }

    unsafe fn release(&self, ptr: *mut u8, size: usize, _align: usize) {
        // SAFETY: the caller guarantees this is one whole earlier reservation that nobody uses any more.
        unsafe {
            libc::munmap(ptr.cast(), size);
        }
    }

    unsafe fn decommit(&self, ptr: *mut u8, size: usize) {
        // SAFETY: the caller guarantees a page-aligned range inside a private anonymous mapping nobody is
        // using; MADV_DONTNEED drops its pages now, and they read as zero when touched again.
        unsafe {
            libc::madvise(ptr.cast(), size, libc::MADV_DONTNEED);
        }
    }

    unsafe fn protect(&self, ptr: *mut u8, size: usize) {
        // SAFETY: the caller guarantees a page-aligned range of our own mapping that nothing uses.
        unsafe {
            libc::mprotect(ptr.cast(), size, libc::PROT_NONE);
        }
    }
}

/// Pages from `std::alloc::System`, for tests and for Miri, which cannot run `mmap`.
///
/// Decommit writes zeroes, so the heap sees the same contract as with [`OsPages`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemPages;

// SAFETY: `System` is the platform allocator, never the global allocator hopless may be; alloc_zeroed gives
// zeroed, aligned memory; decommit writes zeroes as the contract says.
unsafe impl PageSource for SystemPages {
    fn reserve(&self, size: usize, align: usize) -> *mut u8 {
        use std::alloc::{GlobalAlloc, Layout, System};
        match Layout::from_size_align(size, align) {
            // SAFETY: the layout has a non-zero size (callers reserve whole pages).
            Ok(layout) if size != 0 => unsafe { System.alloc_zeroed(layout) },
            _ => ptr::null_mut(),
        }
    }

    unsafe fn release(&self, ptr: *mut u8, size: usize, align: usize) {
        use std::alloc::{GlobalAlloc, Layout, System};
        if let Ok(layout) = Layout::from_size_align(size, align) {
            // SAFETY: the caller passes the pointer and the very size and alignment it was reserved with.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn decommit(&self, ptr: *mut u8, size: usize) {
        // SAFETY: the caller guarantees the range is inside one live reservation and unused.
        unsafe { ptr::write_bytes(ptr, 0, size) }
    }
}

/// Writes all of `bytes` to standard error with raw `write(2)` calls: no buffer, no lock, no allocation.
pub fn write_stderr(bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: `rest` is a valid readable slice for its length.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// Stops the process at once, so a core dump keeps the stack of the fault.
pub fn abort() -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}

/// Gives the rest of the time slice away (used by the spin lock when the holder seems preempted).
#[inline]
pub fn yield_now() {
    std::thread::yield_now();
}
