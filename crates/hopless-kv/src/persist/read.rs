//! Reading one value in Redis's RDB object format (the type byte, then its body) into a string or a
//! [`Collection`]: every encoding Redis 7.0 writes (listpacks, intsets, quicklist 2) and every older one
//! it still loads (ziplists, zipmaps, quicklist 1, the plain forms of Redis 2 to 6). Streams are read by
//! `persist::stream_read`.
//!
//! A collection is rebuilt through its type's own inserts with the store's limits, so it takes the form
//! hopless would give the same members (a listpack hash Redis wrote may come out large here, and the
//! other way round). Anything inconsistent (a duplicate member, a NaN score, an empty collection, an
//! entry past its encoding's bounds) is refused as a whole: nothing half-read is ever installed.

use std::borrow::Cow;

use allocator_api2::boxed::Box;

use super::error::LoadError;
use super::stream_read::read_stream;
use crate::alloc::KvAlloc;
use crate::rdb::decode::Decoder;
use crate::rdb::listpack::Elem;
use crate::rdb::{self, intset, listpack, ziplist, zipmap};
use crate::types::list::End;
use crate::types::set::SetLimits;
use crate::types::zset::parse_score;
use crate::types::{Collection, Hash, Limits, List, Set, ZSet};

/// A value read from a snapshot or a DUMP payload, ready to install.
pub enum Loaded<A: KvAlloc> {
    Str(Vec<u8>),
    Coll(Collection<A>),
}

