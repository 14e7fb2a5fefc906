//! hopless as the process's allocator: the one static heap over the OS, its set-up at load time, the
//! threads' exit hook, and [`Hopless`]'s public API (the C-style calls, batches, stats, trim) and its
//! `Allocator` impl. The `GlobalAlloc` fast paths are in `fast.rs`, the slow paths in `slow.rs`, the fork
//! handlers in `fork.rs`.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

use crate::fast::{current, empty, hardened_cache_of_thread, retire_thread};
use crate::fork::{fork_child, fork_parent, fork_prepare};
use crate::heap::Heap;
use crate::platform::OsPages;
use crate::size_class::{self};
use crate::slow::{cache_or_init, checked_alloc, checked_free, hardened_cache};
use crate::stats::Stats;
use crate::thread_cache::ThreadCache;

/// The process's heap.
pub(crate) static HEAP: Heap<OsPages> = Heap::new(OsPages);

// ------------------------------------------------------------------------------------------------------
// Process set-up: at load time (`.init_array`), before the program's own code, so hopless's fork
// handlers are registered before any the program registers (prepare handlers run in reverse order, so
// hopless takes its locks last, after the program's handlers have allocated); and lazily at the first
// slow-path operation, for a loader that skipped the constructor.

const INIT_NONE: u8 = 0;
const INIT_BUSY: u8 = 1;
const INIT_READY: u8 = 2;
static INIT: AtomicU8 = AtomicU8::new(INIT_NONE);
/// The thread running the set-up: its own allocations during it (from `pthread_atfork`) go ahead.
static INIT_OWNER: AtomicUsize = AtomicUsize::new(0);
static KEY_OK: AtomicBool = AtomicBool::new(false);
static KEY: AtomicU32 = AtomicU32::new(0);

#[inline]
pub(crate) fn process_init() {
    if INIT.load(Ordering::Acquire) != INIT_READY {
        process_init_slow();
    }
}

#[cold]
#[inline(never)]
fn process_init_slow() {
    loop {
        match INIT.compare_exchange(INIT_NONE, INIT_BUSY, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(INIT_READY) => return,
            Err(_) => {
                if INIT_OWNER.load(Ordering::Relaxed) == crate::platform::thread_self() {
                    return; // our own set-up allocating: go ahead without the rest of it
                }
                crate::platform::yield_now();
            }
        }
    }
    INIT_OWNER.store(crate::platform::thread_self(), Ordering::Relaxed);
    crate::thread_cache::seed_free_key(crate::platform::process_random());
    if crate::platform::env_flag(c"HOPLESS_TRANSFER") {
        HEAP.set_transfer(true);
    }
    if let Some(key) = crate::platform::create_thread_key(on_thread_exit) {
        KEY.store(key, Ordering::Relaxed);
        KEY_OK.store(true, Ordering::Release);
    }
    crate::platform::register_fork_handlers(fork_prepare, fork_parent, fork_child);
    INIT_OWNER.store(0, Ordering::Relaxed);
    INIT.store(INIT_READY, Ordering::Release);
}

