//! A stream, as Redis keeps one: entries with increasing ids ([`StreamId`]), each a list of field-value
//! pairs, packed by the hundred into nodes (`node.rs`) kept in id order, plus the stream's own counters
//! (the last id given out, the entries ever added, the greatest deleted id). Adding appends to the last
//! node; reading a range finds its first node by binary search and walks on; trimming drops whole nodes
//! from the front (or, exactly, flags entries deleted inside the first node left), as Redis does.
//!
//! A stream stays when its last entry goes (XDEL, XTRIM): unlike the other types, an empty stream is a
//! key, with its last id, until it is deleted.
//!
//! Beside this file: `id.rs` (an entry's id and its textual forms), `node.rs` (a node's packed block),
//! `range.rs` (an entry read in place, walking the nodes), `group.rs` (a consumer group's state),
//! `delivery.rs` (a group's reads and claims over the nodes), `rdb_nodes.rs` (the nodes as Redis's
//! listpacks, for snapshots).

mod delivery;
mod group;
mod id;
mod node;
mod range;
mod rdb_nodes;

use allocator_api2::vec::Vec;

use self::delivery::Counters;
pub use self::delivery::{Claim, Claimed};
pub use self::group::{Consumer, Group, Nack};
pub use self::id::{IdSpec, StreamId};
use self::node::{Node, Slot};
pub use self::range::Entry;
use self::range::{entry_in, range_in};
use super::limits::Limits;
use crate::alloc::KvAlloc;

/// The block a new node starts with (Redis's `STREAM_LISTPACK_MAX_PRE_ALLOCATE`).
const NODE_PREALLOC: usize = 4096;

/// The most bytes of strings one entry may have (Redis's listpack limit).
const ENTRY_MAX_BYTES: usize = 1 << 30;

/// Why an entry was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// The id is not above the stream's last one.
    IdTooSmall,
    /// The entry's strings are over Redis's listpack limit.
    TooLarge,
}

/// How XADD and XTRIM trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop the entries below this id.
    MinId(StreamId),
}

pub struct Stream<A: KvAlloc> {
    /// In id order; none without a live entry.
    nodes: Vec<Node<A>, A>,
    /// Live entries.
    len: u64,
    /// The greatest id ever given out (0-0 before the first).
    last_id: StreamId,
    /// The first live entry's id (0-0 when empty).
    first_id: StreamId,
    /// The greatest id XDEL removed.
    max_deleted: StreamId,
    /// Entries ever added.
    entries_added: u64,
    /// Consumer groups, in name order.
    groups: Vec<Group<A>, A>,
    /// The nodes' blocks' bytes, kept in step with every change so that [`Stream::bytes`] (asked
    /// before and after every write) is O(groups), not O(nodes).
    node_bytes: usize,
}

