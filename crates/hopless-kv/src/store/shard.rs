//! The store's skeleton: the [`Store`] handle over its shards (each a table, an expiry map and a
//! deadline heap behind a reader-writer lock), its construction, where a key lives, and the one way a
//! key leaves its table. The operations live in the sibling files, each an `impl Store` of its own.

use core::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use hashbrown::HashMap;
use parking_lot::RwLock;

use super::counters::{Counters, LockedBytes, OpCounters, STRIPES};
use super::expiry_thread::ExpiryThread;
use super::options::{Config, Gone};
use crate::alloc::KvAlloc;
use crate::deadlines::DeadlineHeap;
use crate::table::{KeyHasher, Table};
use crate::types::LimitsCell;
use crate::value::{self, ItemPtr, Value};

pub(super) struct Shard<A: KvAlloc> {
    pub(super) table: Table<A>,
    /// Item address → deadline (ms since the epoch), for keys with a TTL.
    pub(super) expires: HashMap<usize, u64, hashbrown::DefaultHashBuilder, A>,
    pub(super) deadlines: DeadlineHeap<A>,
    /// Sampling state for eviction.
    pub(super) rng: u64,
}

impl<A: KvAlloc> Shard<A> {
    /// Removes slot `i` and the item's TTL entry, and takes the item's bytes off the shard's `used`
    /// count; the table's reference goes to the caller, who releases it. The one way a single key leaves
    /// its table (DEL, GETDEL, lazy and active expiry, EXPIRE to a past time, eviction; FLUSH and the
    /// store's drop empty whole tables); the caller holds the shard's write lock. The item's deadline-heap
    /// entry, if any, goes stale and is skipped when popped.
    pub(super) fn remove_slot(&mut self, i: usize, used: &LockedBytes) -> ItemPtr {
        let item = self.table.remove(i);
        self.forget_deadline(item);
        // SAFETY: the reference just removed from the table is ours.
        let size = unsafe { value::charged_size::<A>(item) } as u64;
        used.sub(size);
        item
    }

    // A key's deadline: an entry in `expires` (and one in the deadline heap), mirrored by the item
    // header's flag so that most items, which have none, are answered without the map's hashing and
    // probe. These four are the only places that change or read the pair: `set_deadline` sets the flag
    // with every entry, `clear_deadline` clears it with its entry, `forget_deadline` takes the entry of
    // an item that leaves the table (its flag goes with it). Each takes an item that is (or was until
    // now) in this shard's table, under its lock: the write lock to change, either to read.

    /// Gives `item` the deadline `d` (ms since the epoch), replacing any it had.
    pub(super) fn set_deadline(&mut self, item: ItemPtr, d: u64) {
        self.expires.insert(item.as_ptr() as usize, d);
        self.deadlines.push((d, item.as_ptr() as usize));
        // SAFETY: the caller's item is live and its header's flag changes only under our write lock.
        unsafe { value::set_has_ttl(item, true) };
    }

    /// Takes `item`'s deadline away (PERSIST); whether it had one.
    pub(super) fn clear_deadline(&mut self, item: ItemPtr) -> bool {
        // SAFETY: as in `set_deadline`.
        if !unsafe { value::has_ttl(item) } {
            return false;
        }
        let had = self.expires.remove(&(item.as_ptr() as usize)).is_some();
        // SAFETY: as in `set_deadline`.
        unsafe { value::set_has_ttl(item, false) };
        had
    }

    /// Drops the expiry-map entry of `item`, which leaves the table, if it has one.
    pub(super) fn forget_deadline(&mut self, item: ItemPtr) {
        // SAFETY: as in `set_deadline`.
        if unsafe { value::has_ttl(item) } {
            self.expires.remove(&(item.as_ptr() as usize));
        } else {
            debug_assert!(
                !self.expires.contains_key(&(item.as_ptr() as usize)),
                "a deadline without the flag"
            );
        }
    }

