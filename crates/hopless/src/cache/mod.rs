//! The thread cache: per thread, per class, a magazine of free block pointers (the fast path's only
//! state), the free key a free writes into the block it takes back (the double-free check), and the
//! registry's state (every cache, the parked ones, the table of caches by id).
//!
//! | file | what it holds |
//! |---|---|
//! | `magazine.rs` | [`Magazine`], [`ThreadCache`]: pop, push, refill and flush of one class's magazine |
//! | `free_key.rs` | the free key: where a freed block went, written into its first word, read back at the next free |
//! | `registry.rs` | [`Caches`] (the registry lock's data) and [`CACHE_TABLE`] |

mod free_key;
mod magazine;
mod registry;

pub use free_key::*;
pub use magazine::*;
pub use registry::*;

#[cfg(test)]
mod tests;
