//! Reads: GET, EXISTS, STRLEN, GETRANGE, MGET, DBSIZE and SCAN, over [`Store::lookup`], which takes a
//! reference to a live item under the shard's read lock (and expires a due one on the way).

use std::sync::atomic::Ordering;

use super::counters::Op;
use super::shard::{Loc, Store};
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::redis_util::glob_match;
use crate::types::Kind;
use crate::value::{self, ItemPtr, Value};

impl<A: KvAlloc> Store<A> {
    /// Looks a key up under the read lock: Some(item with a new reference) if live. A key found expired is
    /// deleted under the write lock before returning None.
    pub(super) fn lookup(&self, key: &[u8], l: Loc, touch: bool) -> Option<ItemPtr> {
        self.lookup_as(key, l, touch, false).ok().flatten()
    }

    /// [`Store::lookup`] of a key a string command reads: [`Error::WrongType`] if it holds a collection
    /// (checked under the lock, where an item's kind cannot change).
    pub(super) fn lookup_string(&self, key: &[u8], l: Loc, touch: bool) -> Result<Option<ItemPtr>> {
        self.lookup_as(key, l, touch, true)
    }

    fn lookup_as(&self, key: &[u8], l: Loc, touch: bool, string_only: bool) -> Result<Option<ItemPtr>> {
        let slot = self.slot(l);
        let expired = {
            let g = slot.lock.read();
            let Some(i) = g.table.find(l.hash, key) else {
                return Ok(None);
            };
            let item = g.table.item(i);
            // SAFETY: the table holds a reference while we hold the read lock.
            let dead = self.is_due(&g, item);
            // SAFETY: as above.
            if !dead && string_only && unsafe { value::kind(item) } != Kind::String {
                return Err(Error::WrongType);
            }
            if !dead {
                // SAFETY: as above; the new reference is ours.
                unsafe {
                    value::retain(item);
                    if touch && self.tracks_lru() {
                        value::touch(item, slot.c.clock.fetch_add(1, Ordering::Relaxed));
                    }
                }
                return Ok(Some(item));
            }
            dead
        };
        if expired {
            let mut g = slot.lock.write();
            self.expire_if_due(&mut g, l, key);
        }
        Ok(None)
    }

