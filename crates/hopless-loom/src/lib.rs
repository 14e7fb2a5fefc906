//! # hopless-loom: loom models of the allocator's lock-free pieces
//!
//! The allocator's `transfer.rs` is compiled here from its own source (`#[path]`), against the small
//! modules below in place of the allocator's: `sync` re-exports loom's atomics, `size_class` shrinks a
//! batch to 2 blocks so that loom's search stays small, and `platform::yield_now` yields to loom's
//! scheduler. Its `loom_tests` then run every interleaving.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p hopless-loom --release
//! ```
//!
//! Without `--cfg loom` the crate is empty, so the workspace's ordinary builds skip it.
#![cfg(loom)]

mod sync {
    pub use loom::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, Ordering};
}

mod size_class {
    /// Batches of `MAG_MAX / 2 = 2` blocks.
    pub const MAG_MAX: usize = 4;

    pub fn class_size(_class: usize) -> usize {
        64
    }
}

mod platform {
    pub fn yield_now() {
        loom::thread::yield_now();
    }
}

#[path = "../../hopless/src/transfer.rs"]
#[allow(dead_code)]
mod transfer;
