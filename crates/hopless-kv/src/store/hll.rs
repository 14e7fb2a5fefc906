//! The HyperLogLog commands on the store: PFADD, PFCOUNT, PFMERGE and PFDEBUG, each under its keys'
//! locks so that it is one atomic step, over the [`crate::hll`] codec (which holds Redis's encoding and
//! estimator; PFSELFTEST needs no key and is [`hll::self_test`] alone).
//!
//! A HyperLogLog is an ordinary string: GET, SET, SETRANGE and the rest see its bytes. What Redis
//! changes in place these commands rewrite keeping the key's TTL: PFADD's and PFMERGE's registers,
//! PFCOUNT's cached cardinality, PFDEBUG GETREG's and TODENSE's conversion to dense.
//!
//! Keys are checked in the order Redis looks them up: a key that holds a collection is
//! [`Error::WrongType`] where Redis meets it, after the errors of the strings before it (a string that
//! is not a HyperLogLog, `WRONGTYPE Key is not a valid HyperLogLog string value.`; a corrupt one,
//! `INVALIDOBJ Corrupted HLL object detected`).

use super::collections::Keys;
use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::hll::{self, Encoding, HllError};
use crate::value::StrEnc;

/// PFDEBUG's subcommands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfDebug {
    /// GETREG: the registers, the value converted to dense first when sparse (and stored so).
    GetReg,
    /// DECODE: a sparse value's opcodes.
    Decode,
    /// ENCODING: `sparse` or `dense`.
    Encoding,
    /// TODENSE: the value converted to dense, when sparse.
    ToDense,
}

/// PFDEBUG's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PfDebugReply {
    /// GETREG: the [`hll::HLL_REGISTERS`] registers, one byte each.
    Registers(Vec<u8>),
    /// DECODE: the opcodes as Redis prints them.
    Decoded(String),
    /// ENCODING.
    Encoding(Encoding),
    /// TODENSE: whether the value was sparse (and is dense now).
    Converted(bool),
}

/// PFCOUNT of one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfCount {
    /// The reply.
    pub cardinality: i64,
    /// Whether the cached cardinality was invalid and the key now holds the new one: Redis counts this
    /// as a change of the key (WATCH sees it), though PFCOUNT is a read-only command.
    pub cache_written: bool,
}

/// `hll-sparse-max-bytes` as a length.
fn sparse_max(k: &Keys<'_, impl KvAlloc>) -> usize {
    usize::try_from(k.limits().hll_sparse_max_bytes).unwrap_or(0)
}

/// The strings of keys `0..n` that exist, in order, up to the first key that holds a collection, and
/// whether there is one. The codec's first error among these strings comes before the collection's
/// WRONGTYPE, as Redis checks the keys one by one.
fn strings_until_wrong_type<'k, A: KvAlloc>(k: &'k Keys<'_, A>, n: usize) -> (Vec<&'k [u8]>, bool) {
    let mut vals = Vec::with_capacity(n);
    for i in 0..n {
        match k.string(i) {
            Ok(Some(v)) => vals.push(v),
            Ok(None) => {}
            Err(_) => return (vals, true),
        }
    }
    (vals, false)
}

impl<A: KvAlloc> Store<A> {
    /// PFADD: adds `elements` to the HyperLogLog at `key`, creating it when missing (then the answer is
    /// true even with no element). True when the key was written (a register changed): the reply is 1.
    ///
    /// A value whose sparse opcodes turn out corrupt on the way keeps what the elements before the
    /// corruption changed, as in Redis, and the answer is the `INVALIDOBJ` error. Subject to `maxmemory`
    /// (Redis's `denyoom`).
    pub fn pfadd<E: AsRef<[u8]>>(&self, key: &[u8], elements: &[E]) -> Result<bool> {
        self.deny_oom(key)?;
        self.with_keys(&[key], |k| {
            let max = sparse_max(k);
            let Some(old) = k.string(0)? else {
                let v = hll::add_new(elements, max);
                k.rewrite_string(0, &v, StrEnc::Raw)?;
                return Ok(true);
            };
            let mut v = old.to_vec();
            match hll::add(&mut v, elements, max) {
                Ok(true) => {
                    k.rewrite_string(0, &v, StrEnc::Raw)?;
                    Ok(true)
                }
                Ok(false) => Ok(false),
                Err(HllError::Corrupt) => {
                    if k.string(0)? != Some(&v[..]) {
                        k.rewrite_string(0, &v, StrEnc::Raw)?;
                    }
                    Err(HllError::Corrupt.into())
                }
                Err(e) => Err(e.into()),
            }
        })
    }

