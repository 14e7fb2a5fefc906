//! The store's sorted-set commands, over [`Store::read_coll`], [`Store::write_coll`] and
//! [`Store::with_keys`] (`collections.rs`); the data structure and the range and set arithmetic are
//! `crate::types::zset`. Each method validates everything before it changes anything (a command is
//! never half applied); argument parsing (and its error texts) is the server's.

use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::zset::setops::{combine, inter_card, Scored, Source};
use crate::types::zset::{AddFlags, Added, Aggregate, RangeBy, RangeSpec, SetOp, ZSet};
use crate::types::{Collection, Kind};

/// Members with their scores, in the order a command returns them.
pub type Pairs = Vec<(Vec<u8>, f64)>;

/// ZADD's outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ZaddReply {
    /// New members.
    pub added: usize,
    /// Existing members whose score changed.
    pub updated: usize,
    /// With INCR: the member's score after, None when the options refused the change.
    pub score: Option<f64>,
}

const NAN_SCORE: Error = Error::Msg("ERR resulting score is not a number (NaN)");

fn zset<A: KvAlloc>(c: &Collection<A>) -> &ZSet<A> {
    match c {
        Collection::ZSet(z) => z,
        _ => unreachable!("read_coll checked the kind"),
    }
}

fn zset_mut<A: KvAlloc>(c: &mut Collection<A>) -> &mut ZSet<A> {
    match c {
        Collection::ZSet(z) => z,
        _ => unreachable!("write_coll checked the kind"),
    }
}

impl<A: KvAlloc> Store<A> {
    fn zread<R>(&self, key: &[u8], f: impl FnOnce(&ZSet<A>) -> R) -> Result<Option<R>> {
        self.read_coll(key, Kind::ZSet, |c| f(zset(c)))
    }

    /// ZADD (and ZINCRBY, with `flags.incr`): the pairs `(score, member)` under `flags`. Scores are not
    /// NaN; with INCR there is one pair. XX on a missing key creates nothing (the new empty set is not
    /// installed), but over `maxmemory` it is refused as Redis refuses any ZADD.
    pub fn zadd(&self, key: &[u8], flags: AddFlags, pairs: &[(f64, &[u8])]) -> Result<ZaddReply> {
        let r = self.write_coll(key, Kind::ZSet, true, |c, limits| {
            let z = zset_mut(c);
            // A new key's form, chosen as Redis 7.0's ZADD does: by its first member alone.
            if let (true, Some(first)) = (z.is_empty(), pairs.first()) {
                z.prepare(1, first.1.len(), limits);
            }
            let mut r = ZaddReply::default();
            for &(score, member) in pairs {
                // Only INCR (a single pair) can meet NaN, before anything changed.
                match z.add(member, score, flags, limits).map_err(|_| NAN_SCORE)? {
                    Added::Added(s) => {
                        r.added += 1;
                        r.score = Some(s);
                    }
                    Added::Updated(s) => {
                        r.updated += 1;
                        r.score = Some(s);
                    }
                    Added::Same(s) => r.score = Some(s),
                    Added::Nop => r.score = None,
                }
            }
            Ok(r)
        })?;
        Ok(r.unwrap_or_default())
    }

    /// ZINCRBY: `member`'s score plus `delta` (a new member starts at 0); the new score.
    pub fn zincrby(&self, key: &[u8], delta: f64, member: &[u8]) -> Result<f64> {
        let flags = AddFlags {
            incr: true,
            ..AddFlags::default()
        };
        let r = self.zadd(key, flags, &[(delta, member)])?;
        Ok(r.score.unwrap_or(delta))
    }

    /// ZREM: members removed.
    pub fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<usize> {
        let r = self.write_coll(key, Kind::ZSet, false, |c, _| {
            let z = zset_mut(c);
            Ok(members.iter().filter(|m| z.remove(m)).count())
        })?;
        Ok(r.unwrap_or(0))
    }

    /// ZCARD.
    pub fn zcard(&self, key: &[u8]) -> Result<usize> {
        Ok(self.zread(key, |z| z.len())?.unwrap_or(0))
    }

    /// ZSCORE.
    pub fn zscore(&self, key: &[u8], member: &[u8]) -> Result<Option<f64>> {
        Ok(self.zread(key, |z| z.score(member))?.flatten())
    }

    /// ZMSCORE.
    pub fn zmscore(&self, key: &[u8], members: &[&[u8]]) -> Result<Vec<Option<f64>>> {
        Ok(self
            .zread(key, |z| members.iter().map(|m| z.score(m)).collect())?
            .unwrap_or_else(|| vec![None; members.len()]))
    }

    /// ZRANK (ZREVRANK with `rev`).
    pub fn zrank(&self, key: &[u8], member: &[u8], rev: bool) -> Result<Option<usize>> {
        Ok(self
            .zread(key, |z| {
                z.rank(member).map(|(r, _)| if rev { z.len() - 1 - r } else { r })
            })?
            .flatten())
    }

    /// ZCOUNT, ZLEXCOUNT (and a rank range's size): members in the range.
    pub fn zcount(&self, key: &[u8], by: &RangeBy) -> Result<usize> {
        Ok(self
            .zread(key, |z| z.run_of(&RangeSpec::new(by.clone(), false)).len)?
            .unwrap_or(0))
    }

    /// ZRANGE in all its forms.
    pub fn zrange(&self, key: &[u8], spec: &RangeSpec) -> Result<Pairs> {
        Ok(self
            .zread(key, |z| z.collect(z.run_of(spec)))?
            .unwrap_or_default())
    }

