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
//! there (see [`thread_cache`]). The allocation path never touches the block.
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
//! | module | what it holds |
//! |---|---|
//! | [`size_class`] | the class table and the (size, align) → class mapping |
//! | [`thread_cache`] | magazines: the fast path, a screenful of code; the free key |
//! | [`heap`] | the slow path: refill, flush, thread caches, large blocks, realloc, batches, trim, stats |
//! | [`central`] | per-class partial slabs and the pools of unused slabs, with purging |
//! | [`segment`] | 4 MiB segments, slab headers and bitmaps; pointer → slab in O(1) |
//! | [`large`] | blocks above 256 KiB: one mapping each, with a small cache of recent mappings |
//! | [`platform`] | the page source trait (mmap / a test source for Miri) and raw stderr/abort |
//! | `global` | [`Hopless`]: the process heap, thread-local caches, `GlobalAlloc` and `Allocator` |
//! | [`mod@stats`] | counters (feature `stats`) and the slabinfo-style table |
//! | [`strategy`] | the SLUB experiment: array, intrusive and cached-next thread caches, by type |
//! | [`debug`] | debug and hardened modes (feature `debug`): checked paths, poison, redzones, op ring |
//! | `report` | fatal reports without allocating |

// Nothing on an allocator path may panic (a panic inside `free` aborts without a report, or allocates
// for a backtrace while a lock is held): no unwrap, expect, panic or unchecked indexing in the core.
// `scripts/check_no_panic.sh` checks the built library's malloc/free/realloc for any path into Rust's
// panic machinery. Arithmetic is left to that check: release builds do not check overflow, and sizes
// that come from the program are combined with checked operations. The `stats` feature's counters are
// indexed by class (always in range) and excluded from the indexing lint.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![cfg_attr(all(not(test), not(feature = "stats")), deny(clippy::indexing_slicing))]

pub mod central;
pub mod debug;
mod fast;
mod fork;
mod global;
pub mod heap;
pub mod large;
pub mod lock;
pub mod mode;
pub mod platform;
mod report;
pub mod segment;
pub mod size_class;
mod slow;
pub mod stats;
pub mod strategy;
pub mod thread_cache;

pub use global::Hopless;
pub use heap::Heap;
pub use platform::{OsPages, PageSource, SystemPages};
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
