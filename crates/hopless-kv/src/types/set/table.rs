//! The large form of a set ("hashtable"): members in a dense vector, found through a hash index of
//! their positions (as `indexmap` keeps its entries). O(1) add, remove, membership and uniform random
//! pick; a member removed from the middle is replaced by the last one, so the vector stays dense.
//!
//! The dense vector also gives SSCAN a cursor that survives any change: a scan walks positions from the
//! top down, and a removal only ever moves the last member down into the hole, so a member the scan has
//! not reached yet can only move further down, never past the cursor (see [`Table::scan`]).

use core::hash::BuildHasher;

use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;

use crate::alloc::KvAlloc;
use crate::types::pos_index::PosIndex;

type Hasher = foldhash::fast::RandomState;

pub(crate) struct Table<A: KvAlloc> {
    /// The members, each in its own block, in no particular order. `index` holds exactly the positions
    /// `0..members.len()`, each once, under the hash of the member there.
    members: Vec<Box<[u8], A>, A>,
    index: PosIndex<A>,
    hasher: Hasher,
    /// Sum of the members' lengths (for `bytes`).
    member_bytes: usize,
}

/// `m` in a block of its own from `alloc`.
fn boxed<A: KvAlloc>(m: &[u8], alloc: &A) -> Box<[u8], A> {
    let mut v = Vec::with_capacity_in(m.len(), alloc.clone());
    v.extend_from_slice(m);
    v.into_boxed_slice()
}