/// An element of a packed encoding as the bytes Redis would reply with (an integer in decimal).
fn elem_bytes(e: Elem<'_>) -> Cow<'_, [u8]> {
    match e {
        Elem::Str(s) => Cow::Borrowed(s),
        Elem::Int(i) => Cow::Owned(i.to_string().into_bytes()),
    }
}

/// A score stored as text (ziplist and listpack sorted sets, the old ZSET type), as Redis's `strtod`.
fn score_of(text: &[u8]) -> Result<f64, LoadError> {
    parse_score(text).ok_or(LoadError::Corrupt)
}

/// Reads the value of type `t` (the byte before it) at `d`.
pub fn read_object<A: KvAlloc>(
    t: u8,
    d: &mut Decoder<'_>,
    alloc: &A,
    limits: &Limits,
) -> Result<Loaded<A>, LoadError> {
    let coll = match t {
        rdb::RDB_TYPE_STRING => return Ok(Loaded::Str(d.string()?.into_owned())),
        rdb::RDB_TYPE_LIST => {
            let n = d.length()?;
            let mut l = List::new_in(alloc.clone());
            for _ in 0..n {
                l.push(End::Right, &d.string()?, limits);
            }
            list(l, alloc)
        }
        rdb::RDB_TYPE_LIST_ZIPLIST => {
            let mut l = List::new_in(alloc.clone());
            for e in ziplist::entries(&d.string()?)? {
                l.push(End::Right, &elem_bytes(e), limits);
            }
            list(l, alloc)
        }
        rdb::RDB_TYPE_LIST_QUICKLIST | rdb::RDB_TYPE_LIST_QUICKLIST_2 => {
            read_quicklist(t == rdb::RDB_TYPE_LIST_QUICKLIST_2, d, alloc, limits)?
        }
        rdb::RDB_TYPE_SET => {
            let n = d.length()?;
            let mut s = Set::new_in(alloc.clone());
            let lim = SetLimits::of(limits);
            for _ in 0..n {
                if !s.add(&d.string()?, &lim) {
                    return Err(LoadError::Corrupt);
                }
            }
            Collection::Set(s)
        }
        rdb::RDB_TYPE_SET_INTSET => {
            let mut s = Set::new_in(alloc.clone());
            let lim = SetLimits::of(limits);
            for m in intset::members(&d.string()?)? {
                s.add(m.to_string().as_bytes(), &lim);
            }
            Collection::Set(s)
        }
        rdb::RDB_TYPE_ZSET | rdb::RDB_TYPE_ZSET_2 => {
            let n = d.length()?;
            let mut z = ZSet::new_in(alloc.clone());
            // Members of any length may follow: the first one's length is not a hint, the count is.
            z.prepare(usize::try_from(n).unwrap_or(usize::MAX), 0, limits);
            for _ in 0..n {
                let m = d.string()?;
                let s = if t == rdb::RDB_TYPE_ZSET_2 {
                    d.binary_double()?
                } else {
                    d.old_double()?
                };
                if s.is_nan() || !z.insert(&m, s, limits) {
                    return Err(LoadError::Corrupt);
                }
            }
            Collection::ZSet(z)
        }
        rdb::RDB_TYPE_ZSET_ZIPLIST | rdb::RDB_TYPE_ZSET_LISTPACK => {
            let blob = d.string()?;
            let elems = if t == rdb::RDB_TYPE_ZSET_LISTPACK {
                listpack::entries(&blob)?
            } else {
                ziplist::entries(&blob)?
            };
            if elems.len() % 2 != 0 {
                return Err(LoadError::Corrupt);
            }
            let mut z = ZSet::new_in(alloc.clone());
            z.prepare(elems.len() / 2, 0, limits);
            for pair in elems.chunks_exact(2) {
                let s = score_of(&elem_bytes(pair[1]))?;
                if !z.insert(&elem_bytes(pair[0]), s, limits) {
                    return Err(LoadError::Corrupt);
                }
            }
            Collection::ZSet(z)
        }
        rdb::RDB_TYPE_HASH => {
            let n = d.length()?;
            let mut h = Hash::new_in(alloc.clone());
            for _ in 0..n {
                let f = d.string()?;
                let v = d.string()?;
                if !h.set(&f, &v, limits) {
                    return Err(LoadError::Corrupt);
                }
            }
            Collection::Hash(h)
        }
        rdb::RDB_TYPE_HASH_ZIPMAP => {
            let mut h = Hash::new_in(alloc.clone());
            for (f, v) in zipmap::pairs(&d.string()?)? {
                if !h.set(f, v, limits) {
                    return Err(LoadError::Corrupt);
                }
            }
            Collection::Hash(h)
        }
        rdb::RDB_TYPE_HASH_ZIPLIST | rdb::RDB_TYPE_HASH_LISTPACK => {
            let blob = d.string()?;
            let elems = if t == rdb::RDB_TYPE_HASH_LISTPACK {
                listpack::entries(&blob)?
            } else {
                ziplist::entries(&blob)?
            };
            if elems.len() % 2 != 0 {
                return Err(LoadError::Corrupt);
            }
            let mut h = Hash::new_in(alloc.clone());
            for pair in elems.chunks_exact(2) {
                if !h.set(&elem_bytes(pair[0]), &elem_bytes(pair[1]), limits) {
                    return Err(LoadError::Corrupt);
                }
            }
            Collection::Hash(h)
        }
        rdb::RDB_TYPE_STREAM_LISTPACKS | rdb::RDB_TYPE_STREAM_LISTPACKS_2 => {
            let s = read_stream(t == rdb::RDB_TYPE_STREAM_LISTPACKS_2, d, alloc, limits)?;
            // A stream stays a key when empty: it is never refused as an empty collection.
            return Ok(Loaded::Coll(Collection::Stream(
                Box::try_new_in(s, alloc.clone()).map_err(|_| LoadError::NoMemory)?,
            )));
        }
        rdb::RDB_TYPE_MODULE | rdb::RDB_TYPE_MODULE_2 => return Err(LoadError::Module),
        other => return Err(LoadError::UnknownType(other)),
    };
    if coll.is_empty() {
        return Err(LoadError::Empty);
    }
    Ok(Loaded::Coll(coll))
}

fn list<A: KvAlloc>(l: List<A>, alloc: &A) -> Collection<A> {
    Collection::List(Box::new_in(l, alloc.clone()))
}

/// A quicklist: a count of nodes, each a ziplist (quicklist 1) or a container byte then a listpack or
/// one plain element (quicklist 2). Empty nodes are skipped, as Redis skips them.
fn read_quicklist<A: KvAlloc>(
    v2: bool,
    d: &mut Decoder<'_>,
    alloc: &A,
    limits: &Limits,
) -> Result<Collection<A>, LoadError> {
    let nodes = d.length()?;
    let mut l = List::new_in(alloc.clone());
    for _ in 0..nodes {
        let container = if v2 {
            d.length()?
        } else {
            rdb::QUICKLIST_NODE_CONTAINER_PACKED
        };
        let blob = d.string()?;
        match container {
            rdb::QUICKLIST_NODE_CONTAINER_PLAIN => l.push(End::Right, &blob, limits),
            rdb::QUICKLIST_NODE_CONTAINER_PACKED => {
                let elems = if v2 {
                    listpack::entries(&blob)?
                } else {
                    ziplist::entries(&blob)?
                };
                for e in elems {
                    l.push(End::Right, &elem_bytes(e), limits);
                }
            }
            _ => return Err(LoadError::Corrupt),
        }
    }
    Ok(list(l, alloc))
}
