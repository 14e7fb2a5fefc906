//! `maxmemory`: the bytes the store holds, and making room before a write under the configured
//! [`Policy`] (refuse, or evict by sampled LRU with the access stamps reads and writes leave).

use std::sync::atomic::Ordering;

use super::options::{Gone, Policy};
use super::shard::{Loc, Shard, Store};
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::value;

/// Keys sampled per eviction (Redis's maxmemory-samples default).
pub const EVICTION_SAMPLES: usize = 5;

impl<A: KvAlloc> Store<A> {
    /// Access stamps are only kept when an LRU policy will read them (they cost an atomic per access).
    #[inline]
    pub(super) fn tracks_lru(&self) -> bool {
        self.policy() == Policy::SampledLru && self.maxmemory() > 0
    }

    /// The current `maxmemory` (bytes; 0: unlimited).
    pub fn maxmemory(&self) -> u64 {
        self.inner.maxmemory.load(Ordering::Relaxed)
    }

    /// The current eviction policy.
    pub fn policy(&self) -> Policy {
        match self.inner.policy.load(Ordering::Relaxed) {
            p if p == Policy::SampledLru as u8 => Policy::SampledLru,
            _ => Policy::NoEviction,
        }
    }

    /// Changes `maxmemory` at run time (CONFIG SET maxmemory). Lowering it below what the store holds
    /// evicts nothing at once: the next writes make room (or fail, under `noeviction`), as in Redis.
    pub fn set_maxmemory(&self, bytes: u64) {
        self.inner.maxmemory.store(bytes, Ordering::Relaxed);
    }

    /// Changes the eviction policy at run time (CONFIG SET maxmemory-policy).
    pub fn set_policy(&self, policy: Policy) {
        self.inner.policy.store(policy as u8, Ordering::Relaxed);
    }

    /// Lets writes grow memory past `maxmemory` under `noeviction` (`on`), or refuses them again: what a
    /// server does while it runs a script flagged `allow-oom` alone (no other client's write may slip
    /// through meanwhile). Eviction policies evict as ever.
    pub fn set_over_limit(&self, on: bool) {
        self.inner.over_limit.store(on, Ordering::Relaxed);
    }

    /// Whether a write that may grow memory would be refused now: over `maxmemory` under `noeviction`
    /// (what a server checks before queuing a `denyoom` command inside MULTI, as Redis does).
    pub fn refuses_growth(&self) -> bool {
        let max = self.maxmemory();
        max > 0 && self.policy() == Policy::NoEviction && self.total_used() > max
    }

    /// Bytes of items and tables over all shards (what `maxmemory` is checked against).
    pub(super) fn total_used(&self) -> u64 {
        self.inner.shards.iter().map(|s| s.c.used.get()).sum()
    }

    /// Makes room for `need` more bytes under the shard's write lock (maxmemory and policy). Returns
    /// whether it evicted a key of this shard (the caller's slot indices are stale then).
    pub(super) fn make_room(&self, g: &mut Shard<A>, l: Loc, need: u64) -> Result<bool> {
        let max = self.maxmemory();
        if max == 0 {
            return Ok(false);
        }
        let c = &self.slot(l).c;
        let mut evicted = false;
        while self.total_used() + need > max {
            if self.policy() == Policy::NoEviction || g.table.is_empty() {
                if self.inner.over_limit.load(Ordering::Relaxed) {
                    return Ok(evicted);
                }
                return Err(Error::OutOfMemory);
            }
            let now = c.clock.load(Ordering::Relaxed);
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
            let old = g.remove_slot(victim.expect("sampled"), &c.used);
            c.evicted.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the item just removed is ours until released, its key with it.
            self.tell_gone(Gone::Evicted, unsafe { value::key(old) });
            self.release(old);
            evicted = true;
        }
        Ok(evicted)
    }
}
