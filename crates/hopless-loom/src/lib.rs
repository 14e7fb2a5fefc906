//! # hopless-loom: loom models of the allocator's lock-free pieces
//!
//! The allocator's `lock.rs` and `segment/remote.rs` are compiled here from their own source (`#[path]`),
//! against the small modules below in place of the allocator's: `sync` re-exports loom's atomics,
//! `platform::futex_wait`/`futex_wake_one` model the kernel's futex with
//! loom's mutex and condition variable, and `tls` says no thread holds the locks for `fork`. Their
//! `loom_tests` then run every interleaving.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p hopless-loom --release
//! ```
//!
//! Without `--cfg loom` the crate is empty, so the workspace's ordinary builds skip it.
#![cfg(loom)]

mod sync {
    pub use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
}

mod platform {
    use loom::sync::atomic::{AtomicU32, Ordering};
    use loom::sync::{Condvar, Mutex};

    /// The kernel's futex for one process, as the lock sees it: a waiter whose word still holds the
    /// value it expects sleeps until a wake-up is handed to it (any sleeper may get it); a wake with
    /// nobody asleep is lost.
    struct Futex {
        /// (sleepers, wake-ups handed out and not yet taken)
        queue: Mutex<(u32, u32)>,
        wakened: Condvar,
    }

    loom::lazy_static! {
        static ref FUTEX: Futex = Futex { queue: Mutex::new((0, 0)), wakened: Condvar::new() };
    }

    pub fn futex_wait(word: &AtomicU32, expected: u32) {
        let mut q = FUTEX.queue.lock().unwrap();
        // The kernel compares the word under its queue lock, so a wake that follows a change of the
        // word cannot slip between the compare and the sleep.
        if word.load(Ordering::SeqCst) != expected {
            return;
        }
        q.0 += 1;
        while q.1 == 0 {
            q = FUTEX.wakened.wait(q).unwrap();
        }
        q.1 -= 1;
        q.0 -= 1;
    }

    pub fn futex_wake_one(_word: &AtomicU32) {
        let mut q = FUTEX.queue.lock().unwrap();
        if q.0 > q.1 {
            q.1 += 1;
            FUTEX.wakened.notify_all();
        }
    }
}

/// The thread words `lock.rs` reads: no thread here holds the locks for `fork`.
mod tls {
    pub const HOLDS_FORK_LOCKS: usize = 0;

    pub fn read<const W: usize>() -> usize {
        0
    }

    pub fn write<const W: usize>(_v: usize) {}
}

#[path = "../../hopless/src/lock.rs"]
#[allow(dead_code)]
mod lock;

#[path = "../../hopless/src/segment/remote.rs"]
#[allow(dead_code)]
mod remote;
