//! [`Hopless`], the allocator's public face: `GlobalAlloc`, `allocator_api2`'s `Allocator`, the C-style
//! calls (`free` without a size, `usable_size`, `realloc_unsized`), the batch API, stats, trim and the
//! configuration line. Each call goes to `fast` first and to `slow` for the rest.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};

use crate::address::{locate, Located};
use crate::cache::ThreadCache;
use crate::fast;
use crate::process::{for_each_cache_of_thread, process_init, HEAP};
use crate::size_class::{self, small_class, SMALL_MAX};
use crate::slow::{
    again_after_trim, alloc_general, cache_or_init, checked_alloc, checked_free, checked_realloc,
};
use crate::stats::Stats;

/// The hopless allocator. Zero-sized: every instance uses the one process heap.
///
/// ```
/// #[global_allocator]
/// static GLOBAL: hopless::Hopless = hopless::Hopless;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hopless;
impl Hopless {
    /// Whether hopless's own heap serves this program: true here (Linux on x86-64 or aarch64); false on
    /// other targets, where every call goes to the system allocator.
    pub const fn is_native() -> bool {
        true
    }

    /// Frees a block without its size (the C `free` contract): the slab header tells its class. Null
    /// is ignored.
    ///
    /// # Safety
    ///
    /// `p` is null, or was returned by this allocator and is not used afterwards.
    #[inline(always)]
    pub unsafe fn free(p: *mut u8) {
        // SAFETY: forwarded.
        unsafe { fast::free_unsized(p) }
    }

    /// The usable size of a block: at least what was asked for.
    ///
    /// # Safety
    ///
    /// `p` is a live block returned by this allocator.
    pub unsafe fn usable_size(p: *const u8) -> usize {
        if crate::mode::checked_on() {
            // SAFETY: per the caller; in the checked modes the usable size is what was asked (the rest is
            // redzone).
            return unsafe {
                if crate::mode::debug_on() {
                    HEAP.debug_size(p.cast_mut())
                } else {
                    HEAP.hardened_size(p.cast_mut())
                }
            };
        }
        // SAFETY: per the caller.
        unsafe { HEAP.usable_size(p.cast_mut()) }
    }

    /// Allocates `out.len()` blocks of one layout in one call: from the
    /// thread's magazine first, then straight from the central heap, one lock hold per batch. Returns how
    /// many were allocated; fewer than asked only when memory ran out. A zero-size layout fills `out` with
    /// dangling, aligned pointers.
    pub fn alloc_batch(&self, layout: Layout, out: &mut [*mut u8]) -> usize {
        if layout.size() == 0 {
            out.fill(ptr::without_provenance_mut(layout.align()));
            return out.len();
        }
        if crate::mode::checked() || crate::profile::active() {
            // Block by block: the checked modes check each, and the profile samples each.
            for (i, o) in out.iter_mut().enumerate() {
                *o = match checked_alloc(layout.size(), layout.align(), false) {
                    Some(p) => p,
                    // SAFETY: a non-zero size (checked above) and a valid layout.
                    None => unsafe { GlobalAlloc::alloc(self, layout) },
                };
                if o.is_null() {
                    return i;
                }
            }
            return out.len();
        }
        // SAFETY: the cache is this thread's or null; size > 0 and align a power of two.
        unsafe { HEAP.alloc_batch(cache_or_init(), layout.size(), layout.align(), out) }
    }

    /// Frees blocks allocated with `layout` in one call: into the magazine while it has room, the rest
    /// straight to the central heap.
    ///
    /// # Safety
    ///
    /// Every pointer was allocated by this allocator with `layout` and is not used afterwards.
    pub unsafe fn free_batch(&self, layout: Layout, blocks: &[*mut u8]) {
        if layout.size() == 0 {
            return;
        }
        if crate::mode::checked_on() {
            for &p in blocks {
                // SAFETY: the checked modes check everything they are given.
                unsafe { checked_free(p) };
            }
            return;
        }
        if crate::profile::SEEN.load(core::sync::atomic::Ordering::Relaxed) {
            // Any of them may be a sampled block, whatever the layout: freed from its address.
            for &p in blocks {
                // SAFETY: per the caller, a live block of this allocator.
                unsafe { Self::free(p) };
            }
            return;
        }
        // SAFETY: per the caller.
        unsafe { HEAP.free_batch(cache_or_init(), layout.size(), layout.align(), blocks) }
    }

