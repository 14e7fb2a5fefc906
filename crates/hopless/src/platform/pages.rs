//! The page sources: [`OsPages`], straight from the kernel (anonymous `mmap`, `madvise(MADV_DONTNEED)`,
//! `munmap`, the huge-page advice the policy in `huge.rs` decides), and [`SystemPages`], the same
//! contract from the C library's allocator, for tests and Miri.

use core::ptr;

use super::huge::{self, huge_page_size};
use super::os::keeping_errno;
use super::source::{os_page_size, PageSource, Reservation};
use super::threads::thread_alive;

/// An anonymous private mapping of `len` bytes; null on failure. Not `MAP_NORESERVE`: the kernel's
/// overcommit check then refuses a request the machine can never back (`malloc(16 TiB)` fails with
/// `ENOMEM`, as with glibc), while untouched pages still cost no memory.
fn map(len: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing has no preconditions;
    // the result is checked against MAP_FAILED.
    let raw = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        raw.cast()
    }
}

/// Unmaps a range; when the kernel refuses (it can, with `ENOMEM`, when unmapping would split a mapping
/// past `vm.max_map_count`), at least gives its memory back.
///
/// # Safety
///
/// The range is page-aligned, lies inside mappings hopless made, and nothing uses it any more.
unsafe fn unmap(ptr: *mut u8, len: usize) {
    // SAFETY: per the caller.
    unsafe {
        if libc::munmap(ptr.cast(), len) != 0 {
            libc::madvise(ptr.cast(), len, libc::MADV_DONTNEED);
        }
    }
}

/// Maps `size + slack` bytes and trims them to `size` bytes whose `base + offset` is aligned to `align`.
/// Lengths are in the kernel's pages: `size` is rounded up to one (the kernel would round the mapping
/// anyway, and `munmap` of the reservation's `size` later rounds the same way), so the trims at either
/// end are whole pages of any page size.
fn map_aligned(size: usize, align: usize, offset: usize) -> *mut u8 {
    let page = os_page_size();
    let Some(size) = size.checked_next_multiple_of(page) else {
        return ptr::null_mut();
    };
    let Some(len) = size.checked_add(align.saturating_sub(page)) else {
        return ptr::null_mut();
    };
    if len > isize::MAX as usize {
        return ptr::null_mut();
    }
    let raw = map(len);
    if raw.is_null() || align <= page {
        return raw;
    }
    if offset % page != 0 {
        // The trims would not be whole pages (the only caller passes the 4 MiB segment size).
        // SAFETY: the mapping just made, unused.
        unsafe { unmap(raw, len) };
        return ptr::null_mut();
    }
    let addr = raw.addr();
    let target = (addr.wrapping_add(offset).wrapping_add(align - 1)) & !(align - 1);
    let head = target.wrapping_sub(offset).wrapping_sub(addr);
    if head > len - size {
        // Cannot happen (offset is a multiple of the page, so some base in the slack fits).
        // SAFETY: the mapping just made, unused.
        unsafe { unmap(raw, len) };
        return ptr::null_mut();
    }
    let tail = len - head - size;
    // SAFETY: `head` and `tail` are whole pages at the two ends of the mapping just made, outside the
    // range that is returned. If the kernel refuses a trim, the whole mapping goes back and the
    // reservation fails, rather than leaving pages nobody would ever release.
    unsafe {
        if head != 0 && libc::munmap(raw.cast(), head) != 0 {
            unmap(raw, len);
            return ptr::null_mut();
        }
        if tail != 0 && libc::munmap(raw.add(head + size).cast(), tail) != 0 {
            unmap(raw.add(head), len - head);
            return ptr::null_mut();
        }
        raw.add(head)
    }
}

/// Pages straight from the kernel: anonymous private mappings.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsPages;

// SAFETY: mmap/munmap/madvise are plain system calls that never allocate or panic; anonymous mappings are
// zero-filled and page-aligned, and `reserve` trims an over-sized mapping to the asked alignment.
unsafe impl PageSource for OsPages {
    fn reserve(&self, size: usize, align: usize) -> *mut u8 {
        map_aligned(size, align, 0)
    }

    unsafe fn release(&self, ptr: *mut u8, size: usize, _align: usize) {
        // SAFETY: the caller guarantees this is one whole earlier reservation that nobody uses any more.
        unsafe { unmap(ptr, size) }
    }

    fn reserve_offset(&self, size: usize, align: usize, offset: usize) -> *mut u8 {
        map_aligned(size, align, offset)
    }

    fn thread_alive(&self, tid: i32) -> bool {
        thread_alive(tid)
    }

