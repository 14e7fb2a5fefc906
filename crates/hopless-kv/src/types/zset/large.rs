//! The large form (OBJECT ENCODING `skiplist`): a member→slot hash table beside the ordered index
//! ([`Tree`]), as Redis keeps a dict beside its skiplist. The member's bytes live once, in the tree's
//! node; the table holds only the node's slot, and hashes the member again when it moves. ZSCORE and
//! membership are O(1); insert, delete and rank O(log n).
//!
//! The table grows incrementally, as Redis's dict rehashes: when it is full, a table of twice the
//! room takes its place and the old one is drained into it [`MIGRATE`] arena slots per change (a
//! lookup consults both meanwhile), so no single ZADD rehashes millions of members at once.

use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::tree::{Tree, Walk};
use crate::alloc::KvAlloc;

/// Arena slots looked at per change while an old table drains.
const MIGRATE: usize = 64;

/// The table before the last growth, being drained.
struct Old<A: KvAlloc> {
    table: HashTable<u32, A>,
    /// The next arena slot to move, and the end of the slots that existed at the growth.
    next: usize,
    end: usize,
}

pub(super) struct Large<A: KvAlloc> {
    pub(super) tree: Tree<A>,
    index: HashTable<u32, A>,
    old: Option<Old<A>>,
    hasher: DefaultHashBuilder,
}

impl<A: KvAlloc> Large<A> {
    pub(super) fn new_in(alloc: A, capacity: usize) -> Self {
        Large {
            tree: Tree::new_in(alloc.clone()),
            index: HashTable::with_capacity_in(capacity, alloc),
            old: None,
            hasher: DefaultHashBuilder::default(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.tree.len()
    }

    pub(super) fn bytes(&self) -> usize {
        self.tree.bytes()
            + self.index.allocation_size()
            + self.old.as_ref().map_or(0, |o| o.table.allocation_size())
    }

    fn hash(&self, member: &[u8]) -> u64 {
        self.hasher.hash_one(member)
    }

    /// The slot of `member`.
    pub(super) fn find(&self, member: &[u8]) -> Option<u32> {
        let h = self.hash(member);
        let eq = |&i: &u32| self.tree.member(i) == member;
        self.index
            .find(h, eq)
            .or_else(|| self.old.as_ref().and_then(|o| o.table.find(h, eq)))
            .copied()
    }

    pub(super) fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|i| self.tree.score(i))
    }

    /// Moves up to `slots` arena slots' entries from the old table to the new one (all when `None`).
    fn migrate(&mut self, slots: Option<usize>) {
        let Some(old) = &mut self.old else {
            return;
        };
        let stop = slots.map_or(old.end, |n| old.end.min(old.next + n));
        let (tree, hasher, index) = (&self.tree, &self.hasher, &mut self.index);
        while old.next < stop {
            let s = old.next as u32;
            old.next += 1;
            let Some((m, _)) = tree.slot(s as usize) else {
                continue;
            };
            let h = hasher.hash_one(m);
            if let Ok(e) = old.table.find_entry(h, |&j| j == s) {
                e.remove();
                index.insert_unique(h, s, |&j| hasher.hash_one(tree.member(j)));
            }
        }
        if old.next >= old.end || old.table.is_empty() {
            self.old = None;
        }
    }

    /// Adds `member` (not present) at `score`.
    pub(super) fn insert(&mut self, member: &[u8], score: f64) {
        self.migrate(Some(MIGRATE));
        if self.index.len() == self.index.capacity() {
            // Full: the rest of the old table moves now (rare: it drains long before), then a table
            // of twice the room takes over and this one starts draining.
            self.migrate(None);
            let room = (2 * self.index.capacity()).max(8);
            let alloc = self.index.allocator().clone();
            let table = core::mem::replace(&mut self.index, HashTable::with_capacity_in(room, alloc));
            self.old = Some(Old {
                table,
                next: 0,
                end: self.tree.slots(),
            });
        }
        let i = self.tree.new_node(member, score);
        self.tree.link(i);
        let h = self.hash(member);
        let (tree, hasher) = (&self.tree, &self.hasher);
        self.index
            .insert_unique(h, i, |&j| hasher.hash_one(tree.member(j)));
    }

    /// Moves the member at slot `i` to `score`.
    pub(super) fn rescore(&mut self, i: u32, score: f64) {
        self.tree.unlink(i);
        self.tree.set_score(i, score);
        self.tree.link(i);
    }

    /// Takes slot `i`'s entry (hash `h`) out of whichever table holds it.
    fn unindex(&mut self, h: u64, i: u32) {
        if let Ok(e) = self.index.find_entry(h, |&j| j == i) {
            e.remove();
        } else if let Some(Ok(e)) = self.old.as_mut().map(|o| o.table.find_entry(h, |&j| j == i)) {
            e.remove();
        }
    }

    /// Removes `member`; whether it was there.
    pub(super) fn remove(&mut self, member: &[u8]) -> bool {
        self.migrate(Some(MIGRATE));
        let Some(i) = self.find(member) else {
            return false;
        };
        self.unindex(self.hash(member), i);
        self.tree.unlink(i);
        self.tree.free(i);
        true
    }

    /// Removes the ranks `start..end`, giving each member and score to `f` in order.
    pub(super) fn remove_ranks(&mut self, start: usize, end: usize, mut f: impl FnMut(&[u8], f64)) {
        self.migrate(Some(MIGRATE));
        let mut tree = core::mem::replace(&mut self.tree, Tree::new_in(self.index.allocator().clone()));
        tree.unlink_ranks(start, end, |tree, i| {
            let h = self.hasher.hash_one(tree.member(i));
            self.unindex(h, i);
            let score = tree.score(i);
            let m = tree.free(i);
            f(&m, score);
        });
        self.tree = tree;
    }

    pub(super) fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let i = self.find(member)?;
        Some((self.tree.rank(i), self.tree.score(i)))
    }

    pub(super) fn walk(&self, k: usize, rev: bool) -> Walk<'_, A> {
        self.tree.walk(k, rev)
    }

    pub(super) fn try_clone(&self) -> Option<Self> {
        let tree = self.tree.try_clone()?;
        let mut index = HashTable::new_in(self.index.allocator().clone());
        index
            .try_reserve(self.len(), |&j| self.hasher.hash_one(tree.member(j)))
            .ok()?;
        let olds = self.old.iter().flat_map(|o| o.table.iter());
        for &i in self.index.iter().chain(olds) {
            let h = self.hasher.hash_one(tree.member(i));
            index.insert_unique(h, i, |&j| self.hasher.hash_one(tree.member(j)));
        }
        Some(Large {
            tree,
            index,
            old: None,
            hasher: self.hasher,
        })
    }

    /// Checks that every live slot is found by its member (tests).
    #[cfg(test)]
    pub(super) fn check(&self) {
        self.tree.check();
        let mut live = 0;
        for s in 0..self.tree.slots() {
            if let Some((m, _)) = self.tree.slot(s) {
                assert_eq!(self.find(m), Some(s as u32));
                live += 1;
            }
        }
        let indexed = self.index.len() + self.old.as_ref().map_or(0, |o| o.table.len());
        assert_eq!((live, indexed), (self.len(), self.len()));
    }
}