    /// GET: [`Error::WrongType`] if the key holds a collection.
    pub fn get(&self, key: &[u8]) -> Result<Option<Value<A>>> {
        let l = self.loc(key);
        self.count(Op::Get);
        let v = self.lookup_string(key, l, true)?.map(|i| self.value(i));
        self.hit_or_miss(v.is_some());
        Ok(v)
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
    pub fn strlen(&self, key: &[u8]) -> Result<usize> {
        let l = self.loc(key);
        self.count(Op::Strlen);
        Ok(self
            .lookup_string(key, l, true)?
            .map_or(0, |i| self.value(i).len()))
    }

    /// GETRANGE with Redis's index rules (negative from the end, clamped, inclusive end).
    pub fn getrange(&self, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>> {
        let l = self.loc(key);
        self.count(Op::GetRange);
        let Some(v) = self.lookup_string(key, l, true)?.map(|i| self.value(i)) else {
            return Ok(Vec::new());
        };
        let len = v.len() as i64;
        if len == 0 {
            return Ok(Vec::new());
        }
        let (mut s, mut e) = (start, end);
        if s < 0 && e < 0 && s > e {
            return Ok(Vec::new());
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
            return Ok(Vec::new());
        }
        Ok(v[s as usize..=e as usize].to_vec())
    }

    /// MGET (a key holding a collection reads as missing, as in Redis).
    pub fn mget(&self, keys: &[&[u8]]) -> Vec<Option<Value<A>>> {
        keys.iter()
            .map(|k| {
                let l = self.loc(k);
                self.count(Op::MGet);
                let v = self
                    .lookup_string(k, l, true)
                    .ok()
                    .flatten()
                    .map(|i| self.value(i));
                self.hit_or_miss(v.is_some());
                v
            })
            .collect()
    }

    /// DBSIZE.
    pub fn dbsize(&self) -> usize {
        self.inner.shards.iter().map(|s| s.lock.read().table.len()).sum()
    }

    /// SCAN: returns the next cursor (0 when done) and up to about `count` keys matching `pattern` (a
    /// Redis glob; None matches all). Every key present for the whole scan is returned at least once, also
    /// while other threads write; a key may be returned more than once.
    pub fn scan(&self, cursor: u64, count: usize, pattern: Option<&[u8]>) -> (u64, Vec<Vec<u8>>) {
        self.scan_type(cursor, count, pattern, None)
    }

    /// SCAN with its TYPE filter: only keys holding `kind` are returned (when given).
    pub fn scan_type(
        &self,
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
        kind: Option<Kind>,
    ) -> (u64, Vec<Vec<u8>>) {
        // Cursor: shard index above bit 33, the position in that shard's hash space below.
        let nshards = self.inner.shards.len() as u64;
        let mut shard = cursor >> 33;
        let mut pos = cursor & ((1 << 33) - 1);
        let mut out = Vec::new();
        let now = self.now();
        let mut visited = 0;
        while shard < nshards && visited < count.max(1) {
            let slot = &self.inner.shards[shard as usize];
            self.count(Op::Scan);
            let g = slot.lock.read();
            pos = g.table.scan_step(pos, |item| {
                visited += 1;
                // SAFETY: the table holds a reference while we hold the read lock.
                let k = unsafe { value::key(item) };
                if self.is_expired(&g, item, now) {
                    return;
                }
                // SAFETY: the same live item under the same read lock; its kind bits never change after
                // it is made.
                if kind.is_some_and(|want| unsafe { value::kind(item) } != want) {
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

    /// KEYS: every live key matching `pattern` (a Redis glob), each shard read under its lock in one go.
    pub fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        let now = self.now();
        let all = pattern == b"*";
        let mut out = Vec::new();
        for slot in self.inner.shards.iter() {
            self.count(Op::Scan);
            let g = slot.lock.read();
            let mut pos = 0;
            while pos < crate::table::SCAN_END {
                pos = g.table.scan_step(pos, |item| {
                    // SAFETY: the table holds a reference while we hold the read lock.
                    let k = unsafe { value::key(item) };
                    if self.is_expired(&g, item, now) {
                        return;
                    }
                    if all || glob_match(pattern, k) {
                        out.push(k.to_vec());
                    }
                });
            }
        }
        out
    }

    /// RANDOMKEY: a live key chosen at random (uniform over shards, then over slots), None when empty.
    pub fn random_key(&self) -> Option<Vec<u8>> {
        use std::hash::BuildHasher;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = self.inner.shards.len();
        let now = self.now();
        let r = std::collections::hash_map::RandomState::new().hash_one(NEXT.fetch_add(1, Ordering::Relaxed));
        for k in 0..n {
            let slot = &self.inner.shards[(r as usize).wrapping_add(k) % n];
            self.count(Op::Get);
            let g = slot.lock.read();
            // A few tries past keys that are due but not yet removed.
            for t in 0..8u64 {
                let Some(i) = g
                    .table
                    .occupied_from((r >> 16).wrapping_add(t.wrapping_mul(0x9e37_79b9)) as usize)
                else {
                    break;
                };
                let item = g.table.item(i);
                // SAFETY: the table holds a reference while we hold the read lock.
                let key = unsafe { value::key(item) };
                if !self.is_expired(&g, item, now) {
                    return Some(key.to_vec());
                }
            }
        }
        None
    }

    /// MEMORY USAGE: the bytes a live key costs the store (its item block as allocated, its table slot,
    /// its expiry entry if it has a TTL); None if missing.
    pub fn memory_usage(&self, key: &[u8]) -> Option<usize> {
        let l = self.loc(key);
        let g = self.slot(l).lock.read();
        let item = g.table.item(g.table.find(l.hash, key)?);
        // SAFETY: the table's item, read (a collection too) under the read lock.
        let (size, ttl) = unsafe { (value::charged_size::<A>(item), value::has_ttl(item)) };
        if self.is_due(&g, item) {
            return None;
        }
        Some(size + 8 + if ttl { 17 + 16 } else { 0 })
    }
}