extern "C" fn on_load() {
    process_init();
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// Arranges for `tc` to be retired when the thread exits. If that fails (no key, or no memory for the
/// key's slot), the cache is reclaimed later anyway, once its thread is found dead.
pub(crate) fn register_exit(tc: *mut ThreadCache) {
    if KEY_OK.load(Ordering::Acquire) {
        // SAFETY: the key's destructor is `on_thread_exit`, which takes this thread's cache.
        unsafe { crate::platform::set_thread_value(KEY.load(Ordering::Relaxed), tc.cast()) };
    }
}

unsafe extern "C" fn on_thread_exit(arg: *mut libc::c_void) {
    let tc = arg.cast::<ThreadCache>();
    retire_thread();
    // SAFETY:
    // 1. `arg` is the value this thread set for the key: its own cache from `new_thread_cache`
    //    (`register_exit` is the only setter), and the destructor runs once per thread and value.
    // 2. Nothing of this thread uses the cache after this point: its thread-locals now say "empty" and
    //    "retired", so a later allocation in another key's destructor goes uncached instead.
    // 3. Other threads only read its magazines through atomics (the double-free check), which the
    //    retirement leaves valid (empty, then parked or unlinked under the registry lock).
    unsafe { HEAP.retire_thread_cache(tc) };
}

/// The hopless allocator. Zero-sized: every instance uses the one process heap.
///
/// ```
/// #[global_allocator]
/// static GLOBAL: hopless::Hopless = hopless::Hopless;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hopless;
impl Hopless {
    /// Frees a block without its size (the C `free` contract): the slab header tells its class. Null
    /// is ignored.
    ///
    /// # Safety
    ///
    /// `p` is null, or was returned by this allocator and is not used afterwards.
    #[inline(always)]
    pub unsafe fn free(p: *mut u8) {
        // SAFETY: forwarded.
        unsafe { crate::fast::free_unsized(p) }
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

    /// Allocates `out.len()` blocks of one layout in one call (the seed's `pool_malloc_batch`): from the
    /// thread's magazine first, then straight from the central heap, one lock hold per batch. Returns how
    /// many were allocated; fewer than asked only when memory ran out. A zero-size layout fills `out` with
    /// dangling, aligned pointers.
    pub fn alloc_batch(&self, layout: Layout, out: &mut [*mut u8]) -> usize {
        if layout.size() == 0 {
            out.fill(ptr::without_provenance_mut(layout.align()));
            return out.len();
        }
        if crate::mode::mode() & (crate::mode::DEBUG | crate::mode::HARDENED) != 0 {
            for (i, o) in out.iter_mut().enumerate() {
                *o = checked_alloc(layout.size(), layout.align(), false).unwrap_or(ptr::null_mut());
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
        // SAFETY: per the caller.
        unsafe { HEAP.free_batch(cache_or_init(), layout.size(), layout.align(), blocks) }
    }

    /// Whether `p` points into memory hopless manages: a slab segment (blocks and their headers) or a
    /// large mapping, exactly (the rest of a 4 MiB slot that a large mapping only partly covers is not
    /// ours). A pointer into hopless's headers is ours, and freeing it is reported.
    #[inline]
    pub fn owns(p: *const u8) -> bool {
        !matches!(crate::segment::locate(p), crate::segment::Located::Foreign)
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
        if crate::mode::checked_on() && !crate::mode::debug_on() {
            // SAFETY: per the caller (anything else is reported); the cache is this thread's or null.
            return unsafe { HEAP.hardened_realloc(hardened_cache(), p, new_size, align) };
        }
        if crate::mode::debug_on() {
            // Debug mode never resizes in place: the old block is checked and poisoned.
            // SAFETY: per the caller (a foreign pointer is reported by the free).
            let old = if Self::owns(p) {
                // SAFETY: a hopless block, live per the caller.
                unsafe { HEAP.debug_size(p) }
            } else {
                0
            };
            let q = HEAP.debug_alloc(new_size, align, false);
            if !q.is_null() {
                // SAFETY: both blocks hold min(old, new) bytes; `p` is given up.
                unsafe {
                    ptr::copy_nonoverlapping(p, q, old.min(new_size));
                    HEAP.debug_free(p);
                }
            }
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
                return q;
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
            return unsafe { crate::fast::alloc_small(size, align) };
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
        unsafe { crate::fast::alloc_cached(crate::size_class::small_class(n)) }
    }

    /// C's `malloc(size)` from the thread's magazine: [`Hopless::alloc_cached`] with C's alignment
    /// (16 bytes above 8, 8 at most; see `size_class::malloc_class`), with one table load for the
    /// magazine (`thread_cache::MALLOC_MAG_OFFSET`).
    #[inline(always)]
    pub fn malloc_cached(size: usize) -> Option<*mut u8> {
        crate::fast::malloc_cached(size)
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
        // The options (`HOPLESS_TRANSFER`) are read at set-up, which may not have run yet.
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
            .dec((crate::arena::MAX_SPAN >> 20) as u64)
            .str(" MiB in ")
            .dec((crate::arena::ARENA_SIZE >> 20) as u64)
            .str(" MiB arenas, larger ones mmap'd (cache of ")
            .dec(crate::large::CACHE_ENTRIES as u64)
            .str("), free large pages kept up to 1.25x the recent peak in use (")
            .dec((crate::large::CACHE_MIN_BYTES >> 20) as u64)
            .str("..")
            .dec((crate::large::CACHE_MAX_BYTES >> 20) as u64)
            .str(" MiB); magazines ")
            .dec(mag)
            .str(" blocks up to 256 B, ")
            .dec(mag_small_rest)
            .str(" above, fewer for medium classes; refill half")
            .str(if HEAP.transfer_enabled() {
                "; cross-thread batches through transfer slots"
            } else {
                "; cross-thread batches through the class lock"
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

    /// Returns the calling thread's cached blocks to the central heap.
    pub fn flush_thread_cache() {
        let tc = current();
        if tc != empty() {
            // SAFETY: the thread's own live cache.
            unsafe { HEAP.flush_all(tc) };
        }
        {
            let tc = hardened_cache_of_thread();
            if !tc.is_null() {
                // SAFETY: as above.
                unsafe { HEAP.flush_all(tc) };
            }
        }
    }

    /// Flushes the calling thread's cache, then gives every fully free slab and every cached large
    /// mapping back to the OS (like `malloc_trim`).
    pub fn trim() {
        Self::flush_thread_cache();
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
