//! Writing one value in Redis's RDB object format (the type byte, then its body), in the encodings
//! Redis 7.0 writes and loads: a string as itself, a list as quicklist 2 (listpack nodes cut where
//! Redis's `list-max-listpack-size` would cut them), a small hash or sorted set as one listpack, an
//! integer set as an intset, and the large forms as plain element sequences (Redis loads those into the
//! form its own thresholds pick). Streams are written by `persist::stream_write`.

use super::stream_write::write_stream;
use crate::alloc::KvAlloc;
use crate::rdb::encode::Encoder;
use crate::rdb::listpack::ListpackWriter;
use crate::rdb::{self};
use crate::types::zset::format_score;
use crate::types::{Collection, Limits};

/// What a key holds, to write.
pub enum Obj<'a, A: KvAlloc> {
    Str(&'a [u8]),
    Coll(&'a Collection<A>),
}

/// Redis's guess of what an element adds to a listpack node, on top of its bytes.
const NODE_ESTIMATE_OVERHEAD: usize = 8;
/// A node of a positive `list-max-listpack-size` still stops at these bytes.
const NODE_SAFETY_LIMIT: usize = 8192;
/// An element this long is a node of its own ("plain"), as in Redis.
const PLAIN_ELEMENT: usize = 1 << 30;

/// Whether a listpack node of `bytes` bytes and `count` entries takes an element of `len` bytes under
/// `list-max-listpack-size` `fill` (Redis's `_quicklistNodeAllowInsert`).
fn node_takes(bytes: usize, count: usize, len: usize, fill: i64) -> bool {
    let new = bytes + len + NODE_ESTIMATE_OVERHEAD;
    if fill < 0 {
        let level = (-fill - 1).min(4) as u32;
        return new <= 4096 << level;
    }
    new <= NODE_SAFETY_LIMIT && (count as i64) < fill && count < u16::MAX as usize
}

/// The type byte `obj` is written with.
pub fn object_type<A: KvAlloc>(obj: &Obj<'_, A>) -> u8 {
    match obj {
        Obj::Str(_) => rdb::RDB_TYPE_STRING,
        Obj::Coll(Collection::List(_)) => rdb::RDB_TYPE_LIST_QUICKLIST_2,
        Obj::Coll(Collection::Hash(h)) if h.encoding() == "listpack" => rdb::RDB_TYPE_HASH_LISTPACK,
        Obj::Coll(Collection::Hash(_)) => rdb::RDB_TYPE_HASH,
        Obj::Coll(Collection::Set(s)) if s.encoding() == "intset" => rdb::RDB_TYPE_SET_INTSET,
        Obj::Coll(Collection::Set(_)) => rdb::RDB_TYPE_SET,
        Obj::Coll(Collection::ZSet(z)) if z.encoding() == "listpack" => rdb::RDB_TYPE_ZSET_LISTPACK,
        Obj::Coll(Collection::ZSet(_)) => rdb::RDB_TYPE_ZSET_2,
        Obj::Coll(Collection::Stream(_)) => rdb::RDB_TYPE_STREAM_LISTPACKS_2,
    }
}

/// Writes `obj`'s type byte and body (DUMP's order; a snapshot puts the key between them).
pub fn write_object<A: KvAlloc>(e: &mut Encoder, obj: Obj<'_, A>, limits: &Limits) {
    e.u8(object_type(&obj));
    write_value(e, obj, limits);
}

/// Writes `obj`'s body in the encoding [`object_type`] names.
pub fn write_value<A: KvAlloc>(e: &mut Encoder, obj: Obj<'_, A>, limits: &Limits) {
    let t = object_type(&obj);
    let c = match obj {
        Obj::Str(s) => {
            e.string(s);
            return;
        }
        Obj::Coll(c) => c,
    };
    match (t, c) {
        (_, Collection::List(l)) => write_quicklist(e, l.iter_from(0), limits.list_node),
        (rdb::RDB_TYPE_HASH_LISTPACK, Collection::Hash(h)) => {
            let mut lp = ListpackWriter::new();
            for (f, v) in h.iter() {
                lp.push_str(f);
                lp.push_str(v);
            }
            e.string(&lp.finish());
        }
        (_, Collection::Hash(h)) => {
            e.len(h.len() as u64);
            for (f, v) in h.iter() {
                e.string(f);
                e.string(v);
            }
        }
        (rdb::RDB_TYPE_SET_INTSET, Collection::Set(s)) => {
            let mut ints = Vec::with_capacity(s.len());
            s.for_each(|m| ints.extend(std::str::from_utf8(m).ok().and_then(|t| t.parse::<i64>().ok())));
            ints.sort_unstable();
            e.string(&intset_bytes(&ints));
        }
        (_, Collection::Set(s)) => {
            e.len(s.len() as u64);
            s.for_each(|m| e.string(m));
        }
        (rdb::RDB_TYPE_ZSET_LISTPACK, Collection::ZSet(z)) => {
            let mut lp = ListpackWriter::new();
            for (m, s) in z.iter() {
                lp.push_str(m);
                lp.push_str(format_score(s).as_bytes());
            }
            e.string(&lp.finish());
        }
        (_, Collection::ZSet(z)) => {
            e.len(z.len() as u64);
            // Highest first, as Redis writes a skiplist: its loader then inserts each at the head.
            for (m, s) in z.walk(z.len().saturating_sub(1), true) {
                e.string(m);
                e.binary_double(s);
            }
        }
        (_, Collection::Stream(s)) => write_stream(e, s, limits),
    }
}

/// A list as quicklist 2: the node count, then each node's container and listpack (or plain element).
fn write_quicklist<'a>(e: &mut Encoder, elems: impl Iterator<Item = &'a [u8]>, fill: i64) {
    enum Node {
        Packed(Vec<u8>),
        Plain(Vec<u8>),
    }
    let mut nodes = Vec::new();
    let mut cur: Option<ListpackWriter> = None;
    for x in elems {
        if x.len() >= PLAIN_ELEMENT {
            nodes.extend(cur.take().map(|w| Node::Packed(w.finish())));
            nodes.push(Node::Plain(x.to_vec()));
            continue;
        }
        if let Some(w) = &cur {
            if !node_takes(w.bytes_len(), w.len(), x.len(), fill) {
                nodes.extend(cur.take().map(|w| Node::Packed(w.finish())));
            }
        }
        cur.get_or_insert_with(ListpackWriter::new).push_str(x);
    }
    nodes.extend(cur.take().map(|w| Node::Packed(w.finish())));
    e.len(nodes.len() as u64);
    for n in &nodes {
        match n {
            Node::Packed(lp) => {
                e.len(rdb::QUICKLIST_NODE_CONTAINER_PACKED);
                e.string(lp);
            }
            Node::Plain(x) => {
                e.len(rdb::QUICKLIST_NODE_CONTAINER_PLAIN);
                e.string(x);
            }
        }
    }
}

/// Redis's intset of `ints` (ascending): the narrowest width that holds them all, then the members.
pub(crate) fn intset_bytes(ints: &[i64]) -> Vec<u8> {
    let width: u32 = if ints.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if ints.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + ints.len() * width as usize);
    out.extend_from_slice(&width.to_le_bytes());
    out.extend_from_slice(&(ints.len() as u32).to_le_bytes());
    for &v in ints {
        out.extend_from_slice(&v.to_le_bytes()[..width as usize]);
    }
    out
}
