//! The string and keyspace writes: SET (and plain SET), MSET(NX), DEL, GETDEL, APPEND, SETRANGE, INCRBY
//! and friends, INCRBYFLOAT, RENAME, FLUSH; each over the write primitives of `slot.rs`.

use super::counters::Op;
use super::options::{SetCond, SetOptions, Ttl};
use super::shard::{Loc, Store};
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::long_double::{self, LongDouble, Parsed};
use crate::redis_util::parse_i64;
use crate::types::Kind;
use crate::value::{self, ItemPtr, StrEnc, Value};

impl<A: KvAlloc> Store<A> {
    /// SET with Redis's options. Returns whether it wrote, and the old value when `opts.get`.
    pub fn set(&self, key: &[u8], val: &[u8], opts: SetOptions) -> Result<(bool, Option<Value<A>>)> {
        self.check_key(key)?;
        self.check_value(val.len())?;
        let l = self.loc(key);
        self.count(Op::Set);
        let new_deadline = self.deadline(opts.ttl)?;
        let item = self.new_item(key, val.len(), |b| b.copy_from_slice(val))?;
        let mut g = self.slot(l).lock.write();
        let existing = self.live_slot(&mut g, l, key);
        // SAFETY: the table's item, under the write lock.
        if opts.get && existing.is_some_and(|i| unsafe { value::kind(g.table.item(i)) } != Kind::String) {
            drop(g);
            self.release(item);
            return Err(Error::WrongType);
        }
        let cond_ok = match opts.cond {
            SetCond::Always => true,
            SetCond::IfAbsent => existing.is_none(),
            SetCond::IfPresent => existing.is_some(),
        };
        let old_val = match (opts.get, existing) {
            (true, Some(i)) => {
                let it = g.table.item(i);
                // SAFETY: the table's item; our new reference goes into the returned Value.
                unsafe { value::retain(it) };
                Some(self.value(it))
            }
            _ => None,
        };
        if !cond_ok {
            drop(g);
            self.release(item);
            return Ok((false, old_val));
        }
        let keep = opts.ttl == Ttl::Keep;
        self.store_item(g, l, key, existing, item, |current| {
            if keep {
                current
            } else {
                new_deadline
            }
        })?;
        Ok((true, old_val))
    }

    /// Plain SET.
    pub fn set_simple(&self, key: &[u8], val: &[u8]) -> Result<()> {
        self.set(key, val, SetOptions::default()).map(|_| ())
    }

    /// MSET: all pairs written atomically (every involved shard locked, in order). Items of equal size
    /// are allocated with the allocator's batch call.
    pub fn mset(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        self.mset_cond(pairs, false).map(|_| ())
    }

    /// MSETNX: all pairs written atomically if none of the keys exists; whether it wrote.
    pub fn msetnx(&self, pairs: &[(&[u8], &[u8])]) -> Result<bool> {
        self.mset_cond(pairs, true)
    }