    unsafe fn resize(&self, ptr: *mut u8, old_size: usize, new_size: usize, align: usize) -> *mut u8 {
        if new_size <= old_size {
            // Whole kernel pages only: the mapping ends on one (see `map_aligned`), and `munmap` of the
            // new size later rounds up to the same page as here.
            let page = os_page_size();
            let (keep, end) = (new_size.next_multiple_of(page), old_size.next_multiple_of(page));
            if keep < end {
                // SAFETY: the tail of the caller's reservation, which nobody uses.
                unsafe { unmap(ptr.add(keep), end - keep) };
            }
            return ptr;
        }
        // SAFETY: growing in place either extends this mapping (nothing else was there) or fails.
        let grown = unsafe { libc::mremap(ptr.cast(), old_size, new_size, 0) };
        if grown != libc::MAP_FAILED {
            return ptr;
        }
        // Move the pages to a new aligned place: reserve it, then let the kernel move the page tables
        // over it (no copy).
        let dst = self.reserve(new_size, align);
        if dst.is_null() {
            return dst;
        }
        // SAFETY: `dst` is a reservation of `new_size` bytes we own; MREMAP_FIXED replaces it with the
        // old pages and unmaps the old range, which the caller no longer uses.
        let moved = unsafe {
            libc::mremap(
                ptr.cast(),
                old_size,
                new_size,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                dst.cast::<libc::c_void>(),
            )
        };
        if moved == libc::MAP_FAILED {
            // SAFETY: the reservation just made, unused.
            unsafe { unmap(dst, new_size) };
            return ptr::null_mut();
        }
        moved.cast()
    }

    unsafe fn decommit(&self, ptr: *mut u8, size: usize) {
        // The range is in the heap's 4 KiB unit; the kernel drops whole pages of its own, which may be
        // larger. Those inside the range go back; the bits of pages it only partly covers (at either
        // end, on 16 or 64 KiB kernels) are zeroed by hand, so the whole range reads as zero either way
        // and nothing outside it is touched. With 4 KiB pages there are no such bits.
        let page = os_page_size();
        let (start, end) = (ptr.addr(), ptr.addr() + size);
        let (inner_start, inner_end) = (start.next_multiple_of(page), end & !(page - 1));
        // SAFETY: the caller guarantees the range lies inside one private anonymous mapping nobody is
        // using: the whole pages inside it are dropped (they read as zero when touched again), the rest
        // of it is written with zeroes.
        unsafe {
            if inner_start < inner_end {
                libc::madvise(
                    ptr.add(inner_start - start).cast(),
                    inner_end - inner_start,
                    libc::MADV_DONTNEED,
                );
                ptr::write_bytes(ptr, 0, inner_start - start);
                ptr::write_bytes(ptr.add(inner_end - start), 0, end - inner_end);
            } else {
                ptr::write_bytes(ptr, 0, size);
            }
        }
    }

    unsafe fn advise_huge(&self, base: *mut u8, size: usize, what: Reservation) {
        if size >= huge_page_size() && huge::wants_huge(what) {
            huge::note_used();
            // SAFETY: per the caller, one whole reservation of ours; the advice changes how the kernel
            // backs it, not its contents. A kernel without huge pages refuses it (EINVAL), which changes
            // nothing, and `errno` is put back: a `malloc` that succeeds leaves it alone.
            keeping_errno(|| unsafe { libc::madvise(base.cast(), size, libc::MADV_HUGEPAGE) });
        }
    }

    fn huge_pages_used(&self) -> bool {
        huge::used()
    }

    fn note_dense_bytes(&self, bytes: usize) {
        huge::note_dense_bytes(bytes);
    }

    fn dense_mark_passed(&self) -> bool {
        huge::dense_mark_passed()
    }

    unsafe fn keep_small(&self, base: *mut u8, size: usize) {
        if size >= huge_page_size() {
            // SAFETY: per the caller, one whole reservation of ours; the advice changes how the kernel
            // backs it, not its contents. A kernel without huge pages refuses it (EINVAL), which changes
            // nothing, and `errno` is put back.
            keeping_errno(|| unsafe { libc::madvise(base.cast(), size, libc::MADV_NOHUGEPAGE) });
        }
    }

    unsafe fn leave_huge(&self, base: *mut u8, size: usize, ptr: *mut u8, len: usize) {
        let huge = huge_page_size();
        if !huge::used() || size < huge {
            return;
        }
        // Every huge page the range touches, whole (clamped to the reservation): the advice then ends on
        // huge-page boundaries, so neighbouring regions left the same way merge into one mapping in the
        // kernel's list rather than splitting it at every purge.
        let from = (ptr.addr() & !(huge - 1)).max(base.addr());
        let end = (ptr.addr() + len).next_multiple_of(huge).min(base.addr() + size);
        if from < end {
            // SAFETY: `from..end` lies inside the caller's reservation (both ends clamped to it); the
            // advice leaves its contents alone. It can fail (EINVAL without huge pages, ENOMEM when the
            // split would pass `vm.max_map_count`), and then only the collapse guard is lost; `free`
            // must not change `errno` (POSIX 2024), so it is put back.
            keeping_errno(|| unsafe {
                libc::madvise(
                    base.add(from - base.addr()).cast(),
                    end - from,
                    libc::MADV_NOHUGEPAGE,
                )
            });
        }
    }

