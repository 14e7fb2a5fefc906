//! Removing keys past their deadline: lazily, when an operation finds one under its shard's lock
//! ([`Store::is_due`], which `slot.rs`'s [`Store::live_slot`] acts on), and actively, by draining each shard's deadline heap (a pass the background
//! thread of `expiry_thread.rs` runs every 100 ms, or [`Store::run_active_expiry`]).

use core::hash::BuildHasher;
use std::sync::atomic::Ordering;

use super::options::Gone;
use super::shard::{Inner, Shard, Store};
use crate::alloc::KvAlloc;
use crate::value::{self, ItemPtr};

/// Keys the active expiry removes per shard per pass, at most.
pub const ACTIVE_EXPIRY_BUDGET: usize = 1000;

impl<A: KvAlloc> Store<A> {
    /// Whether `item` (in `sh`'s table, read under its lock) has a deadline at or before `now`.
    pub(super) fn is_expired(&self, sh: &Shard<A>, item: ItemPtr, now: u64) -> bool {
        self.is_expired_at(sh, item, || now)
    }

    /// [`Store::is_expired`] now: the clock is read only for an item whose header says it has a
    /// deadline (a read is a vDSO call, and most keys have none).
    pub(super) fn is_due(&self, sh: &Shard<A>, item: ItemPtr) -> bool {
        self.is_expired_at(sh, item, || self.now())
    }

    fn is_expired_at(&self, sh: &Shard<A>, item: ItemPtr, now: impl FnOnce() -> u64) -> bool {
        sh.deadline_of(item).is_some_and(|d| d <= now())
    }

    /// Turns the background thread's passes off or on (Redis's DEBUG SET-ACTIVE-EXPIRE); keys past
    /// their deadline still go when touched, and [`Store::run_active_expiry`] still runs a pass.
    pub fn set_active_expiry(&self, on: bool) {
        self.inner.active_expiry_on.store(on, Ordering::Relaxed);
    }

    /// One pass of active expiry over every shard. Returns how many keys it removed.
    pub fn run_active_expiry(&self) -> usize {
        self.inner.active_expiry()
    }
}

impl<A: KvAlloc> Inner<A> {
    /// One pass of active expiry: pops each shard's due deadlines (at most [`ACTIVE_EXPIRY_BUDGET`]),
    /// removes the keys still carrying them, and releases those after the shard's lock.
    pub(super) fn active_expiry(&self) -> usize {
        match &self.cfg.on_gone {
            Some(hook) => {
                let mut removed = 0;
                hook.around_pass(&mut || removed = self.active_expiry_pass());
                removed
            }
            None => self.active_expiry_pass(),
        }
    }

    /// [`Inner::active_expiry`]'s pass itself.
    fn active_expiry_pass(&self) -> usize {
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
                    dead.push(sh.remove_slot(i, &s.c.used));
                }
            }
            s.c.expired.fetch_add(dead.len() as u64, Ordering::Relaxed);
            removed += dead.len();
            for it in dead {
                if let Some(hook) = &self.cfg.on_gone {
                    // SAFETY: a reference removed from the table is ours until released, its key with it.
                    hook.gone(Gone::Expired, unsafe { value::key(it) });
                }
                // SAFETY: references removed from the table are ours.
                unsafe { value::release(it, &self.alloc) };
            }
        }
        removed
    }
}
