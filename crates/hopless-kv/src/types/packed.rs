//! A packed sequence of byte strings in one allocation, as Redis's listpack: each entry is its length (a
//! varint), its bytes, then its own size again written backwards (so the sequence walks both ways). Small
//! hashes, sets and sorted sets, and each node of a long list, are one of these: two bytes of overhead per
//! short entry, one block for the lot.
//!
//! Positions are byte offsets of an entry's start; every offset a method takes must be one it returned
//! (or 0, or [`Packed::end`]). Inserting and removing move the tail (O(bytes)), which is why the owners
//! keep these small.

use super::thin_buf::{self, ThinBuf};
use crate::alloc::KvAlloc;

/// The largest block that grows exactly to its contents (a list node's largest, `list-max-listpack-size
/// -5`); see [`Packed::reserve`].
const EXACT_GROWTH_MAX: usize = 64 * 1024;

/// The bytes a varint of `n` takes.
fn varint_len(n: usize) -> usize {
    let mut len = 1;
    let mut n = n >> 7;
    while n != 0 {
        len += 1;
        n >>= 7;
    }
    len
}

/// The bytes an entry of `len` bytes takes in a packed sequence.
pub(crate) fn entry_size(len: usize) -> usize {
    let body = varint_len(len) + len;
    body + varint_len(body)
}

/// The entries' bytes, and (in the buffer's own word) how many entries they are.
pub(crate) struct Packed<A: KvAlloc> {
    buf: ThinBuf<A>,
}

impl<A: KvAlloc> Packed<A> {
    pub(crate) fn new_in(alloc: A) -> Self {
        Packed {
            buf: ThinBuf::new_in(alloc),
        }
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.buf.word as usize
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.word == 0
    }

    /// Bytes the block must hold: the entries and its header (what a list's fill counts, as Redis counts
    /// a listpack's header, so that a full node's block still fits its size class).
    pub(crate) fn used(&self) -> usize {
        self.buf.len() + thin_buf::HEADER
    }

    /// Bytes the block takes (its capacity and header).
    pub(crate) fn bytes(&self) -> usize {
        self.buf.block_bytes()
    }

    /// The offset one past the last entry.
    pub(crate) fn end(&self) -> usize {
        self.buf.len()
    }

    /// The entry at `pos`, and the offset of the next one.
    pub(crate) fn get(&self, pos: usize) -> (&[u8], usize) {
        let mut len = 0usize;
        let mut shift = 0;
        let mut p = pos;
        loop {
            let b = self.buf[p];
            p += 1;
            len |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let body_end = p + len;
        let next = body_end + varint_len(body_end - pos);
        (&self.buf[p..body_end], next)
    }

    /// The offset of the entry before `pos` (which is not 0).
    pub(crate) fn prev(&self, pos: usize) -> usize {
        // The back-length is written with its first byte last: read it from `pos - 1` backwards.
        let mut body = 0usize;
        let mut shift = 0;
        let mut p = pos;
        loop {
            p -= 1;
            let b = self.buf[p];
            body |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        p - body
    }

    /// Forward iteration from the first entry.
    pub(crate) fn iter(&self) -> Iter<'_, A> {
        Iter {
            p: self,
            pos: 0,
            end: self.buf.len(),
        }
    }

    /// The offset of the `i`-th entry (counting from the front), walking from the nearer end.
    pub(crate) fn offset_of(&self, i: usize) -> usize {
        if i >= self.len() {
            return self.end();
        }
        if i <= self.len() / 2 {
            let mut pos = 0;
            for _ in 0..i {
                pos = self.get(pos).1;
            }
            pos
        } else {
            let mut pos = self.end();
            for _ in i..self.len() {
                pos = self.prev(pos);
            }
            pos
        }
    }

    /// The offset of the first entry equal to `e`, stepping `stride` entries at a time from the front
    /// (2 for a sequence of pairs, to look at keys only).
    pub(crate) fn find(&self, e: &[u8], stride: usize) -> Option<usize> {
        let mut pos = 0;
        while pos < self.buf.len() {
            let (x, mut next) = self.get(pos);
            if x == e {
                return Some(pos);
            }
            for _ in 1..stride {
                next = self.get(next).1;
            }
            pos = next;
        }
        None
    }

    /// Writes an entry for `e` into `out` (which is exactly `entry_size(e.len())` long).
    fn encode(e: &[u8], out: &mut [u8]) {
        let mut p = 0;
        let mut n = e.len();
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            out[p] = if n != 0 { b | 0x80 } else { b };
            p += 1;
            if n == 0 {
                break;
            }
        }
        out[p..p + e.len()].copy_from_slice(e);
        p += e.len();
        let body = p;
        // The back-length, least significant group last, so a reader walking backwards meets it first.
        let bl = varint_len(body);
        let mut n = body;
        for k in (0..bl).rev() {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            out[p + k] = if k != 0 { b | 0x80 } else { b };
        }
    }

