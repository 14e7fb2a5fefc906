//! The platform layer: where hopless gets pages from, and how it talks to the OS without allocating.
//!
//! Everything that makes a system call lives here, behind [`PageSource`]: the heap above it never calls
//! `mmap` itself. [`OsPages`] is the real source (anonymous `mmap`, `madvise(MADV_DONTNEED)`, `munmap`);
//! [`SystemPages`] serves the same contract from `std::alloc::System`, so the whole heap can run under Miri
//! or inside a test without touching the OS.

use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// The heap's unit of layout: the smallest page any kernel it runs on has (4 KiB). Its own structures
/// (thread caches, header areas, large blocks' offsets) are laid out in these. Where the kernel's own
/// granularity matters (the length of a mapping, a guard page, what `madvise` may drop), the page is
/// [`os_page_size`], which on aarch64 may be 16 or 64 KiB: [`OsPages`] rounds for it, so a
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
    let p = if read.is_power_of_two() { read.max(PAGE_SIZE) } else { PAGE_SIZE };
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
    /// `what`, when the huge-page setting wants them for it ([`set_huge_pages`], [`HugePages`]); the
    /// default does nothing. Only segments and large-block arenas and mappings ask: their blocks are
    /// spread over many pages, and one TLB entry per huge page then covers what 512 of the kernel's small
    /// pages would.
    ///
    /// # Safety
    ///
    /// `base` and `size` are those of one live reservation of this source.
    unsafe fn advise_huge(&self, _base: *mut u8, _size: usize, _what: Reservation) {}

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
    /// segments of [`Reservation::Slabs`], or of its large blocks in use. [`HugePages::Auto`] starts
    /// asking for huge pages once either reaches [`HUGE_AUTO_FROM`]. The default ignores it.
    fn note_dense_bytes(&self, _bytes: usize) {}

    /// Whether [`HugePages::Auto`] has passed its mark, so that the heap's segments of
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

/// What a reservation holds, for the huge-page setting ([`HugePages`]).
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

/// The transparent-huge-page setting: which reservations ask the kernel for huge pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// None (`HOPLESS_HUGE_PAGES=0`, `Hopless::set_huge_pages(false)`).
    Off,
    /// The default: segments of [`Reservation::Slabs`] and [`Reservation::Arena`]s, once the heap holds
    /// [`HUGE_AUTO_FROM`] of either kind of memory ([`PageSource::note_dense_bytes`]). What a program
    /// touches of those is dense, so a huge page wastes at most the untouched part of the newest one of
    /// each, a few MiB against at least 64 MiB; a heap that size is where the TLB's reach runs out.
    /// Segments of [`Reservation::SparseSlabs`] and large mappings keep small pages.
    Auto,
    /// Every segment, arena and large mapping (`HOPLESS_HUGE_PAGES=1`, `Hopless::set_huge_pages(true)`).
    On,
}

/// The setting ([`MODE_MASK`]: [`MODE_AUTO`], [`MODE_OFF`] or [`MODE_ON`]), [`HUGE_BIG`] once the
/// heap was seen holding [`HUGE_AUTO_FROM`] of dense memory, and [`HUGE_USED`] once any reservation
/// asked: reservations advised then keep leaving huge pages where they decommit after the setting
/// changes. Never-cleared bits in one atomic, so a thread that saw a reservation advised sees
/// [`HUGE_USED`].
static HUGE_PAGES: AtomicU8 = AtomicU8::new(MODE_AUTO);
const MODE_MASK: u8 = 3;
const MODE_AUTO: u8 = 0;
const MODE_OFF: u8 = 1;
const MODE_ON: u8 = 2;
const HUGE_USED: u8 = 4;
const HUGE_BIG: u8 = 8;

/// The dense memory (segments of [`Reservation::Slabs`], or large blocks in use) from which
/// [`HugePages::Auto`] has dense reservations ask for huge pages: 64 MiB. A heap that stays below it keeps
/// small pages throughout, however large the rest of the process is.
pub const HUGE_AUTO_FROM: usize = 64 << 20;

/// Sets which reservations made from now on ask for transparent huge pages (see
/// [`PageSource::advise_huge`] and [`HugePages`]). A huge page is backed whole once any byte of it is
/// touched, so a partly used region keeps up to 2 MiB more resident; programs with large heaps and
/// random access (a cache of millions of keys) gain from the TLB reach.
pub fn set_huge_pages(setting: HugePages) {
    let mode = match setting {
        HugePages::Off => MODE_OFF,
        HugePages::Auto => MODE_AUTO,
        HugePages::On => MODE_ON,
    };
    let _ = HUGE_PAGES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v & !MODE_MASK | mode));
}

