//! The store's side of persistence: DUMP and RESTORE of one key, a frozen view of every shard that a
//! snapshot walks ([`Frozen`]), and loading a key read back from one.

use parking_lot::RwLockReadGuard;

use super::shard::{Shard, Store};
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::persist::{self, LoadError, Loaded, Obj};
use crate::rdb::decode::Decoder;
use crate::types::Kind;
use crate::value::{self, ItemPtr};

/// What a live item holds, to write.
///
/// # Safety
/// `item` is in a table whose shard lock the caller holds (read or write) for as long as the answer is
/// used.
unsafe fn obj_of<'a, A: KvAlloc>(item: ItemPtr) -> Obj<'a, A> {
    // SAFETY: the caller's contract: the item is live and its collection is read under its shard lock.
    unsafe {
        match value::kind(item) {
            Kind::String => Obj::Str(value::value(item)),
            _ => Obj::Coll(value::coll::<A>(item)),
        }
    }
}

impl<A: KvAlloc> Store<A> {
    /// DUMP: `key`'s value as Redis's payload (`compress`: `rdbcompression`), None if missing.
    pub fn dump(&self, key: &[u8], compress: bool) -> Option<Vec<u8>> {
        let l = self.loc(key);
        let slot = self.slot(l);
        let payload = {
            let g = slot.lock.read();
            let i = g.table.find(l.hash, key);
            match i.map(|i| g.table.item(i)) {
                None => None,
                Some(item) if self.is_due(&g, item) => {
                    drop(g);
                    self.expire_if_due(&mut slot.lock.write(), l, key);
                    None
                }
                // SAFETY: the table's item, read under its shard's read lock, which `g` holds.
                Some(item) => Some(persist::dump_payload(
                    unsafe { obj_of::<A>(item) },
                    &self.limits(),
                    compress,
                )),
            }
        };
        self.hit_or_miss(payload.is_some());
        payload
    }

    /// `key`'s DUMP payload and deadline, as [`Store::dump`] makes it but counted as no access (no hit
    /// or miss, no lazy expiry): what an append-only file records of a key's state. None if missing.
    pub fn state_of(&self, key: &[u8], compress: bool) -> Option<(Vec<u8>, Option<u64>)> {
        let l = self.loc(key);
        let g = self.slot(l).lock.read();
        let item = g.table.find(l.hash, key).map(|i| g.table.item(i))?;
        // SAFETY: the table's item, read under its shard's read lock, which `g` holds.
        let payload = persist::dump_payload(unsafe { obj_of::<A>(item) }, &self.limits(), compress);
        Some((payload, g.deadline_of(item)))
    }

    /// RESTORE (and a snapshot's load): installs `value` at `key` with `deadline` (ms since the epoch).
    /// False, with nothing changed, when the key exists and `replace` is off.
    pub fn restore(
        &self,
        key: &[u8],
        value: Loaded<A>,
        deadline: Option<u64>,
        replace: bool,
    ) -> Result<bool> {
        self.check_key(key)?;
        let item = match value {
            Loaded::Str(s) => {
                self.check_value(s.len())?;
                self.new_item(key, s.len(), |b| b.copy_from_slice(&s))?
            }
            Loaded::Coll(c) => {
                value::new_coll_item(&self.inner.alloc, key, c).map_err(|_| Error::AllocFailed)?
            }
        };
        let l = self.loc(key);
        let mut g = self.slot(l).lock.write();
        let existing = self.live_slot(&mut g, l, key);
        if existing.is_some() && !replace {
            drop(g);
            self.release(item);
            return Ok(false);
        }
        self.store_item(g, l, key, existing, item, |_| deadline)?;
        Ok(true)
    }

    /// A value of RDB type `t` read at `d` (a snapshot's key), built with this store's allocator and
    /// compact-form thresholds.
    pub fn read_value(&self, t: u8, d: &mut Decoder<'_>) -> core::result::Result<Loaded<A>, LoadError> {
        persist::read_object(t, d, &self.inner.alloc, &self.limits())
    }

    /// The value in a DUMP payload (RESTORE's), checked and built with this store's allocator.
    pub fn read_payload(&self, payload: &[u8]) -> core::result::Result<Loaded<A>, LoadError> {
        persist::read_payload(payload, &self.inner.alloc, &self.limits())
    }

    /// Every shard's read lock, taken in index order: a point-in-time view until it is dropped. Writers
    /// wait meanwhile; the caller has stopped every other writer it could wait on (the server's event
    /// loops) before freezing, so the wait is short.
    pub fn freeze(&self) -> Frozen<'_, A> {
        Frozen {
            guards: self.inner.shards.iter().map(|s| s.lock.read()).collect(),
            now: self.now(),
        }
    }
}

/// Every shard of a store, read-locked ([`Store::freeze`]): what a snapshot writes.
pub struct Frozen<'a, A: KvAlloc> {
    guards: Vec<RwLockReadGuard<'a, Shard<A>>>,
    now: u64,
}

impl<A: KvAlloc> Frozen<'_, A> {
    /// Keys, and keys with a deadline, in the view (some may be past their deadline: [`Frozen::for_each`]
    /// leaves those out), for the snapshot's size hints.
    pub fn sizes(&self) -> (usize, usize) {
        self.guards
            .iter()
            .fold((0, 0), |(k, e), g| (k + g.table.len(), e + g.expires.len()))
    }

    /// Calls `f` with every live key, its value and its deadline (ms since the epoch), shard by shard.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], Obj<'_, A>, Option<u64>)) {
        for g in &self.guards {
            for item in g.table.items() {
                let deadline = g.deadline_of(item);
                if deadline.is_some_and(|d| d <= self.now) {
                    continue;
                }
                // SAFETY: the table's item, read under its shard's read lock, which `self` holds.
                let (key, obj) = unsafe { (value::key(item), obj_of::<A>(item)) };
                f(key, obj, deadline);
            }
        }
    }
}
