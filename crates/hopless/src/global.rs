//! hopless as the process's allocator: one static heap over the OS, one thread cache per thread.
//!
//! A thread's cache pointer lives in a `const`-initialised thread-local of a type without `Drop`, so
//! reading it never allocates or registers anything. A new thread's pointer is the static empty cache,
//! whose magazines all have capacity 0: its first alloc or free falls to the slow path, which takes a
//! cache from the heap's registry (memory from the page source, never from this allocator's public path)
//! and registers a pthread key whose destructor returns the cache's blocks when the thread exits.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::{Cell, UnsafeCell};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

use crate::heap::Heap;
use crate::platform::OsPages;
use crate::size_class::{self, small_class, SMALL_MAX};
use crate::stats::{stat, Stats};
use crate::thread_cache::{Push, ThreadCache};

/// The process's heap.
pub(crate) static HEAP: Heap<OsPages> = Heap::new(OsPages);

/// The cache every thread starts with: capacity 0 everywhere, never written.
struct EmptyCache(UnsafeCell<ThreadCache>);
// SAFETY: nobody writes the empty cache: with capacity 0 neither `pop` nor `push` stores into it.
unsafe impl Sync for EmptyCache {}
static EMPTY_CACHE: EmptyCache = EmptyCache(UnsafeCell::new(ThreadCache::EMPTY));

thread_local! {
    static CACHE: Cell<*mut ThreadCache> = const { Cell::new(EMPTY_CACHE.0.get()) };
    /// Set once the exit destructor has run: later allocations of this thread bypass the cache.
    static RETIRED: Cell<bool> = const { Cell::new(false) };
    /// Hardened mode: the thread's cache, used only by the checked paths (`CACHE` stays the empty one, so
    /// the fast path always falls through to them).
    #[cfg(feature = "debug")]
    static HARDENED_CACHE: Cell<*mut ThreadCache> = const { Cell::new(ptr::null_mut()) };
}

#[inline(always)]
fn current() -> *mut ThreadCache {
    CACHE.with(|c| c.get())
}

#[inline(always)]
fn empty() -> *mut ThreadCache {
    EMPTY_CACHE.0.get()
}

/// The calling thread's cache, set up on first use; null when the thread has no cache (past its exit
/// destructor, or out of memory): callers then go straight to the central heap.
#[cold]
#[inline(never)]
fn cache_or_init() -> *mut ThreadCache {
    let tc = current();
    if tc != empty() {
        return tc;
    }
    if RETIRED.with(|r| r.get()) {
        return ptr::null_mut();
    }
    // The checked modes keep every thread on the empty cache, so every operation reaches a checked path.
    #[cfg(feature = "debug")]
    if crate::debug::mode() & (crate::debug::DEBUG | crate::debug::HARDENED) != 0 {
        return ptr::null_mut();
    }
    process_init();
    let tc = HEAP.new_thread_cache(crate::platform::current_tid());
    if tc.is_null() {
        return tc;
    }
    // Published before the exit hook is registered: `pthread_setspecific` allocates for keys past the
    // first 32, and that allocation must find this cache rather than set up another one.
    CACHE.with(|c| c.set(tc));
    register_exit(tc);
    tc
}

/// Hardened mode: the calling thread's cache for the checked paths, set up on first use; null past the
/// thread's exit destructor or out of memory (the checked paths then go uncached).
#[cfg(feature = "debug")]
#[cold]
fn hardened_cache() -> *mut ThreadCache {
    let tc = HARDENED_CACHE.with(|c| c.get());
    if !tc.is_null() || RETIRED.with(|r| r.get()) {
        return tc;
    }
    process_init();
    let tc = HEAP.new_thread_cache(crate::platform::current_tid());
    if tc.is_null() {
        return tc;
    }
    // Published first, as in `cache_or_init`.
    HARDENED_CACHE.with(|c| c.set(tc));
    register_exit(tc);
    tc
}