    /// ZRANGESTORE: the range of `src` stored at `dst` (replacing whatever it held; deleted when
    /// empty); its size.
    pub fn zrangestore(&self, dst: &[u8], src: &[u8], spec: &RangeSpec) -> Result<usize> {
        self.deny_oom(dst)?;
        self.with_keys(&[dst, src], |v| {
            let pairs = match v.coll(1, Kind::ZSet)? {
                Some(c) => {
                    let z = zset(c);
                    z.collect(z.run_of(spec))
                }
                None => Vec::new(),
            };
            let z = ZSet::from_pairs(v.alloc().clone(), &pairs, v.limits());
            v.put(0, Collection::ZSet(z))?;
            Ok(pairs.len())
        })
    }

    /// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX: members removed.
    pub fn zremrange(&self, key: &[u8], by: &RangeBy) -> Result<usize> {
        let r = self.write_coll(key, Kind::ZSet, false, |c, _| {
            let z = zset_mut(c);
            let (lo, hi) = z.run_of(&RangeSpec::new(by.clone(), false)).span();
            z.remove_ranks(lo, hi, |_, _| {});
            Ok(hi - lo)
        })?;
        Ok(r.unwrap_or(0))
    }

    /// ZPOPMIN (ZPOPMAX with `max`): up to `count` members, removed, in pop order.
    pub fn zpop(&self, key: &[u8], count: usize, max: bool) -> Result<Pairs> {
        let r = self.write_coll(key, Kind::ZSet, false, |c, _| Ok(pop(zset_mut(c), count, max)))?;
        Ok(r.unwrap_or_default())
    }

    /// ZMPOP: pops from the first of `keys` that holds a sorted set; its index and the members.
    /// WRONGTYPE for a key of another kind met before it.
    pub fn zmpop(&self, keys: &[&[u8]], count: usize, max: bool) -> Result<Option<(usize, Pairs)>> {
        self.with_keys(keys, |v| {
            for i in 0..keys.len() {
                if let Some(c) = v.coll_mut(i, Kind::ZSet, false)? {
                    return Ok(Some((i, pop(zset_mut(c), count, max))));
                }
            }
            Ok(None)
        })
    }

    /// ZRANDMEMBER: None for a missing key; else see [`ZSet::random`].
    pub fn zrandmember(&self, key: &[u8], count: i64) -> Result<Option<Pairs>> {
        self.zread(key, |z| z.random(count))
    }

    /// ZSCAN: the next cursor and the members and scores of this step whose member matches `pattern`.
    pub fn zscan(
        &self,
        key: &[u8],
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
    ) -> Result<(u64, Pairs)> {
        let r = self.zread(key, |z| {
            let mut out = Vec::new();
            let next = z.scan(cursor, count, |m, s| {
                if pattern.is_none_or(|p| crate::redis_util::glob_match(p, m)) {
                    out.push((m.to_vec(), s));
                }
            });
            (next, out)
        })?;
        Ok(r.unwrap_or((0, Vec::new())))
    }

    /// ZUNION, ZINTER, ZDIFF: the result sorted by score. `weights` (one per key, or empty) scale each
    /// key's scores.
    pub fn zsetop(&self, op: SetOp, keys: &[&[u8]], weights: &[f64], agg: Aggregate) -> Result<Pairs> {
        self.with_keys(keys, |v| {
            let srcs = sources(v, 0..keys.len())?;
            Ok(combine(&srcs, weights, agg, op))
        })
    }

    /// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: the result stored at `dst` (replacing whatever it held;
    /// deleted when empty); its size.
    pub fn zsetop_store(
        &self,
        op: SetOp,
        dst: &[u8],
        keys: &[&[u8]],
        weights: &[f64],
        agg: Aggregate,
    ) -> Result<usize> {
        self.deny_oom(dst)?;
        let mut all = Vec::with_capacity(keys.len() + 1);
        all.push(dst);
        all.extend_from_slice(keys);
        self.with_keys(&all, |v| {
            let pairs = {
                let srcs = sources(v, 1..all.len())?;
                combine(&srcs, weights, agg, op)
            };
            let z = ZSet::from_pairs(v.alloc().clone(), &pairs, v.limits());
            v.put(0, Collection::ZSet(z))?;
            Ok(pairs.len())
        })
    }

    /// ZINTERCARD: the intersection's size, counted up to `limit` (0: no limit).
    pub fn zintercard(&self, keys: &[&[u8]], limit: usize) -> Result<usize> {
        self.with_keys(keys, |v| {
            let srcs = sources(v, 0..keys.len())?;
            Ok(inter_card(&srcs, limit))
        })
    }
}

/// The inputs at the view's keys `range`: sorted sets, and plain sets (each member scored 1, as in Redis);
/// None for a missing key; WRONGTYPE at the first of another kind.
fn sources<'v, A: KvAlloc>(
    v: &'v super::Keys<'_, A>,
    range: core::ops::Range<usize>,
) -> Result<Vec<Source<'v>>> {
    range
        .map(|i| {
            let kind = if v.kind(i) == Some(Kind::Set) {
                Kind::Set
            } else {
                Kind::ZSet
            };
            Ok(v.coll(i, kind)?.map(|c| match c {
                Collection::Set(s) => s as &dyn Scored,
                c => zset(c) as &dyn Scored,
            }))
        })
        .collect()
}

/// Removes up to `count` members from the low end (the high end when `max`), in pop order.
fn pop<A: KvAlloc>(z: &mut ZSet<A>, count: usize, max: bool) -> Pairs {
    let n = z.len();
    let k = count.min(n);
    let (lo, hi) = if max { (n - k, n) } else { (0, k) };
    let mut out = Vec::with_capacity(k);
    z.remove_ranks(lo, hi, |m, s| out.push((m.to_vec(), s)));
    if max {
        out.reverse();
    }
    out
}
