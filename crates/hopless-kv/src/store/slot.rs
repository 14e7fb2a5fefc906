//! The write primitives every command that changes a key is made of, one layer below the command files:
//! checking a key and a value, the deadline a TTL option asks for, a new item, the key's live slot under
//! the write lock (a key past its deadline goes on the way), and the end of every single-key write
//! ([`Store::store_item`]: make room, install the new item, release the old one after the lock).
//!
//! A single-key write reads top-down: check, allocate, lock, [`Store::live_slot`], decide,
//! [`Store::store_item`].

use std::sync::atomic::Ordering;

use parking_lot::RwLockWriteGuard;

use super::options::{Gone, Ttl};
use super::shard::{Loc, Shard, Store};
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::value::{self, ItemPtr};

impl<A: KvAlloc> Store<A> {
    /// A key longer than `max_key_len` is [`Error::TooLarge`].
    pub(super) fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > self.inner.cfg.max_key_len {
            return Err(Error::TooLarge);
        }
        Ok(())
    }

    /// A value longer than `max_value_len` is [`Error::TooLarge`].
    pub(super) fn check_value(&self, len: usize) -> Result<()> {
        if len > self.inner.cfg.max_value_len {
            return Err(Error::TooLarge);
        }
        Ok(())
    }

    /// A new item (header, key, `val_len` value bytes filled by `fill`), not yet in any table: the
    /// caller's reference, to install or release.
    pub(super) fn new_item(
        &self,
        key: &[u8],
        val_len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<ItemPtr> {
        value::new_item(&self.inner.alloc, key, val_len, fill).map_err(|_| Error::AllocFailed)
    }

    /// The deadline (ms since the epoch) a TTL option asks for, None for the options that set none. A
    /// TTL that is not positive, or a deadline past `i64::MAX`, is [`Error::InvalidExpire`]. The clock is
    /// read only for a relative TTL (`EX`, `PX`).
    pub(super) fn deadline(&self, ttl: Ttl) -> Result<Option<u64>> {
        let d = match ttl {
            Ttl::None | Ttl::Keep | Ttl::Persist => return Ok(None),
            Ttl::Ex(s) => s
                .checked_mul(1000)
                .and_then(|ms| ms.checked_add(self.now()))
                .filter(|_| s > 0),
            Ttl::Px(ms) => self.now().checked_add(ms).filter(|_| ms > 0),
            Ttl::ExAt(s) => s.checked_mul(1000).filter(|_| s > 0),
            Ttl::PxAt(ms) => Some(ms).filter(|&ms| ms > 0),
        };
        d.filter(|&d| d <= i64::MAX as u64)
            .map(Some)
            .ok_or(Error::InvalidExpire)
    }

    /// Under the write lock: the slot of `key` if it is present and live. A key past its deadline is
    /// deleted on the way (and counted as expired), so its slot is never returned.
    pub(super) fn live_slot(
        &self,
        g: &mut RwLockWriteGuard<'_, Shard<A>>,
        l: Loc,
        key: &[u8],
    ) -> Option<usize> {
        let i = g.table.find(l.hash, key)?;
        if !self.is_due(g, g.table.item(i)) {
            return Some(i);
        }
        let c = &self.slot(l).c;
        let old = g.remove_slot(i, &c.used);
        c.expired.fetch_add(1, Ordering::Relaxed);
        self.tell_gone(Gone::Expired, key);
        self.release(old);
        None
    }

    /// Under the write lock: deletes `key` if it is present and past its deadline.
    pub(super) fn expire_if_due(&self, g: &mut RwLockWriteGuard<'_, Shard<A>>, l: Loc, key: &[u8]) {
        self.live_slot(g, l, key);
    }

    /// The end of every single-key write, under the shard's write lock: makes room for `item` (maxmemory),
    /// puts it in the key's slot with the deadline `deadline(current deadline)`, releases the lock, then
    /// drops the old item's table reference. On failure the new item is released and nothing changes.
    /// `existing` is the key's live slot, found under this same lock.
    pub(super) fn store_item(
        &self,
        mut g: RwLockWriteGuard<'_, Shard<A>>,
        l: Loc,
        key: &[u8],
        existing: Option<usize>,
        item: ItemPtr,
        deadline: impl FnOnce(Option<u64>) -> Option<u64>,
    ) -> Result<()> {
        // SAFETY: the item is ours until installed.
        let need = unsafe { value::charged_size::<A>(item) } as u64;
        let existing = match self.make_room(&mut g, l, need) {
            Ok(false) => existing,
            // An eviction may have taken the key itself, or moved its slot.
            Ok(true) => g.table.find(l.hash, key),
            Err(e) => {
                drop(g);
                self.release(item);
                return Err(e);
            }
        };
        let current = existing.and_then(|i| g.deadline_of(g.table.item(i)));
        let old = self.install(&mut g, l, existing, item, deadline(current));
        drop(g);
        if let Some(o) = old {
            self.release(o);
        }
        Ok(())
    }

    /// Installs `item` for `key` under the write lock with the given deadline (None: no TTL), replacing
    /// slot `existing` if given. Returns the old item's reference, if any.
    pub(super) fn install(
        &self,
        g: &mut Shard<A>,
        l: Loc,
        existing: Option<usize>,
        item: ItemPtr,
        deadline: Option<u64>,
    ) -> Option<ItemPtr> {
        // SAFETY: `item` is ours until published below.
        let mut delta = unsafe { value::charged_size::<A>(item) } as u64;
        let c = &self.slot(l).c;
        if self.tracks_lru() {
            // SAFETY: as above.
            unsafe { value::touch(item, c.clock.fetch_add(1, Ordering::Relaxed)) };
        }
        let old = match existing {
            Some(i) => {
                let old = g.table.replace(i, item);
                g.forget_deadline(old);
                // SAFETY: the table's reference to `old` is ours now, so the item is live; a collection in
                // it is read under the shard's write lock, which we still hold (charged_size's contract).
                delta = delta.wrapping_sub(unsafe { value::charged_size::<A>(old) } as u64);
                Some(old)
            }
            None => {
                let before = g.table.bytes();
                g.table.insert_new(l.hash, item);
                delta = delta.wrapping_add((g.table.bytes() - before) as u64);
                None
            }
        };
        // One change of the count, under the lock (LockedBytes: no locked instruction).
        c.used.add(delta);
        if let Some(d) = deadline {
            g.set_deadline(item, d);
        }
        old
    }
}