/// The setting.
pub fn huge_pages() -> HugePages {
    match HUGE_PAGES.load(Ordering::Relaxed) & MODE_MASK {
        MODE_OFF => HugePages::Off,
        MODE_ON => HugePages::On,
        _ => HugePages::Auto,
    }
}

/// One heap's record that its regions reserved before [`HugePages::Auto`]'s mark have had the advice
/// given to those reserved after it (the segments in `Heap`, the arenas in `LargeCache`).
#[derive(Debug, Default)]
pub struct HugeCatchUp(AtomicBool);

impl HugeCatchUp {
    pub const fn new() -> Self {
        HugeCatchUp(AtomicBool::new(false))
    }

    /// True once, to the one caller that then advises the earlier regions, after `source` passed its
    /// mark ([`PageSource::dense_mark_passed`]); one relaxed load on every later call.
    #[inline]
    pub fn due<P: PageSource>(&self, source: &P) -> bool {
        !self.0.load(Ordering::Relaxed) && source.dense_mark_passed() && !self.0.swap(true, Ordering::Relaxed)
    }
}

/// Whether a reservation holding `what`, made now, asks for huge pages.
fn wants_huge(what: Reservation) -> bool {
    let v = HUGE_PAGES.load(Ordering::Relaxed);
    match v & MODE_MASK {
        MODE_ON => true,
        MODE_AUTO => matches!(what, Reservation::Slabs | Reservation::Arena) && v & HUGE_BIG != 0,
        _ => false,
    }
}

/// The size of the kernel's transparent huge page: what one page-table page of the kernel's pages maps
/// (2 MiB with 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with 64 KiB).
pub fn huge_page_size() -> usize {
    let page = os_page_size();
    page * (page / core::mem::size_of::<u64>())
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
                libc::madvise(ptr.add(inner_start - start).cast(), inner_end - inner_start, libc::MADV_DONTNEED);
                ptr::write_bytes(ptr, 0, inner_start - start);
                ptr::write_bytes(ptr.add(inner_end - start), 0, end - inner_end);
            } else {
                ptr::write_bytes(ptr, 0, size);
            }
        }
    }

    unsafe fn advise_huge(&self, base: *mut u8, size: usize, what: Reservation) {
        if size >= huge_page_size() && wants_huge(what) {
            HUGE_PAGES.fetch_or(HUGE_USED, Ordering::Relaxed);
            // SAFETY: per the caller, one whole reservation of ours; the advice changes how the kernel
            // backs it, not its contents. A kernel without huge pages refuses it (EINVAL), which changes
            // nothing, and `errno` is put back: a `malloc` that succeeds leaves it alone.
            keeping_errno(|| unsafe { libc::madvise(base.cast(), size, libc::MADV_HUGEPAGE) });
        }
    }

    fn huge_pages_used(&self) -> bool {
        HUGE_PAGES.load(Ordering::Relaxed) & HUGE_USED != 0
    }

    fn note_dense_bytes(&self, bytes: usize) {
        if bytes >= HUGE_AUTO_FROM && HUGE_PAGES.load(Ordering::Relaxed) & HUGE_BIG == 0 {
            HUGE_PAGES.fetch_or(HUGE_BIG, Ordering::Relaxed);
        }
    }

    fn dense_mark_passed(&self) -> bool {
        HUGE_PAGES.load(Ordering::Relaxed) & (MODE_MASK | HUGE_BIG) == MODE_AUTO | HUGE_BIG
    }

    unsafe fn leave_huge(&self, base: *mut u8, size: usize, ptr: *mut u8, len: usize) {
        let huge = huge_page_size();
        if HUGE_PAGES.load(Ordering::Relaxed) & HUGE_USED == 0 || size < huge {
            return;
        }
        // Every huge page the range touches, whole (clamped to the reservation): the advice then ends on
        // huge-page boundaries, so neighbouring regions left the same way merge into one mapping in the
        // kernel's list rather than splitting it at every purge.
        let from = (ptr.addr() & !(huge - 1)).max(base.addr());
        let end = (ptr.addr() + len)
            .next_multiple_of(huge)
            .min(base.addr() + size);
        if from < end {
            // SAFETY: `from..end` lies inside the caller's reservation (both ends clamped to it); the
            // advice leaves its contents alone. It can fail (EINVAL without huge pages, ENOMEM when the
            // split would pass `vm.max_map_count`), and then only the collapse guard is lost; `free`
            // must not change `errno` (POSIX 2024), so it is put back.
            keeping_errno(|| unsafe {
                libc::madvise(base.add(from - base.addr()).cast(), end - from, libc::MADV_NOHUGEPAGE)
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

/// Writes all of `bytes` to standard error with raw `write(2)` calls: no buffer, no lock, no allocation.
pub fn write_stderr(bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: `rest` is a valid readable slice for its length.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return;
        }
        rest = rest.get(n as usize..).unwrap_or_default();
    }
}

/// Milliseconds of a coarse monotonic clock (the vDSO's: a few nanoseconds, no system call, and nothing
/// allocated). Under Miri, the plain monotonic clock, which it emulates.
pub fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let clock = if cfg!(miri) {
        libc::CLOCK_MONOTONIC
    } else {
        libc::CLOCK_MONOTONIC_COARSE
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is one Linux has.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1000)
        .wrapping_add(ts.tv_nsec as u64 / 1_000_000)
}

/// Stops the process at once, so a core dump keeps the stack of the fault.
pub fn abort() -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}

