//! The set commands (SADD and friends) over `collections.rs`, with Redis 7.0's semantics: a missing key
//! is an empty set, a set left empty is removed with its key, every key of a multi-key command is checked
//! for WRONGTYPE (an empty or missing one does not stop the check), and the STORE forms replace the
//! destination whatever it held (deleting it when the result is empty).

use super::collections::Keys;
use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::set::SetLimits;
use crate::types::{free_collection, random_u64, Collection, Kind, Set};

/// The most members SRANDMEMBER with a negative count (repeats allowed) returns. Redis 7.0 takes any count
/// down to -(2^63 - 1) and builds the reply until it runs out of memory; the store refuses instead.
const SRANDMEMBER_MAX_REPEATS: i64 = 1 << 24;

/// The error for a count past `SRANDMEMBER_MAX_REPEATS`, worded as Redis words its range errors.
const SRANDMEMBER_RANGE: &str =
    "ERR value is out of range, value must between -16777216 and 9223372036854775807";

fn as_set<A: KvAlloc>(c: &Collection<A>) -> &Set<A> {
    match c {
        Collection::Set(s) => s,
        _ => unreachable!("the store checked the kind"),
    }
}

fn as_set_mut<A: KvAlloc>(c: &mut Collection<A>) -> &mut Set<A> {
    match c {
        Collection::Set(s) => s,
        _ => unreachable!("the store checked the kind"),
    }
}

fn rng() -> impl FnMut() -> u64 {
    random_u64
}

/// The set operations of SINTER, SUNION and SDIFF (and their STORE and CARD forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Inter,
    Union,
    Diff,
}

/// A set operation's result: members in the reply's order, or a set to store.
enum Output<A: KvAlloc> {
    Members(Vec<Vec<u8>>),
    Set(Set<A>),
}

/// Keys `from..` of `view` as sets: `None` for a missing key; WRONGTYPE if any holds another kind.
fn sources<'v, A: KvAlloc>(view: &'v Keys<'_, A>, from: usize, n: usize) -> Result<Vec<Option<&'v Set<A>>>> {
    (from..from + n)
        .map(|i| Ok(view.coll(i, Kind::Set)?.map(as_set)))
        .collect()
}

/// SINTERCARD's count: members of the smallest set found in every other, stopping at `limit` (0: none).
fn inter_card<A: KvAlloc>(sets: &[Option<&Set<A>>], limit: usize) -> usize {
    let Some(mut sets) = sets.iter().copied().collect::<Option<Vec<&Set<A>>>>() else {
        return 0;
    };
    sets.sort_by_key(|s| s.len());
    let mut n = 0;
    sets[0].for_each_while(|m| {
        if sets[1..].iter().all(|s| s.contains(m)) {
            n += 1;
        }
        limit == 0 || n < limit
    });
    n
}

/// The members of `op` over `sets`: as Redis orders them without STORE (SINTER walks the smallest set;
/// SUNION and SDIFF walk a set built from the result), or as a new set to store.
fn compute<A: KvAlloc>(
    op: SetOp,
    sets: &[Option<&Set<A>>],
    alloc: &A,
    lim: &SetLimits,
    store: bool,
) -> Output<A> {
    let mut out = Set::new_in(alloc.clone());
    match op {
        SetOp::Inter => {
            let Some(mut sets) = sets.iter().copied().collect::<Option<Vec<&Set<A>>>>() else {
                return if store {
                    Output::Set(out)
                } else {
                    Output::Members(Vec::new())
                };
            };
            sets.sort_by_key(|s| s.len());
            let mut members = Vec::new();
            sets[0].for_each(|m| {
                if sets[1..].iter().all(|s| s.contains(m)) {
                    if store {
                        out.add(m, lim);
                    } else {
                        members.push(m.to_vec());
                    }
                }
            });
            if !store {
                return Output::Members(members);
            }
        }
        SetOp::Union => {
            for s in sets.iter().flatten() {
                s.for_each(|m| {
                    out.add(m, lim);
                });
            }
        }
        SetOp::Diff => {
            let Some(first) = sets[0] else {
                return if store {
                    Output::Set(out)
                } else {
                    Output::Members(Vec::new())
                };
            };
            let rest: Vec<&Set<A>> = sets[1..].iter().flatten().copied().collect();
            // Redis's choice: test each member of the first set against the others (work: its size times
            // the number of sets, halved), or copy the first and remove every member of the others (work:
            // all their sizes), whichever is less.
            let one = first.len() * sets.len() / 2;
            let two: usize = first.len() + rest.iter().map(|s| s.len()).sum::<usize>();
            if one <= two {
                first.for_each(|m| {
                    if !rest.iter().any(|s| s.contains(m)) {
                        out.add(m, lim);
                    }
                });
            } else {
                first.for_each(|m| {
                    out.add(m, lim);
                });
                for s in &rest {
                    s.for_each(|m| {
                        out.remove(m);
                    });
                }
            }
        }
    }
    if store {
        Output::Set(out)
    } else {
        Output::Members(out.members())
    }
}

