//! Reaching a key's collection (list, hash, set, sorted set) under its shard's lock: one key to read
//! ([`Store::read_coll`]) or change ([`Store::write_coll`]), or several keys at once with every shard
//! they live on locked ([`Store::with_keys`], for SMOVE, LMOVE, SINTERSTORE and the like). Each checks the
//! key's type (WRONGTYPE), expires a due key first, creates the collection on a first write, removes a
//! key whose collection became empty (as Redis does), and keeps the shard's `used` bytes in step with
//! the collection's blocks.
//!
//! The type commands themselves live in `hash.rs`, `list.rs`, `sets.rs` and `zset.rs` beside this file,
//! over these three calls; the data structures in `crate::types`.

use std::sync::atomic::Ordering;

use parking_lot::RwLockWriteGuard;

use super::counters::{LockedBytes, Op};
use super::shard::{Loc, Shard, Store};
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::{Collection, Kind, Limits};
use crate::value::{self, ItemPtr, StrEnc};

/// Adds a signed change to a byte counter.
/// The caller holds the write lock of `c`'s shard.
fn add_signed(c: &LockedBytes, before: usize, after: usize) {
    c.add((after as u64).wrapping_sub(before as u64));
}

impl<A: KvAlloc> Store<A> {
    /// The current size thresholds of the compact forms.
    pub fn limits(&self) -> Limits {
        self.inner.limits.get()
    }

    /// Changes one threshold (`i` indexes [`Limits::NAMES`]) at run time (CONFIG SET).
    pub fn set_limit(&self, i: usize, v: i64) {
        self.inner.limits.set(i, v);
    }

    /// TYPE: what the key holds, None if missing.
    pub fn key_type(&self, key: &[u8]) -> Option<Kind> {
        let l = self.loc(key);
        let item = self.lookup(key, l, false)?;
        // SAFETY: we hold a reference; the kind bits of an item a lookup returns are fixed.
        let k = unsafe { value::kind(item) };
        self.release(item);
        Some(k)
    }

