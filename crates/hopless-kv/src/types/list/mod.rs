//! A list, kept as Redis keeps one (its quicklist): a sequence of nodes, each a `Packed` block of at
//! most `list-max-listpack-size` entries (positive) or bytes (negative: -1 is 4 KiB ... -5 is 64 KiB), in
//! a ring of nodes (`nodes.rs`) so that pushing and popping at either end is O(1) amortised. An index is
//! found by walking the nodes' entry counts from the nearer end; an entry inside a node by walking the
//! node (at most a few KiB).
//!
//! A small list is one node, a compact block as Redis's listpack; Redis 7.0 names both shapes
//! `quicklist` in OBJECT ENCODING (`listpack` for a small list came with 7.2), and so does this.
//!
//! Beside this file: `nodes.rs` (the ring of nodes), `fill.rs` (how much a node may hold), `iter.rs`
//! (walking the entries from an index, either way).

mod fill;
mod iter;
mod nodes;

use self::fill::Fill;
pub use self::iter::{Iter, RevIter};
use self::nodes::Nodes;
use super::limits::Limits;
use super::packed::{entry_size, Packed};
use crate::alloc::KvAlloc;

/// Which end of a list (LEFT is the head, index 0; RIGHT the tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

pub struct List<A: KvAlloc> {
    /// No node is empty.
    nodes: Nodes<A>,
    /// Entries in all nodes.
    len: usize,
    /// The nodes' blocks' bytes (their capacities), kept in step with every change so that
    /// [`List::bytes`] is O(1).
    node_bytes: usize,
}