/// A checked mode's allocation (debug or hardened), or `None` when neither is on.
#[cfg(feature = "debug")]
#[inline]
fn checked_alloc(size: usize, align: usize, zeroed: bool) -> Option<*mut u8> {
    let mode = crate::debug::mode();
    if mode & crate::debug::DEBUG != 0 {
        Some(HEAP.debug_alloc(size, align, zeroed))
    } else if mode & crate::debug::HARDENED != 0 {
        // SAFETY: the cache is this thread's or null.
        Some(unsafe { HEAP.hardened_alloc(hardened_cache(), size, align, zeroed) })
    } else {
        None
    }
}

/// A checked mode's free; false (nothing done) when neither mode is on.
///
/// # Safety
///
/// `p` is the program's claim of a live block (anything else is reported).
#[cfg(feature = "debug")]
#[inline]
unsafe fn checked_free(p: *mut u8) -> bool {
    if !crate::debug::checked_on() {
        return false;
    }
    // SAFETY: both check everything they are given; the cache is this thread's or null.
    unsafe {
        if crate::debug::debug_on() {
            HEAP.debug_free(p);
        } else {
            HEAP.hardened_free(hardened_cache(), p);
        }
    }
    true
}

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
fn process_init() {
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
    #[cfg(not(miri))]
    {
        // SAFETY: getauxval has no preconditions; AT_RANDOM points at 16 random bytes the kernel gave
        // this process (or is 0).
        let random = unsafe {
            let at = libc::getauxval(libc::AT_RANDOM) as *const u8;
            if at.is_null() {
                0
            } else {
                at.cast::<usize>().read_unaligned()
            }
        };
        crate::thread_cache::seed_free_key(random);
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer; the destructor is an `extern "C"` fn. Creating a key does
    // not allocate.
    if unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) } == 0 {
        KEY.store(key, Ordering::Relaxed);
        KEY_OK.store(true, Ordering::Release);
    }
    // SAFETY: plain extern "C" handlers.
    unsafe { libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child)) };
    INIT_OWNER.store(0, Ordering::Relaxed);
    INIT.store(INIT_READY, Ordering::Release);
}

extern "C" fn fork_prepare() {
    HEAP.lock_all();
    crate::lock::set_fork_holder();
}

extern "C" fn fork_parent() {
    crate::lock::clear_fork_holder();
    // SAFETY: runs once after `fork_prepare`, in the forking thread, which holds every lock.
    unsafe { HEAP.unlock_all() }
}

extern "C" fn fork_child() {
    crate::lock::clear_fork_holder();
    let tc = current();
    if tc != empty() {
        // SAFETY: the child's only thread and its own cache; the registry lock is held (by it).
        unsafe { HEAP.adopt_after_fork(tc, crate::platform::current_tid()) };
    }
    #[cfg(feature = "debug")]
    {
        let tc = HARDENED_CACHE.with(|c| c.get());
        if !tc.is_null() {
            // SAFETY: as above.
            unsafe { HEAP.adopt_after_fork(tc, crate::platform::current_tid()) };
        }
    }
    // SAFETY: the child's only thread, a copy of the forking one, holds every lock.
    unsafe { HEAP.unlock_all() }
}