impl<A: KvAlloc> Stream<A> {
    pub fn new_in(alloc: A) -> Self {
        Stream {
            nodes: Vec::new_in(alloc.clone()),
            len: 0,
            last_id: StreamId::MIN,
            first_id: StreamId::MIN,
            max_deleted: StreamId::MIN,
            entries_added: 0,
            groups: Vec::new_in(alloc),
            node_bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the node blocks, the node vector and the groups.
    pub fn bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Node<A>>()
            + self.node_bytes
            + self.groups.capacity() * core::mem::size_of::<Group<A>>()
            + self.groups.iter().map(Group::bytes).sum::<usize>()
    }

    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    pub fn allocator(&self) -> &A {
        self.nodes.allocator()
    }

    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    pub fn first_id(&self) -> StreamId {
        self.first_id
    }

    pub fn max_deleted_id(&self) -> StreamId {
        self.max_deleted
    }

    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// Nodes holding the entries (XINFO STREAM's `radix-tree-keys`).
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// A copy, or None without memory for it.
    pub fn try_clone(&self) -> Option<Self> {
        let mut nodes = Vec::new_in(self.nodes.allocator().clone());
        nodes.try_reserve_exact(self.nodes.len()).ok()?;
        for n in &self.nodes {
            nodes.push(n.try_clone()?);
        }
        let mut groups = Vec::new_in(self.groups.allocator().clone());
        groups.try_reserve_exact(self.groups.len()).ok()?;
        for g in &self.groups {
            groups.push(g.try_clone()?);
        }
        let node_bytes = nodes.iter().map(Node::bytes).sum();
        Some(Stream {
            groups,
            node_bytes,
            nodes,
            len: self.len,
            last_id: self.last_id,
            first_id: self.first_id,
            max_deleted: self.max_deleted,
            entries_added: self.entries_added,
        })
    }

    /// The id XADD gives `spec` with the clock at `now_ms`.
    fn new_id(&self, spec: IdSpec, now_ms: u64) -> Result<StreamId, AddError> {
        let id = match spec {
            IdSpec::Exact(id) => id,
            IdSpec::Ms(ms) if ms == self.last_id.ms => {
                if self.last_id.seq == u64::MAX {
                    return Err(AddError::IdTooSmall);
                }
                StreamId::new(ms, self.last_id.seq + 1)
            }
            IdSpec::Ms(ms) => StreamId::new(ms, 0),
            IdSpec::Auto if now_ms > self.last_id.ms => StreamId::new(now_ms, 0),
            IdSpec::Auto => self.last_id.next().ok_or(AddError::IdTooSmall)?,
        };
        if id <= self.last_id {
            return Err(AddError::IdTooSmall);
        }
        Ok(id)
    }

    /// XADD: appends an entry of `pairs` (names and values in turn, at least one pair) under the id
    /// `spec` gives; the id.
    pub fn add(
        &mut self,
        spec: IdSpec,
        pairs: &[&[u8]],
        now_ms: u64,
        limits: &Limits,
    ) -> Result<StreamId, AddError> {
        let id = self.new_id(spec, now_ms)?;
        let strings: usize = pairs.iter().map(|s| s.len()).sum();
        if strings > ENTRY_MAX_BYTES {
            return Err(AddError::TooLarge);
        }
        let max_bytes = match usize::try_from(limits.stream_node_bytes) {
            Ok(0) | Err(_) => ENTRY_MAX_BYTES,
            Ok(b) => b.min(ENTRY_MAX_BYTES),
        };
        let max_entries = u32::try_from(limits.stream_node_entries).unwrap_or(u32::MAX);
        let full = self.nodes.last().is_none_or(|n| {
            n.lp_bytes() + strings >= max_bytes || (max_entries != 0 && n.total() >= max_entries)
        });
        if full {
            if let Some(n) = self.nodes.last_mut() {
                self.node_bytes -= n.bytes();
                n.shrink();
                self.node_bytes += n.bytes();
            }
            let alloc = self.nodes.allocator().clone();
            // As Redis preallocates a listpack: up to 4 KiB, less under a smaller byte limit.
            let reserve = max_bytes.min(NODE_PREALLOC);
            let node = Node::new_in(id, pairs, reserve, alloc);
            self.node_bytes += node.bytes();
            self.nodes.push(node);
        }
        let node = self.nodes.last_mut().expect("a node to add to");
        let before = node.bytes();
        node.push(id, pairs);
        self.node_bytes = self.node_bytes - before + node.bytes();
        self.len += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.len == 1 {
            self.first_id = id;
        }
        Ok(id)
    }

    /// The index of the node that would hold `id`: the last one whose master id is at most `id`.
    fn node_of(&self, id: StreamId) -> Option<usize> {
        self.nodes.partition_point(|n| n.master <= id).checked_sub(1)
    }

    /// The first live entry's id (0-0 when none).
    fn first_live_id(&self) -> StreamId {
        self.nodes
            .iter()
            .flat_map(|n| n.slots())
            .find(|s| !s.deleted)
            .map_or(StreamId::MIN, |s| s.id)
    }

    /// Calls `f` on the live entries from `start` to `end` (both included), ascending, or descending
    /// when `rev`, until `f` returns false.
    pub fn range<'a>(
        &'a self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        f: impl FnMut(Entry<'a, A>) -> bool,
    ) {
        range_in(&self.nodes, start, end, rev, f);
    }

    /// The live entry with id `id`, if any.
    pub fn entry(&self, id: StreamId) -> Option<Entry<'_, A>> {
        entry_in(&self.nodes, id)
    }

    /// XDEL of one id: whether a live entry had it.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some(i) = self.node_of(id) else {
            return false;
        };
        let node = &mut self.nodes[i];
        let Some(slot) = node.slots().find(|s| s.id >= id) else {
            return false;
        };
        if slot.id != id || slot.deleted {
            return false;
        }
        if node.live == 1 {
            self.node_bytes -= node.bytes();
            self.nodes.remove(i);
        } else {
            node.delete(&slot);
        }
        self.len -= 1;
        if id > self.max_deleted {
            self.max_deleted = id;
        }
        if self.len == 0 {
            self.first_id = StreamId::MIN;
        } else if id == self.first_id {
            self.first_id = self.first_live_id();
        }
        true
    }

    /// XTRIM, and XADD's trim: removes entries from the front by `trim`; with `approx`, only whole
    /// nodes; `limit` (0: none) caps the entries removed, counted by whole nodes. How many went.
    pub fn trim(&mut self, trim: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        let mut whole = 0;
        for i in 0..self.nodes.len() {
            if let Trim::MaxLen(max) = trim {
                if self.len <= max {
                    break;
                }
            }
            let node = &self.nodes[i];
            let entries = u64::from(node.live);
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove = match trim {
                Trim::MaxLen(max) => self.len - entries >= max,
                Trim::MinId(min) => node.slots().last().is_some_and(|s| s.id < min),
            };
            if remove {
                whole += 1;
                self.len -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let node = &mut self.nodes[i];
            let slots: std::vec::Vec<Slot> = node.slots().collect();
            for slot in slots {
                let stop = match trim {
                    Trim::MaxLen(max) => self.len <= max,
                    Trim::MinId(min) => slot.id >= min,
                };
                if stop {
                    break;
                }
                if !slot.deleted {
                    node.delete(&slot);
                    self.len -= 1;
                    deleted += 1;
                }
            }
            break;
        }
        self.node_bytes -= self.nodes[..whole].iter().map(Node::bytes).sum::<usize>();
        self.nodes.drain(..whole);
        if self.len == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted != 0 {
            self.first_id = self.first_live_id();
        }
        deleted
    }

    /// XSETID: the last id, and optionally the entries ever added and the greatest deleted id (checked
    /// by the caller against [`Stream::len`] and the last entry).
    pub fn set_ids(&mut self, last: StreamId, entries_added: Option<u64>, max_deleted: Option<StreamId>) {
        self.last_id = last;
        if let Some(n) = entries_added {
            self.entries_added = n;
        }
        if let Some(id) = max_deleted {
            self.max_deleted = id;
        }
    }

    /// The id of the last live entry (0-0 when empty).
    pub fn last_entry_id(&self) -> StreamId {
        let mut last = StreamId::MIN;
        self.range(StreamId::MIN, StreamId::MAX, true, |e| {
            last = e.id;
            false
        });
        last
    }
}

