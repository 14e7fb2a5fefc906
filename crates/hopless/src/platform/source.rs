//! The contract every page source keeps: [`PageSource`], what the heap asks of wherever its pages come
//! from; the heap's page unit ([`PAGE_SIZE`]) and the kernel's ([`os_page_size`]); and what a reservation
//! holds ([`Reservation`]), which the huge-page policy (`huge.rs`) decides by.

use core::ptr;
use core::sync::atomic::Ordering;

/// The heap's unit of layout: the smallest page any kernel it runs on has (4 KiB). Its own structures
/// (thread caches, header areas, large blocks' offsets) are laid out in these. Where the kernel's own
/// granularity matters (the length of a mapping, a guard page, what `madvise` may drop), the page is
/// [`os_page_size`], which on aarch64 may be 16 or 64 KiB: [`OsPages`](super::OsPages) rounds for it, so a
/// [`PageSource`]'s callers may keep to this unit.
pub const PAGE_SIZE: usize = 4096;

/// The kernel's page size, read once (`AT_PAGESZ`, no system call). A constant on x86-64, where it is
/// always 4 KiB; on aarch64 Linux 4, 16 or 64 KiB, as the kernel was built. Under Miri, [`PAGE_SIZE`].
#[inline]
pub fn os_page_size() -> usize {
    if cfg!(any(target_arch = "x86_64", miri)) {
        return PAGE_SIZE;
    }
    use core::sync::atomic::AtomicUsize;
    // 0 until first read. Any thread may store it: every one stores the same value, so relaxed is
    // enough.
    static OS_PAGE: AtomicUsize = AtomicUsize::new(0);
    let p = OS_PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: getauxval has no preconditions; AT_PAGESZ is always supplied by Linux.
    let read = unsafe { libc::getauxval(libc::AT_PAGESZ) } as usize;
    // Never below the heap's unit, and a power of two (the kernel's always is).
    let p = if read.is_power_of_two() {
        read.max(PAGE_SIZE)
    } else {
        PAGE_SIZE
    };
    OS_PAGE.store(p, Ordering::Relaxed);
    p
}

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

    /// Returns the physical memory behind a range inside a reservation, aligned to [`PAGE_SIZE`]; the
    /// range stays reserved and reads as zero afterwards (where the kernel's pages are larger, only the
    /// whole ones inside it go back).
    ///
    /// # Safety
    ///
    /// The range lies inside one reservation, is aligned to [`PAGE_SIZE`], and nobody reads or writes it
    /// concurrently.
    unsafe fn decommit(&self, ptr: *mut u8, size: usize);

    /// Makes a range inaccessible (a guard page; hardened mode). The default does nothing.
    ///
    /// # Safety
    ///
    /// The range lies inside one reservation, its start and length are multiples of [`os_page_size`]
    /// (the kernel's page: nothing smaller can be protected), and nothing will use it until released.
    unsafe fn protect(&self, _ptr: *mut u8, _size: usize) {}

    /// Like [`PageSource::reserve`], but aligns `base + offset` to `align` instead of `base` (for blocks
    /// aligned to more than the segment size, whose header sits `offset` bytes before them). Null when not
    /// supported or out of memory; release the result with `align` = [`PAGE_SIZE`].
    fn reserve_offset(&self, _size: usize, _align: usize, _offset: usize) -> *mut u8 {
        ptr::null_mut()
    }

    /// Resizes a reservation made with `align`, keeping its contents (pages are moved, not copied) and
    /// its alignment; the result may be at another address. Null when it cannot (then the old reservation
    /// is untouched). The default cannot.
    ///
    /// # Safety
    ///
    /// `ptr`, `old_size` and `align` are those of one live reservation; nobody uses it during the call,
    /// and the caller uses the result, not `ptr`, afterwards. `new_size` is a non-zero multiple of
    /// [`PAGE_SIZE`].
    unsafe fn resize(&self, _ptr: *mut u8, _old_size: usize, _new_size: usize, _align: usize) -> *mut u8 {
        ptr::null_mut()
    }

    /// Asks for transparent huge pages over a whole reservation of `size` bytes at `base` that holds
    /// `what`, when the huge-page setting wants them for it ([`set_huge_pages`](super::set_huge_pages), [`HugePages`](super::HugePages)); the
    /// default does nothing. Only segments and large-block arenas and mappings ask: their blocks are
    /// spread over many pages, and one TLB entry per huge page then covers what 512 of the kernel's small
    /// pages would.
    ///
    /// # Safety
    ///
    /// `base` and `size` are those of one live reservation of this source.
    unsafe fn advise_huge(&self, _base: *mut u8, _size: usize, _what: Reservation) {}

    /// Keeps a whole reservation of `size` bytes at `base` on small pages, whatever the system's
    /// transparent huge-page setting: for a reservation of which a program touches a page here and there
    /// (a thread cache's magazines, each class's slots a page or more apart), where one huge page would
    /// make 512 pages resident for one. The default does nothing.
    ///
    /// # Safety
    ///
    /// `base` and `size` are those of one live reservation of this source.
    unsafe fn keep_small(&self, _base: *mut u8, _size: usize) {}

    /// Called before `ptr..ptr + len` (inside the reservation `base`, `size`) is decommitted: the huge
    /// pages the range touches (whole) go back to small pages for good, so that the kernel's background collapse
    /// (`khugepaged`, which fills a huge page around as little as one resident small page) cannot make
    /// the decommitted memory resident again. The default does nothing.
    ///
    /// # Safety
    ///
    /// `base` and `size` are those of one live reservation of this source, and the range lies inside it.
    unsafe fn leave_huge(&self, _base: *mut u8, _size: usize, _ptr: *mut u8, _len: usize) {}

    /// Whether any reservation of this source asked for huge pages (then a slab never used may be
    /// resident, as part of a huge page a neighbour made resident: `Heap::trim` purges those). The
    /// default says no.
    fn huge_pages_used(&self) -> bool {
        false
    }

    /// Tells the source how much memory the heap holds where what it touches is dense: the bytes of its
    /// segments of [`Reservation::Slabs`], or of its large blocks in use. [`HugePages::Auto`](super::HugePages::Auto) starts
    /// asking for huge pages once either reaches [`HUGE_AUTO_FROM`](super::huge::HUGE_AUTO_FROM). The default ignores it.
    fn note_dense_bytes(&self, _bytes: usize) {}

    /// Whether [`HugePages::Auto`](super::HugePages::Auto) has passed its mark, so that the heap's segments of
    /// [`Reservation::Slabs`] and its arenas reserved before are due for the advice given to those
    /// reserved after (each heap gives it once: `Heap::note_segments`, `LargeCache::alloc`). A region
    /// advised late gets huge pages where it is first touched from then on; what was touched before keeps
    /// small pages until the kernel's background collapse gets to it. The default says no.
    fn dense_mark_passed(&self) -> bool {
        false
    }

    /// Whether the thread with this kernel id still exists (caches of dead threads are reclaimed). The
    /// default says yes: nothing is reclaimed.
    fn thread_alive(&self, _tid: i32) -> bool {
        true
    }
}

