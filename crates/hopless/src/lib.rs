//! # hopless
//!
//! A slab allocator whose allocation fast path never reads or writes the memory of the block it hands out.
//! Classic SLUB pops a free object and then loads the next free pointer stored *inside* it, often a cold
//! cache line; hopless keeps "what is free next" in per-thread metadata (a magazine of pointers per size
//! class), so alloc is `slots[--count]` and free is `slots[count++] = p`.
//!
//! Below the magazines lie the other two of the KV pool's three layers: a central heap per size class of
//! slabs with free bitmaps (the lock held only for a batch move), and the OS below that.
//!
//! A double or invalid free is caught at the free, before the block can be handed out twice: a free
//! checks the pointer is a block start handed out before, and writes a key into the block's first word
//! that says where the block went (a magazine slot, or its slab); a free that finds such a key looks
//! there (see `cache::free_key`). The allocation path never touches the block.
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: hopless::Hopless = hopless::Hopless;
//!
//! let v: Vec<u64> = (0..1000).collect();
//! assert_eq!(v.iter().sum::<u64>(), 499_500);
//! ```
//!
//! # Platforms
//!
//! hopless's heap runs on **Linux, x86-64 and aarch64** (glibc or musl; any page size the kernel
//! reports, 4, 16 or 64 KiB). On every other target (macOS, Windows, the BSDs, wasm, 32-bit Linux)
//! [`Hopless`] forwards each call to the system allocator (`std::alloc::System`): a program that names it
//! as its global allocator builds and runs there unchanged, with the system allocator's speed and
//! behaviour, and [`Hopless::is_native`] says which it got. There, only the calls that carry a `Layout`
//! exist (`GlobalAlloc`, `Allocator`, the batch calls), [`stats()`] reads all zero and `trim` does
//! nothing.
//!
//! | target | heap | CI |
//! |---|---|---|
//! | `x86_64-unknown-linux-gnu` | hopless | every test, Miri, loom |
//! | `x86_64-unknown-linux-musl` | hopless | the core's tests |
//! | `aarch64-unknown-linux-gnu` | hopless | the core's tests under qemu-user, 64 KiB and 4 KiB pages; `libhopless.so`'s C tests |
//! | `aarch64-unknown-linux-musl` | hopless | the core's unit tests under qemu-user |
//! | `x86_64-apple-darwin`, `aarch64-apple-darwin`, `x86_64-pc-windows-gnu` | the system's | `cargo clippy` |
//! | anything else Rust builds for | the system's | — |
//!
//! # Layout
//!
//! Layers, top to bottom: each module uses only those listed below it (`scripts/check/layers.py`
//! checks this table against the code).
//!
//! | module | what it holds |
//! |---|---|
//! | `forward` | where the heap does not run: [`Hopless`] forwarding every call to the system allocator |
//! | `api` | [`Hopless`]: `GlobalAlloc`, `Allocator`, the C-style calls, the batch API, stats, trim |
//! | `fast` | the fast paths only: a magazine pop, a magazine push; the screenful a reviewer reads first |
//! | `slow` | every `#[cold]` path: a thread's first operation, empty and full magazines, the checked-mode dispatch |
//! | `sample` | the sampled allocation: the stack walked, the block made a large one whose header names its sample |
//! | `process` | the process heap, load-time set-up, the thread's words and the empty cache, the exit hook, fork; `background`: the thread that gives idle memory back |
//! | `heap` | `Heap`: refill and flush, large blocks, realloc, batches, trim; `heap/` holds the checked frees, thread-owned slabs, the thread-cache registry, the debug and hardened paths, fork locking and stats |
//! | `debug` | the checked modes' block checks: poison, redzones, header checks |
//! | `central` | per class, the partial slabs (`class_heap`: the refill; `flush`: blocks checked, then returned under the class lock); per segment kind, the pool of unused slabs (`pool`) and its purges (`purge`) |
//! | `address` | what an address is to hopless (a segment, a large block, or foreign), from the address alone |
//! | `large` | blocks above 256 KiB: arena spans up to 16 MiB, bigger ones a mapping each with a cache of recent ones; the retention budget |
//! | [`profile`] | sampled heap profiling: the controls, the sampling arithmetic, the sites and records, the pprof dump, the leak report |
//! | `report` | fatal reports without allocating, and debug mode's operation ring |
//! | `segment` | 4 MiB segments, slab headers and bitmaps (invariants on `Slab`), remote frees into owned slabs, slab lists; the address map segments and arenas share |
//! | `cache` | the thread cache: magazines, the free key, what it keeps of the slabs it owns, the registry's state and the table of caches by id |
//! | [`mod@stats`] | counters (feature `stats`) and the slabinfo-style table |
//! | `limit` | the memory limit: what the program's blocks hold, counted by the slow paths, and the refusal |
//! | `size_class` | the class table and the (size, align) → class mapping |
//! | `lock` | the class lock (a futex mutex), with the fork holder's pass |
//! | `scratch` | stack buffers a slow path writes before it reads them, left unzeroed |
//! | `sync` | the atomics of the lock-free pieces (swapped for loom's by `crates/hopless-loom`) |
//! | `tls` | the thread's words: initial-exec TLS (x86-64 and aarch64 Linux) |
//! | `mode` | which mode is on (default, debug, hardened); constants without the `debug` feature |
//! | `platform` | the one contract with the OS, which the rest goes through: pages (`source`: `PageSource`; `pages`: mmap, or a test source for Miri), the huge-page policy (`huge`), threads, futexes and thread keys (`threads`), the environment, fork handlers, stderr, abort (`os`) |
//!
//! What benchmarks, tests, `libhopless.so` and the SLUB experiment (`crates/hopless-lab`) need from the
//! inside is named, item by item, in `experiment`; it is not a stable API.