    /// Makes room for `extra` more bytes. Up to [`EXACT_GROWTH_MAX`] the block grows to exactly what it
    /// holds, as a listpack does: the allocator's size classes are geometric, so a grow that stays in its
    /// class is a realloc in place and the copies stay few, and the block ends in the smallest class its
    /// contents fit (growing by an eighth left a full 8 KiB list node in the 10 KiB class). Beyond that
    /// it grows by an eighth, so appends stay amortised whatever the allocator.
    fn reserve(&mut self, extra: usize) {
        let need = self.buf.len() + extra;
        if need > self.buf.capacity() {
            let grow = if need <= EXACT_GROWTH_MAX {
                extra
            } else {
                extra.max(self.buf.len() / 8)
            };
            self.buf.reserve_exact(grow);
        }
    }

    /// Inserts `e` at `pos`; returns the new entry's offset (`pos`).
    pub(crate) fn insert(&mut self, pos: usize, e: &[u8]) -> usize {
        let size = entry_size(e.len());
        self.reserve(size);
        let old_len = self.buf.len();
        self.buf.resize(old_len + size);
        self.buf.copy_within(pos..old_len, pos + size);
        Self::encode(e, &mut self.buf[pos..pos + size]);
        self.buf.word += 1;
        pos
    }

    pub(crate) fn push_back(&mut self, e: &[u8]) {
        self.insert(self.end(), e);
    }

    pub(crate) fn push_front(&mut self, e: &[u8]) {
        self.insert(0, e);
    }

    /// Removes the entry at `pos`; the next entry then starts at `pos`.
    pub(crate) fn remove(&mut self, pos: usize) {
        let next = self.get(pos).1;
        self.buf.remove_range(pos..next);
        self.buf.word -= 1;
        self.maybe_shrink();
    }

    /// Removes `n` entries starting at `pos`.
    pub(crate) fn remove_n(&mut self, pos: usize, n: usize) {
        let mut end = pos;
        for _ in 0..n {
            end = self.get(end).1;
        }
        self.buf.remove_range(pos..end);
        self.buf.word -= n as u32;
        self.maybe_shrink();
    }

    /// Replaces the entry at `pos` with `e`; returns the offset after it.
    pub(crate) fn replace(&mut self, pos: usize, e: &[u8]) -> usize {
        let next = self.get(pos).1;
        let (old, new) = (next - pos, entry_size(e.len()));
        if new > old {
            self.reserve(new - old);
            let len = self.buf.len();
            self.buf.resize(len + new - old);
            self.buf.copy_within(next..len, next + new - old);
        } else if new < old {
            self.buf.remove_range(pos + new..next);
        }
        Self::encode(e, &mut self.buf[pos..pos + new]);
        pos + new
    }

    /// Gives back most of the block when its contents shrank to under half of it.
    fn maybe_shrink(&mut self) {
        if self.buf.capacity() > 64 && self.buf.len() < self.buf.capacity() / 2 {
            self.buf.shrink_to(self.buf.len() + self.buf.len() / 8);
        }
    }
}

pub(crate) struct Iter<'a, A: KvAlloc> {
    p: &'a Packed<A>,
    pos: usize,
    end: usize,
}

impl<'a, A: KvAlloc> Iterator for Iter<'a, A> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.pos >= self.end {
            return None;
        }
        let (e, next) = self.p.get(self.pos);
        self.pos = next;
        Some(e)
    }
}

impl<A: KvAlloc> DoubleEndedIterator for Iter<'_, A> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.pos >= self.end {
            return None;
        }
        self.end = self.p.prev(self.end);
        Some(self.p.get(self.end).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn entries_walk_both_ways_through_every_edit() {
        let mut p = Packed::new_in(Global);
        let mut model: std::vec::Vec<std::vec::Vec<u8>> = std::vec::Vec::new();
        let mut seed = 12345u64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let steps = if cfg!(miri) { 60 } else { 3000 };
        for step in 0..steps {
            // Lengths across the varint boundaries (127/128, 16383/16384).
            let len = [0, 1, 5, 126, 127, 128, 200, 16_383, 16_384][rnd(9)];
            let e: std::vec::Vec<u8> = (0..len).map(|k| (k + step) as u8).collect();
            match rnd(5) {
                0 | 1 => {
                    let i = rnd(model.len() + 1);
                    let pos = p.offset_of(i);
                    p.insert(pos, &e);
                    model.insert(i, e);
                }
                2 if !model.is_empty() => {
                    let i = rnd(model.len());
                    p.remove(p.offset_of(i));
                    model.remove(i);
                }
                3 if !model.is_empty() => {
                    let i = rnd(model.len());
                    p.replace(p.offset_of(i), &e);
                    model[i] = e;
                }
                _ if model.len() > 2 => {
                    let i = rnd(model.len() - 1);
                    p.remove_n(p.offset_of(i), 2);
                    model.drain(i..i + 2);
                }
                _ => {}
            }
            assert_eq!(p.len(), model.len());
            let fwd: std::vec::Vec<&[u8]> = p.iter().collect();
            let want: std::vec::Vec<&[u8]> = model.iter().map(|v| &v[..]).collect();
            assert_eq!(fwd, want);
            let back: std::vec::Vec<&[u8]> = p.iter().rev().collect();
            assert_eq!(back, want.iter().rev().copied().collect::<std::vec::Vec<_>>());
            if let Some(last) = model.last() {
                assert_eq!(p.find(last, 1).map(|pos| p.get(pos).0), Some(&last[..]));
            }
        }
    }
}
