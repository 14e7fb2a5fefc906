//! # hopless-kv
//!
//! The seed's concurrent in-memory key-value store, safe by construction: values stay alive while a reader
//! holds them (counted handles), a key deleted and expired at once is freed exactly once (both paths remove
//! it under the same shard lock), and every byte of the store (tables, keys, values, expiry structures) is
//! allocated through the allocator it is given: hopless by default, any `allocator_api2` allocator in
//! benchmarks. No network, no async runtime.
//!
//! ```
//! use hopless_kv::{Store, Config};
//! let store = Store::new(Config::default());
//! store.set_simple(b"greeting", b"hello").unwrap();
//! assert_eq!(&*store.get(b"greeting").unwrap(), b"hello");
//! assert_eq!(store.incr(b"counter").unwrap(), 1);
//! ```
//!
//! # Layout
//!
//! | module | what it holds |
//! |---|---|
//! | [`store`] | `Store`: shards, operations with Redis semantics, TTL, eviction, stats |
//! | [`table`] | a shard's open-addressing table with a resize-proof SCAN cursor |
//! | [`value`] | items (header + key + value in one block) and the counted `Value` handle |
//! | [`heap`] | the deadline heap of the active expiry |
//! | [`clock`] | the clock trait (a manual one for tests) |
//! | [`error`] | errors worded as Redis words them |

pub mod clock;
pub mod error;
pub mod heap;
pub mod store;
pub mod table;
pub mod value;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Error, Result};
pub use store::{Config, ExpireCond, Op, Policy, SetCond, SetOptions, Stats, Store, Ttl, OP_NAMES};
pub use value::{KvAlloc, Value};

#[cfg(all(test, not(miri)))]
#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;
