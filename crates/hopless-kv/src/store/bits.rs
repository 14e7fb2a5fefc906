//! The bit commands' writes (SETBIT, BITFIELD, BITOP) and what a string's encoding and access say
//! (OBJECT ENCODING, TOUCH). Their reads (GETBIT, BITCOUNT, BITPOS, BITFIELD_RO) are [`Store::get`] and
//! the [`crate::bitmap`] functions.
//!
//! SETBIT and BITFIELD change a string in place, as Redis does, when nobody else holds its value and its
//! length stays: a bitmap written bit by bit costs a few instructions a bit, not a copy of the bitmap.
//! A string that grows, or that a reader still holds, is copied into a new item.

use std::sync::atomic::Ordering;

use super::counters::Op;
use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::bitmap::{self, BitOp, BitfieldOp, FieldOp};
use crate::error::{Error, Result};
use crate::redis_util::parse_i64;
use crate::types::Kind;
use crate::value::{self, StrEnc};

/// How OBJECT ENCODING names a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringEncoding {
    Int,
    Embstr,
    Raw,
}

impl StringEncoding {
    pub fn as_str(self) -> &'static str {
        match self {
            StringEncoding::Int => "int",
            StringEncoding::Embstr => "embstr",
            StringEncoding::Raw => "raw",
        }
    }
}

/// Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_MAX: usize = 44;

impl<A: KvAlloc> Store<A> {
    /// Edits `key`'s string as Redis's bit commands do: zero-padded to at least `min_len` bytes first (a
    /// missing key is created that long), then `edit` runs on the bytes. The TTL stays; OBJECT ENCODING
    /// says `raw` afterwards. WRONGTYPE for a collection; OOM when over `maxmemory` under `noeviction`
    /// (Redis refuses these `denyoom` commands then, even when they would not grow).
    fn edit_string<R>(&self, key: &[u8], min_len: usize, edit: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        self.check_key(key)?;
        if min_len > self.inner.cfg.max_value_len {
            return Err(Error::TooLarge);
        }
        let l = self.loc(key);
        self.count(Op::Set);
        let mut g = self.slot(l).lock.write();
        self.expire_if_due(&mut g, l, key);
        self.make_room(&mut g, l, 0)?;
        let slot = g.table.find(l.hash, key);
        let existing = slot.map(|i| g.table.item(i));
        if let Some(it) = existing {
            // SAFETY: the table's item, under the shard's write lock.
            if unsafe { value::kind(it) } != Kind::String {
                return Err(Error::WrongType);
            }
            // SAFETY: as above, and a string.
            let (len, unique) = unsafe { (value::value(it).len(), value::is_unique(it)) };
            if len >= min_len && unique {
                // SAFETY: a string, under the shard's write lock, and only the table holds it
                // (`is_unique`): no reader can take a reference while we hold the lock, so nobody else
                // sees the bytes change (value_mut's contract).
                let r = edit(unsafe { value::value_mut(it) });
                // SAFETY: as above.
                unsafe { value::set_str_enc(it, StrEnc::Raw) };
                if self.tracks_lru() {
                    let clock = &self.slot(l).c.clock;
                    // SAFETY: as above.
                    unsafe { value::touch(it, clock.fetch_add(1, Ordering::Relaxed)) };
                }
                return Ok(r);
            }
        }
        // SAFETY: a string (checked above) in the table, read under the shard's write lock, which is held
        // until `store_item` has installed the copy.
        let old: &[u8] = existing.map_or(&[], |it| unsafe { value::value(it) });
        let len = old.len().max(min_len);
        let mut r = None;
        let item = value::new_item(&self.inner.alloc, key, len, |b| {
            b[..old.len()].copy_from_slice(old);
            b[old.len()..].fill(0);
            r = Some(edit(b));
        })
        .map_err(|_| Error::AllocFailed)?;
        // SAFETY: the new item is ours until installed.
        unsafe { value::set_str_enc(item, StrEnc::Raw) };
        self.store_item(g, l, key, slot, item, |current| current)?;
        Ok(r.expect("edited"))
    }

    /// SETBIT: sets bit `offset` to `on` (the string grows with zero bytes to reach it); the old bit.
    pub fn setbit(&self, key: &[u8], offset: u64, on: bool) -> Result<bool> {
        let min_len = usize::try_from(offset >> 3).map_err(|_| Error::TooLarge)? + 1;
        self.edit_string(key, min_len, |s| bitmap::set_bit(s, offset, on))
    }