    /// Whether `p` points into memory hopless manages: a slab segment (blocks and their headers) or a
    /// large mapping, exactly (the rest of a 4 MiB slot that a large mapping only partly covers is not
    /// ours). A pointer into hopless's headers is ours, and freeing it is reported.
    #[inline]
    pub fn owns(p: *const u8) -> bool {
        !matches!(locate(p), Located::Foreign)
    }

    /// `realloc` without the old size (the C contract): in place when the block's class still fits, a
    /// large block by moving its pages, otherwise allocate, copy, free. `align` is the alignment the new
    /// block needs if it moves. Null on failure, the old block untouched. A pointer that is not a live
    /// hopless block is reported.
    ///
    /// # Safety
    ///
    /// `p` was returned by this allocator and is live; `new_size > 0`; `align` a power of two.
    pub unsafe fn realloc_unsized(p: *mut u8, new_size: usize, align: usize) -> *mut u8 {
        // SAFETY: per the caller (anything else is reported).
        if let Some(q) = unsafe { checked_realloc(p, None, new_size, align) } {
            return q;
        }
        // SAFETY: per the caller.
        let usable = unsafe { HEAP.usable_size(p) };
        if usable == 0 {
            // Not a live block: the free reports it.
            // SAFETY: reported, never freed.
            unsafe { Self::free(p) };
            return ptr::null_mut();
        }
        if size_class::class_for(new_size, align).is_none() {
            // SAFETY: per the caller; only acts on a live large block.
            if let Some(q) = unsafe { HEAP.realloc_large(p, new_size) } {
                // A large block grown in place or by moving its pages counts as an allocation of its
                // new size for the profile (one that copies counts in `alloc_bytes`).
                // SAFETY: `q` is the live block, the caller's; the cache is this thread's.
                return unsafe { charge_grown(q, new_size, align, new_size > usable) };
            }
        } else if new_size <= usable && new_size > usable / 2 {
            return p;
        }
        let q = Self::alloc_bytes(new_size, align, false);
        if !q.is_null() {
            // SAFETY: both blocks hold min(usable, new) bytes and are distinct; `p` is given up.
            unsafe {
                ptr::copy_nonoverlapping(p, q, usable.min(new_size));
                Self::free(p);
            }
        }
        q
    }

    /// Allocates `size > 0` bytes aligned to `align` (a power of two): the C entry point, with the same
    /// fast path as `GlobalAlloc::alloc`. Null on failure.
    #[inline(always)]
    pub fn alloc_bytes(size: usize, align: usize, zeroed: bool) -> *mut u8 {
        if !zeroed
            && size <= crate::size_class::SMALL_MAX
            && align <= 16
            && align.is_power_of_two()
            && size > 0
        {
            // SAFETY: just checked.
            return unsafe { fast::alloc_small(size, align) };
        }
        Self::alloc_bytes_general(size, align, zeroed)
    }

    /// The fast path alone: a block of at least `max(size, align)` bytes from the calling thread's
    /// magazine, or `None` when that takes more (an empty magazine, a thread's first allocation, the
    /// checked modes, `size` or `align` out of the fast range, `size == align == 0`). Callers go on to
    /// [`Hopless::alloc_bytes`] then; the C `malloc` does, so that its fast path ends in a return and
    /// its slow path (which sets `errno`) in a tail call.
    #[inline(always)]
    pub fn alloc_cached(size: usize, align: usize) -> Option<*mut u8> {
        let n = size.max(align);
        if n.wrapping_sub(1) >= crate::size_class::SMALL_MAX || align > 16 || !align.is_power_of_two() {
            return None;
        }
        // SAFETY: `1 <= n <= SMALL_MAX`, so its class is in range.
        unsafe { fast::alloc_cached(crate::size_class::small_class(n), size) }
    }

    /// C's `malloc(size)` from the thread's magazine: [`Hopless::alloc_cached`] with C's alignment
    /// (16 bytes above 8, 8 at most; see `size_class::malloc_class`), with one table load for the
    /// magazine (`cache::MALLOC_MAG_OFFSET`).
    #[inline(always)]
    pub fn malloc_cached(size: usize) -> Option<*mut u8> {
        fast::malloc_cached(size)
    }

    #[cold]
    #[inline(never)]
    fn alloc_bytes_general(size: usize, align: usize, zeroed: bool) -> *mut u8 {
        let Ok(layout) = Layout::from_size_align(size, align) else {
            return ptr::null_mut();
        };
        if layout.size() == 0 {
            return ptr::null_mut();
        }
        // SAFETY: size > 0 and the layout is valid.
        unsafe {
            if zeroed {
                GlobalAlloc::alloc_zeroed(&Hopless, layout)
            } else {
                GlobalAlloc::alloc(&Hopless, layout)
            }
        }
    }

