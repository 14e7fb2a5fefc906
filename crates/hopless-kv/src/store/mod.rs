//! The store: shards of (table, expiry map, deadline heap) behind reader-writer locks, and the operations.
//!
//! Every write allocates its new item (header, key, value in one block) before taking the shard lock,
//! swaps it in under the lock, and drops the old item's table reference after the lock is released.
//! Readers take a reference under the read lock and keep the value as long as they like.
//!
//! TTLs live in a per-shard map from item address to deadline (only keys with a TTL pay for it), mirrored
//! by a flag in the item header so that a read of a key without TTL never looks at the map or the clock.
//! Expiry is lazy on access, plus active: a min-heap of deadlines per shard, drained by a background
//! thread every 100 ms (or by [`Store::run_active_expiry`]). The heap finds every due key in O(log n)
//! without sampling or scanning, which keeps expired-but-present keys at zero after each pass (up to
//! [`ACTIVE_EXPIRY_BUDGET`] keys per shard per pass); stale heap entries are skipped when popped.
//!
//! Eviction when `maxmemory` is reached: `noeviction` (writes fail with OOM) or sampled LRU as Redis does
//! it (5 random keys of the shard being written, the least recently used goes), with a per-shard logical
//! access clock in the item header.
//!
//! Every key leaves its table the same way, whether deleted, expired or evicted: `Shard::remove_slot`,
//! under the shard's write lock, so a key two of them race for is removed (and freed) once.
//!
//! This file only declares the parts and re-exports what the crate shows; one concept per file, each
//! importing only the ones below it:
//!
//! | file | what it holds |
//! |---|---|
//! | `hash.rs`, `list.rs`, `sets.rs`, `zset.rs`, `stream.rs` | the commands of each collection type, over `collections.rs` |
//! | `bits.rs` | the bit commands' writes (SETBIT, BITFIELD, BITOP, in place where it can), OBJECT ENCODING of a string, TOUCH |
//! | `copy.rs` | COPY, of a string or a collection, with its TTL |
//! | `geo.rs` | GEOSEARCH, GEORADIUS and their kin over a sorted set, under one lock; GEOSEARCHSTORE and GEORADIUS's STORE |
//! | `hll.rs` | PFADD, PFCOUNT, PFMERGE and PFDEBUG under their keys' locks, over the `hll` codec: keys checked in Redis's order, a HyperLogLog rewritten keeping its TTL |
//! | `sort.rs` | SORT and SORT_RO over a list, set or sorted set: BY and GET patterns, LIMIT, ALPHA, STORE |
//! | `collections.rs` | reaching a list's, hash's, set's or sorted set's collection under its lock: one key or several, WRONGTYPE, emptied keys removed |
//! | `read.rs` | reads: GET, EXISTS, STRLEN, GETRANGE, MGET, DBSIZE, SCAN, KEYS, RANDOMKEY, MEMORY USAGE |
//! | `write.rs` | writes: SET, MSET(NX), DEL, GETDEL, APPEND, SETRANGE, INCR and friends, INCRBYFLOAT, RENAME, FLUSH |
//! | `ttl.rs` | TTL commands: EXPIRE and friends, PERSIST, PTTL/TTL, (P)EXPIRETIME, GETEX |
//! | `persist.rs` | DUMP and RESTORE of one key, a frozen view of every shard for a snapshot ([`Frozen`]) |
//! | `pair.rs` | two keys' shards write-locked at once, in index order (RENAME, COPY) |
//! | `slot.rs` | the write primitives: key and value checks, a TTL's deadline, a new item, a key's live slot, installing an item (`store_item`, `install`) |
//! | `expiry.rs` | removing keys past their deadline: lazily on access, actively (the background thread) |
//! | `evict.rs` | `maxmemory`: making room, sampled LRU, changing the limit and policy at run time |
//! | `stats.rs` | the [`Stats`] snapshot, and counting an operation |
//! | `shard.rs` | the skeleton: [`Store`] over its shards, construction, where a key lives, a key's deadline, the one removal path |
//! | `expiry_thread.rs` | the background thread that runs the active expiry's passes |
//! | `counters.rs` | what is counted, per shard and per operation ([`Op`], [`OP_NAMES`]) |
//! | `options.rs` | [`Config`], [`Policy`]; options: [`SetOptions`], [`SetCond`], [`Ttl`], [`ExpireCond`] |

mod bits;
mod collections;
mod copy;
mod counters;
mod evict;
mod expiry;
mod expiry_thread;
mod geo;
mod hash;
mod hll;
mod list;
mod options;
mod pair;
mod persist;
mod read;
mod sets;
mod shard;
mod slot;
mod sort;
mod stats;
mod stream;
mod ttl;
mod write;
mod zset;

pub use self::bits::StringEncoding;
pub use self::collections::Keys;
pub use self::counters::{Op, OP_NAMES};
pub use self::evict::EVICTION_SAMPLES;
pub use self::expiry::ACTIVE_EXPIRY_BUDGET;
pub use self::geo::{GeoHit, GeoQuery, GeoSet, GeoStored};
pub use self::hll::{PfCount, PfDebug, PfDebugReply};
pub use self::options::{Config, ExpireCond, Gone, KeyGone, Policy, SetCond, SetOptions, Ttl};
pub use self::persist::Frozen;
pub use self::sets::Moved;
pub use self::shard::Store;
pub use self::sort::SortSpec;
pub use self::stats::Stats;
pub use self::stream::{Added as XAdded, TrimSpec, XAdd, XSetId};
pub use crate::redis_util::{glob_match, parse_i64};
