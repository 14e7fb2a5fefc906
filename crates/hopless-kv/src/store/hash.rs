//! The store's hashes commands, over [`Store::read_coll`], [`Store::write_coll`] and [`Store::with_keys`]
//! (`collections.rs`); the data structure is `crate::types::hash`.

#[allow(unused_imports)]
use super::shard::Store;