    /// Writes the slabinfo-style statistics table to stderr without allocating (a fixed stack buffer).
    pub fn print_stats() {
        struct Buf {
            b: [u8; 8192],
            n: usize,
        }
        impl core::fmt::Write for Buf {
            fn write_str(&mut self, s: &str) -> core::fmt::Result {
                let free = self.b.get_mut(self.n..).unwrap_or_default();
                let k = s.len().min(free.len());
                if let (Some(dst), Some(src)) = (free.get_mut(..k), s.as_bytes().get(..k)) {
                    dst.copy_from_slice(src);
                    self.n += k;
                }
                Ok(())
            }
        }
        let mut buf = Buf { b: [0; 8192], n: 0 };
        let _ = HEAP.stats().write_slabinfo(&mut buf);
        crate::platform::write_stderr(buf.b.get(..buf.n).unwrap_or_default());
    }

    /// Writes one line describing the allocator's configuration to stderr, without allocating (the
    /// class table, slab sizes, the large-block cache, magazine sizes), from the constants themselves.
    pub fn print_config() {
        // The options (`HOPLESS_HUGE_PAGES`, `HOPLESS_OWNED_SLABS`) are read at set-up, which may not have run yet.
        process_init();
        use crate::segment::{MEDIUM_SLAB_SHIFT, SMALL_SLAB_SHIFT};
        use crate::size_class::{MAG_CAPACITY, MEDIUM_MAX, NUM_CLASSES, NUM_SMALL, SMALL_MAX};
        let mag = MAG_CAPACITY.first().copied().unwrap_or(0) as u64;
        let mag_small_rest = MAG_CAPACITY
            .get(NUM_SMALL.saturating_sub(1))
            .copied()
            .unwrap_or(0) as u64;
        let mut m = crate::report::Msg::new();
        m.str("hopless: libhopless loaded: ")
            .dec(NUM_SMALL as u64)
            .str(" small classes (8..")
            .dec(SMALL_MAX as u64)
            .str(" B, ")
            .dec((1u64 << SMALL_SLAB_SHIFT) >> 10)
            .str(" KiB slabs), ")
            .dec((NUM_CLASSES - NUM_SMALL) as u64)
            .str(" medium (..")
            .dec((MEDIUM_MAX >> 10) as u64)
            .str(" KiB, ")
            .dec((1u64 << MEDIUM_SLAB_SHIFT) >> 10)
            .str(" KiB slabs), large blocks up to ")
            .dec((crate::large::arena::MAX_SPAN >> 20) as u64)
            .str(" MiB in ")
            .dec((crate::large::arena::ARENA_SIZE >> 20) as u64)
            .str(" MiB arenas, larger ones mmap'd (cache of ")
            .dec(crate::large::CACHE_ENTRIES as u64)
            .str("), large blocks in use and free large pages kept within 2.25x the recent peak in use (free: ")
            .dec((crate::large::CACHE_MIN_BYTES >> 20) as u64)
            .str("..")
            .dec((crate::large::CACHE_MAX_BYTES >> 20) as u64)
            .str(" MiB); magazines ")
            .dec(mag)
            .str(" blocks up to 256 B, ")
            .dec(mag_small_rest)
            .str(" above, fewer for medium classes; refill half")
            .str(if HEAP.owned_slabs_enabled() {
                "; thread-owned slabs (refills, flushes and other threads' frees without the class lock)"
            } else {
                "; cross-thread batches through the class lock"
            })
            .str(match crate::platform::huge_pages() {
                crate::platform::HugePages::On => "; transparent huge pages for segments and large blocks",
                crate::platform::HugePages::Auto => {
                    "; transparent huge pages for the segments of 64 B..4 KiB blocks and the arenas, once \
                     either holds 64 MiB"
                }
                crate::platform::HugePages::Off => "; no transparent huge pages",
            })
            .str("; mode ")
            .str(
                match crate::mode::mode() & (crate::mode::DEBUG | crate::mode::HARDENED) {
                    0 => "default",
                    crate::mode::DEBUG => "debug",
                    crate::mode::HARDENED => "hardened",
                    _ => "debug+hardened",
                },
            )
            .str("\n");
        crate::platform::write_stderr(m.as_bytes());
    }