/// What SMOVE did, as Redis tells its watchers: the source changed only when the member moved, the
/// destination only when it did not hold the member already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// The member is not in the source (or the source is missing): nothing changed; the reply is 0.
    No,
    /// The source is the destination and holds the member: nothing changed; the reply is 1.
    InPlace,
    /// Moved out of the source; `added`: the destination did not hold it before. The reply is 1.
    Yes { added: bool },
}

impl Moved {
    /// SMOVE's reply: whether the member was in the source.
    pub fn replied(self) -> bool {
        self != Moved::No
    }
}

impl<A: KvAlloc> Store<A> {
    /// SADD: adds the members (creating the set); how many were new.
    pub fn sadd(&self, key: &[u8], members: &[&[u8]]) -> Result<usize> {
        let r = self.write_coll(key, Kind::Set, true, |c, l| {
            let lim = SetLimits::of(l);
            let s = as_set_mut(c);
            Ok(members.iter().filter(|m| s.add(m, &lim)).count())
        })?;
        Ok(r.unwrap_or(0))
    }

    /// SREM: removes the members; how many were there.
    pub fn srem(&self, key: &[u8], members: &[&[u8]]) -> Result<usize> {
        let r = self.write_coll(key, Kind::Set, false, |c, _| {
            let s = as_set_mut(c);
            Ok(members.iter().filter(|m| s.remove(m)).count())
        })?;
        Ok(r.unwrap_or(0))
    }

