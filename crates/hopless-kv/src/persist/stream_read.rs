//! A stream read from its RDB form: Redis 7.0's `STREAM_LISTPACKS_2` and Redis 5/6's `STREAM_LISTPACKS`
//! (no first id, greatest deleted id, entries added or entries read: taken as Redis 7.0 takes them).
//! Each node's listpack is walked as Redis's stream iterator walks it; live entries are added in id
//! order (a deleted one is left out), so the nodes are rebuilt by this store's own limits. Every count
//! the form repeats is checked against what was read.

use super::error::LoadError;
use crate::alloc::KvAlloc;
use crate::rdb::decode::Decoder;
use crate::rdb::listpack::{self, Elem};
use crate::types::stream::{IdSpec, StreamId};
use crate::types::{Limits, Stream};

const DELETED: i64 = 1;
const SAME_FIELDS: i64 = 2;

fn raw_id(b: &[u8]) -> Result<StreamId, LoadError> {
    if b.len() != 16 {
        return Err(LoadError::Corrupt);
    }
    let ms = u64::from_be_bytes(b[..8].try_into().map_err(|_| LoadError::Corrupt)?);
    let seq = u64::from_be_bytes(b[8..].try_into().map_err(|_| LoadError::Corrupt)?);
    Ok(StreamId { ms, seq })
}

fn id_pair(d: &mut Decoder<'_>) -> Result<StreamId, LoadError> {
    Ok(StreamId {
        ms: d.length()?,
        seq: d.length()?,
    })
}

/// The elements of one node's listpack, read in order.
struct Elems<'a> {
    e: Vec<Elem<'a>>,
    at: usize,
}

impl<'a> Elems<'a> {
    fn next(&mut self) -> Result<Elem<'a>, LoadError> {
        let x = *self.e.get(self.at).ok_or(LoadError::Corrupt)?;
        self.at += 1;
        Ok(x)
    }

    fn int(&mut self) -> Result<i64, LoadError> {
        match self.next()? {
            Elem::Int(i) => Ok(i),
            Elem::Str(_) => Err(LoadError::Corrupt),
        }
    }

    /// A string element (an integer one as its decimal text).
    fn bytes(&mut self) -> Result<Vec<u8>, LoadError> {
        Ok(match self.next()? {
            Elem::Int(i) => i.to_string().into_bytes(),
            Elem::Str(s) => s.to_vec(),
        })
    }

    fn done(&self) -> bool {
        self.at == self.e.len()
    }
}

/// Adds the live entries of one node (master id `master`, listpack `lp`) to `s`.
fn read_node<A: KvAlloc>(
    s: &mut Stream<A>,
    master: StreamId,
    lp: &[u8],
    limits: &Limits,
) -> Result<(), LoadError> {
    let mut el = Elems {
        e: listpack::entries(lp)?,
        at: 0,
    };
    if el.done() {
        // Redis never writes an empty node.
        return Err(LoadError::Corrupt);
    }
    let live = el.int()?;
    let deleted = el.int()?;
    let nfields = el.int()?;
    if nfields < 0 || nfields as usize > el.e.len() {
        return Err(LoadError::Corrupt);
    }
    let fields: Vec<Vec<u8>> = (0..nfields).map(|_| el.bytes()).collect::<Result<_, _>>()?;
    if el.int()? != 0 {
        return Err(LoadError::Corrupt);
    }
    let (mut seen_live, mut seen_deleted) = (0, 0);
    while !el.done() {
        let flags = el.int()?;
        let id = StreamId {
            ms: master.ms.wrapping_add(el.int()? as u64),
            seq: master.seq.wrapping_add(el.int()? as u64),
        };
        let same = flags & SAME_FIELDS != 0;
        let n = if same { nfields } else { el.int()? };
        if n < 0 || n as usize > el.e.len() {
            return Err(LoadError::Corrupt);
        }
        let mut pairs: Vec<Vec<u8>> = Vec::with_capacity(2 * n as usize);
        if same {
            for f in &fields {
                pairs.push(f.clone());
                pairs.push(el.bytes()?);
            }
        } else {
            for _ in 0..n {
                pairs.push(el.bytes()?);
                pairs.push(el.bytes()?);
            }
        }
        let elements = n + 3 + if same { 0 } else { n + 1 };
        if el.int()? != elements {
            return Err(LoadError::Corrupt);
        }
        if flags & DELETED != 0 {
            seen_deleted += 1;
            continue;
        }
        seen_live += 1;
        let refs: Vec<&[u8]> = pairs.iter().map(|p| &p[..]).collect();
        if refs.is_empty() || s.add(IdSpec::Exact(id), &refs, 0, limits).is_err() {
            return Err(LoadError::Corrupt);
        }
    }
    if seen_live != live || seen_deleted != deleted {
        return Err(LoadError::Corrupt);
    }
    Ok(())
}

/// Reads a stream's RDB form (`v2`: Redis 7.0's) at `d`.
pub(super) fn read_stream<A: KvAlloc>(
    v2: bool,
    d: &mut Decoder<'_>,
    alloc: &A,
    limits: &Limits,
) -> Result<Stream<A>, LoadError> {
    let mut s = Stream::new_in(alloc.clone());
    let nodes = d.length()?;
    for _ in 0..nodes {
        let key = d.string()?;
        let master = raw_id(&key)?;
        let lp = d.string()?;
        read_node(&mut s, master, &lp, limits)?;
    }
    let length = d.length()?;
    let last = id_pair(d)?;
    let (max_deleted, entries_added) = if v2 {
        let _first = id_pair(d)?;
        (id_pair(d)?, d.length()?)
    } else {
        (StreamId::MIN, length)
    };
    if length != s.len() as u64 || (!s.is_empty() && last < s.last_entry_id()) {
        return Err(LoadError::Corrupt);
    }
    s.set_ids(last, Some(entries_added), Some(max_deleted));
    let groups = d.length()?;
    for _ in 0..groups {
        let name = d.string()?;
        let last_id = id_pair(d)?;
        // Written as an unsigned length: 2^64 - 1 is -1, "not known". Redis 5 and 6 do not write it:
        // Redis 7.0 works it out from the group's last id.
        let entries_read = if v2 {
            d.length()? as i64
        } else {
            s.entries_through(last_id)
        };
        if !s.create_group(&name, last_id, entries_read) {
            return Err(LoadError::Corrupt);
        }
        let g = s.group_mut(&name).ok_or(LoadError::Corrupt)?;
        let pel = d.length()?;
        for _ in 0..pel {
            let id = raw_id(d.bytes(16)?)?;
            let delivered = d.millis()?;
            let count = d.length()?;
            if !g.load_nack(id, delivered.max(0) as u64, count) {
                return Err(LoadError::Corrupt);
            }
        }
        let consumers = d.length()?;
        for _ in 0..consumers {
            let cname = d.string()?;
            let seen = d.millis()?;
            let n = d.length()?;
            let mut ids = Vec::new();
            for _ in 0..n {
                ids.push(raw_id(d.bytes(16)?)?);
            }
            if !g.load_consumer(&cname, seen.max(0) as u64, &ids) {
                return Err(LoadError::Corrupt);
            }
        }
    }
    Ok(s)
}
