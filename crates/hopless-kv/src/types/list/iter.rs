//! Walking a list's entries from an index, towards the tail ([`Iter`]) or the head ([`RevIter`]), node by
//! node without looking an index up again.

use super::nodes::Nodes;
use crate::alloc::KvAlloc;

/// Entries from one index towards the tail (`List::iter_from`).
pub struct Iter<'a, A: KvAlloc> {
    pub(super) nodes: &'a Nodes<A>,
    /// The node of the next entry, and its offset there (the node's end: the next node's first).
    pub(super) node: usize,
    pub(super) pos: usize,
    pub(super) left: usize,
}

impl<'a, A: KvAlloc> Iterator for Iter<'a, A> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        let mut node = self.nodes.get(self.node);
        if self.pos >= node.end() {
            self.node += 1;
            self.pos = 0;
            node = self.nodes.get(self.node);
        }
        let (e, next) = node.get(self.pos);
        self.pos = next;
        self.left -= 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<A: KvAlloc> ExactSizeIterator for Iter<'_, A> {}

/// Entries from one index towards the head (`List::rev_from`).
pub struct RevIter<'a, A: KvAlloc> {
    pub(super) nodes: &'a Nodes<A>,
    pub(super) node: usize,
    /// The offset just past the next entry to give, in `node` (0: the previous node's last).
    pub(super) pos: usize,
    pub(super) left: usize,
}

impl<'a, A: KvAlloc> Iterator for RevIter<'a, A> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        if self.pos == 0 {
            self.node -= 1;
            self.pos = self.nodes.get(self.node).end();
        }
        let node = self.nodes.get(self.node);
        self.pos = node.prev(self.pos);
        self.left -= 1;
        Some(node.get(self.pos).0)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<A: KvAlloc> ExactSizeIterator for RevIter<'_, A> {}