    /// SMEMBERS: every member (ascending while the set is an intset).
    pub fn smembers(&self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .read_coll(key, Kind::Set, |c| as_set(c).members())?
            .unwrap_or_default())
    }

    /// SISMEMBER.
    pub fn sismember(&self, key: &[u8], member: &[u8]) -> Result<bool> {
        Ok(self
            .read_coll(key, Kind::Set, |c| as_set(c).contains(member))?
            .unwrap_or(false))
    }

    /// SMISMEMBER: each member's presence, in order.
    pub fn smismember(&self, key: &[u8], members: &[&[u8]]) -> Result<Vec<bool>> {
        let r = self.read_coll(key, Kind::Set, |c| {
            let s = as_set(c);
            members.iter().map(|m| s.contains(m)).collect()
        })?;
        Ok(r.unwrap_or_else(|| vec![false; members.len()]))
    }

    /// SCARD.
    pub fn scard(&self, key: &[u8]) -> Result<usize> {
        Ok(self.read_coll(key, Kind::Set, |c| c.len())?.unwrap_or(0))
    }

    /// SPOP without a count: a random member, removed; None if the key is missing.
    pub fn spop(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let r = self.write_coll(key, Kind::Set, false, |c, _| Ok(as_set_mut(c).pop(&mut rng())))?;
        Ok(r.flatten())
    }

    /// SPOP with a count: `min(count, size)` distinct random members, removed (the whole set, in its
    /// order, when `count` reaches its size).
    pub fn spop_count(&self, key: &[u8], count: u64) -> Result<Vec<Vec<u8>>> {
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let alloc = &self.inner.alloc;
        let r = self.write_coll(key, Kind::Set, false, |c, _| {
            let s = as_set_mut(c);
            if count < s.len() {
                return Ok(s.pop_many(count, &mut rng()));
            }
            // All of it: the key goes, and a big set's blocks are freed off the lock, as DEL frees them.
            let all = s.members();
            let old = std::mem::replace(s, Set::new_in(alloc.clone()));
            free_collection(Collection::Set(old));
            Ok(all)
        })?;
        Ok(r.unwrap_or_default())
    }

    /// SRANDMEMBER without a count: a random member; None if the key is missing.
    pub fn srandmember(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .read_coll(key, Kind::Set, |c| as_set(c).random_member(&mut rng()))?
            .flatten())
    }

    /// SRANDMEMBER with a count: `min(count, size)` distinct members when `count >= 0`, exactly `-count`
    /// members with repeats when it is negative (at most 2^24 of them: a count below that is a range error,
    /// where Redis 7.0 runs out of memory building the reply).
    pub fn srandmember_count(&self, key: &[u8], count: i64) -> Result<Vec<Vec<u8>>> {
        let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        // The cap is checked on a set that is there (a missing key is an empty reply, another kind
        // WRONGTYPE, whatever the count).
        let r = self.read_coll(key, Kind::Set, |c| {
            let s = as_set(c);
            if count < -SRANDMEMBER_MAX_REPEATS {
                Err(Error::Msg(SRANDMEMBER_RANGE))
            } else if count < 0 {
                Ok(s.random_members(n, &mut rng()))
            } else {
                Ok(s.sample(n, &mut rng()))
            }
        })?;
        Ok(r.transpose()?.unwrap_or_default())
    }

    /// SMOVE: moves `member` from `src` to `dst` (creating it), and says what changed (Redis replies 1
    /// unless [`Moved::No`]). A missing `src` answers [`Moved::No`] before `dst`'s type is looked at, as
    /// in Redis.
    pub fn smove(&self, src: &[u8], dst: &[u8], member: &[u8]) -> Result<Moved> {
        self.with_keys(&[src, dst], |v| {
            let Some(s) = v.coll(0, Kind::Set)? else {
                return Ok(Moved::No);
            };
            let present = as_set(s).contains(member);
            if v.kind(1).is_some_and(|k| k != Kind::Set) {
                return Err(Error::WrongType);
            }
            if !present {
                return Ok(Moved::No);
            }
            if src == dst {
                return Ok(Moved::InPlace);
            }
            let lim = SetLimits::of(v.limits());
            if let Some(s) = v.coll_mut(0, Kind::Set, false)? {
                as_set_mut(s).remove(member);
            }
            let mut added = false;
            if let Some(d) = v.coll_mut(1, Kind::Set, true)? {
                added = as_set_mut(d).add(member, &lim);
            }
            Ok(Moved::Yes { added })
        })
    }

    fn set_op(&self, op: SetOp, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.with_keys(keys, |v| {
            let sets = sources(v, 0, keys.len())?;
            let lim = SetLimits::of(v.limits());
            match compute(op, &sets, v.alloc(), &lim, false) {
                Output::Members(m) => Ok(m),
                Output::Set(s) => Ok(s.members()),
            }
        })
    }

    fn set_op_store(&self, op: SetOp, dst: &[u8], keys: &[&[u8]]) -> Result<usize> {
        self.deny_oom(dst)?;
        let mut all: Vec<&[u8]> = Vec::with_capacity(keys.len() + 1);
        all.push(dst);
        all.extend_from_slice(keys);
        self.with_keys(&all, |v| {
            let sets = sources(v, 1, keys.len())?;
            let lim = SetLimits::of(v.limits());
            let out = match compute(op, &sets, v.alloc(), &lim, true) {
                Output::Set(s) => s,
                Output::Members(_) => unreachable!("asked for a set"),
            };
            let n = out.len();
            v.put(0, Collection::Set(out))?;
            Ok(n)
        })
    }

    /// SINTER: the members in every set (none if any key is missing).
    pub fn sinter(&self, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.set_op(SetOp::Inter, keys)
    }

    /// SINTERCARD: the size of the intersection, counting stopped at `limit` (0: no limit).
    pub fn sintercard(&self, keys: &[&[u8]], limit: usize) -> Result<usize> {
        self.with_keys(keys, |v| Ok(inter_card(&sources(v, 0, keys.len())?, limit)))
    }

    /// SINTERSTORE: stores the intersection at `dst` (replacing whatever it held; deleting it when
    /// empty); its size.
    pub fn sinterstore(&self, dst: &[u8], keys: &[&[u8]]) -> Result<usize> {
        self.set_op_store(SetOp::Inter, dst, keys)
    }

    /// SUNION.
    pub fn sunion(&self, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.set_op(SetOp::Union, keys)
    }

    /// SUNIONSTORE: as [`Store::sinterstore`], for the union.
    pub fn sunionstore(&self, dst: &[u8], keys: &[&[u8]]) -> Result<usize> {
        self.set_op_store(SetOp::Union, dst, keys)
    }

    /// SDIFF: the members of the first set in none of the others.
    pub fn sdiff(&self, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.set_op(SetOp::Diff, keys)
    }

    /// SDIFFSTORE: as [`Store::sinterstore`], for the difference.
    pub fn sdiffstore(&self, dst: &[u8], keys: &[&[u8]]) -> Result<usize> {
        self.set_op_store(SetOp::Diff, dst, keys)
    }

    /// SSCAN: one step from `cursor` over about `count` members, those matching `pattern` (a Redis glob;
    /// None: all); the next cursor (0: done) and the members. A missing key is an empty, finished scan.
    pub fn sscan(
        &self,
        key: &[u8],
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
    ) -> Result<(u64, Vec<Vec<u8>>)> {
        let r = self.read_coll(key, Kind::Set, |c| {
            let mut out = Vec::new();
            let next = as_set(c).scan(cursor, count, |m| {
                if pattern.is_none_or(|p| crate::redis_util::glob_match(p, m)) {
                    out.push(m.to_vec());
                }
            });
            (next, out)
        })?;
        Ok(r.unwrap_or((0, Vec::new())))
    }
}
