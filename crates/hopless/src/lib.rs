//! # hopless
//!
//! A slab allocator whose allocation fast path never reads or writes the memory of the block it hands out.
//! Classic SLUB pops a free object and then loads the next free pointer stored *inside* it, often a cold
//! cache line; hopless keeps "what is free next" in per-thread metadata (a magazine of pointers per size
//! class), so alloc is `slots[--count]` and free is `slots[count++] = p`.
//!
//! Below the magazines sits the seed KV pool's design: a central heap per size class of slabs with free
//! bitmaps (the lock held only for a batch move), and the OS below that.
//!
//! A double or invalid free is caught at the free, before the block can be handed out twice: a free
//! checks the pointer is a block start handed out before, and writes a key into the block's first word
//! that says where the block went (a magazine slot, or its slab); a free that finds such a key looks
//! there (see `thread_cache`). The allocation path never touches the block.
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: hopless::Hopless = hopless::Hopless;
//!
//! let v: Vec<u64> = (0..1000).collect();
//! assert_eq!(v.iter().sum::<u64>(), 499_500);
//! ```
//!
//! # Layout
//!
//! Layers, each using only those below it (`report` and `mode` are used from every layer):
//!
//! | module | what it holds |
//! |---|---|
//! | `fast` | the fast path: the thread's cache pointer and `GlobalAlloc`'s alloc/free, a screenful of code |
//! | `slow` | every `#[cold]` path of the process allocator: cache set-up, empty/full magazines, checked modes |
//! | `global` | [`Hopless`]: the process heap, set-up at load time, the thread exit hook, the public API |
//! | `fork` | the fork handlers |
//! | `heap` | ties the layers: refill and flush, large blocks, realloc, batches, trim; `heap/` holds the checked frees, the thread-cache registry, the debug and hardened paths, fork locking and stats |
//! | `thread_cache` | magazines, pop and push; the free key |
//! | `central` | per class, the partial slabs (refill and flush under the class lock); the pools of unused slabs, with purging |
//! | `sync` | the atomics of the lock-free pieces (swapped for loom's by `crates/hopless-loom`) |
//! | `transfer` | lock-free slots that carry half-magazines between threads (off by default, `HOPLESS_TRANSFER=1`) |
//! | `large` | blocks above 256 KiB: up to 16 MiB in arenas, bigger ones one mapping each with a small cache of recent mappings; the budget of free pages kept |
//! | `arena` | 64 MiB regions cut into 16 KiB slices: large blocks as spans, free spans coalescing in a bitmap |
//! | `segment` | 4 MiB segments, slab headers and bitmaps (invariants on `Slab`); pointer → slab in O(1) |
//! | `size_class` | the class table and the (size, align) → class mapping |
//! | `lock` | the spin lock, with the fork holder's pass |
//! | `tls` | the thread's words (cache pointer, last segment, hardened cache, retired, report number, fork-lock mark): initial-exec TLS on x86-64 Linux |
//! | `platform` | the contract with the OS: pages ([`PageSource`], mmap or a test source for Miri), thread keys, fork handlers, the environment, stderr, abort |
//! | `debug` | the checked modes' block checks: poison, redzones, header checks |
//! | `mode` | which mode is on (default, debug, hardened); constants without the `debug` feature |
//! | `report` | fatal reports without allocating, and debug mode's operation ring |
//! | [`mod@stats`] | counters (feature `stats`) and the slabinfo-style table |
//! | `strategy` | the SLUB experiment: hopless's magazine over the heap, and a SLUB model (per-slab intrusive lists) in three variants |
//!
//! What benchmarks, tests and `libhopless.so` need from the inside is re-exported, undocumented, from
//! `experiment`; it is not a stable API.

// Nothing on an allocator path may panic (a panic inside `free` aborts without a report, or allocates
// for a backtrace while a lock is held): no unwrap, expect, panic or unchecked indexing in the core.
// `scripts/check_no_panic.sh` checks the built library's malloc/free/realloc for any path into Rust's
// panic machinery. Arithmetic is left to that check: release builds do not check overflow, and sizes
// that come from the program are combined with checked operations. The `stats` feature's counters are
// indexed by class (always in range) and excluded from the indexing lint.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
// No `std` where the thread's words need none (`tls`): everything else comes from `core` and `libc`, so
// `libhopless.so` links neither `std` nor `libgcc_s`, and loads faster into every process. Tests (and
// Miri, and other targets, whose thread-locals are `std`'s) have it.
#![cfg_attr(
    all(not(test), target_arch = "x86_64", target_os = "linux", not(miri)),
    no_std
)]
#![cfg_attr(all(not(test), not(feature = "stats")), deny(clippy::indexing_slicing))]

mod arena;
mod central;
mod debug;
mod fast;
mod fork;
mod global;
mod heap;
mod large;
mod lock;
mod mode;
mod platform;
mod report;
mod segment;
mod size_class;
mod slow;
pub mod stats;
mod strategy;
mod sync;
mod thread_cache;
mod tls;
mod transfer;

/// The inside, for hopless's own benchmarks, tests and `libhopless.so`: not a stable API.
#[doc(hidden)]
pub mod experiment {
    pub mod platform {
        pub use crate::platform::*;
    }
    pub mod report {
        pub use crate::report::Msg;
    }
    pub mod segment {
        pub use crate::segment::*;
    }
    pub mod size_class {
        pub use crate::size_class::*;
    }
    pub mod strategy {
        pub use crate::strategy::*;
    }
    pub mod thread_cache {
        pub use crate::thread_cache::*;
    }
}

pub use global::Hopless;
pub use heap::Heap;
pub use mode::set_mode;
pub use platform::{OsPages, PageSource, SystemPages, PAGE_SIZE};
pub use stats::Stats;

/// A snapshot of the process heap's counters.
pub fn stats() -> Stats {
    Hopless::stats()
}

#[cfg(all(test, not(miri)))]
#[global_allocator]
static GLOBAL: Hopless = Hopless;

#[cfg(test)]
mod tests;