extern "C" fn on_load() {
    process_init();
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// Arranges for `tc` to be retired when the thread exits. If that fails (no key, or no memory for the
/// key's slot), the cache is reclaimed later anyway, once its thread is found dead.
fn register_exit(tc: *mut ThreadCache) {
    if KEY_OK.load(Ordering::Acquire) {
        // SAFETY: the key exists; the value is only passed back to `on_thread_exit`.
        unsafe { libc::pthread_setspecific(KEY.load(Ordering::Relaxed), tc.cast()) };
    }
}

unsafe extern "C" fn on_thread_exit(arg: *mut libc::c_void) {
    let tc = arg.cast::<ThreadCache>();
    CACHE.with(|c| c.set(empty()));
    #[cfg(feature = "debug")]
    HARDENED_CACHE.with(|c| c.set(ptr::null_mut()));
    RETIRED.with(|r| r.set(true));
    // SAFETY: `arg` is the cache this thread registered; the thread is exiting and no longer uses it
    // (its thread-local now points at the empty cache, and RETIRED stops a new one being set up).
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

/// The magazine was empty (or this thread has no cache yet).
///
/// # Safety
///
/// `class` is the class of (`size`, `align`), a valid non-zero-size layout.
#[cold]
#[inline(never)]
unsafe fn alloc_slow(class: usize, size: usize, align: usize) -> *mut u8 {
    process_init();
    #[cfg(feature = "debug")]
    if let Some(p) = checked_alloc(size, align, false) {
        return p;
    }
    let _ = (size, align);
    let tc = cache_or_init();
    if tc.is_null() {
        return HEAP.alloc_uncached(class);
    }
    // SAFETY: `tc` is this thread's live cache.
    unsafe {
        let p = ThreadCache::pop(tc, class);
        if p.is_null() {
            HEAP.alloc_refill(tc, class)
        } else {
            stat!((*tc).counters[class].alloc_fast.bump());
            p
        }
    }
}

/// The magazine was full (or this thread has no cache yet, or debug mode is on). The block's free key
/// has not been written.
///
/// # Safety
///
/// `p` is a live block of `class` that the caller gives up.
#[cold]
#[inline(never)]
unsafe fn free_slow(class: usize, p: *mut u8) {
    process_init();
    #[cfg(feature = "debug")]
    // SAFETY: forwarded; the checked modes check everything.
    if unsafe { checked_free(p) } {
        return;
    }
    // SAFETY: the caller frees a block of `class`; the cache is this thread's or null.
    unsafe { HEAP.free_checked(cache_or_init(), class, p) }
}

/// The block's first word is a free key for another place (see `thread_cache`).
///
/// # Safety
///
/// As for [`free_slow`].
#[cold]
#[inline(never)]
unsafe fn free_suspect(class: usize, p: *mut u8) {
    // SAFETY: forwarded; the cache is this thread's (the fast path found room in it).
    unsafe { HEAP.free_suspect(current(), class, p) }
}

/// Everything the fast path does not take: alignment over 16, sizes over 4 KiB.
///
/// # Safety
///
/// `size > 0` and `align` a power of two (a valid layout).
#[cold]
#[inline(never)]
unsafe fn alloc_general(size: usize, align: usize, zeroed: bool) -> *mut u8 {
    process_init();
    #[cfg(feature = "debug")]
    if let Some(p) = checked_alloc(size, align, zeroed) {
        return p;
    }
    // SAFETY: the cache is this thread's or null; size > 0 and align is a power of two (from a Layout).
    unsafe { HEAP.alloc(cache_or_init(), size, align, zeroed) }
}

impl Hopless {
    /// Frees a block without its size (the C `free` contract): the slab header tells its class.
    ///
    /// # Safety
    ///
    /// `p` was returned by this allocator and is not used afterwards.
    #[inline]
    pub unsafe fn free(p: *mut u8) {
        if p.is_null() {
            return;
        }
        let mut tc = current();
        if tc == empty() {
            #[cfg(feature = "debug")]
            // SAFETY: the checked modes check everything they are given.
            if unsafe { checked_free(p) } {
                return;
            }
            tc = cache_or_init();
        }
        // SAFETY: per the caller; `tc` is this thread's live cache or null.
        unsafe { HEAP.free_ptr(tc, p) }
    }

    /// The usable size of a block: at least what was asked for.
    ///
    /// # Safety
    ///
    /// `p` is a live block returned by this allocator.
    pub unsafe fn usable_size(p: *const u8) -> usize {
        #[cfg(feature = "debug")]
        if crate::debug::checked_on() {
            // SAFETY: per the caller; in the checked modes the usable size is what was asked (the rest is
            // redzone).
            return unsafe {
                if crate::debug::debug_on() {
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
        #[cfg(feature = "debug")]
        if crate::debug::mode() & (crate::debug::DEBUG | crate::debug::HARDENED) != 0 {
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
        #[cfg(feature = "debug")]
        if crate::debug::checked_on() {
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
        #[cfg(feature = "debug")]
        if crate::debug::checked_on() && !crate::debug::debug_on() {
            // SAFETY: per the caller (anything else is reported); the cache is this thread's or null.
            return unsafe { HEAP.hardened_realloc(hardened_cache(), p, new_size, align) };
        }
        #[cfg(feature = "debug")]
        if crate::debug::debug_on() {
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
    #[inline]
    pub fn alloc_bytes(size: usize, align: usize, zeroed: bool) -> *mut u8 {
        let Ok(layout) = Layout::from_size_align(size, align) else {
            return ptr::null_mut();
        };
        // SAFETY: size > 0 (the caller's contract) and the layout is valid.
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

    /// Returns the calling thread's cached blocks to the central heap.
    pub fn flush_thread_cache() {
        let tc = current();
        if tc != empty() {
            // SAFETY: the thread's own live cache.
            unsafe { HEAP.flush_all(tc) };
        }
        #[cfg(feature = "debug")]
        {
            let tc = HARDENED_CACHE.with(|c| c.get());
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

// SAFETY: blocks come from the heap aligned and sized as their layout asks (the class table maps every
// (size, align) to a class that satisfies both, or to a large mapping); a block is handed out once until
// freed; failure returns null.
unsafe impl GlobalAlloc for Hopless {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        // Debug mode needs no test here: it never gives a thread a cache, so this pop always falls to
        // `alloc_slow`, which checks the mode (and the same for frees).
        if size <= SMALL_MAX && align <= 16 {
            let class = small_class(size.max(align));
            let tc = current();
            // SAFETY: `tc` is this thread's cache or the empty one; `class` is in range.
            let p = unsafe { ThreadCache::pop(tc, class) };
            if !p.is_null() {
                // SAFETY: `tc` is live: the empty cache never yields a block.
                stat!(unsafe { (*tc).counters[class].alloc_fast.bump() });
                return p;
            }
            // SAFETY: class in range.
            return unsafe { alloc_slow(class, size, align) };
        }
        // SAFETY: a Layout's size is non-zero (GlobalAlloc contract) and its align a power of two.
        unsafe { alloc_general(size, align, false) }
    }

    #[inline(always)]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let (size, align) = (layout.size(), layout.align());
        if size <= SMALL_MAX && align <= 16 {
            let class = small_class(size.max(align));
            let tc = current();
            // SAFETY: `tc` is this thread's cache or the empty one (never room there, so debug mode and
            // threads without a cache take the slow path); per the GlobalAlloc contract `p` is a live
            // block of this layout, so of `class`: at least 8 bytes, aligned to 8.
            unsafe {
                match ThreadCache::push_keyed(tc, class, p) {
                    Push::Done => {
                        stat!((*tc).counters[class].free_fast.bump());
                        return;
                    }
                    Push::Suspect => return free_suspect(class, p),
                    Push::Full => return free_slow(class, p),
                }
            }
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
        #[cfg(feature = "debug")]
        if crate::debug::checked_on() && !crate::debug::debug_on() {
            // SAFETY: per the caller; the cache is this thread's or null.
            return unsafe { HEAP.hardened_realloc(hardened_cache(), p, new_size, layout.align()) };
        }
        #[cfg(feature = "debug")]
        if crate::debug::debug_on() {
            // Debug mode never resizes in place: the old block is checked and poisoned.
            let q = HEAP.debug_alloc(new_size, layout.align(), false);
            if !q.is_null() {
                // SAFETY: both blocks hold min(old, new) bytes; `p` is given up.
                unsafe {
                    ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                    HEAP.debug_free(p);
                }
            }
            return q;
        }
        if let Some(c) = size_class::class_for(layout.size(), layout.align()) {
            if size_class::class_for(new_size, layout.align()) == Some(c) {
                return p;
            }
        }
        // SAFETY: forwarded contract (new_size > 0, p allocated with layout).
        unsafe { HEAP.realloc(cache_or_init(), p, layout.size(), layout.align(), new_size) }
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
