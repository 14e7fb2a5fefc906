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
    pub(super) used: AtomicU64,
    /// Logical access clock for sampled LRU.
    pub(super) clock: AtomicU32,
}

/// Per-operation counters, striped by thread so that threads hammering one hot shard do not also fight
/// over its counters' cache line.
#[derive(Default)]
pub(super) struct OpCounters {
    pub(super) hits: AtomicU64,
    pub(super) misses: AtomicU64,
    pub(super) ops: [AtomicU64; OP_NAMES.len()],
}

pub(super) const STRIPES: usize = 32;

/// This thread's stripe of the operation counters (threads take stripes in turn).
pub(super) fn stripe() -> usize {
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
