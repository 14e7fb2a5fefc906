//! Memory back when idle: a background thread that gives back what the heap keeps free once the program
//! stops freeing, so a process that frees a burst and goes idle returns its pages without calling into
//! the allocator again.
//!
//! The heap's own purges run from its slow paths: an empty slab waits out the purge delay (100 ms) and
//! goes back at the next slab that falls free, refill or large free; freed large memory stays within its
//! budget. A program that stops calling keeps all that. The thread closes the gap:
//!
//! - **Started lazily**, by the first allocation slow path ([`start_if_due`]) once the heap holds 8 MiB
//!   or more ([`START_BYTES`]): a program that never does (most short-lived tools, and any that must stay
//!   single-threaded for `unshare(CLONE_NEWUSER)`) never gets one. `HOPLESS_BACKGROUND=0` turns it off.
//!   Never from a free: glibc frees a dead thread's thread-local vector while it holds the lock of its
//!   stack cache, which `pthread_create` takes too (a thread started there waits on itself for good);
//!   glibc allocates under none of the locks `pthread_create` takes.
//! - **Awake while memory moves**: every [`PASS_MS`] it purges the slabs that waited out the delay, and
//!   reads what the program's blocks hold (`crate::limit`'s count, which every slab and large block
//!   moves). When that has not changed for [`IDLE_MS`], the heap is idle: it trims (every empty slab,
//!   free arena page and cached mapping goes back, as `malloc_trim` gives them, bar the thread caches)
//!   and sleeps on a futex until a free slow path wakes it ([`poke`]). Asleep, it costs nothing; awake, ten short
//!   passes a second.
//! - **Fork**: the child has no such thread (only the forking thread is copied); its state goes back to
//!   "not started", and the child's own allocation slow path starts one.
//!
//! The thread never allocates, holds no lock while it sleeps, and has every signal blocked. Starting it
//! calls `pthread_create`, which may call `malloc` for the new thread's thread-local vector:
//! [`start_if_due`] runs at the end of an allocation's slow path, with no lock held and the heap
//! settled, so that is an ordinary call.

use core::sync::atomic::{AtomicU32, Ordering};

use super::HEAP;

/// Not started yet.
const UNSTARTED: u32 = 0;
/// A thread is being started.
const STARTING: u32 = 1;
/// Running passes.
const AWAKE: u32 = 2;
/// Asleep on [`STATE`] until a poke.
const ASLEEP: u32 = 3;
/// Never (`HOPLESS_BACKGROUND=0`, or the thread could not be made).
const OFF: u32 = 4;

/// The thread's state; also the futex word it sleeps on.
static STATE: AtomicU32 = AtomicU32::new(UNSTARTED);
/// A word nobody changes: the thread's timed sleeps between passes wait on it.
static TICK: AtomicU32 = AtomicU32::new(0);

/// The heap holds this much (`crate::limit`'s count) before the thread is started.
pub const START_BYTES: usize = 8 << 20;
/// Between passes while awake: the purge delay, so each pass finds the slabs the last one left waiting.
pub const PASS_MS: u32 = 100;
/// Unchanged this long, the heap is idle and trimmed.
pub const IDLE_MS: u32 = 500;
/// The thread's stack: its deepest path is a trim's batches of slab pointers.
const STACK_BYTES: usize = 128 << 10;

/// Reads `HOPLESS_BACKGROUND` at set-up.
pub(super) fn configure() {
    if crate::platform::env_setting(c"HOPLESS_BACKGROUND") == Some(false) || cfg!(miri) {
        STATE.store(OFF, Ordering::Relaxed);
    }
}

/// In a forked child: the thread was not copied.
pub(super) fn after_fork_in_child() {
    if STATE.load(Ordering::Relaxed) != OFF {
        STATE.store(UNSTARTED, Ordering::Relaxed);
    }
}

/// A free's slow path ran: wake the thread if it sleeps. One relaxed load while it is awake.
#[inline]
pub(crate) fn poke() {
    if STATE.load(Ordering::Relaxed) == ASLEEP {
        wake();
    }
}

#[cold]
#[inline(never)]
fn wake() {
    if STATE
        .compare_exchange(ASLEEP, AWAKE, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        crate::platform::futex_wake_one(&STATE);
    }
}

/// An allocation's slow path ran: start the thread the first time the heap is big enough. One relaxed
/// load once it is started. The caller holds no lock.
#[inline]
pub(crate) fn start_if_due() {
    if STATE.load(Ordering::Relaxed) == UNSTARTED && crate::limit::held() >= START_BYTES {
        start();
    }
}

#[cold]
#[inline(never)]
fn start() {
    let swap = |from, to| {
        STATE
            .compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    };
    if swap(UNSTARTED, STARTING) {
        let made = crate::platform::spawn_detached(run, STACK_BYTES, c"hopless-purge");
        // The thread may already have gone to sleep (ASLEEP): leave that.
        swap(STARTING, if made { AWAKE } else { OFF });
    }
}

/// Whether the thread is running (awake or asleep), for tests and the configuration line.
pub fn running() -> bool {
    matches!(STATE.load(Ordering::Relaxed), AWAKE | ASLEEP)
}

extern "C" fn run(_: *mut libc::c_void) -> *mut libc::c_void {
    loop {
        passes_until_idle();
        // Asleep from here: a poke during the trim below finds ASLEEP, wakes us, and we go round again.
        STATE.store(ASLEEP, Ordering::Relaxed);
        // This thread's own cache recorded its id when it was made (threads made by `pthread_create`).
        HEAP.retire_orphans();
        HEAP.trim();
        while STATE.load(Ordering::Relaxed) == ASLEEP {
            crate::platform::futex_wait(&STATE, ASLEEP);
        }
    }
}

/// Purges what waited out the delay every [`PASS_MS`] until the heap's count has stood still for
/// [`IDLE_MS`].
fn passes_until_idle() {
    let mut last = crate::limit::held();
    let mut quiet = 0;
    while quiet < IDLE_MS {
        crate::platform::futex_wait_ms(&TICK, 0, PASS_MS);
        HEAP.purge_expired();
        let now = crate::limit::held();
        if now == last {
            quiet += PASS_MS;
        } else {
            quiet = 0;
            last = now;
        }
    }
}
