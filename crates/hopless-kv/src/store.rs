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

use core::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use allocator_api2::alloc::Allocator;
use crossbeam_utils::CachePadded;
use hashbrown::HashMap;
use parking_lot::{RwLock, RwLockWriteGuard};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::heap::DeadlineHeap;
use crate::table::Table;
use crate::value::{self, ItemPtr, KvAlloc, Value};

/// Keys the active expiry removes per shard per pass, at most.
pub const ACTIVE_EXPIRY_BUDGET: usize = 1000;
/// Keys sampled per eviction (Redis's maxmemory-samples default).
pub const EVICTION_SAMPLES: usize = 5;

/// What happens when `maxmemory` is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Writes that need memory fail with [`Error::OutOfMemory`].
    NoEviction,
    /// Evict the least recently used of [`EVICTION_SAMPLES`] random keys of the shard, until under.
    SampledLru,
}

#[derive(Clone)]
pub struct Config {
    /// Number of shards (rounded up to a power of two).
    pub shards: usize,
    pub max_key_len: usize,
    pub max_value_len: usize,
    /// Bytes the store may allocate (items, tables, expiry structures); 0: unlimited.
    pub maxmemory: u64,
    pub policy: Policy,
    /// Run the active expiry in a background thread the store owns.
    pub active_expiry: bool,
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
        Config {
            shards: (cores * 16).next_power_of_two().max(16),
            max_key_len: 512 << 20,
            max_value_len: 512 << 20,
            maxmemory: 0,
            policy: Policy::NoEviction,
            active_expiry: true,
            clock: Arc::new(SystemClock),
        }
    }
}

/// SET's condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SetCond {
    #[default]
    Always,
    /// NX: only if the key does not exist.
    IfAbsent,
    /// XX: only if it exists.
    IfPresent,
}

/// A TTL option of SET or GETEX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Ttl {
    /// No TTL (SET clears an existing one; GETEX leaves it alone).
    #[default]
    None,
    /// EX seconds / PX milliseconds from now.
    Ex(u64),
    Px(u64),
    /// EXAT / PXAT: an absolute Unix time.
    ExAt(u64),
    PxAt(u64),
    /// SET: keep the key's TTL. GETEX: PERSIST (remove it).
    Keep,
    Persist,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SetOptions {
    pub cond: SetCond,
    pub ttl: Ttl,
    /// GET: return the old value.
    pub get: bool,
}

/// EXPIRE's condition (Redis 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExpireCond {
    #[default]
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// Operation kinds counted in [`Stats::ops`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Op {
    Get,
    Set,
    Del,
    Exists,
    Append,
    Strlen,
    Incr,
    GetRange,
    MGet,
    MSet,
    Expire,
    Ttl,
    Persist,
    GetDel,
    GetEx,
    Scan,
}

pub const OP_NAMES: [&str; 16] = [
    "get", "set", "del", "exists", "append", "strlen", "incr", "getrange", "mget", "mset", "expire", "ttl",
    "persist", "getdel", "getex", "scan",
];

/// A snapshot of the store's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub keys: u64,
    pub keys_with_ttl: u64,
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
    pub evicted: u64,
    pub bytes_used: u64,
    /// Per [`OP_NAMES`].
    pub ops: [u64; 16],
}

struct Shard<A: KvAlloc> {
    table: Table<A>,
    /// Item address → deadline (ms since the epoch), for keys with a TTL.
    expires: HashMap<usize, u64, hashbrown::DefaultHashBuilder, A>,
    deadlines: DeadlineHeap<A>,
    /// Sampling state for eviction.
    rng: u64,
}

/// Per-shard counters, changed under (or next to) the shard's lock.
#[derive(Default)]
struct Counters {
    expired: AtomicU64,
    evicted: AtomicU64,
    used: AtomicU64,
    /// Logical access clock for sampled LRU.
    clock: AtomicU32,
}

/// Per-operation counters, striped by thread so that threads hammering one hot shard do not also fight
/// over its counters' cache line.
#[derive(Default)]
struct OpCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    ops: [AtomicU64; 16],
}

const STRIPES: usize = 32;

fn stripe() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE.with(|s| {
        if s.get() == usize::MAX {
            s.set(NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
        }
        s.get()
    })
}

struct ShardSlot<A: KvAlloc> {
    lock: RwLock<Shard<A>>,
    c: Counters,
}

struct Inner<A: KvAlloc> {
    shards: Box<[CachePadded<ShardSlot<A>>]>,
    stripes: Box<[CachePadded<OpCounters>]>,
    hasher: foldhash::fast::RandomState,
    cfg: Config,
    alloc: A,
}

