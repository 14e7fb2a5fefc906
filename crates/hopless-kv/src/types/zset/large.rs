//! The large form (OBJECT ENCODING `skiplist`): a member→slot hash table beside the ordered index
//! ([`Tree`]), as Redis keeps a dict beside its skiplist. The member's bytes live once, in the tree's
//! node; the table holds only the node's slot, and hashes the member again when it grows. ZSCORE and
//! membership are O(1); insert, delete and rank O(log n).

use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::tree::{Tree, Walk};
use crate::alloc::KvAlloc;

pub(super) struct Large<A: KvAlloc> {
    pub(super) tree: Tree<A>,
    index: HashTable<u32, A>,
    hasher: DefaultHashBuilder,
}

impl<A: KvAlloc> Large<A> {
    pub(super) fn new_in(alloc: A, capacity: usize) -> Self {
        Large {
            tree: Tree::new_in(alloc.clone()),
            index: HashTable::with_capacity_in(capacity, alloc),
            hasher: DefaultHashBuilder::default(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.tree.len()
    }

    pub(super) fn bytes(&self) -> usize {
        self.tree.bytes() + self.index.allocation_size()
    }

    /// The slot of `member`.
    pub(super) fn find(&self, member: &[u8]) -> Option<u32> {
        let h = self.hasher.hash_one(member);
        self.index.find(h, |&i| self.tree.member(i) == member).copied()
    }

    pub(super) fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|i| self.tree.score(i))
    }

    /// Adds `member` (not present) at `score`.
    pub(super) fn insert(&mut self, member: &[u8], score: f64) {
        let i = self.tree.new_node(member, score);
        self.tree.link(i);
        let h = self.hasher.hash_one(member);
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

    /// Removes `member`; whether it was there.
    pub(super) fn remove(&mut self, member: &[u8]) -> bool {
        let h = self.hasher.hash_one(member);
        let tree = &self.tree;
        let Ok(entry) = self.index.find_entry(h, |&i| tree.member(i) == member) else {
            return false;
        };
        let (i, _) = entry.remove();
        self.tree.unlink(i);
        self.tree.free(i);
        true
    }

    /// Removes the ranks `start..end`, giving each member and score to `f` in order.
    pub(super) fn remove_ranks(&mut self, start: usize, end: usize, mut f: impl FnMut(&[u8], f64)) {
        let (index, hasher) = (&mut self.index, &self.hasher);
        self.tree.unlink_ranks(start, end, |tree, i| {
            let h = hasher.hash_one(tree.member(i));
            if let Ok(e) = index.find_entry(h, |&j| j == i) {
                e.remove();
            }
            let score = tree.score(i);
            let m = tree.free(i);
            f(&m, score);
        });
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
        for &i in self.index.iter() {
            let h = self.hasher.hash_one(tree.member(i));
            index.insert_unique(h, i, |&j| self.hasher.hash_one(tree.member(j)));
        }
        Some(Large {
            tree,
            index,
            hasher: self.hasher,
        })
    }
}
