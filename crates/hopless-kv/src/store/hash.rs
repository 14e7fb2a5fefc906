//! The store's hash commands (HSET HSETNX HGET HMGET HDEL HLEN HSTRLEN HEXISTS HKEYS HVALS HGETALL
//! HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN), over [`Store::read_coll`] and [`Store::write_coll`]
//! (`collections.rs`); the data structure is `crate::types::hash`.
//!
//! Each command validates everything before it changes anything, so an error leaves the hash as it was
//! (Redis never half-applies a command). Replies that Redis gives in no set order (HGETALL, HKEYS...)
//! come in the hash's order: insertion order while it is compact, as Redis's listpack.

use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::long_double::{self, LongDouble, Parsed};
use crate::redis_util::{glob_match, parse_i64};
use crate::types::{Collection, Hash, Kind};

/// A field and its value, owned.
pub type FieldValue = (Vec<u8>, Vec<u8>);

fn hash_of<A: KvAlloc>(c: &Collection<A>) -> &Hash<A> {
    match c {
        Collection::Hash(h) => h,
        _ => unreachable!("read_coll checked the kind"),
    }
}

fn hash_mut<A: KvAlloc>(c: &mut Collection<A>) -> &mut Hash<A> {
    match c {
        Collection::Hash(h) => h,
        _ => unreachable!("write_coll checked the kind"),
    }
}

fn owned(pairs: impl Iterator<Item = (impl AsRef<[u8]>, impl AsRef<[u8]>)>) -> Vec<FieldValue> {
    pairs
        .map(|(f, v)| (f.as_ref().to_vec(), v.as_ref().to_vec()))
        .collect()
}

impl<A: KvAlloc> Store<A> {
    /// Runs `f` on the hash at `key` under its shard's read lock (to reply straight from it):
    /// `Ok(None)` if the key is missing, [`Error::WrongType`] if it is not a hash.
    pub fn read_hash<R>(&self, key: &[u8], f: impl FnOnce(&Hash<A>) -> R) -> Result<Option<R>> {
        self.read_coll(key, Kind::Hash, |c| f(hash_of(c)))
    }

    /// HSET / HMSET: sets each field to its value, in order (a field named twice ends with its last
    /// value); creates the hash if missing. Returns how many fields are new.
    pub fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<usize> {
        let r = self.write_coll(key, Kind::Hash, true, |c, limits| {
            let h = hash_mut(c);
            Ok(pairs.iter().filter(|(f, v)| h.set(f, v, limits)).count())
        })?;
        Ok(r.unwrap_or(0))
    }

    /// HSETNX: sets `field` only if the hash does not have it; whether it did.
    pub fn hsetnx(&self, key: &[u8], field: &[u8], value: &[u8]) -> Result<bool> {
        let r = self.write_coll(key, Kind::Hash, true, |c, limits| {
            let h = hash_mut(c);
            Ok(!h.contains(field) && h.set(field, value, limits))
        })?;
        Ok(r.unwrap_or(false))
    }

    /// HDEL: removes the fields; how many were there. A hash left empty goes with its key.
    pub fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<usize> {
        let r = self.write_coll(key, Kind::Hash, false, |c, _| {
            let h = hash_mut(c);
            Ok(fields.iter().filter(|f| h.remove(f)).count())
        })?;
        Ok(r.unwrap_or(0))
    }