/// Stops the active-expiry thread when the last [`Store`] handle goes.
struct ExpiryThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for ExpiryThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
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
        let hasher = foldhash::fast::RandomState::default();
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
            stripes,
            hasher,
            cfg,
            alloc,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let handle = active.then(|| {
            let inner = Arc::downgrade(&inner);
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("hopless-kv-expiry".into())
                .spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::park_timeout(Duration::from_millis(100));
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        match inner.upgrade() {
                            Some(i) => {
                                i.active_expiry();
                            }
                            None => break,
                        }
                    }
                })
                .expect("spawn the expiry thread")
        });
        Store {
            inner,
            _expiry: Arc::new(ExpiryThread { stop, handle }),
        }
    }

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

    /// Access stamps are only kept when an LRU policy will read them (they cost an atomic per access).
    #[inline]
    fn tracks_lru(&self) -> bool {
        self.inner.cfg.policy == Policy::SampledLru && self.inner.cfg.maxmemory > 0
    }

    fn now(&self) -> u64 {
        self.inner.cfg.clock.now_ms()
    }

    fn count(&self, op: Op) {
        self.inner.stripes[stripe()].ops[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > self.inner.cfg.max_key_len {
            return Err(Error::TooLarge);
        }
        Ok(())
    }

    fn check_value(&self, len: usize) -> Result<()> {
        if len > self.inner.cfg.max_value_len {
            return Err(Error::TooLarge);
        }
        Ok(())
    }

    fn new_item(&self, key: &[u8], val_len: usize, fill: impl FnOnce(&mut [u8])) -> Result<ItemPtr> {
        value::new_item(&self.inner.alloc, key, val_len, fill).map_err(|_| Error::AllocFailed)
    }

    fn release(&self, item: ItemPtr) {
        // SAFETY: callers pass a reference they own (taken out of the table, or never published).
        unsafe { value::release(item, &self.inner.alloc) }
    }

    fn value(&self, item: ItemPtr) -> Value<A> {
        // SAFETY: callers pass a reference they took with `retain` (or own).
        unsafe { Value::from_owned(item, self.inner.alloc.clone()) }
    }

    // ---------------------------------------------------------------------------------------------------
    // Reads

    /// Looks a key up under the read lock: Some(item with a new reference) if live. A key found expired is
    /// deleted under the write lock before returning None.
    fn lookup(&self, key: &[u8], l: Loc, touch: bool) -> Option<ItemPtr> {
        let slot = self.slot(l);
        let expired = {
            let g = slot.lock.read();
            let i = g.table.find(l.hash, key)?;
            let item = g.table.item(i);
            // SAFETY: the table holds a reference while we hold the read lock.
            let dead = unsafe { value::has_ttl(item) } && self.is_expired(&g, item, self.now());
            if !dead {
                // SAFETY: as above; the new reference is ours.
                unsafe {
                    value::retain(item);
                    if touch && self.tracks_lru() {
                        value::touch(item, slot.c.clock.fetch_add(1, Ordering::Relaxed));
                    }
                }
                return Some(item);
            }
            dead
        };
        if expired {
            let mut g = slot.lock.write();
            self.expire_if_due(&mut g, l, key);
        }
        None
    }

    fn is_expired(&self, sh: &Shard<A>, item: ItemPtr, now: u64) -> bool {
        sh.expires
            .get(&(item.as_ptr() as usize))
            .is_some_and(|&d| d <= now)
    }

    /// Under the write lock: deletes `key` if it is present and past its deadline.
    fn expire_if_due(&self, g: &mut RwLockWriteGuard<'_, Shard<A>>, l: Loc, key: &[u8]) -> bool {
        let Some(i) = g.table.find(l.hash, key) else {
            return false;
        };
        let item = g.table.item(i);
        if !self.is_expired(g, item, self.now()) {
            return false;
        }
        let old = self.remove_slot(g, l, i);
        self.slot(l).c.expired.fetch_add(1, Ordering::Relaxed);
        self.release(old);
        true
    }

    /// Removes slot `i` and its TTL entry; returns the table's reference to the caller.
    fn remove_slot(&self, g: &mut Shard<A>, l: Loc, i: usize) -> ItemPtr {
        let item = g.table.remove(i);
        g.expires.remove(&(item.as_ptr() as usize));
        // SAFETY: we own the reference just removed.
        let size = unsafe { value::item_size(item) } as u64;
        self.slot(l).c.used.fetch_sub(size, Ordering::Relaxed);
        item
    }

    fn hit_or_miss(&self, hit: bool) {
        let c = &self.inner.stripes[stripe()];
        if hit {
            c.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            c.misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// GET.
    pub fn get(&self, key: &[u8]) -> Option<Value<A>> {
        let l = self.loc(key);
        self.count(Op::Get);
        let v = self.lookup(key, l, true).map(|i| self.value(i));
        self.hit_or_miss(v.is_some());
        v
    }

    /// EXISTS: how many of the keys exist (a key named twice counts twice).
    pub fn exists(&self, keys: &[&[u8]]) -> usize {
        keys.iter()
            .filter(|k| {
                let l = self.loc(k);
                self.count(Op::Exists);
                match self.lookup(k, l, false) {
                    Some(i) => {
                        self.release(i);
                        true
                    }
                    None => false,
                }
            })
            .count()
    }

    /// STRLEN (0 for a missing key).
    pub fn strlen(&self, key: &[u8]) -> usize {
        let l = self.loc(key);
        self.count(Op::Strlen);
        self.lookup(key, l, true).map_or(0, |i| self.value(i).len())
    }

    /// GETRANGE with Redis's index rules (negative from the end, clamped, inclusive end).
    pub fn getrange(&self, key: &[u8], start: i64, end: i64) -> Vec<u8> {
        let l = self.loc(key);
        self.count(Op::GetRange);
        let Some(v) = self.lookup(key, l, true).map(|i| self.value(i)) else {
            return Vec::new();
        };
        let len = v.len() as i64;
        if len == 0 {
            return Vec::new();
        }
        let (mut s, mut e) = (start, end);
        if s < 0 && e < 0 && s > e {
            return Vec::new();
        }
        if s < 0 {
            s += len;
        }
        if e < 0 {
            e += len;
        }
        s = s.max(0);
        e = e.max(0);
        if e >= len {
            e = len - 1;
        }
        if s > e {
            return Vec::new();
        }
        v[s as usize..=e as usize].to_vec()
    }

    /// MGET.
    pub fn mget(&self, keys: &[&[u8]]) -> Vec<Option<Value<A>>> {
        keys.iter()
            .map(|k| {
                let l = self.loc(k);
                self.count(Op::MGet);
                let v = self.lookup(k, l, true).map(|i| self.value(i));
                self.hit_or_miss(v.is_some());
                v
            })
            .collect()
    }

    /// PTTL: -2 if the key does not exist, -1 if it has no TTL, else milliseconds left.
    pub fn pttl(&self, key: &[u8]) -> i64 {
        let l = self.loc(key);
        self.count(Op::Ttl);
        let now = self.now();
        let Some(item) = self.lookup(key, l, false) else {
            return -2;
        };
        let r = {
            let g = self.slot(l).lock.read();
            match g.expires.get(&(item.as_ptr() as usize)) {
                Some(&d) => d.saturating_sub(now) as i64,
                None => -1,
            }
        };
        self.release(item);
        r
    }

    /// TTL: like PTTL, in seconds (rounded as Redis rounds).
    pub fn ttl(&self, key: &[u8]) -> i64 {
        match self.pttl(key) {
            ms if ms < 0 => ms,
            ms => (ms + 500) / 1000,
        }
    }

    /// DBSIZE.
    pub fn dbsize(&self) -> usize {
        self.inner.shards.iter().map(|s| s.lock.read().table.len()).sum()
    }

    /// SCAN: returns the next cursor (0 when done) and up to about `count` keys matching `pattern` (a
    /// Redis glob; None matches all). Every key present for the whole scan is returned at least once, also
    /// while other threads write; a key may be returned more than once.
    pub fn scan(&self, cursor: u64, count: usize, pattern: Option<&[u8]>) -> (u64, Vec<Vec<u8>>) {
        // Cursor: shard index above bit 33, the position in that shard's hash space below.
        let nshards = self.inner.shards.len() as u64;
        let mut shard = cursor >> 33;
        let mut pos = cursor & ((1 << 33) - 1);
        let mut out = Vec::new();
        let now = self.now();
        let mut visited = 0;
        while shard < nshards && visited < count.max(1) {
            let slot = &self.inner.shards[shard as usize];
            self.inner.stripes[stripe()].ops[Op::Scan as usize].fetch_add(1, Ordering::Relaxed);
            let g = slot.lock.read();
            pos = g.table.scan_step(pos, |item| {
                visited += 1;
                // SAFETY: the table holds a reference while we hold the read lock.
                let (k, ttl) = unsafe { (value::key(item), value::has_ttl(item)) };
                if ttl && self.is_expired(&g, item, now) {
                    return;
                }
                if pattern.is_none_or(|p| glob_match(p, k)) {
                    out.push(k.to_vec());
                }
            });
            drop(g);
            if pos >= crate::table::SCAN_END {
                shard += 1;
                pos = 0;
            }
        }
        let next = if shard >= nshards { 0 } else { (shard << 33) | pos };
        (next, out)
    }

    // ---------------------------------------------------------------------------------------------------
    // Writes

    fn deadline(&self, ttl: Ttl, now: u64) -> Result<Option<u64>> {
        let d = match ttl {
            Ttl::None | Ttl::Keep | Ttl::Persist => return Ok(None),
            Ttl::Ex(s) => s
                .checked_mul(1000)
                .and_then(|ms| ms.checked_add(now))
                .filter(|_| s > 0),
            Ttl::Px(ms) => now.checked_add(ms).filter(|_| ms > 0),
            Ttl::ExAt(s) => s.checked_mul(1000).filter(|_| s > 0),
            Ttl::PxAt(ms) => Some(ms).filter(|&ms| ms > 0),
        };
        d.filter(|&d| d <= i64::MAX as u64)
            .map(Some)
            .ok_or(Error::InvalidExpire)
    }

    fn total_used(&self) -> u64 {
        self.inner
            .shards
            .iter()
            .map(|s| s.c.used.load(Ordering::Relaxed))
            .sum()
    }

    /// Makes room for `need` more bytes under the shard's write lock (maxmemory and policy).
    fn make_room(&self, g: &mut Shard<A>, l: Loc, need: u64) -> Result<()> {
        let max = self.inner.cfg.maxmemory;
        if max == 0 {
            return Ok(());
        }
        while self.total_used() + need > max {
            if self.inner.cfg.policy == Policy::NoEviction || g.table.is_empty() {
                return Err(Error::OutOfMemory);
            }
            let now = self.slot(l).c.clock.load(Ordering::Relaxed);
            let mut victim = None;
            let mut oldest = 0;
            for _ in 0..EVICTION_SAMPLES {
                g.rng ^= g.rng << 13;
                g.rng ^= g.rng >> 7;
                g.rng ^= g.rng << 17;
                let i = g.table.occupied_from(g.rng as usize).expect("non-empty table");
                // SAFETY: the table holds the item; we hold the write lock.
                let age = unsafe { value::age(g.table.item(i), now) };
                if victim.is_none() || age > oldest {
                    victim = Some(i);
                    oldest = age;
                }
            }
            let old = self.remove_slot(g, l, victim.expect("sampled"));
            self.slot(l).c.evicted.fetch_add(1, Ordering::Relaxed);
            self.release(old);
        }
        Ok(())
    }

    /// Installs `item` for `key` under the write lock with the given deadline (None: no TTL), replacing
    /// slot `existing` if given. Returns the old item's reference, if any.
    fn install(
        &self,
        g: &mut Shard<A>,
        l: Loc,
        existing: Option<usize>,
        item: ItemPtr,
        deadline: Option<u64>,
    ) -> Option<ItemPtr> {
        // SAFETY: `item` is ours until published below.
        let size = unsafe { value::item_size(item) } as u64;
        let c = &self.slot(l).c;
        c.used.fetch_add(size, Ordering::Relaxed);
        if self.tracks_lru() {
            // SAFETY: as above.
            unsafe { value::touch(item, c.clock.fetch_add(1, Ordering::Relaxed)) };
        }
        let old = match existing {
            Some(i) => {
                let old = g.table.replace(i, item);
                g.expires.remove(&(old.as_ptr() as usize));
                // SAFETY: the old reference is ours now.
                c.used
                    .fetch_sub(unsafe { value::item_size(old) } as u64, Ordering::Relaxed);
                Some(old)
            }
            None => {
                let before = g.table.bytes();
                g.table.insert_new(l.hash, item);
                let grown = g.table.bytes() - before;
                c.used.fetch_add(grown as u64, Ordering::Relaxed);
                None
            }
        };
        if let Some(d) = deadline {
            self.set_deadline(g, item, d);
        }
        old
    }

    fn set_deadline(&self, g: &mut Shard<A>, item: ItemPtr, d: u64) {
        g.expires.insert(item.as_ptr() as usize, d);
        g.deadlines.push((d, item.as_ptr() as usize));
        // SAFETY: the item is in the table and we hold the write lock.
        unsafe { value::set_has_ttl(item, true) };
    }

    /// SET with Redis's options. Returns whether it wrote, and the old value when `opts.get`.
    pub fn set(&self, key: &[u8], val: &[u8], opts: SetOptions) -> Result<(bool, Option<Value<A>>)> {
        self.check_key(key)?;
        self.check_value(val.len())?;
        let l = self.loc(key);
        self.count(Op::Set);
        let now = self.now();
        let new_deadline = self.deadline(opts.ttl, now)?;
        let item = self.new_item(key, val.len(), |b| b.copy_from_slice(val))?;
        let mut g = self.slot(l).lock.write();
        self.expire_if_due(&mut g, l, key);
        let existing = g.table.find(l.hash, key);
        let cond_ok = match opts.cond {
            SetCond::Always => true,
            SetCond::IfAbsent => existing.is_none(),
            SetCond::IfPresent => existing.is_some(),
        };
        let old_val = match (opts.get, existing) {
            (true, Some(i)) => {
                let it = g.table.item(i);
                // SAFETY: the table's item; our new reference goes into the returned Value.
                unsafe { value::retain(it) };
                Some(self.value(it))
            }
            _ => None,
        };
        if !cond_ok {
            drop(g);
            self.release(item);
            return Ok((false, old_val));
        }
        let keep = opts.ttl == Ttl::Keep;
        self.store_item(
            g,
            l,
            key,
            item,
            |current| if keep { current } else { new_deadline },
        )?;
        Ok((true, old_val))
    }

    /// The end of every single-key write, under the shard's write lock: makes room for `item` (maxmemory),
    /// puts it in the key's slot with the deadline `deadline(current deadline)`, releases the lock, then
    /// drops the old item's table reference. On failure the new item is released and nothing changes.
    fn store_item(
        &self,
        mut g: RwLockWriteGuard<'_, Shard<A>>,
        l: Loc,
        key: &[u8],
        item: ItemPtr,
        deadline: impl FnOnce(Option<u64>) -> Option<u64>,
    ) -> Result<()> {
        // SAFETY: the item is ours until installed.
        let need = unsafe { value::item_size(item) } as u64;
        if let Err(e) = self.make_room(&mut g, l, need) {
            drop(g);
            self.release(item);
            return Err(e);
        }
        // make_room may have evicted the key itself.
        let existing = g.table.find(l.hash, key);
        let current = existing.and_then(|i| g.expires.get(&(g.table.item(i).as_ptr() as usize)).copied());
        let old = self.install(&mut g, l, existing, item, deadline(current));
        drop(g);
        if let Some(o) = old {
            self.release(o);
        }
        Ok(())
    }

    /// Plain SET.
    pub fn set_simple(&self, key: &[u8], val: &[u8]) -> Result<()> {
        self.set(key, val, SetOptions::default()).map(|_| ())
    }

    /// MSET: all pairs written atomically (every involved shard locked, in order). Items of equal size
    /// are allocated with the allocator's batch call.
    pub fn mset(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        for (k, v) in pairs {
            self.check_key(k)?;
            self.check_value(v.len())?;
        }
        // Allocate: one batch call per distinct item size.
        let mut items: Vec<Option<ItemPtr>> = vec![None; pairs.len()];
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        let size = |i: usize| value::HEADER_SIZE + pairs[i].0.len() + pairs[i].1.len();
        order.sort_by_key(|&i| size(i));
        let mut start = 0;
        while start < order.len() {
            let sz = size(order[start]);
            let end = start + order[start..].iter().take_while(|&&i| size(i) == sz).count();
            let layout = value::item_layout(pairs[order[start]].0.len(), pairs[order[start]].1.len())
                .ok_or(Error::TooLarge)?;
            let mut blocks = vec![core::ptr::NonNull::<u8>::dangling(); end - start];
            if !self.inner.alloc.allocate_batch(layout, &mut blocks) {
                for it in items.into_iter().flatten() {
                    self.release(it);
                }
                return Err(Error::AllocFailed);
            }
            for (&i, b) in order[start..end].iter().zip(blocks) {
                let (k, v) = pairs[i];
                // SAFETY: a fresh block of this item's layout.
                items[i] = Some(unsafe { value::init_item(b, k, v.len(), |d| d.copy_from_slice(v)) });
            }
            start = end;
        }
        let locs: Vec<Loc> = pairs.iter().map(|(k, _)| self.loc(k)).collect();
        let mut shards: Vec<usize> = locs.iter().map(|l| l.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        let mut guards: Vec<_> = shards
            .iter()
            .map(|&s| (s, self.inner.shards[s].lock.write()))
            .collect();
        let need: u64 = (0..pairs.len()).map(|i| size(i) as u64).sum();
        if self.inner.cfg.maxmemory > 0 && self.total_used() + need > self.inner.cfg.maxmemory {
            let l = locs[0];
            let g = &mut guards.iter_mut().find(|(s, _)| *s == l.shard).expect("locked").1;
            if let Err(e) = self.make_room(g, l, need) {
                drop(guards);
                for it in items.into_iter().flatten() {
                    self.release(it);
                }
                return Err(e);
            }
        }
        let mut olds = Vec::new();
        for (i, (k, _)) in pairs.iter().enumerate() {
            let l = locs[i];
            self.count(Op::MSet);
            let g = &mut guards.iter_mut().find(|(s, _)| *s == l.shard).expect("locked").1;
            let existing = g.table.find(l.hash, k);
            olds.extend(self.install(g, l, existing, items[i].take().expect("allocated"), None));
        }
        drop(guards);
        for o in olds {
            self.release(o);
        }
        Ok(())
    }

    /// DEL: how many of the keys were removed.
    pub fn del(&self, keys: &[&[u8]]) -> usize {
        keys.iter()
            .filter(|k| {
                self.take(k, Op::Del).is_some_and(|it| {
                    self.release(it);
                    true
                })
            })
            .count()
    }

    /// Removes a live key and returns its reference.
    fn take(&self, key: &[u8], op: Op) -> Option<ItemPtr> {
        let l = self.loc(key);
        self.count(op);
        let mut g = self.slot(l).lock.write();
        if self.expire_if_due(&mut g, l, key) {
            return None;
        }
        let i = g.table.find(l.hash, key)?;
        Some(self.remove_slot(&mut g, l, i))
    }

    /// GETDEL.
    pub fn getdel(&self, key: &[u8]) -> Option<Value<A>> {
        let v = self.take(key, Op::GetDel).map(|it| self.value(it));
        self.hit_or_miss(v.is_some());
        v
    }

    /// Replaces a live key's value with `f(old) -> new`, keeping its TTL; creates it from `f(None)` if
    /// missing. Returns what `f` returned alongside.
    fn rewrite<R>(
        &self,
        key: &[u8],
        op: Op,
        f: impl FnOnce(Option<&[u8]>) -> Result<(Vec<u8>, R)>,
    ) -> Result<R> {
        self.check_key(key)?;
        let l = self.loc(key);
        self.count(op);
        let mut g = self.slot(l).lock.write();
        self.expire_if_due(&mut g, l, key);
        let existing = g.table.find(l.hash, key);
        // SAFETY: the table's item, read under the write lock.
        let old = existing.map(|i| unsafe { value::value(g.table.item(i)) });
        let (new, r) = f(old)?;
        self.check_value(new.len())?;
        let item = self.new_item(key, new.len(), |b| b.copy_from_slice(&new))?;
        self.store_item(g, l, key, item, |current| current)?;
        Ok(r)
    }

    /// APPEND: returns the new length.
    pub fn append(&self, key: &[u8], suffix: &[u8]) -> Result<usize> {
        let max = self.inner.cfg.max_value_len;
        self.rewrite(key, Op::Append, |old| {
            let old = old.unwrap_or(&[]);
            if old.len() + suffix.len() > max {
                return Err(Error::TooLarge);
            }
            let mut v = Vec::with_capacity(old.len() + suffix.len());
            v.extend_from_slice(old);
            v.extend_from_slice(suffix);
            let n = v.len();
            Ok((v, n))
        })
    }

    /// INCRBY (INCR, DECR and DECRBY are this with 1, -1, -n): the new value. A value that is not an
    /// integer, or a result that overflows, is an error and changes nothing.
    pub fn incr_by(&self, key: &[u8], delta: i64) -> Result<i64> {
        self.rewrite(key, Op::Incr, |old| {
            let cur = match old {
                Some(b) => parse_i64(b).ok_or(Error::NotInteger)?,
                None => 0,
            };
            let n = cur.checked_add(delta).ok_or(Error::Overflow)?;
            Ok((n.to_string().into_bytes(), n))
        })
    }

    pub fn incr(&self, key: &[u8]) -> Result<i64> {
        self.incr_by(key, 1)
    }

    pub fn decr(&self, key: &[u8]) -> Result<i64> {
        self.incr_by(key, -1)
    }

    pub fn decr_by(&self, key: &[u8], delta: i64) -> Result<i64> {
        self.incr_by(key, delta.checked_neg().ok_or(Error::Overflow)?)
    }

    /// PEXPIREAT with a condition: the core of EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT. Returns whether
    /// the TTL was set (false: no such key, or the condition failed). A deadline not in the future deletes
    /// the key (and returns true), as Redis does.
    pub fn pexpire_at(&self, key: &[u8], deadline_ms: i64, cond: ExpireCond) -> Result<bool> {
        let l = self.loc(key);
        self.count(Op::Expire);
        let mut g = self.slot(l).lock.write();
        self.expire_if_due(&mut g, l, key);
        let Some(i) = g.table.find(l.hash, key) else {
            return Ok(false);
        };
        let item = g.table.item(i);
        let current = g.expires.get(&(item.as_ptr() as usize)).copied();
        let d = deadline_ms.max(0) as u64;
        let ok = match cond {
            ExpireCond::Always => true,
            ExpireCond::Nx => current.is_none(),
            ExpireCond::Xx => current.is_some(),
            // No TTL counts as an infinite one.
            ExpireCond::Gt => current.is_some_and(|c| d > c),
            ExpireCond::Lt => current.is_none_or(|c| d < c),
        };
        if !ok {
            return Ok(false);
        }
        if deadline_ms <= self.now() as i64 {
            let old = self.remove_slot(&mut g, l, i);
            drop(g);
            self.release(old);
            return Ok(true);
        }
        self.set_deadline(&mut g, item, d);
        Ok(true)
    }

    fn relative(&self, amount: i64, unit_ms: i64) -> Result<i64> {
        amount
            .checked_mul(unit_ms)
            .and_then(|ms| ms.checked_add(self.now() as i64))
            .ok_or(Error::InvalidExpire)
    }

    pub fn expire(&self, key: &[u8], secs: i64, cond: ExpireCond) -> Result<bool> {
        self.pexpire_at(key, self.relative(secs, 1000)?, cond)
    }

    pub fn pexpire(&self, key: &[u8], ms: i64, cond: ExpireCond) -> Result<bool> {
        self.pexpire_at(key, self.relative(ms, 1)?, cond)
    }

    pub fn expire_at(&self, key: &[u8], unix_secs: i64, cond: ExpireCond) -> Result<bool> {
        self.pexpire_at(
            key,
            unix_secs.checked_mul(1000).ok_or(Error::InvalidExpire)?,
            cond,
        )
    }

    /// PERSIST: whether a TTL was removed.
    pub fn persist(&self, key: &[u8]) -> bool {
        let l = self.loc(key);
        self.count(Op::Persist);
        let mut g = self.slot(l).lock.write();
        self.expire_if_due(&mut g, l, key);
        let Some(i) = g.table.find(l.hash, key) else {
            return false;
        };
        let item = g.table.item(i);
        let had = g.expires.remove(&(item.as_ptr() as usize)).is_some();
        // SAFETY: the table's item, under the write lock.
        unsafe { value::set_has_ttl(item, false) };
        had
    }

    /// GETEX: GET, and set (EX/PX/EXAT/PXAT) or remove (PERSIST) the TTL; `Ttl::None` leaves it alone.
    pub fn getex(&self, key: &[u8], ttl: Ttl) -> Result<Option<Value<A>>> {
        let l = self.loc(key);
        self.count(Op::GetEx);
        let d = self.deadline(ttl, self.now())?;
        let mut g = self.slot(l).lock.write();
        self.expire_if_due(&mut g, l, key);
        let Some(i) = g.table.find(l.hash, key) else {
            drop(g);
            self.hit_or_miss(false);
            return Ok(None);
        };
        let item = g.table.item(i);
        // SAFETY: the table's item; the new reference is the caller's.
        unsafe { value::retain(item) };
        match (ttl, d) {
            (Ttl::Persist, _) => {
                g.expires.remove(&(item.as_ptr() as usize));
                // SAFETY: as above.
                unsafe { value::set_has_ttl(item, false) };
            }
            (_, Some(d)) => self.set_deadline(&mut g, item, d),
            _ => {}
        }
        drop(g);
        self.hit_or_miss(true);
        Ok(Some(self.value(item)))
    }

    /// FLUSHALL: removes every key.
    pub fn flush(&self) {
        for s in self.inner.shards.iter() {
            let mut items = Vec::new();
            {
                let mut g = s.lock.write();
                g.table.drain(|it| items.push(it));
                g.expires.clear();
                g.expires.shrink_to_fit();
                g.deadlines.clear();
                s.c.used.store(g.table.bytes() as u64, Ordering::Relaxed);
            }
            for it in items {
                self.release(it);
            }
        }
    }

    /// One pass of active expiry over every shard. Returns how many keys it removed.
    pub fn run_active_expiry(&self) -> usize {
        self.inner.active_expiry()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        for s in self.inner.shards.iter() {
            {
                let g = s.lock.read();
                st.keys += g.table.len() as u64;
                st.keys_with_ttl += g.expires.len() as u64;
                st.bytes_used += s.c.used.load(Ordering::Relaxed)
                    + (g.expires.capacity() * 17 + g.deadlines.bytes()) as u64;
            }
            st.expired += s.c.expired.load(Ordering::Relaxed);
            st.evicted += s.c.evicted.load(Ordering::Relaxed);
        }
        for c in self.inner.stripes.iter() {
            st.hits += c.hits.load(Ordering::Relaxed);
            st.misses += c.misses.load(Ordering::Relaxed);
            for (o, k) in st.ops.iter_mut().zip(c.ops.iter()) {
                *o += k.load(Ordering::Relaxed);
            }
        }
        st
    }
}

impl<A: KvAlloc> Inner<A> {
    fn active_expiry(&self) -> usize {
        let now = self.cfg.clock.now_ms();
        let mut removed = 0;
        for s in self.shards.iter() {
            if s.lock.read().deadlines.peek().is_none_or(|(d, _)| d > now) {
                continue;
            }
            let mut dead = Vec::new();
            {
                let mut g = s.lock.write();
                let sh = &mut *g;
                while dead.len() < ACTIVE_EXPIRY_BUDGET {
                    let Some((d, addr)) = sh.deadlines.peek() else {
                        break;
                    };
                    if d > now {
                        break;
                    }
                    sh.deadlines.pop();
                    // Stale entry: the key's TTL changed or the key went away.
                    if sh.expires.get(&addr) != Some(&d) {
                        continue;
                    }
                    // SAFETY: the expiry map names only items the table holds (entries leave with them).
                    let item = unsafe { ItemPtr::new_unchecked(addr as *mut value::Header) };
                    // SAFETY: as above.
                    let key = unsafe { value::key(item) };
                    let i = sh
                        .table
                        .find(self.hasher.hash_one(key), key)
                        .expect("an expiring key is in its table");
                    let it = sh.table.remove(i);
                    sh.expires.remove(&addr);
                    // SAFETY: the reference just removed from the table is ours.
                    s.c.used
                        .fetch_sub(unsafe { value::item_size(it) } as u64, Ordering::Relaxed);
                    dead.push(it);
                }
            }
            s.c.expired.fetch_add(dead.len() as u64, Ordering::Relaxed);
            removed += dead.len();
            for it in dead {
                // SAFETY: references removed from the table are ours.
                unsafe { value::release(it, &self.alloc) };
            }
        }
        removed
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

/// Redis's `string2ll`: an optional '-', then digits with no leading zero (except "0"), within i64.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    if b == b"0" {
        return Some(0);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = (d - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg { v.checked_sub(d)? } else { v.checked_add(d)? };
    }
    Some(v)
}

/// Redis-style glob matching: `*`, `?`, `[abc]`, `[^a-z]`, and `\` escapes.
pub fn glob_match(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => {
            let rest = &p[1..];
            (0..=s.len()).any(|i| glob_match(rest, &s[i..]))
        }
        Some(b'?') => !s.is_empty() && glob_match(&p[1..], &s[1..]),
        Some(b'[') => {
            let Some(&c) = s.first() else { return false };
            let mut i = 1;
            let neg = p.get(1) == Some(&b'^');
            if neg {
                i += 1;
            }
            let mut matched = false;
            while i < p.len() && p[i] != b']' {
                if p[i] == b'\\' && i + 1 < p.len() {
                    matched |= p[i + 1] == c;
                    i += 2;
                } else if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
                    let (lo, hi) = (p[i].min(p[i + 2]), p[i].max(p[i + 2]));
                    matched |= lo <= c && c <= hi;
                    i += 3;
                } else {
                    matched |= p[i] == c;
                    i += 1;
                }
            }
            matched != neg && glob_match(p.get(i + 1..).unwrap_or(&[]), &s[1..])
        }
        Some(b'\\') if p.len() > 1 => s.first() == Some(&p[1]) && glob_match(&p[2..], &s[1..]),
        Some(&c) => s.first() == Some(&c) && glob_match(&p[1..], &s[1..]),
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn ok<T: Send + Sync>() {}
    ok::<Store<hopless::Hopless>>();
    ok::<Value<hopless::Hopless>>();
    let _ = core::marker::PhantomData::<dyn Allocator>;
}