    fn mset_cond(&self, pairs: &[(&[u8], &[u8])], nx: bool) -> Result<bool> {
        for (k, v) in pairs {
            self.check_key(k)?;
            self.check_value(v.len())?;
        }
        // Allocate: one batch call per distinct item size.
        let mut items: Vec<Option<ItemPtr>> = vec![None; pairs.len()];
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        let size = |i: usize| value::HEADER_SIZE + pairs[i].0.len() + pairs[i].1.len();
        order.sort_by_key(|&i| size(i));
        let mut start = 0;
        while start < order.len() {
            let sz = size(order[start]);
            let end = start + order[start..].iter().take_while(|&&i| size(i) == sz).count();
            let layout = value::item_layout(pairs[order[start]].0.len(), pairs[order[start]].1.len())
                .ok_or(Error::TooLarge)?;
            let mut blocks = vec![core::ptr::NonNull::<u8>::dangling(); end - start];
            if !self.inner.alloc.allocate_batch(layout, &mut blocks) {
                for it in items.into_iter().flatten() {
                    self.release(it);
                }
                return Err(Error::AllocFailed);
            }
            for (&i, b) in order[start..end].iter().zip(blocks) {
                let (k, v) = pairs[i];
                // SAFETY: a fresh block of this item's layout.
                items[i] = Some(unsafe { value::init_item(b, k, v.len(), |d| d.copy_from_slice(v)) });
            }
            start = end;
        }
        let locs: Vec<Loc> = pairs.iter().map(|(k, _)| self.loc(k)).collect();
        let mut shards: Vec<usize> = locs.iter().map(|l| l.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        let mut guards: Vec<_> = shards
            .iter()
            .map(|&s| (s, self.inner.shards[s].lock.write()))
            .collect();
        if nx {
            let mut any = false;
            for (i, (k, _)) in pairs.iter().enumerate() {
                let l = locs[i];
                let g = &mut guards.iter_mut().find(|(s, _)| *s == l.shard).expect("locked").1;
                any |= self.live_slot(g, l, k).is_some();
            }
            if any {
                drop(guards);
                for it in items.into_iter().flatten() {
                    self.release(it);
                }
                return Ok(false);
            }
        }
        let need: u64 = (0..pairs.len()).map(|i| size(i) as u64).sum();
        if self.maxmemory() > 0 && self.total_used() + need > self.maxmemory() {
            let l = locs[0];
            let g = &mut guards.iter_mut().find(|(s, _)| *s == l.shard).expect("locked").1;
            if let Err(e) = self.make_room(g, l, need) {
                drop(guards);
                for it in items.into_iter().flatten() {
                    self.release(it);
                }
                return Err(e);
            }
        }
        let mut olds = Vec::new();
        for (i, (k, _)) in pairs.iter().enumerate() {
            let l = locs[i];
            self.count(Op::MSet);
            let g = &mut guards.iter_mut().find(|(s, _)| *s == l.shard).expect("locked").1;
            let existing = g.table.find(l.hash, k);
            olds.extend(self.install(g, l, existing, items[i].take().expect("allocated"), None));
        }
        drop(guards);
        for o in olds {
            self.release(o);
        }
        Ok(true)
    }

    /// DEL: how many of the keys were removed.
    pub fn del(&self, keys: &[&[u8]]) -> usize {
        keys.iter()
            .filter(|k| {
                self.take(k, Op::Del, false).ok().flatten().is_some_and(|it| {
                    self.release(it);
                    true
                })
            })
            .count()
    }

    /// Removes a live key and returns its reference (`string_only`: only a string; a collection is
    /// [`Error::WrongType`] and stays).
    fn take(&self, key: &[u8], op: Op, string_only: bool) -> Result<Option<ItemPtr>> {
        let l = self.loc(key);
        self.count(op);
        let mut g = self.slot(l).lock.write();
        let Some(i) = self.live_slot(&mut g, l, key) else {
            return Ok(None);
        };
        // SAFETY: the table's item, under the write lock.
        if string_only && unsafe { value::kind(g.table.item(i)) } != Kind::String {
            return Err(Error::WrongType);
        }
        Ok(Some(g.remove_slot(i, &self.slot(l).c.used)))
    }

    /// GETDEL.
    pub fn getdel(&self, key: &[u8]) -> Result<Option<Value<A>>> {
        let v = self.take(key, Op::GetDel, true)?.map(|it| self.value(it));
        self.hit_or_miss(v.is_some());
        Ok(v)
    }

    /// Replaces a live key's value with `f(old) -> new`, keeping its TTL; creates it from `f(None)` if
    /// missing. Returns what `f` returned alongside. `enc(whether the key existed)`: how OBJECT ENCODING
    /// is to name the new value.
    fn rewrite<R>(
        &self,
        key: &[u8],
        op: Op,
        enc: fn(bool) -> StrEnc,
        f: impl FnOnce(Option<&[u8]>) -> Result<(Vec<u8>, R)>,
    ) -> Result<R> {
        self.check_key(key)?;
        let l = self.loc(key);
        self.count(op);
        let mut g = self.slot(l).lock.write();
        let existing = self.live_slot(&mut g, l, key);
        // SAFETY: the table's item, read under the write lock.
        if existing.is_some_and(|i| unsafe { value::kind(g.table.item(i)) } != Kind::String) {
            return Err(Error::WrongType);
        }
        // SAFETY: as above: a string's bytes.
        let old = existing.map(|i| unsafe { value::value(g.table.item(i)) });
        let (new, r) = f(old)?;
        self.check_value(new.len())?;
        let item = self.new_item(key, new.len(), |b| b.copy_from_slice(&new))?;
        // SAFETY: the new item is ours until installed.
        unsafe { value::set_str_enc(item, enc(existing.is_some())) };
        self.store_item(g, l, key, existing, item, |current| current)?;
        Ok(r)
    }

    /// APPEND: returns the new length.
    pub fn append(&self, key: &[u8], suffix: &[u8]) -> Result<usize> {
        let max = self.inner.cfg.max_value_len;
        // Redis appends in place (a raw string); a new key is stored as SET would store it.
        let enc = |existed| if existed { StrEnc::Raw } else { StrEnc::ByContent };
        self.rewrite(key, Op::Append, enc, |old| {
            let old = old.unwrap_or(&[]);
            if old.len() + suffix.len() > max {
                return Err(Error::TooLarge);
            }
            let mut v = Vec::with_capacity(old.len() + suffix.len());
            v.extend_from_slice(old);
            v.extend_from_slice(suffix);
            let n = v.len();
            Ok((v, n))
        })
    }

    /// INCRBY (INCR, DECR and DECRBY are this with 1, -1, -n): the new value. A value that is not an
    /// integer, or a result that overflows, is an error and changes nothing.
    pub fn incr_by(&self, key: &[u8], delta: i64) -> Result<i64> {
        self.rewrite(
            key,
            Op::Incr,
            |_| StrEnc::ByContent,
            |old| {
                let cur = match old {
                    Some(b) => parse_i64(b).ok_or(Error::NotInteger)?,
                    None => 0,
                };
                let n = cur.checked_add(delta).ok_or(Error::Overflow)?;
                Ok((n.to_string().into_bytes(), n))
            },
        )
    }

    pub fn incr(&self, key: &[u8]) -> Result<i64> {
        self.incr_by(key, 1)
    }

    pub fn decr(&self, key: &[u8]) -> Result<i64> {
        self.incr_by(key, -1)
    }

    pub fn decr_by(&self, key: &[u8], delta: i64) -> Result<i64> {
        self.incr_by(key, delta.checked_neg().ok_or(Error::Overflow)?)
    }

    /// SETRANGE: overwrites the value from byte `offset` with `patch`, zero-padding a shorter value (or a
    /// missing key) up to `offset`; returns the new length. An empty `patch` changes nothing (and creates
    /// no key): the reply is the current length, as Redis gives.
    pub fn setrange(&self, key: &[u8], offset: usize, patch: &[u8]) -> Result<usize> {
        let max = self.inner.cfg.max_value_len;
        if patch.is_empty() {
            return self.strlen(key);
        }
        self.rewrite(
            key,
            Op::Set,
            |_| StrEnc::Raw,
            |old| {
                // After the key's kind is checked (WRONGTYPE first), as in Redis.
                if offset.checked_add(patch.len()).is_none_or(|end| end > max) {
                    return Err(Error::TooLarge);
                }
                let old = old.unwrap_or(&[]);
                let mut v = Vec::with_capacity(old.len().max(offset + patch.len()));
                v.extend_from_slice(old);
                if v.len() < offset + patch.len() {
                    v.resize(offset + patch.len(), 0);
                }
                v[offset..offset + patch.len()].copy_from_slice(patch);
                let n = v.len();
                Ok((v, n))
            },
        )
    }

    /// INCRBYFLOAT: adds `delta` (a float's text, as a client sends it) to the value read as a float and
    /// stores the result as text; returns it. Computed as x86-64 Redis computes it, in `long double`, and
    /// printed as it prints it (17 significant digits, plain notation: `long_double.rs`), so the text is
    /// Redis's to the digit. [`Error::NotFloat`] when either is not a float (NaN included), and
    /// [`Error::NanOrInfinity`] when the result is not finite (an infinite `delta` included).
    pub fn incr_by_float_text(&self, key: &[u8], delta: &[u8]) -> Result<Vec<u8>> {
        let delta = long_double::parse(delta).ok_or(Error::NotFloat);
        // Redis stores the result's text as a string, never as an `int`.
        self.rewrite(
            key,
            Op::Incr,
            |_| StrEnc::NotInt,
            |old| {
                let cur = match old {
                    Some(b) => long_double::parse(b).ok_or(Error::NotFloat)?,
                    None => Parsed::Finite(LongDouble::ZERO),
                };
                let (Parsed::Finite(cur), Parsed::Finite(d)) = (cur, delta?) else {
                    return Err(Error::NanOrInfinity);
                };
                let text = cur.add(d).ok_or(Error::NanOrInfinity)?.to_human().into_bytes();
                Ok((text.clone(), text))
            },
        )
    }

    /// [`Store::incr_by_float_text`] of `delta` written as its shortest exact text (`0.1` adds the
    /// decimal 0.1, as a client sending "0.1" would).
    pub fn incr_by_float(&self, key: &[u8], delta: f64) -> Result<Vec<u8>> {
        if delta.is_nan() {
            return Err(Error::NotFloat);
        }
        self.incr_by_float_text(key, format!("{delta:e}").as_bytes())
    }

    /// RENAME (`nx`: RENAMENX): moves `src`'s value and TTL to `dst`, replacing `dst` (unless `nx` and it
    /// exists). Returns whether it moved; [`Error::NoSuchKey`] if `src` does not exist. Both shards are
    /// locked (lower index first) for the whole move, so no reader sees both keys or neither.
    pub fn rename(&self, src: &[u8], dst: &[u8], nx: bool) -> Result<bool> {
        let (mut pair, ls, ld) = self.lock_src_dst(src, dst)?;
        let Some(si) = pair.of(ls).table.find(ls.hash, src) else {
            return Err(Error::NoSuchKey);
        };
        if src == dst {
            return Ok(!nx);
        }
        if nx && pair.of(ld).table.find(ld.hash, dst).is_some() {
            return Ok(false);
        }
        let item = pair.of(ls).table.item(si);
        let deadline = pair.of(ls).deadline_of(item);
        let old_src = pair.of(ls).remove_slot(si, &self.slot(ls).c.used);
        // SAFETY: the item just taken out of its table, under its shard's write lock (a collection goes
        // with it).
        let moved = match unsafe { value::move_item(&self.inner.alloc, item, dst) } {
            Ok(m) => m,
            Err(_) => {
                // Put the source back as it was: nothing changes.
                let _ = self.install(pair.of(ls), ls, None, old_src, deadline);
                return Err(Error::AllocFailed);
            }
        };
        // Removing from the same table may have moved dst's slot: look it up again.
        let di = pair.of(ld).table.find(ld.hash, dst);
        let old_dst = self.install(pair.of(ld), ld, di, moved, deadline);
        drop(pair);
        self.release(old_src);
        if let Some(o) = old_dst {
            self.release(o);
        }
        Ok(true)
    }

    /// FLUSHALL: removes every key.
    pub fn flush(&self) {
        for s in self.inner.shards.iter() {
            let mut items = Vec::new();
            {
                let mut g = s.lock.write();
                g.table.drain(|it| items.push(it));
                g.expires.clear();
                g.expires.shrink_to_fit();
                g.deadlines.clear();
                s.c.used.set(g.table.bytes() as u64);
            }
            for it in items {
                self.release(it);
            }
        }
    }
}
