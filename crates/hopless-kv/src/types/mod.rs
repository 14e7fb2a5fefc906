//! The collection types a key can hold besides a string: lists, hashes, sets, sorted sets and streams, each with
//! Redis's semantics and a compact form for small collections (one `packed` block, as Redis's
//! listpack) beside a large form with Redis's complexity.
//!
//! A collection lives inside its item (the item's value bytes hold it, see `value.rs`); every
//! access happens under the key's shard lock, read for reads and write for writes, so the types need
//! no synchronisation of their own. They allocate through the store's allocator.

mod collection;
pub mod hash;
mod kind;
mod lazyfree;
pub mod limits;
pub mod list;
pub(crate) mod packed;
mod pos_index;
pub mod random;
pub mod set;
pub mod stream;
mod thin_buf;
pub mod zset;

pub use collection::Collection;
pub use hash::Hash;
pub use kind::Kind;
pub(crate) use lazyfree::free_collection;
pub use lazyfree::{lazyfree_pending, LAZYFREE_THRESHOLD};
pub use limits::Limits;
pub(crate) use limits::LimitsCell;
pub use list::List;
pub use random::{random_below, random_u64};
pub use set::Set;
pub use stream::Stream;
pub use zset::ZSet;