impl<A: KvAlloc> List<A> {
    pub fn new_in(alloc: A) -> Self {
        List {
            nodes: Nodes::new_in(alloc),
            len: 0,
            node_bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes this collection's blocks take beyond the struct itself.
    pub fn bytes(&self) -> usize {
        self.nodes.bytes() + self.node_bytes
    }

    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// The allocator the list allocates through.
    pub(crate) fn allocator(&self) -> &A {
        self.nodes.alloc()
    }

    /// A deep copy, node for node (COPY). Always `Some`: like every growth of a `Packed` block, a
    /// failed allocation here aborts rather than returning.
    pub fn try_clone(&self) -> Option<Self> {
        let mut c = List::new_in(self.nodes.alloc().clone());
        for n in 0..self.nodes.len() {
            let mut node = c.new_node();
            for e in self.nodes.get(n).iter() {
                node.push_back(e);
            }
            c.add_node(n, node);
        }
        c.len = self.len;
        Some(c)
    }

    fn new_node(&self) -> Packed<A> {
        Packed::new_in(self.nodes.alloc().clone())
    }

    /// Runs `f` on node `n`, keeping `node_bytes` in step.
    fn edit<R>(&mut self, n: usize, f: impl FnOnce(&mut Packed<A>) -> R) -> R {
        let node = self.nodes.get_mut(n);
        let before = node.bytes();
        let r = f(node);
        self.node_bytes = self.node_bytes - before + node.bytes();
        r
    }

    /// Puts `node` (not empty) at node position `at`.
    fn add_node(&mut self, at: usize, node: Packed<A>) {
        self.node_bytes += node.bytes();
        if at == 0 {
            self.nodes.push_front(node);
        } else if at == self.nodes.len() {
            self.nodes.push_back(node);
        } else {
            self.nodes.insert(at, node);
        }
    }

    /// Takes out node `n`.
    fn drop_node(&mut self, n: usize) {
        let node = if n == 0 {
            self.nodes.pop_front()
        } else if n + 1 == self.nodes.len() {
            self.nodes.pop_back()
        } else {
            Some(self.nodes.remove(n))
        };
        if let Some(node) = node {
            self.node_bytes -= node.bytes();
        }
    }

    /// Drops node `n` if it became empty; whether it did.
    fn drop_if_empty(&mut self, n: usize) -> bool {
        let empty = self.nodes.get(n).is_empty();
        if empty {
            self.drop_node(n);
        }
        empty
    }

    /// Node and position in it of entry `i` (< len), walking node counts from the nearer end.
    fn locate(&self, i: usize) -> (usize, usize) {
        debug_assert!(i < self.len);
        if i < self.len / 2 {
            let mut i = i;
            for n in 0..self.nodes.len() {
                let c = self.nodes.get(n).len();
                if i < c {
                    return (n, i);
                }
                i -= c;
            }
        } else {
            let mut back = self.len - 1 - i;
            for n in (0..self.nodes.len()).rev() {
                let c = self.nodes.get(n).len();
                if back < c {
                    return (n, c - 1 - back);
                }
                back -= c;
            }
        }
        unreachable!("the node counts add up to len")
    }

    /// Adds `e` at one end without counting it.
    fn push_entry(&mut self, end: End, e: &[u8], fill: Fill) {
        let last = self.nodes.len().wrapping_sub(1);
        let n = if end == End::Left { 0 } else { last };
        if self.nodes.len() > 0 && fill.allows(self.nodes.get(n), e.len()) {
            self.edit(n, |node| match end {
                End::Left => node.push_front(e),
                End::Right => node.push_back(e),
            });
        } else {
            let mut node = self.new_node();
            node.push_back(e);
            let at = if end == End::Left { 0 } else { self.nodes.len() };
            self.add_node(at, node);
        }
    }

    /// LPUSH / RPUSH of one element.
    pub fn push(&mut self, end: End, e: &[u8], limits: &Limits) {
        self.push_entry(end, e, Fill::of(limits));
        self.len += 1;
    }

    /// Removes the entry at one end, handing it to `f` first (LPOP, RPOP, LMOVE, and the blocking pops).
    pub fn pop_with<R>(&mut self, end: End, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.len == 0 {
            return None;
        }
        let n = if end == End::Left { 0 } else { self.nodes.len() - 1 };
        let r = self.edit(n, |node| {
            let pos = if end == End::Left {
                0
            } else {
                node.prev(node.end())
            };
            let r = f(node.get(pos).0);
            node.remove(pos);
            r
        });
        self.len -= 1;
        self.drop_if_empty(n);
        Some(r)
    }

    /// Removes and returns the entry at one end.
    pub fn pop(&mut self, end: End) -> Option<std::vec::Vec<u8>> {
        self.pop_with(end, <[u8]>::to_vec)
    }

    /// Removes up to `count` entries from one end, in the order they are popped.
    pub fn pop_many(&mut self, end: End, count: usize) -> std::vec::Vec<std::vec::Vec<u8>> {
        let count = count.min(self.len);
        let out: std::vec::Vec<std::vec::Vec<u8>> = match end {
            End::Left => self.iter_from(0).take(count).map(<[u8]>::to_vec).collect(),
            End::Right => self.rev_from(self.len).take(count).map(<[u8]>::to_vec).collect(),
        };
        match end {
            End::Left => self.remove_range(0, count),
            End::Right => self.remove_range(self.len - count, count),
        }
        out
    }

    /// An index as Redis reads one (negative counts from the tail), if within the list.
    pub fn index(&self, i: i64) -> Option<usize> {
        let i = if i < 0 { i.checked_add(self.len as i64)? } else { i };
        (i >= 0 && (i as usize) < self.len).then_some(i as usize)
    }

    /// The range `start..=stop` as LRANGE and LTRIM read it (negative from the tail, clamped to the
    /// list): its first index and length, None when empty.
    pub fn range_of(&self, start: i64, stop: i64) -> Option<(usize, usize)> {
        let len = self.len as i64;
        let start = if start < 0 { (len + start).max(0) } else { start };
        let stop = if stop < 0 { len + stop } else { stop };
        if start > stop || start >= len {
            return None;
        }
        let stop = stop.min(len - 1);
        Some((start as usize, (stop - start + 1) as usize))
    }

    /// The entry at `i`.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let (n, j) = self.locate(i);
        let node = self.nodes.get(n);
        Some(node.get(node.offset_of(j)).0)
    }

    /// Entries from `i` to the tail.
    pub fn iter_from(&self, i: usize) -> Iter<'_, A> {
        let (node, pos) = if i < self.len {
            let (n, j) = self.locate(i);
            (n, self.nodes.get(n).offset_of(j))
        } else {
            (self.nodes.len(), 0)
        };
        Iter {
            nodes: &self.nodes,
            node,
            pos,
            left: self.len.saturating_sub(i),
        }
    }

