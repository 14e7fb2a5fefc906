//! # hopless-kv
//!
//! A concurrent in-memory key-value store, safe by construction: values stay alive while a reader
//! holds them (counted handles), a key deleted and expired at once is freed exactly once (both paths remove
//! it under the same shard lock), and every byte of the store (tables, keys, values, expiry structures) is
//! allocated through the allocator it is given: hopless by default, any `allocator_api2` allocator in
//! benchmarks. No network, no async runtime.
//!
//! ```
//! use hopless_kv::{Store, Config};
//! let store = Store::new(Config::default());
//! store.set_simple(b"greeting", b"hello").unwrap();
//! assert_eq!(&*store.get(b"greeting").unwrap().unwrap(), b"hello");
//! assert_eq!(store.incr(b"counter").unwrap(), 1);
//! ```
//!
//! # Layout
//!
//! Layers, top to bottom: a module imports only modules listed below it (`scripts/check/layers.py`
//! checks this).
//!
//! | module | what it holds |
//! |---|---|
//! | `store` | the [`store`] module's face: declares its files, re-exports [`Store`] and its options |
//! | `store::hash` | the hash commands (HSET, HGET, HINCRBY, HRANDFIELD, HSCAN...) |
//! | `store::list` | the list commands (LPUSH, RPOP, LRANGE, LINSERT, LMOVE, LMPOP...) |
//! | `store::sets` | the set commands (SADD, SPOP, SINTER, SUNIONSTORE, SSCAN...) |
//! | `store::zset` | the sorted-set commands (ZADD, ZRANGE, ZRANK, ZUNIONSTORE, ZSCAN...) |
//! | `store::geo` | the geo searches over a sorted set (GEOSEARCH, GEORADIUS and kin) under one lock, and their STORE forms |
//! | `store::stream` | the stream commands (XADD, XTRIM, XDEL, XLEN, XSETID; reads through `read_stream`) |
//! | `store::bits` | SETBIT, BITFIELD and BITOP on the store (in place where nobody else holds the value), OBJECT ENCODING of a string, TOUCH |
//! | `store::hll` | PFADD, PFCOUNT, PFMERGE and PFDEBUG on the store, each under its keys' locks; errors in Redis's key order; a HyperLogLog rewritten keeping its TTL |
//! | `store::sort` | SORT and SORT_RO: weights from the elements or BY's keys, GET's values, LIMIT's window, STORE as a list |
//! | `store::persist` | DUMP and RESTORE of one key, and every shard frozen for a snapshot's walk ([`store::Frozen`]) |
//! | `store::copy` | COPY, of a string or a collection, with its TTL |
//! | `store::collections` | reaching a key's collection under its shard lock (one key or several): WRONGTYPE, emptied keys removed, bytes counted |
//! | `store::read` | GET, EXISTS, STRLEN, GETRANGE, MGET, DBSIZE, SCAN, KEYS, RANDOMKEY, MEMORY USAGE |
//! | `store::write` | SET, MSET(NX), DEL, GETDEL, APPEND, SETRANGE, INCR and friends, INCRBYFLOAT, RENAME, FLUSH |
//! | `store::ttl` | EXPIRE and friends, PERSIST, PTTL/TTL, (P)EXPIRETIME, GETEX |
//! | `store::pair` | two keys' shards write-locked at once, in index order (RENAME, COPY) |
//! | `store::slot` | the write primitives under the commands: key and value checks, a TTL's deadline, a new item, a key's live slot, installing an item with its deadline (`store_item`, `install`) |
//! | `store::expiry` | lazy expiry on access, and the active expiry's pass over the deadline heaps |
//! | `store::evict` | `maxmemory`: making room, sampled LRU, changing the limit and policy at run time |
//! | `store::stats` | the [`Stats`] snapshot, and counting an operation |
//! | `store::shard` | [`Store`] over its shards: construction, where a key lives, a key's deadline, the one removal path (delete, expiry, eviction) |
//! | `store::expiry_thread` | the background thread that runs the active expiry every 100 ms |
//! | `store::counters` | what is counted: per-shard counters, per-operation ones striped by thread, [`Op`] |
//! | `store::options` | [`Config`] (and [`Policy`]), [`SetOptions`], [`SetCond`], [`Ttl`], [`ExpireCond`] |
//! | `persist` | one value in Redis's RDB format: written as Redis 7.0 writes it, read from every encoding Redis 7.0 loads; DUMP's payload |
//! | `table` | a shard's open-addressing table with a resize-proof SCAN cursor, and the key hasher |
//! | `value` | items (header + key + value in one block; a collection sits in its item), the counted [`Value`] handle |
//! | `types` | the [`types`] module's face: declares the collection types and re-exports them |
//! | `types::lazyfree` | freeing big collections on a background thread |
//! | `types::collection` | [`Collection`]: what a non-string key holds, and what the store asks of it |
//! | `types::hash` | a hash: field/value pairs packed while small, a hash table when large |
//! | `types::list` | a list: packed nodes in a deque (Redis's quicklist) |
//! | `types::zset` | a sorted set: packed (member, score) pairs, or a member map beside an ordered index (its set operations take plain sets too) |
//! | `types::set` | a set: an intset, packed members, or a hash set |
//! | `types::stream` | a stream: entries by id, packed by the hundred into nodes (Redis's listpacks under its radix tree) |
//! | `types::packed` | a packed sequence of byte strings in one block (Redis's listpack) |
//! | `types::pos_index` | a dense array's positions indexed by hash, grown a few positions a change (Redis's incremental rehash) |
//! | `types::thin_buf` | a 16-byte growable byte buffer (its capacity kept in its block), under the compact forms so a small collection fits in its item |
//! | `types::limits` | the compact forms' thresholds ([`Limits`]), changed at run time |
//! | `types::kind` | [`Kind`]: what a key holds |
//! | `types::random` | random numbers for the random-member commands |
//! | `deadlines` | the deadline heap of the active expiry |
//! | `hll` | HyperLogLog values as Redis's `hyperloglog.c` encodes them (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST): sparse and dense registers, the cached cardinality |
//! | `bitmap` | bit arithmetic on byte strings as Redis's `bitops.c` does it (BITCOUNT, BITPOS, BITOP, BITFIELD's fields and overflow) |
//! | `geo` | geo arithmetic as Redis's `geohash.c`, `geohash_helper.c` and `geo.c` do it (GEOADD's scores, GEOPOS, GEOHASH, GEODIST, GEOSEARCH's score ranges, hit test and order) |
//! | `long_double` | x86-64's `long double` as Redis reads, adds and prints it (HINCRBYFLOAT, INCRBYFLOAT), exactly |
//! | `bignum` | the unsigned big integers `long_double` reads and prints through |
//! | `rdb` | Redis's RDB format as bytes (DUMP, RESTORE, snapshots): lengths, strings with LZF, CRC-64, and the packed forms listpack, ziplist, intset, zipmap, read with Redis's integrity checks |
//! | `redis_util` | Redis's integer parsing (`string2ll`) and glob matching (`stringmatchlen`, in O(n·m)) |
//! | `clock` | the [`Clock`] trait (a [`ManualClock`] for tests) |
//! | `alloc` | [`KvAlloc`]: the allocator a store allocates through (any `allocator_api2` one, with a batch call) |
//! | `error` | [`Error`]s worded as Redis words them |

mod alloc;
mod bignum;
pub mod bitmap;
pub mod clock;
mod deadlines;
pub mod error;
pub mod geo;
pub mod hll;
mod long_double;
pub mod persist;
pub mod rdb;
mod redis_util;
pub mod store;
mod table;
pub mod types;
mod value;

pub use alloc::KvAlloc;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Error, Result};
pub use store::{
    Config, ExpireCond, Gone, KeyGone, Op, Policy, SetCond, SetOptions, Stats, Store, Ttl, OP_NAMES,
};
pub use types::{Collection, Kind, Limits};
pub use value::Value;

#[cfg(all(test, not(miri)))]
#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;