    /// HGET: the value of `field`, None if the key or the field is missing.
    pub fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .read_hash(key, |h| h.get(field).map(<[u8]>::to_vec))?
            .flatten())
    }

    /// HMGET: each field's value (None where missing; all None when the key is).
    pub fn hmget(&self, key: &[u8], fields: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(self
            .read_hash(key, |h| {
                fields.iter().map(|f| h.get(f).map(<[u8]>::to_vec)).collect()
            })?
            .unwrap_or_else(|| vec![None; fields.len()]))
    }

    /// HLEN: the number of fields (0 for a missing key).
    pub fn hlen(&self, key: &[u8]) -> Result<usize> {
        Ok(self.read_hash(key, |h| h.len())?.unwrap_or(0))
    }

    /// HSTRLEN: the length of `field`'s value (0 when missing).
    pub fn hstrlen(&self, key: &[u8], field: &[u8]) -> Result<usize> {
        Ok(self
            .read_hash(key, |h| h.get(field).map_or(0, <[u8]>::len))?
            .unwrap_or(0))
    }

    /// HEXISTS: whether the hash has `field`.
    pub fn hexists(&self, key: &[u8], field: &[u8]) -> Result<bool> {
        Ok(self.read_hash(key, |h| h.contains(field))?.unwrap_or(false))
    }

    /// HGETALL: every field and value (empty for a missing key).
    pub fn hgetall(&self, key: &[u8]) -> Result<Vec<FieldValue>> {
        Ok(self.read_hash(key, |h| owned(h.iter()))?.unwrap_or_default())
    }

    /// HKEYS: every field.
    pub fn hkeys(&self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .read_hash(key, |h| h.iter().map(|(f, _)| f.to_vec()).collect())?
            .unwrap_or_default())
    }

    /// HVALS: every value.
    pub fn hvals(&self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .read_hash(key, |h| h.iter().map(|(_, v)| v.to_vec()).collect())?
            .unwrap_or_default())
    }

    /// HINCRBY: adds `delta` to the integer in `field` (0 when missing, creating the hash); the new
    /// value. `ERR hash value is not an integer` when the value is not one (Redis's `string2ll`), and
    /// [`Error::Overflow`] past 64 bits.
    pub fn hincrby(&self, key: &[u8], field: &[u8], delta: i64) -> Result<i64> {
        let r = self.write_coll(key, Kind::Hash, true, |c, limits| {
            let h = hash_mut(c);
            let cur = match h.get(field) {
                Some(v) => parse_i64(v).ok_or(Error::Msg("ERR hash value is not an integer"))?,
                None => 0,
            };
            let n = cur.checked_add(delta).ok_or(Error::Overflow)?;
            h.set(field, n.to_string().as_bytes(), limits);
            Ok(n)
        })?;
        Ok(r.expect("write_coll with create runs the closure"))
    }

    /// HINCRBYFLOAT: adds `delta` (a float's text) to the float in `field` (0 when missing, creating the
    /// hash); the new value as stored. Computed as x86-64 Redis computes it, in `long double`, and
    /// printed as it prints it (`long_double.rs`). Errors as Redis's: [`Error::NotFloat`] for a `delta`
    /// that is not a float, `ERR value is NaN or Infinity` for an infinite one, `ERR hash value is not a
    /// float` for a stored value that is not one, and [`Error::NanOrInfinity`] for an infinite result.
    pub fn hincrbyfloat(&self, key: &[u8], field: &[u8], delta: &[u8]) -> Result<Vec<u8>> {
        let d = match long_double::parse(delta) {
            Some(Parsed::Finite(d)) => d,
            Some(Parsed::Infinite) => return Err(Error::Msg("ERR value is NaN or Infinity")),
            None => return Err(Error::NotFloat),
        };
        let r = self.write_coll(key, Kind::Hash, true, |c, limits| {
            let h = hash_mut(c);
            let cur = match h.get(field).map(long_double::parse) {
                None => LongDouble::ZERO,
                Some(Some(Parsed::Finite(v))) => v,
                Some(Some(Parsed::Infinite)) => return Err(Error::NanOrInfinity),
                Some(None) => return Err(Error::Msg("ERR hash value is not a float")),
            };
            let text = cur.add(d).ok_or(Error::NanOrInfinity)?.to_human().into_bytes();
            h.set(field, &text, limits);
            Ok(text)
        })?;
        Ok(r.expect("write_coll with create runs the closure"))
    }

    /// HRANDFIELD without a count: a random field, None for a missing key.
    pub fn hrandfield_one(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .read_hash(key, |h| h.random_pairs(1).first().map(|(f, _)| f.to_vec()))?
            .flatten())
    }

    /// HRANDFIELD with a count: `count` distinct fields with their values (the whole hash when it has no
    /// more), or `-count` picks with repeats when `count` is negative; empty for a missing key.
    pub fn hrandfield(&self, key: &[u8], count: i64) -> Result<Vec<FieldValue>> {
        Ok(self
            .read_hash(key, |h| owned(h.random_pairs(count).into_iter()))?
            .unwrap_or_default())
    }

    /// HSCAN: one step from `cursor`, looking at about `count` fields (a compact hash gives all of them
    /// at once), keeping those whose field matches `pattern`; the next cursor (0 when done) and the
    /// fields with their values. A missing key gives `(0, [])`.
    pub fn hscan(
        &self,
        key: &[u8],
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
    ) -> Result<(u64, Vec<FieldValue>)> {
        Ok(self
            .read_hash(key, |h| {
                let mut out = Vec::new();
                let next = h.scan(cursor, count, |f, v| {
                    if pattern.is_none_or(|p| glob_match(p, f)) {
                        out.push((f.to_vec(), v.to_vec()));
                    }
                });
                (next, out)
            })?
            .unwrap_or((0, Vec::new())))
    }
}
