//! Reading a stream's entries: [`Entry`] (an entry's id and its field-value pairs, read in place from
//! its node) and the walk over the nodes from one id to another, either way.

use super::id::StreamId;
use super::node::{Node, Slot};
use crate::alloc::KvAlloc;

/// An entry read from a stream: its id and its field-value pairs.
pub struct Entry<'a, A: KvAlloc> {
    pub id: StreamId,
    node: &'a Node<A>,
    slot: Slot,
}

impl<'a, A: KvAlloc> Entry<'a, A> {
    /// How many field-value pairs it has.
    pub fn fields(&self) -> usize {
        self.slot.fields
    }

    /// Its field-value pairs, in the order they were added.
    pub fn pairs(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        self.node.pairs(&self.slot)
    }
}

/// [`Stream::range`] over `nodes`.
pub(super) fn range_in<'a, A: KvAlloc>(
    nodes: &'a [Node<A>],
    start: StreamId,
    end: StreamId,
    rev: bool,
    mut f: impl FnMut(Entry<'a, A>) -> bool,
) {
    if start > end {
        return;
    }
    let node_of = |id: StreamId| nodes.partition_point(|n| n.master <= id).checked_sub(1);
    if !rev {
        let first = node_of(start).unwrap_or(0);
        for node in &nodes[first..] {
            if node.master > end {
                return;
            }
            for slot in node.slots() {
                if slot.id > end {
                    return;
                }
                if slot.deleted || slot.id < start {
                    continue;
                }
                if !f(Entry {
                    id: slot.id,
                    node,
                    slot,
                }) {
                    return;
                }
            }
        }
    } else {
        let Some(last) = node_of(end) else {
            return;
        };
        let mut slots = std::vec::Vec::new();
        for node in nodes[..=last].iter().rev() {
            slots.clear();
            slots.extend(node.slots());
            for &slot in slots.iter().rev() {
                if slot.id < start {
                    return;
                }
                if slot.deleted || slot.id > end {
                    continue;
                }
                if !f(Entry {
                    id: slot.id,
                    node,
                    slot,
                }) {
                    return;
                }
            }
        }
    }
}

/// [`Stream::entry`] over `nodes`.
pub(super) fn entry_in<A: KvAlloc>(nodes: &[Node<A>], id: StreamId) -> Option<Entry<'_, A>> {
    let mut found = None;
    range_in(nodes, id, id, false, |e| {
        found = Some(e);
        false
    });
    found
}