    /// BITFIELD with at least one SET or INCRBY: the replies in order (None: an overflow under FAIL,
    /// nothing written). The string grows to hold the farthest field written, even when no write
    /// happens (as Redis does).
    pub fn bitfield(&self, key: &[u8], ops: &[BitfieldOp]) -> Result<Vec<Option<i64>>> {
        let last_bit = ops
            .iter()
            .filter(|o| o.op != FieldOp::Get)
            .map(|o| o.offset + u64::from(o.ty.bits) - 1)
            .max()
            .unwrap_or(0);
        let min_len = usize::try_from(last_bit >> 3).map_err(|_| Error::TooLarge)? + 1;
        self.edit_string(key, min_len, |s| {
            ops.iter().map(|o| bitmap::apply(s, o)).collect()
        })
    }

    /// BITOP: `dest` becomes `op` over the sources (missing keys read as empty strings), replacing
    /// whatever it held and its TTL; an empty result deletes it. The length of the result. Every key's
    /// shard is locked for the whole operation.
    pub fn bitop(&self, op: BitOp, dest: &[u8], srcs: &[&[u8]]) -> Result<usize> {
        self.deny_oom(dest)?;
        let mut keys = Vec::with_capacity(srcs.len() + 1);
        keys.push(dest);
        keys.extend_from_slice(srcs);
        self.with_keys(&keys, |k| {
            let vals = (1..keys.len()).map(|i| k.string(i)).collect::<Result<Vec<_>>>()?;
            let out = bitmap::bitop(op, &vals);
            if out.is_empty() {
                k.delete(0);
            } else {
                k.put_string(0, &out, StrEnc::Raw)?;
            }
            Ok(out.len())
        })
    }

    /// OBJECT ENCODING of a string key (None: missing, or not a string).
    pub fn string_encoding(&self, key: &[u8]) -> Option<StringEncoding> {
        let l = self.loc(key);
        let it = self.lookup_string(key, l, false).ok().flatten()?;
        // SAFETY: we hold the reference `lookup_string` took.
        let (enc, v) = unsafe { (value::str_enc(it), value::value(it)) };
        let e = match enc {
            StrEnc::Raw => StringEncoding::Raw,
            StrEnc::ByContent if v.len() <= 20 && parse_i64(v).is_some() => StringEncoding::Int,
            _ if v.len() <= EMBSTR_MAX => StringEncoding::Embstr,
            _ => StringEncoding::Raw,
        };
        self.release(it);
        Some(e)
    }

