//! The store's sorted sets commands, over [`Store::read_coll`], [`Store::write_coll`] and [`Store::with_keys`]
//! (`collections.rs`); the data structure is `crate::types::zset`.

#[allow(unused_imports)]
use super::shard::Store;