    /// Turns transparent huge pages on (`true`: every segment, arena and large mapping) or off for what is
    /// reserved from now on, as `HOPLESS_HUGE_PAGES=1` or `=0` does at start. Until either is said, the
    /// default asks for them only where what a program touches is dense (segments of 64 B to 4 KiB
    /// blocks and large-block arenas) and only once the heap holds 64 MiB of either: a heap of
    /// hundreds of MiB read at random (a cache of millions of keys) runs faster with them (fewer TLB
    /// misses), at the cost of up to a huge page (2 MiB on x86-64) of unused memory resident per partly
    /// used region. Memory given back to the OS leaves huge pages for small ones, for good, so that the
    /// kernel's background collapse cannot make it resident again. A process that disabled huge pages for
    /// itself (`prctl(PR_SET_THP_DISABLE)`, as Redis does) keeps small pages whatever this says.
    pub fn set_huge_pages(on: bool) {
        process_init();
        crate::platform::set_huge_pages(if on {
            crate::platform::HugePages::On
        } else {
            crate::platform::HugePages::Off
        });
    }

    /// Sets the memory limit in bytes (`None`: no limit), as `HOPLESS_LIMIT` does at start. What counts
    /// is what the program's blocks occupy: the slabs lent to the size classes and the large blocks in
    /// use (free memory kept for reuse and hopless's own metadata do not). An allocation that would pass
    /// the limit fails (null; `GlobalAlloc` callers get the alloc error handler, C callers `ENOMEM`)
    /// after a trim ([`Hopless::trim`]) was tried; [`Stats::limit_refusals`] counts the refusals. A limit
    /// below what is held already refuses every request for new memory until enough is freed.
    pub fn set_limit(bytes: Option<usize>) {
        process_init();
        crate::limit::set(bytes.unwrap_or(crate::limit::NONE));
    }

    /// The memory limit ([`Hopless::set_limit`]), if one is set.
    pub fn limit() -> Option<usize> {
        process_init();
        Some(crate::limit::get()).filter(|&l| l != crate::limit::NONE)
    }

    /// Returns the calling thread's cached blocks to the central heap.
    pub fn flush_thread_cache() {
        // SAFETY: the thread's own live caches.
        for_each_cache_of_thread(|tc| unsafe { HEAP.flush_all(tc) });
    }

    /// Flushes the calling thread's cache and the caches of threads that no longer exist (a `fork`
    /// child's copies of its parent's other threads), then gives every fully free slab and every cached
    /// large mapping back to the OS (like `malloc_trim`). Caches of other live threads keep their
    /// blocks.
    pub fn trim() {
        Self::flush_thread_cache();
        // The calling thread's caches are its own whatever thread id they recorded (a child made by a
        // `clone` that ran no fork handler has its parent's): `retire_orphans` must not take them.
        let tid = crate::platform::current_tid();
        // SAFETY: the thread's own live caches; `owner_tid` is an atomic.
        for_each_cache_of_thread(|tc| unsafe {
            (*tc).owner_tid.store(tid, core::sync::atomic::Ordering::Relaxed)
        });
        HEAP.retire_orphans();
        HEAP.trim();
    }

    /// A snapshot of the allocator's counters (all zero but slabs and large blocks without the `stats`
    /// feature).
    pub fn stats() -> Stats {
        HEAP.stats()
    }
}

// SAFETY: the same guarantees as the GlobalAlloc impl; zero-size requests get a dangling aligned pointer
// and are never passed to the heap; grow/shrink keep the contents up to the smaller size.
unsafe impl allocator_api2::alloc::Allocator for Hopless {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.size() == 0 {
            let p = NonNull::<u8>::dangling().with_addr(
                layout
                    .align()
                    .try_into()
                    .map_err(|_| allocator_api2::alloc::AllocError)?,
            );
            return Ok(NonNull::slice_from_raw_parts(p, 0));
        }
        // SAFETY: non-zero size.
        let p = unsafe { GlobalAlloc::alloc(self, layout) };
        NonNull::new(p)
            .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
            .ok_or(allocator_api2::alloc::AllocError)
    }

    #[inline]
    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.size() == 0 {
            return self.allocate(layout);
        }
        // SAFETY: non-zero size.
        let p = unsafe { GlobalAlloc::alloc_zeroed(self, layout) };
        NonNull::new(p)
            .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
            .ok_or(allocator_api2::alloc::AllocError)
    }

    #[inline]
    unsafe fn deallocate(&self, p: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: per the Allocator contract, `p` is a live block of `layout`.
            unsafe { GlobalAlloc::dealloc(self, p.as_ptr(), layout) }
        }
    }

    unsafe fn grow(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        // SAFETY: forwarded contract.
        unsafe { self.resize(p, old, new) }
    }

    unsafe fn shrink(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        // SAFETY: forwarded contract.
        unsafe { self.resize(p, old, new) }
    }
}