    /// TOUCH: how many of the keys exist (a key named twice counts twice), recording an access to each
    /// for the LRU.
    pub fn touch(&self, keys: &[&[u8]]) -> usize {
        keys.iter()
            .filter(|k| {
                let l = self.loc(k);
                self.count(Op::Exists);
                self.lookup(k, l, true).map(|i| self.release(i)).is_some()
            })
            .count()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use allocator_api2::alloc::Global;

    use super::*;
    use crate::bitmap::{FieldType, Overflow};
    use crate::clock::ManualClock;
    use crate::store::{Config, Ttl};
    use crate::SetOptions;

    fn store() -> Store<Global> {
        let cfg = Config {
            shards: 4,
            active_expiry: false,
            clock: Arc::new(ManualClock::new(1_700_000_000_000)),
            ..Config::default()
        };
        Store::with_allocator(cfg, Global)
    }

    #[test]
    fn setbit_grows_edits_and_keeps_the_ttl() {
        let s = store();
        assert!(!s.setbit(b"k", 9, true).unwrap());
        assert_eq!(&*s.get(b"k").unwrap().unwrap(), b"\x00\x40");
        assert!(s.setbit(b"k", 9, false).unwrap());
        assert_eq!(&*s.get(b"k").unwrap().unwrap(), b"\x00\x00");
        s.expire(b"k", 100_000, crate::ExpireCond::Always).unwrap();
        s.setbit(b"k", 0, true).unwrap();
        s.setbit(b"k", 100, true).unwrap();
        assert!(s.pttl(b"k") > 0, "in place and grown alike keep the TTL");
        assert_eq!(s.get(b"k").unwrap().unwrap().len(), 13);
        s.hset(b"h", &[(b"f", b"v")]).unwrap();
        assert_eq!(s.setbit(b"h", 0, true), Err(Error::WrongType));
    }

    #[test]
    fn a_held_value_is_not_changed_under_its_reader() {
        let s = store();
        s.set_simple(b"k", b"\x00").unwrap();
        let held = s.get(b"k").unwrap().unwrap();
        s.setbit(b"k", 7, true).unwrap();
        assert_eq!(&*held, b"\x00");
        assert_eq!(&*s.get(b"k").unwrap().unwrap(), b"\x01");
        drop(held);
        s.setbit(b"k", 6, true).unwrap();
        assert_eq!(&*s.get(b"k").unwrap().unwrap(), b"\x03");
    }

    #[test]
    fn readers_never_see_a_value_change_under_them() {
        let s = store();
        s.set_simple(b"k", &[0u8; 64]).unwrap();
        let n = if cfg!(miri) { 30 } else { 20_000 };
        std::thread::scope(|t| {
            t.spawn(|| {
                for i in 0..n {
                    s.setbit(b"k", (i % 512) as u64, i % 3 == 0).unwrap();
                }
            });
            for _ in 0..2 {
                t.spawn(|| {
                    for _ in 0..n / 4 {
                        let v = s.get(b"k").unwrap().unwrap();
                        let first = v.to_vec();
                        std::hint::spin_loop();
                        assert_eq!(&*v, &first[..], "a held value changed");
                    }
                });
            }
        });
    }

    #[test]
    fn in_place_edits_read_as_raw() {
        let s = store();
        s.set_simple(b"k", b"5").unwrap();
        assert_eq!(s.string_encoding(b"k"), Some(StringEncoding::Int));
        s.setbit(b"k", 0, false).unwrap();
        assert_eq!(s.string_encoding(b"k"), Some(StringEncoding::Raw));
        s.set_simple(b"k", b"hello").unwrap();
        assert_eq!(s.string_encoding(b"k"), Some(StringEncoding::Embstr));
        s.append(b"k", b"!").unwrap();
        assert_eq!(s.string_encoding(b"k"), Some(StringEncoding::Raw));
        s.rename(b"k", b"k2", false).unwrap();
        assert_eq!(s.string_encoding(b"k2"), Some(StringEncoding::Raw));
        s.incr_by_float_text(b"f", b"5").unwrap();
        assert_eq!(s.string_encoding(b"f"), Some(StringEncoding::Embstr));
        assert_eq!(s.string_encoding(b"missing"), None);
    }

    #[test]
    fn bitfield_writes_and_fail_still_grows() {
        let s = store();
        let ty = FieldType {
            signed: false,
            bits: 8,
        };
        let op = |offset, op, overflow| BitfieldOp {
            offset,
            ty,
            op,
            overflow,
        };
        let r = s
            .bitfield(
                b"k",
                &[
                    op(0, FieldOp::Set(200), Overflow::Wrap),
                    op(0, FieldOp::IncrBy(100), Overflow::Fail),
                    op(0, FieldOp::Get, Overflow::Wrap),
                    op(16, FieldOp::Set(300), Overflow::Fail),
                ],
            )
            .unwrap();
        assert_eq!(r, vec![Some(0), None, Some(200), None]);
        assert_eq!(&*s.get(b"k").unwrap().unwrap(), b"\xc8\x00\x00");
    }

    #[test]
    fn bitop_stores_or_deletes_the_destination() {
        let s = store();
        s.set_simple(b"a", b"\xff\x0f").unwrap();
        s.set(
            b"d",
            b"x",
            SetOptions {
                ttl: Ttl::Px(100_000),
                ..SetOptions::default()
            },
        )
        .unwrap();
        assert_eq!(s.bitop(BitOp::Not, b"d", &[b"a"]).unwrap(), 2);
        assert_eq!(&*s.get(b"d").unwrap().unwrap(), b"\x00\xf0");
        assert_eq!(s.pttl(b"d"), -1, "the destination's TTL goes");
        assert_eq!(s.bitop(BitOp::Or, b"d", &[b"none", b"none2"]).unwrap(), 0);
        assert_eq!(s.exists(&[b"d"]), 0);
        s.hset(b"h", &[(b"f", b"v")]).unwrap();
        assert_eq!(s.bitop(BitOp::And, b"d", &[b"a", b"h"]), Err(Error::WrongType));
        assert_eq!(
            s.bitop(BitOp::And, b"h", &[b"a"]).unwrap(),
            2,
            "a collection dest is replaced"
        );
        assert_eq!(s.key_type(b"h"), Some(Kind::String));
    }

    #[test]
    fn touch_counts_existing_keys() {
        let s = store();
        s.set_simple(b"a", b"1").unwrap();
        assert_eq!(s.touch(&[b"a", b"b", b"a"]), 2);
    }
}