    /// PFCOUNT of one key: 0 when missing; the cached cardinality when valid; else the estimate, which
    /// is written back into the key's cache (its TTL kept). Redis's errors for a value that is not a
    /// HyperLogLog or is corrupt (nothing written then).
    pub fn pfcount(&self, key: &[u8]) -> Result<PfCount> {
        // A valid cache answers under a read lock; an invalid one is recomputed under the write lock.
        let Some(v) = self.get(key)? else {
            return Ok(PfCount {
                cardinality: 0,
                cache_written: false,
            });
        };
        let c = hll::count(&v)?;
        drop(v);
        if c.cache.is_none() {
            return Ok(PfCount {
                cardinality: c.cardinality,
                cache_written: false,
            });
        }
        self.with_keys(&[key], |k| {
            let Some(old) = k.string(0)? else {
                return Ok(PfCount {
                    cardinality: 0,
                    cache_written: false,
                });
            };
            let c = hll::count(old)?;
            if c.cache.is_none() {
                return Ok(PfCount {
                    cardinality: c.cardinality,
                    cache_written: false,
                });
            }
            let mut v = old.to_vec();
            c.store_cache(&mut v);
            k.rewrite_string(0, &v, StrEnc::Raw)?;
            Ok(PfCount {
                cardinality: c.cardinality,
                cache_written: true,
            })
        })
    }

    /// PFCOUNT of several keys: the cardinality of their union (missing keys count as empty), no cache
    /// read or written.
    pub fn pfcount_union(&self, keys: &[&[u8]]) -> Result<i64> {
        self.with_keys(keys, |k| {
            let (vals, wrong_type) = strings_until_wrong_type(k, keys.len());
            let n = hll::count_union(vals)?;
            if wrong_type {
                return Err(Error::WrongType);
            }
            Ok(n)
        })
    }

    /// PFMERGE: `dest` becomes the union of itself and the sources (missing keys count as empty),
    /// created when missing, its TTL kept. Every key is checked, `dest` first, before anything is
    /// written. Subject to `maxmemory` (Redis's `denyoom`).
    pub fn pfmerge(&self, dest: &[u8], srcs: &[&[u8]]) -> Result<()> {
        self.deny_oom(dest)?;
        let mut keys = Vec::with_capacity(srcs.len() + 1);
        keys.push(dest);
        keys.extend_from_slice(srcs);
        self.with_keys(&keys, |k| {
            let (vals, wrong_type) = strings_until_wrong_type(k, keys.len());
            if wrong_type {
                hll::count_union(vals)?;
                return Err(Error::WrongType);
            }
            let d = k.string(0)?;
            let sources = (1..keys.len()).filter_map(|i| k.string(i).ok().flatten());
            let v = hll::merge(d, sources, sparse_max(k))?;
            k.rewrite_string(0, &v, StrEnc::Raw)?;
            Ok(())
        })
    }