impl Hopless {
    /// Grow or shrink for the `Allocator` impl: realloc when the alignment stays and neither size is
    /// zero, otherwise allocate, copy and free.
    ///
    /// # Safety
    ///
    /// As for `Allocator::grow` / `shrink`: `p` is a live block of `old`.
    unsafe fn resize(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        use allocator_api2::alloc::{AllocError, Allocator};
        if old.align() == new.align() && old.size() != 0 && new.size() != 0 {
            // SAFETY: `p` is a live block of `old`; new size non-zero.
            let q = unsafe { GlobalAlloc::realloc(self, p.as_ptr(), old, new.size()) };
            return NonNull::new(q)
                .map(|q| NonNull::slice_from_raw_parts(q, new.size()))
                .ok_or(AllocError);
        }
        let q = self.allocate(new)?;
        // SAFETY: both blocks hold at least min(old, new) bytes and are distinct; `p` is then freed.
        unsafe {
            ptr::copy_nonoverlapping(p.as_ptr(), q.as_ptr().cast::<u8>(), old.size().min(new.size()));
            self.deallocate(p, old);
        }
        Ok(q)
    }
}

// SAFETY: blocks come from the heap aligned and sized as their layout asks (the class table maps every
// (size, align) to a class that satisfies both, or to a large mapping); a block is handed out once until
// freed; failure returns null.
unsafe impl GlobalAlloc for Hopless {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        if size <= SMALL_MAX && align <= 16 {
            // SAFETY: a Layout's size is non-zero (GlobalAlloc contract).
            return unsafe { fast::alloc_small(size, align) };
        }
        // SAFETY: a Layout's size is non-zero (GlobalAlloc contract) and its align a power of two.
        unsafe { alloc_general(size, align, false) }
    }

    #[inline(always)]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let (size, align) = (layout.size(), layout.align());
        if size <= SMALL_MAX && align <= 16 {
            // SAFETY: per the GlobalAlloc contract `p` is a live block of this layout, so of its class:
            // at least 8 bytes, aligned to 8.
            return unsafe { fast::free_sized(small_class(size.max(align)), p) };
        }
        // SAFETY: as above; the header lookup finds the class or the large mapping.
        unsafe { Hopless::free(p) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() <= SMALL_MAX && layout.align() <= 16 {
            // SAFETY: forwarded contract.
            let p = unsafe { self.alloc(layout) };
            if !p.is_null() {
                // SAFETY: the block has at least `size` bytes.
                unsafe { ptr::write_bytes(p, 0, layout.size()) };
            }
            return p;
        }
        // SAFETY: forwarded contract; large blocks fresh from mmap skip the memset.
        unsafe { alloc_general(layout.size(), layout.align(), true) }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: per the caller (a live block of `layout`, `new_size > 0`).
        if let Some(q) = unsafe { checked_realloc(p, Some(layout.size()), new_size, layout.align()) } {
            return q;
        }
        if let Some(c) = size_class::class_for(layout.size(), layout.align()) {
            if size_class::class_for(new_size, layout.align()) == Some(c) {
                return p;
            }
        }
        // SAFETY: forwarded contract (new_size > 0, p allocated with layout); a failed realloc leaves
        // `p` as it was, so it may be tried again.
        let grow = || unsafe { HEAP.realloc(cache_or_init(), p, layout.size(), layout.align(), new_size) };
        let mut q = grow();
        if q.is_null() {
            q = again_after_trim(grow);
        }
        // A realloc that grows or moves the block counts as an allocation of its new size for the
        // profile.
        // SAFETY: `q` is null or the live block, the caller's.
        unsafe { charge_grown(q, new_size, layout.align(), new_size > layout.size() || q != p) }
    }
}

/// A realloc's result `q` of `new_size` bytes: when `counts` (it grew or moved), its size comes off
/// the thread's sampling countdown, and the realloc is sampled if that runs it out (see `sample`).
///
/// # Safety
///
/// `q` is null or a live block of this heap, of at least `new_size` bytes, that the caller owns.
#[inline]
unsafe fn charge_grown(q: *mut u8, new_size: usize, align: usize, counts: bool) -> *mut u8 {
    let tc = crate::process::current_or_null();
    if !counts || q.is_null() || tc.is_null() {
        return q;
    }
    // SAFETY: `tc` is this thread's live cache; `q` per the caller, its `new_size` bytes kept.
    unsafe {
        if ThreadCache::charge(tc, new_size) {
            return crate::sample::sampled(tc, q, new_size, align, false, new_size);
        }
    }
    q
}
