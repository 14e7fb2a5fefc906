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
//! This file holds the store's skeleton (shards, the handle, construction, where a key lives, the
//! helpers every operation shares); the rest is one concept per file:
//!
//! | file | what it holds |
//! |---|---|
//! | `options.rs` | [`Config`], [`Policy`]; options: [`SetOptions`], [`SetCond`], [`Ttl`], [`ExpireCond`] |
//! | `read.rs` | reads: GET, EXISTS, STRLEN, GETRANGE, MGET, DBSIZE, SCAN, KEYS, RANDOMKEY, MEMORY USAGE |
//! | `write.rs` | writes: SET, MSET(NX), DEL, GETDEL, APPEND, SETRANGE, INCR and friends, INCRBYFLOAT, RENAME, FLUSH; the install path |
//! | `ttl.rs` | TTL commands: EXPIRE and friends, PERSIST, PTTL/TTL, (P)EXPIRETIME, GETEX, and setting a key's deadline |
//! | `expiry.rs` | removing keys past their deadline: lazily on access, actively (the background thread) |
//! | `evict.rs` | `maxmemory`: making room, sampled LRU, changing the limit and policy at run time |
//! | `stats.rs` | counters and the [`Stats`] snapshot; [`Op`] and [`OP_NAMES`] |

use core::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use hashbrown::HashMap;
use parking_lot::RwLock;

use crate::deadlines::DeadlineHeap;
use crate::table::{KeyHasher, Table};
use crate::value::{self, ItemPtr, KvAlloc, Value};

mod evict;
mod expiry;
mod options;
mod read;
mod stats;
mod ttl;
mod write;

pub use self::evict::EVICTION_SAMPLES;
pub use self::expiry::ACTIVE_EXPIRY_BUDGET;
pub use self::options::{Config, ExpireCond, Policy, SetCond, SetOptions, Ttl};
pub use self::stats::{Op, Stats, OP_NAMES};
pub use crate::redis_util::{glob_match, parse_i64};

use self::expiry::ExpiryThread;
use self::stats::{Counters, OpCounters, STRIPES};

struct Shard<A: KvAlloc> {
    table: Table<A>,
    /// Item address → deadline (ms since the epoch), for keys with a TTL.
    expires: HashMap<usize, u64, hashbrown::DefaultHashBuilder, A>,
    deadlines: DeadlineHeap<A>,
    /// Sampling state for eviction.
    rng: u64,
}

impl<A: KvAlloc> Shard<A> {
    /// Removes slot `i` and the item's TTL entry, and takes the item's bytes off the shard's `used`
    /// count; the table's reference goes to the caller, who releases it. The one way a single key leaves
    /// its table (DEL, GETDEL, lazy and active expiry, EXPIRE to a past time, eviction; FLUSH and the
    /// store's drop empty whole tables); the caller holds the shard's write lock. The item's deadline-heap
    /// entry, if any, goes stale and is skipped when popped.
    fn remove_slot(&mut self, i: usize, used: &AtomicU64) -> ItemPtr {
        let item = self.table.remove(i);
        self.expires.remove(&(item.as_ptr() as usize));
        // SAFETY: the reference just removed from the table is ours.
        let size = unsafe { value::item_size(item) } as u64;
        used.fetch_sub(size, Ordering::Relaxed);
        item
    }
}

struct ShardSlot<A: KvAlloc> {
    lock: RwLock<Shard<A>>,
    c: Counters,
}

struct Inner<A: KvAlloc> {
    shards: Box<[CachePadded<ShardSlot<A>>]>,
    /// The current `maxmemory` and [`Policy`] (as `Policy as u8`): [`Config`]'s values at construction,
    /// changed at run time by [`Store::set_maxmemory`] and [`Store::set_policy`] (CONFIG SET).
    maxmemory: AtomicU64,
    policy: AtomicU8,
    stripes: Box<[CachePadded<OpCounters>]>,
    /// The key hash (seeded per [`Config::hash_seed`]); every shard's table hashes with it too.
    hasher: KeyHasher,
    cfg: Config,
    alloc: A,
}

/// A handle to the store: cheap to clone, shareable across threads.
pub struct Store<A: KvAlloc = hopless::Hopless> {
    inner: Arc<Inner<A>>,
    _expiry: Arc<ExpiryThread>,
}

impl<A: KvAlloc> Clone for Store<A> {
    fn clone(&self) -> Self {
        Store {
            inner: self.inner.clone(),
            _expiry: self._expiry.clone(),
        }
    }
}

impl Store<hopless::Hopless> {
    /// A store allocating through hopless.
    pub fn new(cfg: Config) -> Self {
        Store::with_allocator(cfg, hopless::Hopless)
    }
}