    /// OBJECT ENCODING of a collection key: `Ok(None)` if the key is missing or a string.
    pub fn coll_encoding(&self, key: &[u8]) -> Option<&'static str> {
        let l = self.loc(key);
        let g = self.slot(l).lock.read();
        let i = g.table.find(l.hash, key)?;
        let item = g.table.item(i);
        // SAFETY: the table's item, under the read lock.
        unsafe {
            if self.is_due(&g, item) {
                return None;
            }
            match value::kind(item) {
                Kind::String => None,
                _ => Some(value::coll::<A>(item).encoding()),
            }
        }
    }

    /// Runs `f` on the collection at `key` under the read lock: `Ok(None)` if the key is missing,
    /// [`Error::WrongType`] if it holds another kind.
    pub fn read_coll<R>(
        &self,
        key: &[u8],
        kind: Kind,
        f: impl FnOnce(&Collection<A>) -> R,
    ) -> Result<Option<R>> {
        let l = self.loc(key);
        let slot = self.slot(l);
        self.count(Op::CollRead);
        {
            let g = slot.lock.read();
            let Some(i) = g.table.find(l.hash, key) else {
                return Ok(None);
            };
            let item = g.table.item(i);
            // SAFETY: the table holds the item while we hold the read lock; writers to its collection
            // hold the write lock, so the shared borrow `f` gets is not aliased by a change.
            unsafe {
                let due = self.is_due(&g, item);
                if !due {
                    if value::kind(item) != kind {
                        return Err(Error::WrongType);
                    }
                    if self.tracks_lru() {
                        value::touch(item, slot.c.clock.fetch_add(1, Ordering::Relaxed));
                    }
                    return Ok(Some(f(value::coll::<A>(item))));
                }
            }
        }
        let mut g = slot.lock.write();
        self.expire_if_due(&mut g, l, key);
        Ok(None)
    }

    /// Runs `f` on the collection at `key` under the write lock, with the current [`Limits`].
    ///
    /// - A missing key: `Ok(None)` unless `create`, in which case `f` runs on a new empty collection of
    ///   `kind`, installed (without TTL, subject to `maxmemory`) only if `f` left it non-empty.
    /// - A key of another kind: [`Error::WrongType`], and `f` does not run.
    /// - When `f` returns an error it must have changed nothing; the error is returned.
    /// - A collection `f` leaves empty is removed with its key (a stream stays, as in Redis).
    ///
    /// `create` also marks the command as one that may grow memory: over `maxmemory`, the store makes
    /// room first (or refuses with OOM under `noeviction`), as Redis does for its `denyoom` commands.
    pub fn write_coll<R>(
        &self,
        key: &[u8],
        kind: Kind,
        create: bool,
        f: impl FnOnce(&mut Collection<A>, &Limits) -> Result<R>,
    ) -> Result<Option<R>> {
        self.check_key(key)?;
        let l = self.loc(key);
        self.count(Op::CollWrite);
        let limits = self.limits();
        let mut g = self.slot(l).lock.write();
        // One lookup finds the key's live slot (a key past its deadline goes first, as before any write)
        // for the type check and the change both.
        let mut found = self.live_slot(&mut g, l, key);
        if let Some(i) = found {
            // SAFETY: the table's item, under the lock.
            if unsafe { value::kind(g.table.item(i)) } != kind {
                return Err(Error::WrongType);
            }
        }
        if create && self.make_room(&mut g, l, 0)? {
            // An eviction may have taken the key itself, or moved its slot.
            found = g.table.find(l.hash, key);
        }
        let Some(i) = found else {
            if !create {
                return Ok(None);
            }
            let mut coll = Collection::empty(kind, self.inner.alloc.clone());
            let r = f(&mut coll, &limits)?;
            if coll.is_empty() && coll.goes_when_empty() {
                return Ok(Some(r));
            }
            let item = value::new_coll_item(&self.inner.alloc, key, coll).map_err(|_| Error::AllocFailed)?;
            self.store_item(g, l, key, None, item, |_| None)?;
            return Ok(Some(r));
        };
        let item = g.table.item(i);
        // SAFETY: the table's item, of `kind` (checked above); we hold the write lock for the whole
        // change, so the collection is ours alone meanwhile.
        let coll = unsafe {
            if self.tracks_lru() {
                value::touch(item, self.slot(l).c.clock.fetch_add(1, Ordering::Relaxed));
            }
            value::coll_mut::<A>(item)
        };
        let before = coll.bytes();
        let r = f(coll, &limits);
        let after = coll.bytes();
        let empty = coll.is_empty() && coll.goes_when_empty();
        let used = &self.slot(l).c.used;
        add_signed(used, before, after);
        if empty {
            let old = g.remove_slot(i, used);
            drop(g);
            self.release(old);
        }
        r.map(Some)
    }

    /// Over `maxmemory`, makes room in `key`'s shard before a command that may grow memory runs through
    /// [`Store::with_keys`] (the STORE forms, LMOVE), or refuses it with OOM under `noeviction`, as Redis
    /// does for its `denyoom` commands. Nothing when there is no limit.
    pub(super) fn deny_oom(&self, key: &[u8]) -> Result<()> {
        if self.maxmemory() == 0 {
            return Ok(());
        }
        let l = self.loc(key);
        let mut g = self.slot(l).lock.write();
        self.make_room(&mut g, l, 0).map(|_| ())
    }

    /// Runs `f` with every shard of `keys` write-locked (in shard order, so two such calls never
    /// deadlock), through a [`Keys`] view that reaches each key by its index in `keys`. When `f` returns,
    /// collections left empty are removed and the byte counts settled; items replaced or removed are
    /// released after the locks.
    pub fn with_keys<R>(&self, keys: &[&[u8]], f: impl FnOnce(&mut Keys<'_, A>) -> Result<R>) -> Result<R> {
        for k in keys {
            self.check_key(k)?;
        }
        self.count(Op::CollWrite);
        let locs: Vec<Loc> = keys.iter().map(|k| self.loc(k)).collect();
        let mut shards: Vec<usize> = locs.iter().map(|l| l.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        let guards: Vec<(usize, RwLockWriteGuard<'_, Shard<A>>)> = shards
            .iter()
            .map(|&s| (s, self.inner.shards[s].lock.write()))
            .collect();
        // A key named twice is the same key: every index maps to its first occurrence.
        let first: Vec<usize> = (0..keys.len())
            .map(|i| (0..i).find(|&j| keys[j] == keys[i]).unwrap_or(i))
            .collect();
        let mut view = Keys {
            store: self,
            guards,
            keys: keys.to_vec(),
            locs,
            first,
            pending: vec![None; keys.len()],
            released: Vec::new(),
            limits: self.limits(),
        };
        for (i, &k) in keys.iter().enumerate() {
            let l = view.locs[i];
            let g = view.guard(l.shard);
            self.expire_if_due(g, l, k);
        }
        let r = f(&mut view);
        view.finish();
        r
    }
}

/// Several keys with their shards write-locked: see [`Store::with_keys`]. Key `i` is the `i`-th key
/// given.
pub struct Keys<'s, A: KvAlloc> {
    store: &'s Store<A>,
    guards: Vec<(usize, RwLockWriteGuard<'s, Shard<A>>)>,
    keys: Vec<&'s [u8]>,
    locs: Vec<Loc>,
    first: Vec<usize>,
    /// For a key whose collection was lent out to change: its item and its bytes then (settled into the
    /// shard's count before the key is touched again, and at the end).
    pending: Vec<Option<(ItemPtr, usize)>>,
    released: Vec<ItemPtr>,
    limits: Limits,
}

impl<'s, A: KvAlloc> Keys<'s, A> {
    fn guard(&mut self, shard: usize) -> &mut RwLockWriteGuard<'s, Shard<A>> {
        &mut self
            .guards
            .iter_mut()
            .find(|(s, _)| *s == shard)
            .expect("every key's shard is locked")
            .1
    }

    fn shard(&self, shard: usize) -> &Shard<A> {
        &self
            .guards
            .iter()
            .find(|(s, _)| *s == shard)
            .expect("every key's shard is locked")
            .1
    }

    /// The current thresholds.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The store's allocator (to build a collection for [`Keys::put`]).
    pub fn alloc(&self) -> &A {
        &self.store.inner.alloc
    }

    fn item(&self, i: usize) -> Option<ItemPtr> {
        let l = self.locs[i];
        let sh = self.shard(l.shard);
        sh.table.find(l.hash, self.keys[i]).map(|s| sh.table.item(s))
    }

    /// Settles the byte count of a key whose collection was lent out.
    fn settle(&mut self, i: usize) {
        let i = self.first[i];
        if let Some((item, before)) = self.pending[i].take() {
            // SAFETY: the item is still in its table (every removal settles first), under our lock.
            let after = unsafe { value::coll::<A>(item).bytes() };
            add_signed(&self.store.slot(self.locs[i]).c.used, before, after);
        }
    }

    /// What key `i` holds, None if missing.
    pub fn kind(&self, i: usize) -> Option<Kind> {
        // SAFETY: a table's item, under our lock.
        self.item(i).map(|it| unsafe { value::kind(it) })
    }

    /// Key `i`'s collection: `Ok(None)` if missing, WRONGTYPE if another kind.
    pub fn coll(&self, i: usize, kind: Kind) -> Result<Option<&Collection<A>>> {
        let Some(item) = self.item(i) else {
            return Ok(None);
        };
        // SAFETY: a table's item under our write lock; the borrow ends before the view changes anything
        // (it borrows the view).
        unsafe {
            if value::kind(item) != kind {
                return Err(Error::WrongType);
            }
            Ok(Some(value::coll::<A>(item)))
        }
    }

    /// Key `i`'s collection to change: `Ok(None)` if missing (unless `create`: then a new empty one is
    /// installed, without TTL; removed again at the end if still empty), WRONGTYPE if another kind.
    pub fn coll_mut(&mut self, i: usize, kind: Kind, create: bool) -> Result<Option<&mut Collection<A>>> {
        self.settle(i);
        let item = match self.item(i) {
            Some(item) => item,
            None if create => {
                let c = Collection::empty(kind, self.alloc().clone());
                let item =
                    value::new_coll_item(self.alloc(), self.keys[i], c).map_err(|_| Error::AllocFailed)?;
                let l = self.locs[i];
                let store = self.store;
                let g = self.guard(l.shard);
                store.install(g, l, None, item, None);
                item
            }
            None => return Ok(None),
        };
        // SAFETY: a table's item under our write lock; the mutable borrow borrows the view, so nothing
        // else reaches this collection while it lives.
        unsafe {
            if value::kind(item) != kind {
                return Err(Error::WrongType);
            }
            let c = value::coll_mut::<A>(item);
            self.pending[self.first[i]] = Some((item, c.bytes()));
            Ok(Some(c))
        }
    }

    /// Key `i`'s string: `Ok(None)` if missing, WRONGTYPE if a collection.
    pub fn string(&self, i: usize) -> Result<Option<&[u8]>> {
        let Some(item) = self.item(i) else {
            return Ok(None);
        };
        // SAFETY: a table's item under our write lock; the borrow ends before the view changes anything
        // (it borrows the view).
        unsafe {
            if value::kind(item) != Kind::String {
                return Err(Error::WrongType);
            }
            Ok(Some(value::value(item)))
        }
    }

    /// Replaces key `i` (whatever it held, and its TTL) with the string `v`.
    pub fn put_string(&mut self, i: usize, v: &[u8], enc: StrEnc) -> Result<()> {
        self.install_string(i, v, enc, false)
    }

    /// Replaces key `i`'s value with the string `v` as a change in place does: the key keeps its TTL (a
    /// missing key is created without one).
    pub fn rewrite_string(&mut self, i: usize, v: &[u8], enc: StrEnc) -> Result<()> {
        self.install_string(i, v, enc, true)
    }

    fn install_string(&mut self, i: usize, v: &[u8], enc: StrEnc, keep_ttl: bool) -> Result<()> {
        self.settle(i);
        let item = value::new_item(self.alloc(), self.keys[i], v.len(), |b| b.copy_from_slice(v))
            .map_err(|_| Error::AllocFailed)?;
        // SAFETY: the new item is ours until installed.
        unsafe { value::set_str_enc(item, enc) };
        let l = self.locs[i];
        let key = self.keys[i];
        let store = self.store;
        let g = self.guard(l.shard);
        let existing = g.table.find(l.hash, key);
        let deadline = match existing {
            Some(s) if keep_ttl => g.deadline_of(g.table.item(s)),
            _ => None,
        };
        if let Some(old) = store.install(g, l, existing, item, deadline) {
            self.released.push(old);
        }
        Ok(())
    }

    /// Removes key `i` (any kind); whether it was there.
    pub fn delete(&mut self, i: usize) -> bool {
        self.settle(i);
        let l = self.locs[i];
        let key = self.keys[i];
        let store = self.store;
        let g = self.guard(l.shard);
        let Some(s) = g.table.find(l.hash, key) else {
            return false;
        };
        let old = g.remove_slot(s, &store.slot(l).c.used);
        self.released.push(old);
        true
    }

    /// Replaces key `i` (whatever it held, and its TTL) with `coll`; an empty collection deletes it.
    pub fn put(&mut self, i: usize, coll: Collection<A>) -> Result<()> {
        if coll.is_empty() && coll.goes_when_empty() {
            self.delete(i);
            return Ok(());
        }
        self.settle(i);
        let item = value::new_coll_item(self.alloc(), self.keys[i], coll).map_err(|_| Error::AllocFailed)?;
        let l = self.locs[i];
        let key = self.keys[i];
        let store = self.store;
        let g = self.guard(l.shard);
        let existing = g.table.find(l.hash, key);
        if let Some(old) = store.install(g, l, existing, item, None) {
            self.released.push(old);
        }
        Ok(())
    }

    /// Settles every count, removes emptied collections, unlocks, then releases what was taken out.
    fn finish(mut self) {
        for i in 0..self.keys.len() {
            self.settle(i);
            if self.first[i] != i {
                continue;
            }
            if let Some(item) = self.item(i) {
                // SAFETY: a table's item under our lock.
                let empty = unsafe {
                    value::kind(item) != Kind::String && {
                        let c = value::coll::<A>(item);
                        c.is_empty() && c.goes_when_empty()
                    }
                };
                if empty {
                    self.delete(i);
                }
            }
        }
        let released = std::mem::take(&mut self.released);
        let store = self.store;
        drop(self);
        for it in released {
            store.release(it);
        }
    }
}
