//! The thread cache: per thread, per class, a magazine of free block pointers (the fast path's only
//! state), the free key a free writes into the block it takes back (the double-free check), and the
//! registry's state (every cache, the parked ones, the table of caches by id).
//!
//! | file | what it holds |
//! |---|---|
//! | `thread_cache.rs` | the layout: [`ThreadCache`], its [`Magazine`] per class, the magazines' offsets ([`MALLOC_MAG_OFFSET`]) |
//! | `magazine.rs` | a magazine's pop, push, refill and flush, and its flush epochs |
//! | `double_free.rs` | the double-free look: where a block whose first word is a key may still be, in this cache or the one the key names |
//! | `free_key.rs` | the free key: where a freed block went, written into its first word, read back at the next free |
//! | `owned.rs` | what a cache keeps of the slabs it owns: the lists, their counters, the tokens that name a cache |
//! | `registry.rs` | [`Caches`] (the registry lock's data), [`CACHE_TABLE`], and the hint to a slab's owner by token |

mod double_free;
mod free_key;
mod magazine;
mod owned;
mod registry;
mod thread_cache;

pub use double_free::OwnKey;
#[cfg(test)]
pub use double_free::KEY_AFTER_LOOKS;
pub(crate) use free_key::opaque;
pub use free_key::{free_salt, key_epoch, read_key, seed_free_key, slab_mark, write_key, KeySays};
pub use magazine::{Popped, Push};
pub use owned::{OwnedSlabs, FORK_GENERATION};
pub use registry::{hint_owner, CACHE_HEAP, CACHE_TABLE, NEXT_CACHE_ID};
pub(crate) use registry::{Caches, CACHE_BYTES, MAX_PARKED, MAX_WARM, ORPHAN_PROBES};
pub use thread_cache::{class_at_mag_offset, mag_offset, Magazine, ThreadCache, MALLOC_MAG_OFFSET};

#[cfg(test)]
mod magazine_tests;
#[cfg(test)]
mod tests;