// Nothing on an allocator path may panic (a panic inside `free` aborts without a report, or allocates
// for a backtrace while a lock is held): no unwrap, expect, panic or unchecked indexing in the core.
// `scripts/check/no_panic.sh` checks the built library's malloc/free/realloc for any path into Rust's
// panic machinery. Arithmetic is left to that check: release builds do not check overflow, and sizes
// that come from the program are combined with checked operations. The `stats` feature's counters are
// indexed by class (always in range) and excluded from the indexing lint.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
// No `std` where the thread's words need none (`tls`): everything else comes from `core` and `libc`, so
// `libhopless.so` links neither `std` nor `libgcc_s`, and loads faster into every process. Tests (and
// Miri, and other targets, whose thread-locals are `std`'s) have it.
#![cfg_attr(
    all(
        not(test),
        any(target_arch = "x86_64", target_arch = "aarch64"),
        target_os = "linux",
        not(miri)
    ),
    no_std
)]
#![cfg_attr(all(not(test), not(feature = "stats")), deny(clippy::indexing_slicing))]

/// Items for targets where hopless's heap runs: Linux on x86-64 and aarch64 (64-bit, with `mmap`,
/// futexes and the thread-pointer TLS `tls` reads). The one place that says so.
macro_rules! where_native {
    ($($item:item)*) => {$(
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        $item
    )*};
}

/// Items for every other target, where [`Hopless`] forwards to the system allocator (`forward`).
macro_rules! where_forwarded {
    ($($item:item)*) => {$(
        #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
        $item
    )*};
}

// Where the heap is forwarded, the class table only names the sizes in an (empty) `Stats`, and the
// counters' macros go unused.
#[cfg_attr(
    not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))),
    allow(dead_code)
)]
mod size_class;
#[cfg_attr(
    not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))),
    allow(unused)
)]
pub mod stats;

where_forwarded! {
    mod forward;
    pub use forward::{profile, set_mode, Hopless};
}

where_native! {
    mod address;
    mod api;
    mod cache;
    mod central;
    mod debug;
    mod fast;
    mod heap;
    mod large;
    mod limit;
    mod lock;
    mod mode;
    mod platform;
    mod process;
    pub mod profile;
    mod report;
    mod sample;
    mod scratch;
    mod segment;
    mod slow;
    mod sync;
    mod tls;

    /// The inside, for hopless's own benchmarks, tests, `libhopless.so` and `crates/hopless-lab`: not a
    /// stable API.
    #[doc(hidden)]
    pub mod experiment {
        pub mod platform {
            pub use crate::platform::{abort, env_flag, os_page_size, write_stderr};
        }
        /// Whether the background purge thread runs (`process::background`).
        pub use crate::process::background::running as background_running;
        pub mod report {
            pub use crate::report::Msg;
        }
        pub mod segment {
            pub use crate::segment::{segment_of, slab_of, Slab, SEGMENT_SIZE};
        }
        pub mod size_class {
            pub use crate::size_class::{
                class_for, class_size, BATCH_MAX, CLASS_SIZE, MAG_CAPACITY, MAG_MAX, MEDIUM_MAX, NUM_CLASSES,
                SMALL_MAX,
            };
        }
        pub mod cache {
            pub use crate::cache::{Magazine, ThreadCache};
        }
        /// A heap of its own over any page source: the SLUB experiment's model of hopless runs on one.
        pub use crate::heap::Heap;
        pub mod lock {
            pub use crate::lock::SpinLock;
        }
    }

    pub use api::Hopless;
    pub use mode::set_mode;
    pub use platform::{OsPages, PageSource, Reservation, SystemPages, PAGE_SIZE};

    #[cfg(all(test, not(miri)))]
    #[global_allocator]
    static GLOBAL: Hopless = Hopless;

    #[cfg(test)]
    mod test_util;
    // The forwarding `Hopless`, run by the tests here too (see its tests).
    #[cfg(test)]
    mod forward;
}

pub use stats::Stats;

/// A snapshot of the process heap's counters (all zero where [`Hopless`] forwards to the system
/// allocator).
pub fn stats() -> Stats {
    Hopless::stats()
}