    /// `item`'s deadline (ms since the epoch), if it has one.
    pub(super) fn deadline_of(&self, item: ItemPtr) -> Option<u64> {
        // SAFETY: the caller's item is live, and read under the shard's lock, which its flag's writers hold.
        if unsafe { value::has_ttl(item) } {
            self.expires.get(&(item.as_ptr() as usize)).copied()
        } else {
            None
        }
    }
}

pub(super) struct ShardSlot<A: KvAlloc> {
    pub(super) lock: RwLock<Shard<A>>,
    pub(super) c: Counters,
}

pub(super) struct Inner<A: KvAlloc> {
    pub(super) shards: Box<[CachePadded<ShardSlot<A>>]>,
    /// The current `maxmemory` and [`Policy`](super::Policy) (as `Policy as u8`): [`Config`]'s values at
    /// construction, changed at run time by [`Store::set_maxmemory`] and [`Store::set_policy`] (CONFIG SET).
    pub(super) maxmemory: AtomicU64,
    pub(super) policy: AtomicU8,
    /// Writes may grow memory past `maxmemory` under `noeviction` ([`Store::set_over_limit`]).
    pub(super) over_limit: AtomicBool,
    /// Whether the background thread's passes run (DEBUG SET-ACTIVE-EXPIRE turns them off and on; lazy
    /// expiry on access goes on either way).
    pub(super) active_expiry_on: AtomicBool,
    pub(super) stripes: Box<[CachePadded<OpCounters>]>,
    /// The key hash (seeded per [`Config::hash_seed`]); every shard's table hashes with it too.
    pub(super) hasher: KeyHasher,
    pub(super) cfg: Config,
    /// The compact forms' thresholds ([`Config::limits`] at first, CONFIG SET later).
    pub(super) limits: LimitsCell,
    pub(super) alloc: A,
}

/// A handle to the store: cheap to clone, shareable across threads.
pub struct Store<A: KvAlloc = hopless::Hopless> {
    pub(super) inner: Arc<Inner<A>>,
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
pub(super) struct Loc {
    pub(super) shard: usize,
    pub(super) hash: u64,
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
                c.used.set(shard.table.bytes() as u64);
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
            over_limit: AtomicBool::new(false),
            active_expiry_on: AtomicBool::new(true),
            stripes,
            limits: LimitsCell::new(cfg.limits),
            hasher,
            cfg,
            alloc,
        });
        // Only a weak reference, so that dropping the last handle drops the store (and stops the thread).
        let weak = Arc::downgrade(&inner);
        let expiry = ExpiryThread::start(active, move || {
            weak.upgrade()
                .map(|i| {
                    i.active_expiry_on
                        .load(Ordering::Relaxed)
                        .then(|| i.active_expiry())
                })
                .is_some()
        });
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

    pub(super) fn loc(&self, key: &[u8]) -> Loc {
        let h = self.inner.hasher.hash_one(key);
        Loc {
            shard: (h as usize) & (self.inner.shards.len() - 1),
            hash: h,
        }
    }

    pub(super) fn slot(&self, l: Loc) -> &ShardSlot<A> {
        &self.inner.shards[l.shard]
    }

    pub(super) fn now(&self) -> u64 {
        self.inner.cfg.clock.now_ms()
    }

    /// Tells the store's [`KeyGone`](super::KeyGone) hook, if any, that `key` left on its own.
    pub(super) fn tell_gone(&self, why: Gone, key: &[u8]) {
        if let Some(hook) = &self.inner.cfg.on_gone {
            hook.gone(why, key);
        }
    }

    /// Drops a reference the caller owns (taken out of the table, or never published).
    pub(super) fn release(&self, item: ItemPtr) {
        // SAFETY: callers pass a reference they own (taken out of the table, or never published).
        unsafe { value::release(item, &self.inner.alloc) }
    }

    /// Wraps a reference the caller owns in a [`Value`].
    pub(super) fn value(&self, item: ItemPtr) -> Value<A> {
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

    use super::Store;
    use crate::clock::ManualClock;
    use crate::store::Config;

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
