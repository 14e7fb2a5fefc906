//! The store's list commands (LPUSH, RPOP, LRANGE, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE, LMPOP...),
//! over [`Store::read_coll`], [`Store::write_coll`] and [`Store::with_keys`] (`collections.rs`); the
//! data structure is `crate::types::list`.
//!
//! Indexes and counts arrive as Redis reads them (negative indexes count from the tail); the argument
//! checks that come before the key is looked up (a count that is not positive...) are the caller's, as
//! they are the protocol's.

use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::list::{End, List};
use crate::types::{Collection, Kind};

/// LSET's error for an index outside the list.
const INDEX_OUT_OF_RANGE: Error = Error::Msg("ERR index out of range");

fn list<A: KvAlloc>(c: &Collection<A>) -> &List<A> {
    match c {
        Collection::List(l) => l,
        _ => unreachable!("the kind was checked to be a list"),
    }
}

fn list_mut<A: KvAlloc>(c: &mut Collection<A>) -> &mut List<A> {
    match c {
        Collection::List(l) => l,
        _ => unreachable!("the kind was checked to be a list"),
    }
}

impl<A: KvAlloc> Store<A> {
    /// Runs `f` on the list at `key` under the read lock: `Ok(None)` if there is none, WRONGTYPE if the
    /// key holds something else. (LRANGE writes its reply from inside, without copying the elements.)
    pub fn read_list<R>(&self, key: &[u8], f: impl FnOnce(&List<A>) -> R) -> Result<Option<R>> {
        self.read_coll(key, Kind::List, |c| f(list(c)))
    }

    /// LPUSH / RPUSH (each element in turn, so LPUSH reverses them), or with `existing_only` LPUSHX /
    /// RPUSHX: the list's length after, 0 when `existing_only` and there is no list.
    ///
    /// Like every command Redis flags `denyoom` (LSET and LINSERT too), this makes room under
    /// `maxmemory` first, or fails with OOM, whether or not the key is there: they all reach the key
    /// through `write_coll`'s creating path, and leave a list they find missing uncreated.
    pub fn list_push(
        &self,
        key: &[u8],
        end: End,
        elems: &[impl AsRef<[u8]>],
        existing_only: bool,
    ) -> Result<usize> {
        let r = self.write_coll(key, Kind::List, true, |c, limits| {
            let l = list_mut(c);
            if existing_only && l.is_empty() {
                return Ok(0);
            }
            for e in elems {
                l.push(end, e.as_ref(), limits);
            }
            Ok(l.len())
        })?;
        Ok(r.unwrap_or(0))
    }

    /// LPOP / RPOP of one element: None when there is no list.
    pub fn list_pop(&self, key: &[u8], end: End) -> Result<Option<Vec<u8>>> {
        self.list_pop_with(key, end, <[u8]>::to_vec)
    }

    /// LPOP / RPOP of one element, handed to `f` under the key's lock before it goes (a server writes
    /// its reply there, without a copy): `f`'s result, None when there is no list.
    pub fn list_pop_with<R>(&self, key: &[u8], end: End, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Ok(self
            .write_coll(key, Kind::List, false, |c, _| Ok(list_mut(c).pop_with(end, f)))?
            .flatten())
    }

    /// LPOP / RPOP with a count: up to `count` elements in the order popped (none for 0, and the list
    /// unchanged); None when there is no list.
    pub fn list_pop_many(&self, key: &[u8], end: End, count: usize) -> Result<Option<Vec<Vec<u8>>>> {
        self.write_coll(
            key,
            Kind::List,
            false,
            |c, _| Ok(list_mut(c).pop_many(end, count)),
        )
    }

    /// LMPOP (and what a blocking pop tries first): up to `count` elements from one end of the first
    /// key in `keys` that holds a list, with that key's index; None when no key does. A key before it
    /// that holds another kind is WRONGTYPE (and nothing is popped); keys after it are not looked at.
    pub fn list_pop_first(
        &self,
        keys: &[&[u8]],
        end: End,
        count: usize,
    ) -> Result<Option<(usize, Vec<Vec<u8>>)>> {
        self.with_keys(keys, |v| {
            for i in 0..keys.len() {
                if v.coll(i, Kind::List)?.is_none() {
                    continue;
                }
                let c = v.coll_mut(i, Kind::List, false)?.expect("the list is there");
                return Ok(Some((i, list_mut(c).pop_many(end, count))));
            }
            Ok(None)
        })
    }

    /// LLEN: 0 when there is no list.
    pub fn llen(&self, key: &[u8]) -> Result<usize> {
        Ok(self.read_list(key, |l| l.len())?.unwrap_or(0))
    }

