//! The process: the one heap over the OS, its set-up at load time, each thread's words (its cache, the
//! empty cache a new thread starts with, whether it has retired), the thread exit hook, and the fork
//! handlers. Everything above (`slow`, `fast`, `api`) reaches the heap and the thread's state through
//! here; nothing here calls up into them (mimalloc keeps the same in `src/init.c`, below `alloc.c`).
//!
//! A thread's cache pointer is one of its words (`crate::tls`): on x86-64 Linux a single `%fs`-relative
//! load of the initial-exec TLS model, never a call to `__tls_get_addr`. A new thread's pointer is the
//! static empty cache, whose magazines all have capacity 0: its first alloc or free falls to the slow
//! path, which takes a cache from the heap's registry and registers the thread's exit hook. The checked
//! modes keep every thread on the empty cache, so the fast path needs no mode test.
//!
//! Idle memory goes back from a background thread (`background`), started by a free's slow path.
//!
//! Fork: the handlers, registered at load time, take every lock before the fork and give them back after
//! it, in the parent and in the child, where the forking thread's caches get the child's thread id. A
//! handler the program registered earlier may allocate: its calls come after ours in the prepare order,
//! from the thread that holds every lock, which `lock` lets through.

pub(crate) mod background;

use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

use crate::cache::ThreadCache;
use crate::heap::Heap;
use crate::platform::OsPages;
use crate::tls::{read, read_ptr, write, write_ptr, CACHE, HARDENED, RETIRED, SEGMENT_END};

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
    crate::cache::seed_free_key(crate::platform::process_random());
    match crate::platform::env_setting(c"HOPLESS_HUGE_PAGES") {
        Some(true) => crate::platform::set_huge_pages(crate::platform::HugePages::On),
        Some(false) => crate::platform::set_huge_pages(crate::platform::HugePages::Off),
        None => {}
    }
    if crate::platform::env_flag(c"HOPLESS_OWNED_SLABS") {
        HEAP.set_owned_slabs(true);
    }
    background::configure();
    crate::profile::configure();
    if let Some(text) = crate::platform::env_bytes(c"HOPLESS_LIMIT") {
        match crate::limit::parse_size(text) {
            Some(bytes) => crate::limit::set(bytes),
            None => crate::platform::write_stderr(
                b"hopless: HOPLESS_LIMIT is not a size (a number of bytes, or with k, m, g or t: 4g); \
                  no limit set\n",
            ),
        }
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
    crate::profile::after_load();
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

extern "C" fn on_exit() {
    crate::profile::at_exit();
}

/// At exit, after the program's own `atexit` handlers: the heap profile's dump and leak report.
#[used]
#[link_section = ".fini_array"]
static ON_EXIT: extern "C" fn() = on_exit;

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

// ------------------------------------------------------------------------------------------------------
// The thread's words.
//
// The thread's cache pointer and last segment live in its words (`crate::tls`). The segment is the
// last small or medium segment of the process heap its C free path found in the segment map, as the
// segment's last byte address (`segment | (SEGMENT_SIZE - 1)`), 0 for none. A pointer whose address
// ORed with the mask equals it needs no map lookup; no pointer's does while it is 0, so both words start
// as zero. Such a segment is never unmapped (the process heap is never dropped), so the answer never
// goes stale. It is set only while the thread has a live cache, and cleared when the thread gives its
// cache up (`set_current`): a hit therefore means the cache pointer is not null.

/// The cache every thread starts with: capacity 0 everywhere, never written.
struct EmptyCache(UnsafeCell<ThreadCache>);
// SAFETY: sharing `&EmptyCache` between threads is sound because nothing ever writes through it:
// 1. its magazines have `cap == 0` and `count == 0` (`ThreadCache::EMPTY`), so `pop` returns null before
//    any store and `push`/`push_keyed` return before storing (`n >= cap`);
// 2. `ThreadCache::open`, the only writer of `cap`, is called only on a cache from the registry (the slow
//    paths check `tc != empty()` or get theirs from `cache_or_init`);
// 3. the counters (feature `stats`) are bumped only on a live cache: the fast path counts only after a
//    pop or push succeeded, which never happens here.
unsafe impl Sync for EmptyCache {}
static EMPTY_CACHE: EmptyCache = EmptyCache(UnsafeCell::new(ThreadCache::EMPTY));

/// Whether the calling thread's exit destructor has run (its later allocations bypass the cache).
#[inline]
pub(crate) fn retired() -> bool {
    read::<RETIRED>() != 0
}

/// Hardened mode: the thread's cache, used only by the checked paths (`CACHE` stays the empty one, so
/// the fast path always falls through to them); null until set up.
#[inline]
pub(crate) fn hardened_cache_of_thread() -> *mut ThreadCache {
    read_ptr::<HARDENED, ThreadCache>()
}

/// Sets the thread's hardened-mode cache.
#[inline]
pub(crate) fn set_hardened_cache(tc: *mut ThreadCache) {
    write_ptr::<HARDENED, ThreadCache>(tc);
}

/// Marks the thread as past its exit destructor and drops both its caches from its words.
pub(crate) fn retire_thread() {
    set_current(empty());
    set_hardened_cache(ptr::null_mut());
    write::<RETIRED>(1);
}

/// The calling thread's cache (the empty one until its first slow-path operation).
#[inline(always)]
pub(crate) fn current() -> *mut ThreadCache {
    let tc = current_or_null();
    if tc.is_null() {
        empty()
    } else {
        tc
    }
}

/// Makes `tc` the calling thread's cache (the empty one: `empty()`). Giving up a cache forgets the last
/// segment too (a remembered segment implies a live cache: see the words above).
#[inline]
pub(crate) fn set_current(tc: *mut ThreadCache) {
    if tc == empty() {
        set_segment_end(0);
        set_cache_word(ptr::null_mut());
    } else {
        set_cache_word(tc);
    }
}

/// The calling thread's cache, or null while it has none (the empty cache): one TLS load.
#[inline(always)]
pub(crate) fn current_or_null() -> *mut ThreadCache {
    read_ptr::<CACHE, ThreadCache>()
}

#[inline(always)]
fn set_cache_word(tc: *mut ThreadCache) {
    write_ptr::<CACHE, ThreadCache>(tc);
}

/// The thread's last segment, as its last byte address; 0 for none.
#[inline(always)]
pub(crate) fn segment_end() -> usize {
    read::<SEGMENT_END>()
}

/// Remembers `end` as the thread's last segment; only while the thread has a live cache.
#[inline(always)]
pub(crate) fn set_segment_end(end: usize) {
    write::<SEGMENT_END>(end);
}

#[inline(always)]
pub(crate) fn empty() -> *mut ThreadCache {
    EMPTY_CACHE.0.get()
}

/// Runs `f` on each of the calling thread's live caches: the fast path's and hardened mode's (the
/// checked paths' own), whichever it has.
pub(crate) fn for_each_cache_of_thread(mut f: impl FnMut(*mut ThreadCache)) {
    let tc = current();
    if tc != empty() {
        f(tc);
    }
    let tc = hardened_cache_of_thread();
    if !tc.is_null() {
        f(tc);
    }
}

// ------------------------------------------------------------------------------------------------------
// Fork.

extern "C" fn fork_prepare() {
    crate::profile::fork_prepare();
    HEAP.lock_all();
    crate::lock::set_fork_holder();
}

extern "C" fn fork_parent() {
    crate::lock::clear_fork_holder();
    // SAFETY: runs once after `fork_prepare`, in the forking thread, which holds every lock.
    unsafe {
        HEAP.unlock_all();
        crate::profile::fork_release();
    }
}

extern "C" fn fork_child() {
    crate::lock::clear_fork_holder();
    background::after_fork_in_child();
    let tid = crate::platform::current_tid();
    // The other threads' caches are now of an earlier process (`Heap::new_thread_cache`).
    crate::cache::FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the child's only thread and its own caches; the registry lock is held (by it).
    for_each_cache_of_thread(|tc| unsafe { HEAP.adopt_after_fork(tc, tid) });
    // SAFETY: the child's only thread, a copy of the forking one, holds every lock.
    unsafe {
        HEAP.unlock_all();
        crate::profile::fork_release();
    }
}
