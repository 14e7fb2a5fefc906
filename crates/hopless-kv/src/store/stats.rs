//! The store's counters: per-shard ones ([`Counters`]: bytes used, expired, evicted, the LRU clock), the
//! per-operation ones striped by thread ([`OpCounters`]), and the [`Stats`] snapshot that sums them.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::Store;
use crate::value::KvAlloc;

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

/// Per-shard counters, changed under (or next to) the shard's lock.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) expired: AtomicU64,
    pub(super) evicted: AtomicU64,
    /// Bytes of the shard's items and table slots: what writes check against `maxmemory`.
    pub(super) used: AtomicU64,
    /// Logical access clock for sampled LRU.
    pub(super) clock: AtomicU32,
}

/// Per-operation counters, striped by thread so that threads hammering one hot shard do not also fight
/// over its counters' cache line.
#[derive(Default)]
pub(super) struct OpCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    ops: [AtomicU64; 16],
}

pub(super) const STRIPES: usize = 32;

/// This thread's stripe of the operation counters (threads take stripes in turn).
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

impl<A: KvAlloc> Store<A> {
    pub(super) fn count(&self, op: Op) {
        self.inner.stripes[stripe()].ops[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn hit_or_miss(&self, hit: bool) {
        let c = &self.inner.stripes[stripe()];
        if hit {
            c.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            c.misses.fetch_add(1, Ordering::Relaxed);
        }
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