    /// PFDEBUG `sub` on `key`: `Ok(None)` when the key is missing (Redis's `ERR The specified key does
    /// not exist`). GETREG and TODENSE store a sparse value converted to dense (TTL kept). Subject to
    /// `maxmemory` (Redis's `denyoom`).
    pub fn pfdebug(&self, key: &[u8], sub: PfDebug) -> Result<Option<PfDebugReply>> {
        self.deny_oom(key)?;
        self.with_keys(&[key], |k| {
            let Some(v) = k.string(0)? else {
                return Ok(None);
            };
            let encoding = hll::validate(v)?;
            let reply = match sub {
                PfDebug::GetReg => {
                    let r = hll::getreg(v)?;
                    if let Some(dense) = r.converted {
                        k.rewrite_string(0, &dense, StrEnc::Raw)?;
                    }
                    PfDebugReply::Registers(r.registers)
                }
                PfDebug::Decode => PfDebugReply::Decoded(hll::decode(v)?),
                PfDebug::Encoding => PfDebugReply::Encoding(encoding),
                PfDebug::ToDense => match hll::todense(v)? {
                    Some(dense) => {
                        k.rewrite_string(0, &dense, StrEnc::Raw)?;
                        PfDebugReply::Converted(true)
                    }
                    None => PfDebugReply::Converted(false),
                },
            };
            Ok(Some(reply))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use allocator_api2::alloc::Global;

    use super::*;
    use crate::clock::ManualClock;
    use crate::store::Config;

    fn store() -> Store<Global> {
        let cfg = Config {
            shards: 4,
            active_expiry: false,
            clock: Arc::new(ManualClock::new(1_700_000_000_000)),
            ..Config::default()
        };
        Store::with_allocator(cfg, Global)
    }

    const CORRUPT: Error = Error::Msg("INVALIDOBJ Corrupted HLL object detected");
    const NOT_HLL: Error = Error::Msg("WRONGTYPE Key is not a valid HyperLogLog string value.");

    #[test]
    fn pfadd_creates_adds_and_keeps_the_ttl() {
        let s = store();
        let none: [&[u8]; 0] = [];
        assert!(
            s.pfadd(b"h", &none).unwrap(),
            "a new key answers 1 with no element"
        );
        assert!(!s.pfadd(b"h", &none).unwrap());
        assert!(s.pfadd(b"h", &[b"a", b"b"]).unwrap());
        assert!(!s.pfadd(b"h", &[b"a"]).unwrap());
        s.expire(b"h", 100_000, crate::ExpireCond::Always).unwrap();
        assert!(s.pfadd(b"h", &[b"c"]).unwrap());
        assert!(s.pttl(b"h") > 0);
        assert_eq!(s.pfcount(b"h").unwrap().cardinality, 3);
        assert!(s.pttl(b"h") > 0, "the cache write keeps the TTL");
        assert_eq!(
            hll::validate(&s.get(b"h").unwrap().unwrap()),
            Ok(Encoding::Sparse)
        );
    }

    #[test]
    fn pfcount_writes_the_cache_once() {
        let s = store();
        s.pfadd(b"h", &[b"x", b"y"]).unwrap();
        let c = s.pfcount(b"h").unwrap();
        assert_eq!((c.cardinality, c.cache_written), (2, true));
        let c = s.pfcount(b"h").unwrap();
        assert_eq!((c.cardinality, c.cache_written), (2, false));
        assert_eq!(s.pfcount(b"missing").unwrap().cardinality, 0);
        s.pfadd(b"g", &[b"y", b"z"]).unwrap();
        assert_eq!(s.pfcount_union(&[b"h", b"g", b"missing"]).unwrap(), 3);
    }

    #[test]
    fn errors_come_in_key_order() {
        let s = store();
        s.set_simple(b"str", b"not an hll").unwrap();
        s.hset(b"hash", &[(b"f", b"v")]).unwrap();
        s.pfadd(b"ok", &[b"a"]).unwrap();
        assert_eq!(s.pfadd(b"str", &[b"a"]), Err(NOT_HLL));
        assert_eq!(s.pfadd(b"hash", &[b"a"]), Err(Error::WrongType));
        assert_eq!(s.pfcount(b"str"), Err(NOT_HLL));
        assert_eq!(s.pfcount_union(&[b"ok", b"str", b"hash"]), Err(NOT_HLL));
        assert_eq!(s.pfcount_union(&[b"ok", b"hash", b"str"]), Err(Error::WrongType));
        assert_eq!(s.pfmerge(b"hash", &[b"ok"]), Err(Error::WrongType));
        assert_eq!(s.pfmerge(b"d", &[b"str", b"hash"]), Err(NOT_HLL));
        assert_eq!(s.exists(&[b"d"]), 0, "nothing is written on an error");
        assert_eq!(s.pfdebug(b"missing", PfDebug::Encoding), Ok(None));
        assert_eq!(s.pfdebug(b"hash", PfDebug::Encoding), Err(Error::WrongType));
    }

    #[test]
    fn a_corrupt_sparse_value_is_invalidobj() {
        let s = store();
        // A sparse header and one XZERO of 1 register: the rest is not covered.
        let mut v = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
        v.extend_from_slice(&[0x40, 0x00]);
        s.set_simple(b"bad", &v).unwrap();
        assert_eq!(s.pfcount(b"bad"), Err(CORRUPT));
        assert_eq!(s.pfcount_union(&[b"bad", b"missing"]), Err(CORRUPT));
        assert_eq!(s.pfmerge(b"d", &[b"bad"]), Err(CORRUPT));
        assert_eq!(s.pfdebug(b"bad", PfDebug::GetReg), Err(CORRUPT));
        assert_eq!(s.pfdebug(b"bad", PfDebug::ToDense), Err(CORRUPT));
        assert_eq!(
            s.pfdebug(b"bad", PfDebug::Decode),
            Ok(Some(PfDebugReply::Decoded("Z:1".into())))
        );
        assert_eq!(&*s.get(b"bad").unwrap().unwrap(), &v[..]);
    }

    #[test]
    fn pfmerge_and_pfdebug_convert() {
        let s = store();
        s.pfadd(b"a", &[b"1", b"2"]).unwrap();
        s.pfadd(b"b", &[b"2", b"3"]).unwrap();
        s.pfmerge(b"d", &[b"a", b"b"]).unwrap();
        assert_eq!(s.pfcount(b"d").unwrap().cardinality, 3);
        assert_eq!(
            s.pfdebug(b"a", PfDebug::ToDense),
            Ok(Some(PfDebugReply::Converted(true)))
        );
        assert_eq!(
            s.pfdebug(b"a", PfDebug::Encoding),
            Ok(Some(PfDebugReply::Encoding(Encoding::Dense)))
        );
        assert_eq!(
            s.pfdebug(b"a", PfDebug::Decode),
            Err(Error::Msg("ERR HLL encoding is not sparse"))
        );
        let Ok(Some(PfDebugReply::Registers(r))) = s.pfdebug(b"b", PfDebug::GetReg) else {
            panic!("registers");
        };
        assert_eq!(r.len(), hll::HLL_REGISTERS);
        assert_eq!(r.iter().filter(|&&x| x != 0).count(), 2);
        assert_eq!(
            s.pfdebug(b"b", PfDebug::Encoding),
            Ok(Some(PfDebugReply::Encoding(Encoding::Dense)))
        );
        s.pfmerge(b"d", &[b"a"]).unwrap();
        assert_eq!(hll::validate(&s.get(b"d").unwrap().unwrap()), Ok(Encoding::Dense));
    }

    #[test]
    fn the_sparse_limit_promotes() {
        let s = store();
        let i = crate::Limits::NAMES
            .iter()
            .position(|(n, _)| *n == "hll-sparse-max-bytes")
            .unwrap();
        s.set_limit(i, 30);
        let els: Vec<String> = (0..50).map(|i| format!("e{i}")).collect();
        s.pfadd(b"h", &els).unwrap();
        assert_eq!(hll::validate(&s.get(b"h").unwrap().unwrap()), Ok(Encoding::Dense));
    }
}