    /// LINDEX: the element at `index` (negative from the tail), None when outside or no list.
    pub fn lindex(&self, key: &[u8], index: i64) -> Result<Option<Vec<u8>>> {
        Ok(self
            .read_list(key, |l| l.index(index).and_then(|i| l.get(i)).map(<[u8]>::to_vec))?
            .flatten())
    }

    /// LRANGE: the elements from `start` to `stop` inclusive (negative from the tail, clamped).
    pub fn lrange(&self, key: &[u8], start: i64, stop: i64) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .read_list(key, |l| match l.range_of(start, stop) {
                Some((s, n)) => l.iter_from(s).take(n).map(<[u8]>::to_vec).collect(),
                None => Vec::new(),
            })?
            .unwrap_or_default())
    }

    /// LSET: [`Error::NoSuchKey`] without a list, `ERR index out of range` for an index outside it.
    pub fn lset(&self, key: &[u8], index: i64, elem: &[u8]) -> Result<()> {
        self.write_coll(key, Kind::List, true, |c, limits| {
            let l = list_mut(c);
            if l.is_empty() {
                return Err(Error::NoSuchKey);
            }
            let i = l.index(index).ok_or(INDEX_OUT_OF_RANGE)?;
            l.set(i, elem, limits);
            Ok(())
        })?
        .ok_or(Error::NoSuchKey)
    }

    /// LINSERT: `elem` before (or after) the first `pivot` from the head; the list's length after, -1
    /// when there is no pivot, 0 when there is no list.
    pub fn linsert(&self, key: &[u8], after: bool, pivot: &[u8], elem: &[u8]) -> Result<i64> {
        let r = self.write_coll(key, Kind::List, true, |c, limits| {
            let l = list_mut(c);
            if l.is_empty() {
                return Ok(0);
            }
            Ok(if l.insert_by_pivot(pivot, after, elem, limits) {
                l.len() as i64
            } else {
                -1
            })
        })?;
        Ok(r.unwrap_or(0))
    }

    /// LREM: removes the first `count` elements equal to `elem` (the last `-count` when negative, all
    /// when 0); how many went.
    pub fn lrem(&self, key: &[u8], count: i64, elem: &[u8]) -> Result<usize> {
        let r = self.write_coll(key, Kind::List, false, |c, limits| {
            Ok(list_mut(c).remove_matching(elem, count, limits))
        })?;
        Ok(r.unwrap_or(0))
    }

    /// LTRIM: keeps `start..=stop` (as LRANGE reads it); a list left empty is removed.
    pub fn ltrim(&self, key: &[u8], start: i64, stop: i64) -> Result<()> {
        self.write_coll(key, Kind::List, false, |c, _| {
            list_mut(c).trim(start, stop);
            Ok(())
        })?;
        Ok(())
    }

    /// LPOS: the indexes of elements equal to `elem` (see [`List::positions`]: `rank` is not 0, `count`
    /// and `maxlen` 0 mean no limit); None when there is no list.
    pub fn lpos(
        &self,
        key: &[u8],
        elem: &[u8],
        rank: i64,
        count: usize,
        maxlen: usize,
    ) -> Result<Option<Vec<usize>>> {
        self.read_list(key, |l| l.positions(elem, rank, count, maxlen))
    }

    /// LMOVE (RPOPLPUSH is `Right, Left`): pops from `from` of `src`, pushes at `to` of `dst`, returns the
    /// element; None when `src` has no list. WRONGTYPE on either key before anything moves; `src` and
    /// `dst` may be the same list (which rotates it). Over `maxmemory`, room is made first or OOM
    /// returned, as for Redis's other `denyoom` commands.
    pub fn lmove(&self, src: &[u8], dst: &[u8], from: End, to: End) -> Result<Option<Vec<u8>>> {
        self.deny_oom(dst)?;
        self.with_keys(&[src, dst], |v| {
            if v.coll(0, Kind::List)?.is_none() {
                return Ok(None);
            }
            // Checks the destination's kind, and creates it before anything is popped, so that failing
            // to allocate it loses nothing.
            v.coll_mut(1, Kind::List, true)?;
            let limits = *v.limits();
            let c = v
                .coll_mut(0, Kind::List, false)?
                .expect("the source list is there");
            let e = list_mut(c).pop(from).expect("a list is never empty");
            let c = v
                .coll_mut(1, Kind::List, true)?
                .expect("the destination was created");
            list_mut(c).push(to, &e, &limits);
            Ok(Some(e))
        })
    }
}