    /// Entries from `i - 1` back to the head (all of them from `len`).
    pub fn rev_from(&self, i: usize) -> RevIter<'_, A> {
        let i = i.min(self.len);
        let (node, pos) = if i == 0 {
            (0, 0)
        } else {
            let (n, j) = self.locate(i - 1);
            let node = self.nodes.get(n);
            (n, node.get(node.offset_of(j)).1)
        };
        RevIter {
            nodes: &self.nodes,
            node,
            pos,
            left: i,
        }
    }

    /// LSET: replaces the entry at `i` (< len); false if there is none.
    pub fn set(&mut self, i: usize, e: &[u8], limits: &Limits) -> bool {
        if i >= self.len {
            return false;
        }
        let fill = Fill::of(limits);
        let (n, j) = self.locate(i);
        let node = self.nodes.get(n);
        let pos = node.offset_of(j);
        let old = node.get(pos).1 - pos;
        if node.len() == 1 || node.used() - old + entry_size(e.len()) <= fill.bytes {
            self.edit(n, |node| node.replace(pos, e));
        } else {
            self.remove_at(i);
            self.insert_at(i, e, limits);
        }
        true
    }

    /// Inserts `e` so that it becomes entry `i` (0..=len): into its node when there is room, else into
    /// the neighbouring node, else the node is split there.
    pub fn insert_at(&mut self, i: usize, e: &[u8], limits: &Limits) {
        let fill = Fill::of(limits);
        if i == 0 || i >= self.len {
            let end = if i == 0 { End::Left } else { End::Right };
            self.push_entry(end, e, fill);
            self.len += 1;
            return;
        }
        let (n, j) = self.locate(i);
        if fill.allows(self.nodes.get(n), e.len()) {
            self.edit(n, |node| {
                let p = node.offset_of(j);
                node.insert(p, e);
            });
        } else if j == 0 && fill.allows(self.nodes.get(n - 1), e.len()) {
            self.edit(n - 1, |node| node.push_back(e));
        } else {
            let at = if j == 0 {
                n
            } else {
                self.split(n, j);
                if fill.allows(self.nodes.get(n), e.len()) {
                    self.edit(n, |node| node.push_back(e));
                    self.len += 1;
                    return;
                }
                n + 1
            };
            if fill.allows(self.nodes.get(at), e.len()) {
                self.edit(at, |node| node.push_front(e));
            } else {
                let mut node = self.new_node();
                node.push_back(e);
                self.add_node(at, node);
            }
        }
        self.len += 1;
    }

    /// Splits node `n` before its entry `j` (0 < j < its length): the entries from `j` on move to a
    /// new node after it.
    fn split(&mut self, n: usize, j: usize) {
        let mut tail = self.new_node();
        let node = self.nodes.get(n);
        let p = node.offset_of(j);
        let k = node.len() - j;
        let mut pos = p;
        while pos < node.end() {
            let (x, next) = node.get(pos);
            tail.push_back(x);
            pos = next;
        }
        self.edit(n, |node| node.remove_n(p, k));
        self.add_node(n + 1, tail);
    }

    /// Removes entry `i` (< len).
    pub fn remove_at(&mut self, i: usize) {
        let (n, j) = self.locate(i);
        self.edit(n, |node| {
            let p = node.offset_of(j);
            node.remove(p);
        });
        self.len -= 1;
        self.drop_if_empty(n);
    }

    /// Removes `count` entries from `start` on (clamped to the list), dropping whole nodes at once.
    pub fn remove_range(&mut self, start: usize, count: usize) {
        let count = count.min(self.len.saturating_sub(start));
        if count == 0 {
            return;
        }
        let (mut n, mut j) = self.locate(start);
        let mut left = count;
        while left > 0 {
            let c = self.nodes.get(n).len();
            let k = (c - j).min(left);
            if k == c {
                self.drop_node(n);
            } else {
                self.edit(n, |node| {
                    let p = node.offset_of(j);
                    node.remove_n(p, k);
                });
                n += 1;
            }
            left -= k;
            j = 0;
        }
        self.len -= count;
    }

    /// LTRIM: keeps only `start..=stop` (read as [`List::range_of`] reads it).
    pub fn trim(&mut self, start: i64, stop: i64) {
        match self.range_of(start, stop) {
            Some((s, n)) => {
                self.remove_range(s + n, self.len - s - n);
                self.remove_range(0, s);
            }
            None => self.remove_range(0, self.len),
        }
    }

    /// LINSERT: inserts `e` before (or after) the first entry equal to `pivot`, from the head; false
    /// when there is none.
    pub fn insert_by_pivot(&mut self, pivot: &[u8], after: bool, e: &[u8], limits: &Limits) -> bool {
        let Some(i) = self.iter_from(0).position(|x| x == pivot) else {
            return false;
        };
        self.insert_at(i + after as usize, e, limits);
        true
    }

    /// LREM: removes entries equal to `e`: the first `count` from the head when positive, the last
    /// `-count` from the tail when negative, all when 0. Returns how many went.
    pub fn remove_matching(&mut self, e: &[u8], count: i64, limits: &Limits) -> usize {
        let max = if count == 0 {
            usize::MAX
        } else {
            usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
        };
        let mut removed = 0;
        if count >= 0 {
            let mut n = 0;
            while n < self.nodes.len() && removed < max {
                removed += self.edit(n, |node| {
                    let (mut pos, mut r) = (0, 0);
                    while pos < node.end() && removed + r < max {
                        let (x, next) = node.get(pos);
                        if x == e {
                            node.remove(pos);
                            r += 1;
                        } else {
                            pos = next;
                        }
                    }
                    r
                });
                if !self.drop_if_empty(n) {
                    n += 1;
                }
            }
        } else {
            let mut n = self.nodes.len();
            while n > 0 && removed < max {
                n -= 1;
                removed += self.edit(n, |node| {
                    let (mut pos, mut r) = (node.end(), 0);
                    while pos > 0 && removed + r < max {
                        let p = node.prev(pos);
                        if node.get(p).0 == e {
                            node.remove(p);
                            r += 1;
                        }
                        pos = p;
                    }
                    r
                });
                self.drop_if_empty(n);
            }
        }
        self.len -= removed;
        if removed > 0 {
            self.join_small(Fill::of(limits));
        }
        removed
    }

    /// Joins neighbouring nodes that fit in one (after removals in the middle left them small), in one
    /// pass over the nodes.
    fn join_small(&mut self, fill: Fill) {
        if self.nodes.len() < 2 {
            return;
        }
        let mut out = Nodes::new_in(self.nodes.alloc().clone());
        while let Some(node) = self.nodes.pop_front() {
            if out.len() > 0 {
                let last = out.get_mut(out.len() - 1);
                if fill.joins(last, &node) {
                    let before = last.bytes() + node.bytes();
                    for x in node.iter() {
                        last.push_back(x);
                    }
                    self.node_bytes = self.node_bytes - before + last.bytes();
                    continue;
                }
            }
            out.push_back(node);
        }
        self.nodes = out;
    }

    /// LPOS: the indexes of entries equal to `e`, skipping the first `rank - 1` matches (from the tail
    /// when `rank` is negative; it is not 0), at most `count` of them (0: all), looking at no more than
    /// `maxlen` entries (0: all).
    pub fn positions(&self, e: &[u8], rank: i64, count: usize, maxlen: usize) -> std::vec::Vec<usize> {
        let skip = usize::try_from(rank.unsigned_abs() - 1).unwrap_or(usize::MAX);
        let count = if count == 0 { usize::MAX } else { count };
        let maxlen = if maxlen == 0 {
            self.len
        } else {
            maxlen.min(self.len)
        };
        let hits = |it: &mut dyn Iterator<Item = (usize, &[u8])>| {
            it.take(maxlen)
                .filter(|(_, x)| *x == e)
                .skip(skip)
                .take(count)
                .map(|(i, _)| i)
                .collect()
        };
        let last = self.len.wrapping_sub(1);
        if rank > 0 {
            hits(&mut self.iter_from(0).enumerate())
        } else {
            hits(&mut self.rev_from(self.len).enumerate().map(|(k, x)| (last - k, x)))
        }
    }
}

#[cfg(test)]
mod tests;