/// What a reservation holds, for the huge-page setting ([`HugePages`](super::HugePages)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// A segment (4 MiB) of 64 KiB slabs whose blocks fill them (64 B to 4 KiB). Slabs are handed out
    /// from its low end, each one's blocks are carved from its start, and its headers take one slab's
    /// room: what a program touches of it is dense.
    Slabs,
    /// A segment whose slabs leave part of it untouched: the smallest classes' (8 to 48 B), whose 1 024
    /// blocks a slab holds at most fill 8 to 48 KiB of its 64, and the medium classes' (512 KiB slabs),
    /// whose headers take a whole slab's room and whose largest blocks leave tails.
    SparseSlabs,
    /// A large-block arena (64 MiB): blocks of 256 KiB to 16 MiB, placed from its low end.
    Arena,
    /// A mapping of one large block, above 16 MiB, which a program may touch as sparsely as it likes.
    Mapping,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{os_page_size, PAGE_SIZE};

    /// The page size is the kernel's (under `qemu-aarch64 -p 65536`, 64 KiB), never below the heap's unit.
    #[test]
    #[cfg_attr(miri, ignore = "Miri has no sysconf page size of the host's")]
    fn os_page_size_is_the_kernels() {
        // SAFETY: sysconf has no preconditions.
        let kernel = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        assert_eq!(os_page_size(), kernel);
        assert!(os_page_size() >= PAGE_SIZE && os_page_size().is_power_of_two());
    }
}