    unsafe fn protect(&self, ptr: *mut u8, size: usize) {
        // SAFETY: the caller guarantees a range of our own mapping that nothing uses, aligned to
        // `os_page_size` (the contract), so `mprotect` covers exactly it.
        unsafe {
            libc::mprotect(ptr.cast(), size, libc::PROT_NONE);
        }
    }
}

/// Pages from the C library's `posix_memalign`, for tests and for Miri, which cannot run `mmap`. (That
/// is what `std::alloc::System` would call too; going to it straight keeps this crate free of `std`.)
///
/// Decommit writes zeroes, so the heap sees the same contract as with [`OsPages`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemPages;

// SAFETY: `posix_memalign` gives aligned memory of the size asked for, zeroed here before it is returned;
// decommit writes zeroes as the contract says. The C allocator is never a heap built on this source (a
// `Heap<SystemPages>` is a test heap, not the process's malloc).
unsafe impl PageSource for SystemPages {
    fn reserve(&self, size: usize, align: usize) -> *mut u8 {
        if size == 0 || !align.is_power_of_two() {
            return ptr::null_mut();
        }
        let mut p: *mut libc::c_void = ptr::null_mut();
        // SAFETY: `p` is a valid out-pointer; the alignment is a power of two, raised to at least a
        // pointer's size as `posix_memalign` requires.
        let rc = unsafe { libc::posix_memalign(&mut p, align.max(size_of::<usize>()), size) };
        if rc != 0 || p.is_null() {
            return ptr::null_mut();
        }
        // SAFETY: `p` is a fresh allocation of `size` bytes.
        unsafe { ptr::write_bytes(p.cast::<u8>(), 0, size) };
        p.cast()
    }

    unsafe fn release(&self, ptr: *mut u8, _size: usize, _align: usize) {
        // SAFETY: the caller passes a pointer `reserve` returned, released once.
        unsafe { libc::free(ptr.cast()) }
    }

    unsafe fn decommit(&self, ptr: *mut u8, size: usize) {
        // SAFETY: the caller guarantees the range is inside one live reservation and unused.
        unsafe { ptr::write_bytes(ptr, 0, size) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::platform::{OsPages, PageSource, PAGE_SIZE};

    /// A decommit in the heap's 4 KiB unit leaves the whole range zero and everything around it as it was,
    /// whatever the kernel's page; the tail trim of a resize and an aligned reservation work in its pages.
    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn os_pages_work_in_the_kernels_pages() {
        let (size, align) = (1 << 20, 1 << 22);
        let p = OsPages.reserve(size, align);
        assert!(!p.is_null() && p.addr() % align == 0);
        // SAFETY: `p` is a fresh reservation of `size` bytes; the ranges below lie inside it.
        unsafe {
            p.write_bytes(0xa5, size);
            let (from, len) = (PAGE_SIZE * 3, PAGE_SIZE * 40);
            OsPages.decommit(p.add(from), len);
            for i in (0..size).step_by(512) {
                let want = if (from..from + len).contains(&i) { 0 } else { 0xa5 };
                assert_eq!(*p.add(i), want, "byte {i}");
            }
            assert_eq!(*p.add(from + len - 1), 0);
            assert_eq!(*p.add(from + len), 0xa5);
            let q = OsPages.resize(p, size, size - 5 * PAGE_SIZE, align);
            assert_eq!(q, p);
            assert_eq!(*p.add(size - 6 * PAGE_SIZE), 0xa5);
            OsPages.release(p, size - 5 * PAGE_SIZE, align);
        }
    }

    /// `keep_small` marks the whole reservation `MADV_NOHUGEPAGE` (`nh` in the kernel's account of the
    /// mapping), so a system whose transparent huge pages are `always` backs a thread cache's sparse
    /// magazines with small pages.
    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    // qemu-user builds `/proc/self/smaps` itself, from its own page tables, and crashes now and then
    // when another test thread maps or unmaps meanwhile.
    #[cfg_attr(not(target_arch = "x86_64"), ignore = "qemu-user's /proc/self/smaps")]
    fn keep_small_keeps_a_reservation_off_huge_pages() {
        let size = 8 << 20;
        let p = OsPages.reserve(size, PAGE_SIZE);
        assert!(!p.is_null());
        // SAFETY: the whole fresh reservation; released once below.
        unsafe { OsPages.keep_small(p, size) };
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut flags = None;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = first.split_once('-') {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo <= p.addr() && p.addr() < hi;
                    continue;
                }
            }
            if inside && line.starts_with("VmFlags:") {
                flags = Some(line.to_string());
            }
        }
        // SAFETY: the reservation made above, whole.
        unsafe { OsPages.release(p, size, PAGE_SIZE) };
        let flags = flags.expect("the reservation's mapping");
        let flags: Vec<&str> = flags.split_whitespace().collect();
        // A read-write mapping the kernel accounts for reads `rd wr`; an emulator's (qemu-user's) own
        // account of the guest's mappings has neither, nor the advice.
        if !flags.contains(&"rd") {
            return;
        }
        assert!(flags.contains(&"nh"), "{flags:?}");
    }
}
