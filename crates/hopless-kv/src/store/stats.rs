//! The [`Stats`] snapshot: the store's counters summed over shards and stripes, and the calls that
//! bump the per-operation ones.

use std::sync::atomic::Ordering;

use super::counters::{stripe, Op, OpCounters};
use super::shard::Store;
use crate::alloc::KvAlloc;

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
    /// Per [`OP_NAMES`](super::OP_NAMES).
    pub ops: [u64; super::OP_NAMES.len()],
}

impl<A: KvAlloc> Store<A> {
    pub(super) fn count(&self, op: Op) {
        let s = stripe();
        OpCounters::bump(&self.inner.stripes[s].ops[op as usize], s);
    }

    pub(super) fn hit_or_miss(&self, hit: bool) {
        let s = stripe();
        let c = &self.inner.stripes[s];
        OpCounters::bump(if hit { &c.hits } else { &c.misses }, s);
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        for s in self.inner.shards.iter() {
            {
                let g = s.lock.read();
                st.keys += g.table.len() as u64;
                st.keys_with_ttl += g.expires.len() as u64;
                st.bytes_used += s.c.used.get() + (g.expires.capacity() * 17 + g.deadlines.bytes()) as u64;
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