/// The consumer groups: finding, creating and removing them, and their reads and claims (the work is
/// `delivery.rs`'s, over the nodes and one group).
impl<A: KvAlloc> Stream<A> {
    fn counters(&self) -> Counters {
        Counters {
            len: self.len,
            first_id: self.first_id,
            last_id: self.last_id,
            max_deleted: self.max_deleted,
            entries_added: self.entries_added,
        }
    }

    fn group_at(&self, name: &[u8]) -> Result<usize, usize> {
        self.groups.binary_search_by(|g| g.name().cmp(name))
    }

    /// The groups, in name order.
    pub fn groups(&self) -> &[Group<A>] {
        &self.groups
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group<A>> {
        self.group_at(name).ok().map(|i| &self.groups[i])
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group<A>> {
        self.group_at(name).ok().map(|i| &mut self.groups[i])
    }

    /// XGROUP CREATE: false when a group has the name.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        match self.group_at(name) {
            Ok(_) => false,
            Err(i) => {
                let alloc = self.groups.allocator().clone();
                self.groups
                    .insert(i, Group::new_in(name, last_id, entries_read, alloc));
                true
            }
        }
    }

    /// XGROUP DESTROY.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        match self.group_at(name) {
            Ok(i) => {
                self.groups.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// XREADGROUP `>` (see `delivery::read_new`); nothing when the group is missing.
    pub fn read_new<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        count: usize,
        noack: bool,
        now_ms: u64,
        f: impl FnMut(Entry<'a, A>),
    ) {
        let counters = self.counters();
        if let Ok(i) = self.group_at(group) {
            let g = &mut self.groups[i];
            delivery::read_new(&self.nodes, g, counters, consumer, count, noack, now_ms, f);
        }
    }

    /// XREADGROUP with an id (see `delivery::read_history`).
    pub fn read_history<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        count: usize,
        now_ms: u64,
        f: impl FnMut(StreamId, Option<Entry<'a, A>>),
    ) {
        if let Ok(i) = self.group_at(group) {
            delivery::read_history(
                &self.nodes,
                &mut self.groups[i],
                consumer,
                start,
                count,
                now_ms,
                f,
            );
        }
    }

    /// XCLAIM (see `delivery::claim`).
    pub fn claim<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        c: &Claim,
        f: impl FnMut(Claimed<'a, A>),
    ) {
        if let Ok(i) = self.group_at(group) {
            delivery::claim(&self.nodes, &mut self.groups[i], consumer, ids, c, f);
        }
    }

    /// XAUTOCLAIM (see `delivery::autoclaim`): the id to go on from and the ids found deleted.
    #[allow(clippy::too_many_arguments)]
    pub fn autoclaim<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        min_idle_ms: u64,
        count: usize,
        justid: bool,
        now_ms: u64,
        f: impl FnMut(Claimed<'a, A>),
    ) -> (StreamId, std::vec::Vec<StreamId>) {
        match self.group_at(group) {
            Ok(i) => delivery::autoclaim(
                &self.nodes,
                &mut self.groups[i],
                consumer,
                start,
                min_idle_ms,
                count,
                justid,
                now_ms,
                f,
            ),
            Err(_) => (StreamId::MIN, std::vec::Vec::new()),
        }
    }

    /// XINFO GROUPS's `lag` of group `g`, if known.
    pub fn lag(&self, g: &Group<A>) -> Option<i64> {
        delivery::lag(self.counters(), g)
    }

    /// The entries a group that has read up to `id` has read, as far as it can be known (-1: not
    /// known); what Redis 7.0 gives a group of a Redis 5 or 6 stream, which kept no count.
    pub fn entries_through(&self, id: StreamId) -> i64 {
        self.counters().entries_through(id).map_or(-1, |n| n as i64)
    }
}

#[cfg(test)]
mod tests;