impl Default for Store<hopless::Hopless> {
    fn default() -> Self {
        Store::new(Config::default())
    }
}

/// Where a key lives.
#[derive(Clone, Copy)]
struct Loc {
    shard: usize,
    hash: u64,
}

impl<A: KvAlloc> Store<A> {
    pub fn with_allocator(mut cfg: Config, alloc: A) -> Self {
        cfg.shards = cfg.shards.max(1).next_power_of_two();
        let hasher = cfg.key_hasher();
        let shards = (0..cfg.shards)
            .map(|i| {
                let shard = Shard {
                    table: Table::new_in(alloc.clone(), hasher),
                    expires: HashMap::with_hasher_in(Default::default(), alloc.clone()),
                    deadlines: DeadlineHeap::new_in(alloc.clone()),
                    rng: 0x9e37_79b9_7f4a_7c15 ^ (i as u64).wrapping_mul(0xff51_afd7_ed55_8ccd),
                };
                let c = Counters::default();
                c.used.store(shard.table.bytes() as u64, Ordering::Relaxed);
                CachePadded::new(ShardSlot {
                    lock: RwLock::new(shard),
                    c,
                })
            })
            .collect();
        let active = cfg.active_expiry;
        let stripes = (0..STRIPES)
            .map(|_| CachePadded::new(OpCounters::default()))
            .collect();
        let inner = Arc::new(Inner {
            shards,
            maxmemory: AtomicU64::new(cfg.maxmemory),
            policy: AtomicU8::new(cfg.policy as u8),
            stripes,
            hasher,
            cfg,
            alloc,
        });
        let expiry = ExpiryThread::start(&inner, active);
        Store {
            inner,
            _expiry: Arc::new(expiry),
        }
    }

    /// The configuration the store was built with (`maxmemory` and `policy` as they were then: see
    /// [`Store::maxmemory`] and [`Store::policy`] for the current ones).
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    fn loc(&self, key: &[u8]) -> Loc {
        let h = self.inner.hasher.hash_one(key);
        Loc {
            shard: (h as usize) & (self.inner.shards.len() - 1),
            hash: h,
        }
    }

    fn slot(&self, l: Loc) -> &ShardSlot<A> {
        &self.inner.shards[l.shard]
    }

    fn now(&self) -> u64 {
        self.inner.cfg.clock.now_ms()
    }

    /// Drops a reference the caller owns (taken out of the table, or never published).
    fn release(&self, item: ItemPtr) {
        // SAFETY: callers pass a reference they own (taken out of the table, or never published).
        unsafe { value::release(item, &self.inner.alloc) }
    }

    /// Wraps a reference the caller owns in a [`Value`].
    fn value(&self, item: ItemPtr) -> Value<A> {
        // SAFETY: callers pass a reference they took with `retain` (or own).
        unsafe { Value::from_owned(item, self.inner.alloc.clone()) }
    }
}

impl<A: KvAlloc> Drop for Inner<A> {
    fn drop(&mut self) {
        for s in self.shards.iter() {
            let mut g = s.lock.write();
            let alloc = self.alloc.clone();
            g.table.drain(|it| {
                // SAFETY: the table's references, released once as the store goes away.
                unsafe { value::release(it, &alloc) }
            });
        }
    }
}

/// Handles cross threads: checked when the crate compiles.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Store<hopless::Hopless>>();
    send_sync::<Value<hopless::Hopless>>();
};

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use allocator_api2::alloc::Global;

    use super::{Config, Store};
    use crate::clock::ManualClock;

    fn store(hash_seed: Option<u64>) -> Store<Global> {
        let cfg = Config {
            shards: 16,
            active_expiry: false,
            clock: Arc::new(ManualClock::new(1_700_000_000_000)),
            hash_seed,
            ..Config::default()
        };
        Store::with_allocator(cfg, Global)
    }

    fn places(s: &Store<Global>, keys: &[Vec<u8>]) -> Vec<(usize, u64)> {
        keys.iter()
            .map(|k| {
                let l = s.loc(k);
                (l.shard, l.hash)
            })
            .collect()
    }

    #[test]
    fn a_fixed_hash_seed_places_keys_identically() {
        let n = if cfg!(miri) { 20 } else { 1000 };
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("key:{i}").into_bytes()).collect();
        let (a, b) = (store(Some(42)), store(Some(42)));
        assert_eq!(places(&a, &keys), places(&b, &keys));
        assert_ne!(places(&a, &keys), places(&store(Some(43)), &keys));
        // The default draws a seed for each store.
        assert_ne!(places(&store(None), &keys), places(&store(None), &keys));
    }
}