impl<A: KvAlloc> Table<A> {
    pub(crate) fn with_capacity_in(n: usize, alloc: A) -> Self {
        Table {
            members: Vec::with_capacity_in(n, alloc.clone()),
            index: PosIndex::with_capacity_in(n, alloc),
            hasher: Hasher::default(),
            member_bytes: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// Bytes of the member blocks, the vector and the index.
    pub(crate) fn bytes(&self) -> usize {
        self.members.capacity() * core::mem::size_of::<Box<[u8], A>>()
            + self.member_bytes
            + self.index.allocation_size()
    }

    fn position(&self, m: &[u8]) -> Option<usize> {
        let h = self.hasher.hash_one(m);
        self.index
            .find(h, |i| &*self.members[i as usize] == m)
            .map(|i| i as usize)
    }

    pub(crate) fn contains(&self, m: &[u8]) -> bool {
        self.position(m).is_some()
    }

    /// The member at position `i` (below `len`).
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        &self.members[i]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.members.iter().map(|m| &**m)
    }

    /// Adds `m`; false if it was there.
    pub(crate) fn insert(&mut self, m: &[u8]) -> bool {
        let Table {
            members,
            index,
            hasher,
            member_bytes,
        } = self;
        let h = hasher.hash_one(m);
        if index.find(h, |i| &*members[i as usize] == m).is_some() {
            return false;
        }
        let pos = u32::try_from(members.len()).expect("a set holds under 2^32 members");
        let b = boxed(m, members.allocator());
        members.push(b);
        let hash_at = |i: u32| hasher.hash_one(&*members[i as usize]);
        index.insert(h, pos, hash_at);
        index.step(members.len(), hash_at);
        *member_bytes += m.len();
        true
    }

    /// Removes `m`; false if it was not there.
    pub(crate) fn remove(&mut self, m: &[u8]) -> bool {
        match self.position(m) {
            Some(i) => {
                self.remove_at(i);
                true
            }
            None => false,
        }
    }

    /// Removes the member at position `i` (below `len`) and returns it; the last member takes its place.
    pub(crate) fn remove_at(&mut self, i: usize) -> Box<[u8], A> {
        let Table {
            members,
            index,
            hasher,
            member_bytes,
        } = self;
        let h = hasher.hash_one(&*members[i]);
        if index.remove(h, |j| j as usize == i).is_none() {
            unreachable!("every position is in the index");
        }
        let last = members.len() - 1;
        let m = members.swap_remove(i);
        if i != last {
            let hash_at = |j: u32| hasher.hash_one(&*members[j as usize]);
            index.refile(hash_at(i as u32), last as u32, i as u32, hash_at);
        }
        index.step(members.len(), |j| hasher.hash_one(&*members[j as usize]));
        *member_bytes -= m.len();
        self.maybe_shrink();
        m
    }

    /// Gives memory back when a big set has shrunk to under a quarter of what it holds room for.
    fn maybe_shrink(&mut self) {
        let (len, cap) = (self.members.len(), self.members.capacity());
        if cap > 64 && len < cap / 4 {
            self.members.shrink_to(len * 2);
            let Table {
                members,
                index,
                hasher,
                ..
            } = self;
            index.shrink_to(len * 2, |i| hasher.hash_one(&*members[i as usize]));
        }
    }

    /// One step of SSCAN: `cursor` 0 starts a scan, any other is one this returned. Visits up to `count`
    /// positions from the top down, passing each member to `f`; returns the next cursor (0: done).
    ///
    /// The cursor is the number of positions not visited yet (`0..cursor`). Members added during a scan
    /// go on top (visited or not: SSCAN need not return them); a removal moves the top member down into
    /// the hole, so a member below the cursor stays below it, and one above it that moves down is only
    /// returned twice (which SSCAN allows). So every member present for the whole scan is returned.
    pub(crate) fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8])) -> u64 {
        let len = self.members.len() as u64;
        let top = if cursor == 0 { len } else { cursor.min(len) };
        let bottom = top.saturating_sub(count as u64);
        for i in (bottom..top).rev() {
            f(&self.members[i as usize]);
        }
        bottom
    }

    /// A deep copy, or None when the allocator has no memory for it.
    pub(crate) fn try_clone(&self) -> Option<Self> {
        let alloc = self.members.allocator().clone();
        let mut t = Table {
            members: Vec::new_in(alloc.clone()),
            index: PosIndex::try_with_capacity_in(self.len(), alloc.clone())?,
            hasher: self.hasher,
            member_bytes: self.member_bytes,
        };
        t.members.try_reserve_exact(self.len()).ok()?;
        let Table {
            members,
            index,
            hasher,
            ..
        } = &mut t;
        for m in &self.members {
            let mut v = Vec::new_in(alloc.clone());
            v.try_reserve_exact(m.len()).ok()?;
            v.extend_from_slice(m);
            members.push(v.into_boxed_slice());
        }
        for i in 0..members.len() as u32 {
            let hash_at = |j: u32| hasher.hash_one(&*members[j as usize]);
            index.insert(hash_at(i), i, hash_at);
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;
    use std::collections::HashSet;

    /// A set big enough for its index to grow by steps: members added and removed (by value and by
    /// position, as SPOP removes them) while positions move between the two tables, each checked
    /// against a model, and a copy taken midway.
    #[test]
    fn a_big_set_grows_its_index_by_steps() {
        if cfg!(miri) {
            return;
        }
        let mut t = Table::with_capacity_in(0, Global);
        let mut model = HashSet::new();
        let mut grew = false;
        for i in 0..60_000u32 {
            let m = format!("m{}", i.wrapping_mul(2_654_435_761) % 30_000).into_bytes();
            assert_eq!(t.insert(&m), model.insert(m.clone()));
            if i % 4 == 0 {
                let g = format!("m{}", (i / 4).wrapping_mul(40_503) % 30_000).into_bytes();
                assert_eq!(t.remove(&g), model.remove(&g));
            }
            if i % 7 == 0 && t.len() > 0 {
                let gone = t.remove_at((i as usize * 31) % t.len());
                assert!(model.remove(&gone[..]));
            }
            assert_eq!(t.contains(&m), model.contains(&m));
            grew |= t.index.growing();
            if i == 20_000 {
                let c = t.try_clone().unwrap();
                assert_eq!(c.len(), model.len());
                assert!(model.iter().all(|m| c.contains(m)));
            }
        }
        assert!(grew, "the index grew by steps");
        assert_eq!(t.len(), model.len());
        assert_eq!(t.index.len(), model.len());
        assert!(model.iter().all(|m| t.contains(m)));
    }
}
