//! One node of a stream: up to `stream-node-max-entries` entries (live and deleted) packed in one block,
//! as Redis packs them into one listpack under its radix tree. The node's first entry's field names are
//! its master fields, and an entry with the same field names stores its values alone.
//!
//! The block: the master fields (a count, then each name), then the entries, each a flags byte, its id
//! as the milliseconds after the node's master id's and its sequence number (varints), and either the
//! values (same fields as the master) or a field count and the fields with their values; every string a
//! varint length and its bytes. A deleted entry stays in the block, flagged, as in Redis.
//!
//! Beside the block, each node keeps the size Redis's listpack of the same entries would have
//! ([`Node::lp_bytes`]), since Redis starts a new node when that size reaches `stream-node-max-bytes`:
//! where a node ends decides what an approximate trim (`MAXLEN ~`) removes, so it follows Redis's count.

use allocator_api2::vec::Vec;

use super::id::StreamId;
use crate::alloc::KvAlloc;

pub(super) const DELETED: u8 = 1;
pub(super) const SAME_FIELDS: u8 = 2;

/// A listpack's header (total bytes, element count) and end byte.
const LP_OVERHEAD: usize = 6 + 1;

/// The bytes of a listpack element's back-length for an element of `l` bytes.
fn lp_backlen(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// The bytes of an integer element of a listpack.
pub(super) fn lp_int(v: i64) -> usize {
    let enc = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8388608..=8388607 => 4,
        -2147483648..=2147483647 => 5,
        _ => 9,
    };
    enc + 1
}

/// The bytes of a string element of a listpack (stored as an integer when it reads as one, as
/// `lpAppend` does).
pub(super) fn lp_str(s: &[u8]) -> usize {
    if let Some(v) = crate::redis_util::parse_i64(s) {
        return lp_int(v);
    }
    let enc = match s.len() {
        0..=63 => 1 + s.len(),
        64..=4095 => 2 + s.len(),
        n => 5 + n,
    };
    enc + lp_backlen(enc)
}

fn put_varint<A: KvAlloc>(v: &mut Vec<u8, A>, mut n: u64) {
    while n >= 0x80 {
        v.push((n as u8) | 0x80);
        n >>= 7;
    }
    v.push(n as u8);
}

fn get_varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut n = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*pos];
        *pos += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

fn put_str<A: KvAlloc>(v: &mut Vec<u8, A>, s: &[u8]) {
    put_varint(v, s.len() as u64);
    v.extend_from_slice(s);
}

fn get_str<'a>(b: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let n = get_varint(b, pos) as usize;
    let s = &b[*pos..*pos + n];
    *pos += n;
    s
}

pub(super) struct Node<A: KvAlloc> {
    /// The id of the node's first entry (the radix tree key in Redis): every entry's id is at least this,
    /// and below the next node's.
    pub(super) master: StreamId,
    /// Live entries.
    pub(super) live: u32,
    /// Entries flagged deleted.
    pub(super) deleted: u32,
    /// Where the entries start in `data` (after the master fields).
    entries_at: u32,
    /// The listpack's bytes but its `count` and `deleted` elements (see [`Node::lp_bytes`]).
    lp_rest: usize,
    data: Vec<u8, A>,
}

/// An entry in a node: where it is, and how to read it.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    /// The entry's flags byte.
    pub(super) at: usize,
    pub(super) id: StreamId,
    pub(super) deleted: bool,
    /// Where its strings start, how many there are, and whether they are values alone.
    strings_at: usize,
    pub(super) fields: usize,
    /// Whether its field names are the master fields (its values stand alone).
    pub(super) same: bool,
    /// The entry after it.
    pub(super) end: usize,
}

impl<A: KvAlloc> Node<A> {
    /// A node whose master fields are `pairs`' names (`pairs` holds names and values in turn), with no
    /// entry yet, its block `reserve` bytes to start with (so that it does not grow by doubling; it is
    /// shrunk to its entries when the next node starts).
    pub(super) fn new_in(master: StreamId, pairs: &[&[u8]], reserve: usize, alloc: A) -> Self {
        let mut data = Vec::new_in(alloc);
        data.reserve_exact(reserve);
        let fields = pairs.len() / 2;
        put_varint(&mut data, fields as u64);
        let mut lp_rest = LP_OVERHEAD + lp_int(fields as i64) + lp_int(0);
        for f in pairs.iter().step_by(2) {
            put_str(&mut data, f);
            lp_rest += lp_str(f);
        }
        Node {
            master,
            live: 0,
            deleted: 0,
            entries_at: data.len() as u32,
            lp_rest,
            data,
        }
    }

    /// The size of Redis's listpack of the same entries.
    pub(super) fn lp_bytes(&self) -> usize {
        self.lp_rest + lp_int(i64::from(self.live)) + lp_int(i64::from(self.deleted))
    }