/// The calling thread's `pthread_self()` (never 0 for a running thread).
#[inline]
pub fn thread_self() -> usize {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as usize }
}

/// The calling thread's kernel thread id.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Runs `f` and puts `errno` back as it was: the allocator's own system calls must not change what a
/// successful `malloc` leaves in it.
fn keeping_errno<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: __errno_location is this thread's errno, valid for the thread's life.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    let r = f();
    // SAFETY: as above.
    unsafe { *errno = saved };
    r
}

/// Whether a thread of this process with kernel id `tid` exists (a dead thread's id is reused only after
/// the kernel's pid counter wraps). Leaves `errno` as it was.
pub fn thread_alive(tid: i32) -> bool {
    if tid <= 0 {
        return true;
    }
    keeping_errno(|| {
        // SAFETY: tgkill with signal 0 only checks the target; __errno_location is this thread's errno.
        unsafe {
            let rc = libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0);
            !(rc != 0 && *libc::__errno_location() == libc::ESRCH)
        }
    })
}

/// One private futex operation on `word`, with no timeout. Leaves `errno` as it was.
fn futex(word: &core::sync::atomic::AtomicU32, op: libc::c_int, val: u32) {
    keeping_errno(|| {
        // SAFETY: `word` is a live, aligned 32-bit atomic for the call's length; FUTEX_WAIT only reads it
        // and FUTEX_WAKE touches no memory; a null timeout is "none" (FUTEX_WAKE ignores it).
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                ptr::null::<libc::timespec>(),
            )
        }
    });
}

/// Sleeps while `word` holds `expected` (the kernel checks it atomically with going to sleep), until a
/// [`futex_wake_one`] on it, or a spurious return. Leaves `errno` as it was.
pub fn futex_wait(word: &core::sync::atomic::AtomicU32, expected: u32) {
    futex(word, libc::FUTEX_WAIT, expected);
}

/// Wakes one thread sleeping in [`futex_wait`] on `word`. Leaves `errno` as it was.
pub fn futex_wake_one(word: &core::sync::atomic::AtomicU32) {
    futex(word, libc::FUTEX_WAKE, 1);
}

/// Gives the rest of the time slice away.
#[inline]
pub fn yield_now() {
    // SAFETY: `sched_yield` takes no arguments and touches no memory of ours.
    unsafe {
        libc::sched_yield();
    }
}

// ------------------------------------------------------------------------------------------------------
// Process services: the environment, the kernel's random bytes, thread keys, fork handlers. None of them
// allocates (glibc's `pthread_setspecific` does for keys past the first 32: see `global`).

/// Whether the environment variable `name` is set to something other than empty or `0` (read with
/// `getenv`, which does not allocate).
pub fn env_flag(name: &core::ffi::CStr) -> bool {
    // SAFETY: getenv reads the environment without allocating; the result is checked for null.
    let v = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: a non-null getenv result is a NUL-terminated string: its first byte is readable.
    !v.is_null() && unsafe { *v } != 0 && unsafe { *v } != b'0' as libc::c_char
}

