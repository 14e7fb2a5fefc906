//! What the store counts, and where: per-shard counters ([`Counters`]: bytes used, expired, evicted, the
//! LRU clock) and per-operation ones ([`OpCounters`], one set per [`Op`]) striped by thread.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Operation kinds counted in [`Stats::ops`](super::Stats::ops).
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
    /// A read of a list, hash, set or sorted set.
    CollRead,
    /// A write of a list, hash, set or sorted set (or of several keys at once).
    CollWrite,
}

pub const OP_NAMES: [&str; 18] = [
    "get",
    "set",
    "del",
    "exists",
    "append",
    "strlen",
    "incr",
    "getrange",
    "mget",
    "mset",
    "expire",
    "ttl",
    "persist",
    "getdel",
    "getex",
    "scan",
    "collection_read",
    "collection_write",
];

/// Per-shard counters, changed under (or next to) the shard's lock.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) expired: AtomicU64,
    pub(super) evicted: AtomicU64,
    /// Bytes of the shard's items and table slots: what writes check against `maxmemory`.
    pub(super) used: LockedBytes,
    /// Logical access clock for sampled LRU.
    pub(super) clock: AtomicU32,
}

/// A byte count that only the holder of its shard's write lock changes, and anyone reads (the
/// `maxmemory` check sums every shard's without their locks). The lock serialises the writers, so a
/// change is a load and a store: an atomic add would be a locked instruction, which on x86 also waits for
/// every store before it (the new item's bytes, on a write) to reach the cache. A reader sees some value
/// the count had, as it would with the add.
#[derive(Default)]
pub(super) struct LockedBytes(AtomicU64);

impl LockedBytes {
    pub(super) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Adds `delta` (a decrease as its two's complement: `0u64.wrapping_sub(n)`). The caller holds the
    /// shard's write lock.
    pub(super) fn add(&self, delta: u64) {
        self.set(self.get().wrapping_add(delta));
    }

    /// Takes `n` off. The caller holds the shard's write lock.
    pub(super) fn sub(&self, n: u64) {
        self.add(n.wrapping_neg());
    }

    /// The caller holds the shard's write lock, or is building the shard.
    pub(super) fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
}

/// Per-operation counters, striped by thread so that threads hammering one hot shard do not also fight
/// over its counters' cache line.
#[derive(Default)]
pub(super) struct OpCounters {
    pub(super) hits: AtomicU64,
    pub(super) misses: AtomicU64,
    pub(super) ops: [AtomicU64; OP_NAMES.len()],
}

/// Stripes a thread can own; one more, [`SHARED_STRIPE`], serves the threads that found none free.
pub(super) const OWNED_STRIPES: usize = 32;
pub(super) const SHARED_STRIPE: usize = OWNED_STRIPES;
/// Every store's stripe count: the owned ones and the shared one.
pub(super) const STRIPES: usize = OWNED_STRIPES + 1;

impl OpCounters {
    /// Counts one in `c`, a counter of stripe `stripe` ([`stripe`]'s answer for this thread). An owned
    /// stripe has one writer, this thread, so the count is a load and a store, not a locked instruction
    /// (which would also wait for every earlier store to reach the cache); the shared one has many.
    pub(super) fn bump(c: &AtomicU64, stripe: usize) {
        if stripe == SHARED_STRIPE {
            c.fetch_add(1, Ordering::Relaxed);
        } else {
            c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
    }
}

/// Which owned stripes have an owner (bit `i`: stripe `i`), in every store alike: a thread owns the same
/// index everywhere.
static CLAIMED: AtomicU32 = AtomicU32::new(0);
const _: () = assert!(OWNED_STRIPES <= 32, "CLAIMED has a bit per owned stripe");

/// A thread's claim on a stripe, given back when the thread exits.
struct Claim(usize);

impl Claim {
    fn take() -> Claim {
        let mut cur = CLAIMED.load(Ordering::Relaxed);
        loop {
            let free = !cur;
            if free == 0 {
                return Claim(SHARED_STRIPE);
            }
            let i = free.trailing_zeros();
            // Acquire: the stripe's last owner's counts (stored before its release below) are seen by
            // our loads, so our first store carries them on.
            match CLAIMED.compare_exchange_weak(cur, cur | 1 << i, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Claim(i as usize),
                Err(now) => cur = now,
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.0 != SHARED_STRIPE {
            // Release: this thread's counts happen before the next owner's (see `take`).
            CLAIMED.fetch_and(!(1 << self.0), Ordering::Release);
        }
    }
}

/// This thread's stripe of the operation counters: one it owns while it lives, while one of the
/// [`OWNED_STRIPES`] is free, else [`SHARED_STRIPE`] (also while the thread's locals are being torn down).
pub(super) fn stripe() -> usize {
    thread_local! {
        static CLAIM: Claim = Claim::take();
    }
    CLAIM.try_with(|c| c.0).unwrap_or(SHARED_STRIPE)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::{Barrier, Mutex};

    use super::*;

    #[test]
    fn threads_alive_together_own_different_stripes_and_the_rest_share_one() {
        let n = if cfg!(miri) { 4 } else { OWNED_STRIPES + 8 };
        let barrier = Barrier::new(n);
        let seen = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..n {
                s.spawn(|| {
                    // Every thread holds its claim until all have one.
                    let mine = stripe();
                    barrier.wait();
                    assert_eq!(stripe(), mine, "a thread keeps its stripe");
                    seen.lock().unwrap().push(mine);
                });
            }
        });
        let seen = seen.into_inner().unwrap();
        let owned: Vec<usize> = seen.iter().copied().filter(|&s| s != SHARED_STRIPE).collect();
        let distinct: HashSet<usize> = owned.iter().copied().collect();
        assert_eq!(distinct.len(), owned.len(), "no stripe has two owners: {seen:?}");
        assert!(owned.iter().all(|&s| s < OWNED_STRIPES));
        // Other tests' threads may hold stripes meanwhile, so only the bound is certain.
        assert!(owned.len() <= OWNED_STRIPES);
        if !cfg!(miri) {
            assert!(
                seen.contains(&SHARED_STRIPE),
                "more threads than stripes: some share"
            );
        }
    }

    #[test]
    fn the_shared_stripe_counts_every_bump_of_threads_racing_on_it() {
        let c = AtomicU64::new(0);
        let per = if cfg!(miri) { 50 } else { 5_000_000 };
        let barrier = Barrier::new(2);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    barrier.wait();
                    for _ in 0..per {
                        OpCounters::bump(&c, SHARED_STRIPE);
                    }
                });
            }
        });
        assert_eq!(c.load(Ordering::Relaxed), 2 * per);
    }
}