    /// Entries in the node, live and deleted.
    pub(super) fn total(&self) -> u32 {
        self.live + self.deleted
    }

    /// Bytes of the node's block.
    pub(super) fn bytes(&self) -> usize {
        self.data.capacity()
    }

    pub(super) fn master_fields(&self) -> impl Iterator<Item = &[u8]> {
        let mut pos = 0;
        let n = get_varint(&self.data, &mut pos);
        (0..n).map(move |_| get_str(&self.data, &mut pos))
    }

    /// Appends entry `id` (above every id in the node) with `pairs` (names and values in turn).
    pub(super) fn push(&mut self, id: StreamId, pairs: &[&[u8]]) {
        let n = pairs.len() / 2;
        let same = {
            let mut names = pairs.iter().step_by(2);
            let mut master = self.master_fields();
            let mut count = 0;
            loop {
                match (names.next(), master.next()) {
                    (Some(a), Some(b)) if *a == b => count += 1,
                    (None, None) => break count == n,
                    _ => break false,
                }
            }
        };
        let ms_delta = id.ms.wrapping_sub(self.master.ms);
        self.data.push(if same { SAME_FIELDS } else { 0 });
        put_varint(&mut self.data, ms_delta);
        put_varint(&mut self.data, id.seq);
        // Redis's elements: flags, the two deltas, the field count unless the same fields, the strings,
        // and the count of the entry's elements (for walking back).
        let seq_delta = id.seq.wrapping_sub(self.master.seq) as i64;
        let mut lp = lp_int(0) + lp_int(ms_delta as i64) + lp_int(seq_delta);
        let elements = if same {
            for v in pairs.iter().skip(1).step_by(2) {
                put_str(&mut self.data, v);
                lp += lp_str(v);
            }
            n + 3
        } else {
            put_varint(&mut self.data, n as u64);
            lp += lp_int(n as i64);
            for s in pairs {
                put_str(&mut self.data, s);
                lp += lp_str(s);
            }
            n * 2 + 4
        };
        lp += lp_int(elements as i64);
        self.lp_rest += lp;
        self.live += 1;
    }

    /// The entry at `at` (a position [`Node::first`] or a slot's `end` gave).
    pub(super) fn slot(&self, at: usize) -> Slot {
        let b = &self.data[..];
        let mut pos = at;
        let flags = b[pos];
        pos += 1;
        let ms = self.master.ms.wrapping_add(get_varint(b, &mut pos));
        let seq = get_varint(b, &mut pos);
        let same = flags & SAME_FIELDS != 0;
        let (fields, strings) = if same {
            let mut p = 0;
            let n = get_varint(b, &mut p) as usize;
            (n, n)
        } else {
            let n = get_varint(b, &mut pos) as usize;
            (n, n * 2)
        };
        let strings_at = pos;
        for _ in 0..strings {
            let len = get_varint(b, &mut pos) as usize;
            pos += len;
        }
        Slot {
            at,
            id: StreamId::new(ms, seq),
            deleted: flags & DELETED != 0,
            strings_at,
            fields,
            same,
            end: pos,
        }
    }

    /// Where the first entry is, and where the entries end.
    pub(super) fn first(&self) -> usize {
        self.entries_at as usize
    }

    pub(super) fn end(&self) -> usize {
        self.data.len()
    }

    /// Every entry's slot, in order (deleted ones too).
    pub(super) fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        let mut at = self.first();
        core::iter::from_fn(move || {
            (at < self.end()).then(|| {
                let s = self.slot(at);
                at = s.end;
                s
            })
        })
    }

    /// The field names and values of the entry in `slot`.
    pub(super) fn pairs(&self, slot: &Slot) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let mut values = slot.strings_at;
        // The names: the master fields for an entry with the same ones, else beside the values.
        let mut names = slot.same.then(|| {
            let mut p = 0;
            get_varint(&self.data, &mut p);
            p
        });
        (0..slot.fields).map(move |_| {
            let name = match &mut names {
                Some(p) => get_str(&self.data, p),
                None => get_str(&self.data, &mut values),
            };
            (name, get_str(&self.data, &mut values))
        })
    }

    /// Flags the live entry in `slot` deleted.
    pub(super) fn delete(&mut self, slot: &Slot) {
        self.data[slot.at] |= DELETED;
        self.live -= 1;
        self.deleted += 1;
    }

    /// A copy, or None without memory for it.
    pub(super) fn try_clone(&self) -> Option<Self> {
        let mut data = Vec::new_in(self.data.allocator().clone());
        data.try_reserve_exact(self.data.len()).ok()?;
        data.extend_from_slice(&self.data);
        Some(Node {
            master: self.master,
            live: self.live,
            deleted: self.deleted,
            entries_at: self.entries_at,
            lp_rest: self.lp_rest,
            data,
        })
    }

    /// Gives back the block's spare capacity (a node that is full).
    pub(super) fn shrink(&mut self) {
        self.data.shrink_to_fit();
    }
}