/// The environment variable `name`: `None` when it is unset or empty, `Some(false)` when it is `0`,
/// `Some(true)` for anything else (read with `getenv`, which does not allocate).
pub fn env_setting(name: &core::ffi::CStr) -> Option<bool> {
    // SAFETY: getenv reads the environment without allocating; the result is checked for null.
    let v = unsafe { libc::getenv(name.as_ptr()) };
    if v.is_null() {
        return None;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string: its first byte is readable.
    match unsafe { *v } {
        0 => None,
        c if c == b'0' as libc::c_char => Some(false),
        _ => Some(true),
    }
}

/// A word of the random bytes the kernel gave this process at exec (`AT_RANDOM`), or 0 where there are
/// none (and under Miri).
pub fn process_random() -> usize {
    if cfg!(miri) {
        return 0;
    }
    // SAFETY: getauxval has no preconditions; AT_RANDOM points at 16 random bytes the kernel gave this
    // process, or is 0.
    unsafe {
        let at = libc::getauxval(libc::AT_RANDOM) as *const u8;
        if at.is_null() {
            0
        } else {
            at.cast::<usize>().read_unaligned()
        }
    }
}

/// A destructor run for a thread's non-null key value when the thread exits.
pub type KeyDestructor = unsafe extern "C" fn(*mut libc::c_void);

/// Creates a thread key whose destructor gets each thread's value at its exit; `None` if none is left.
pub fn create_thread_key(destructor: KeyDestructor) -> Option<u32> {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer; the destructor is an `extern "C"` fn. Creating a key does
    // not allocate.
    (unsafe { libc::pthread_key_create(&mut key, Some(destructor)) } == 0).then_some(key)
}

/// Sets the calling thread's value of `key` (false on failure: no memory for the key's slot).
///
/// # Safety
///
/// `value` is what `key`'s destructor expects to be given when the thread exits.
pub unsafe fn set_thread_value(key: u32, value: *mut libc::c_void) -> bool {
    // SAFETY: setting a key's value reads no memory; an invalid key only returns EINVAL. The destructor
    // gets `value` later, per the caller.
    unsafe { libc::pthread_setspecific(key, value) == 0 }
}

/// Registers fork handlers (prepare runs in the parent before the fork, in reverse order of
/// registration; parent and child after it, in order).
pub fn register_fork_handlers(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    // glibc's `pthread_atfork` is not in `libc.so.6`: it lives in `libc_nonshared.a`, a two-line wrapper
    // that passes the calling object's `__dso_handle` to `__register_atfork` (so its handlers go if the
    // object is unloaded). A `libhopless.so` built without `std` ends up with `pthread_atfork` unresolved
    // (on x86-64 the dynamic linker then binds it to an old compatibility symbol; aarch64's `libc.so.6`
    // has none, and loading fails), so on glibc hopless does what the wrapper does. musl has
    // `pthread_atfork` itself, and Miri knows only `pthread_atfork`.
    #[cfg(all(target_env = "gnu", not(miri)))]
    {
        extern "C" {
            /// This object's handle, which the C runtime's start files (`crtbeginS.o`) define in every
            /// executable and shared object.
            static __dso_handle: u8;
            fn __register_atfork(
                prepare: Option<extern "C" fn()>,
                parent: Option<extern "C" fn()>,
                child: Option<extern "C" fn()>,
                dso_handle: *const u8,
            ) -> libc::c_int;
        }
        // SAFETY: plain extern "C" handlers that live as long as the process; `__dso_handle` is only
        // taken by address, as glibc's own `pthread_atfork` does.
        unsafe { __register_atfork(Some(prepare), Some(parent), Some(child), &raw const __dso_handle) };
    }
    #[cfg(any(not(target_env = "gnu"), miri))]
    // SAFETY: plain extern "C" handlers that live as long as the process.
    unsafe {
        libc::pthread_atfork(Some(prepare), Some(parent), Some(child))
    };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{os_page_size, OsPages, PageSource, PAGE_SIZE};
    use core::sync::atomic::AtomicU32;

    /// The page size is the kernel's (under `qemu-aarch64 -p 65536`, 64 KiB), never below the heap's unit.
    #[test]
    #[cfg_attr(miri, ignore = "Miri has no sysconf page size of the host's")]
    fn os_page_size_is_the_kernels() {
        // SAFETY: sysconf has no preconditions.
        let kernel = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        assert_eq!(os_page_size(), kernel);
        assert!(os_page_size() >= PAGE_SIZE && os_page_size().is_power_of_two());
    }

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

    /// A futex call that fails (the word does not hold the value: EAGAIN) and one with nobody to wake
    /// leave `errno` as the program set it.
    #[test]
    fn futex_calls_leave_errno_alone() {
        // SAFETY: this thread's errno.
        let errno = || unsafe { *libc::__errno_location() };
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = 1234 };
        let word = AtomicU32::new(7);
        super::futex_wait(&word, 8);
        assert_eq!(errno(), 1234);
        super::futex_wake_one(&word);
        assert_eq!(errno(), 1234);
        if !cfg!(miri) {
            // (Miri has no tgkill.)
            assert!(super::thread_alive(super::current_tid()));
            assert_eq!(errno(), 1234);
        }
    }
}
