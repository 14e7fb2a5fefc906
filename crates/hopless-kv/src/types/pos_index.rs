//! The index of a dense array's positions by the hash of the item at each (a big hash's fields, a big
//! set's members), grown a little at a time. When a big table is full, a table twice its size takes
//! the new positions and every change moves a few of the old table's across, as Redis's dict rehashes:
//! no one command pays for moving them all (a hash of 450 000 fields took 17 ms for one HSET).
//! Lookups try the new table, then the old one while it is left.

use core::mem;

use hashbrown::HashTable;

use crate::alloc::KvAlloc;

/// Positions moved from the old table at each change while one is left. Growth starts with the old
/// table full (L positions) and the new one holding 2L; L / STEP changes move them all, and at most
/// as many new positions arrive meanwhile, so the new table never fills before the old one is empty.
const STEP: usize = 8;

/// Tables this small grow at once (hashbrown's own way): moving a few thousand positions is a few
/// microseconds.
const GROW_AT_ONCE_BELOW: usize = 4096;

pub(crate) struct PosIndex<A: KvAlloc> {
    table: HashTable<u32, A>,
    /// While growing: the full table the positions are leaving.
    old: Option<HashTable<u32, A>>,
    /// While growing: array positions below this have left `old` (or were never in it).
    cursor: usize,
}

impl<A: KvAlloc> PosIndex<A> {
    pub(crate) fn with_capacity_in(n: usize, alloc: A) -> Self {
        PosIndex {
            table: HashTable::with_capacity_in(n, alloc),
            old: None,
            cursor: 0,
        }
    }

    /// An empty index with room for `n` positions, or None when the allocator has no memory for it.
    pub(crate) fn try_with_capacity_in(n: usize, alloc: A) -> Option<Self> {
        let mut table = HashTable::new_in(alloc);
        table.try_reserve(n, |_: &u32| 0).ok()?;
        Some(PosIndex {
            table,
            old: None,
            cursor: 0,
        })
    }

    /// Positions filed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.len() + self.old.as_ref().map_or(0, HashTable::len)
    }

    pub(crate) fn allocation_size(&self) -> usize {
        self.table.allocation_size() + self.old.as_ref().map_or(0, HashTable::allocation_size)
    }

    /// Whether positions are still leaving an old table.
    #[cfg(test)]
    pub(crate) fn growing(&self) -> bool {
        self.old.is_some()
    }

    /// The position under hash `h` that `eq` accepts.
    pub(crate) fn find(&self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        if let Some(&p) = self.table.find(h, |&p| eq(p)) {
            return Some(p);
        }
        self.old.as_ref()?.find(h, |&p| eq(p)).copied()
    }

    /// Removes the position under hash `h` that `eq` accepts; it, if there.
    pub(crate) fn remove(&mut self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        if let Ok(e) = self.table.find_entry(h, |&p| eq(p)) {
            return Some(e.remove().0);
        }
        match self.old.as_mut()?.find_entry(h, |&p| eq(p)) {
            Ok(e) => Some(e.remove().0),
            Err(_) => None,
        }
    }

    /// The array moved the item at `from` (hash `h`) to `to`: its entry says `to`, in the new table
    /// (an item moved below the cursor must not stay behind in the old one).
    pub(crate) fn refile(&mut self, h: u64, from: u32, to: u32, hash_at: impl Fn(u32) -> u64) {
        if let Some(p) = self.table.find_mut(h, |&p| p == from) {
            *p = to;
            return;
        }
        if let Some(old) = self.old.as_mut() {
            if let Ok(e) = old.find_entry(h, |&p| p == from) {
                e.remove();
                self.table.insert_unique(h, to, |&p| hash_at(p));
            }
        }
    }

    /// Files the new position `pos` under hash `h`. `hash_at` gives the hash of the item at a position
    /// already filed (a small table rehashes them all as it grows; a big one moves them by steps).
    pub(crate) fn insert(&mut self, h: u64, pos: u32, hash_at: impl Fn(u32) -> u64) {
        let full = self.table.len() == self.table.capacity();
        if full && self.table.len() >= GROW_AT_ONCE_BELOW {
            self.finish(&hash_at);
            let bigger = HashTable::with_capacity_in(self.table.len() * 2, self.table.allocator().clone());
            self.old = Some(mem::replace(&mut self.table, bigger));
            self.cursor = 0;
        }
        self.table.insert_unique(h, pos, |&p| hash_at(p));
    }

    /// One step of growth, after a change to an array of `len` items: up to [`STEP`] positions from
    /// the cursor on leave the old table. The old table goes once the cursor has passed the array.
    pub(crate) fn step(&mut self, len: usize, hash_at: impl Fn(u32) -> u64) {
        let Some(old) = self.old.as_mut() else {
            return;
        };
        let end = (self.cursor + STEP).min(len);
        for p in self.cursor..end {
            let h = hash_at(p as u32);
            if let Ok(e) = old.find_entry(h, |&q| q as usize == p) {
                e.remove();
                self.table.insert_unique(h, p as u32, |&q| hash_at(q));
            }
        }
        self.cursor = end;
        if self.cursor >= len || old.is_empty() {
            debug_assert!(
                old.is_empty(),
                "every position below the cursor has left the old table"
            );
            self.old = None;
        }
    }

    /// Moves whatever is left in the old table at once.
    fn finish(&mut self, hash_at: &impl Fn(u32) -> u64) {
        if let Some(mut old) = self.old.take() {
            for p in old.drain() {
                self.table.insert_unique(hash_at(p), p, |&q| hash_at(q));
            }
        }
    }

    /// Room for `n` positions at least, no more than needed (growth finished first).
    pub(crate) fn shrink_to(&mut self, n: usize, hash_at: impl Fn(u32) -> u64) {
        self.finish(&hash_at);
        self.table.shrink_to(n, |&p| hash_at(p));
    }

    /// Every position filed, in no order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.table
            .iter()
            .chain(self.old.iter().flat_map(|t| t.iter()))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;
    use std::collections::HashMap;

    /// A dense array of numbers indexed as the hash and set types index theirs, against a model.
    #[test]
    fn growth_by_steps_keeps_every_position_findable() {
        let hash = |v: u64| v.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut items: std::vec::Vec<u64> = std::vec::Vec::new();
        let mut index = PosIndex::with_capacity_in(0, Global);
        let mut model: HashMap<u64, ()> = HashMap::new();
        let mut x = 1u64;
        let mut grew = false;
        for round in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x % 50_000;
            let remove = round % 3 == 2;
            let found = index.find(hash(v), |p| items[p as usize] == v);
            assert_eq!(found.is_some(), model.contains_key(&v));
            if remove {
                if let Some(p) = index.remove(hash(v), |p| items[p as usize] == v) {
                    let last = items.len() - 1;
                    items.swap_remove(p as usize);
                    if (p as usize) != last {
                        let moved = items[p as usize];
                        let at = |q: u32| hash(items[q as usize]);
                        index.refile(hash(moved), last as u32, p, at);
                    }
                    model.remove(&v);
                }
            } else if found.is_none() {
                let pos = items.len() as u32;
                items.push(v);
                let at = |q: u32| hash(items[q as usize]);
                index.insert(hash(v), pos, at);
                model.insert(v, ());
            }
            grew |= index.growing();
            let at = |q: u32| hash(items[q as usize]);
            index.step(items.len(), at);
            assert_eq!(index.len(), items.len());
        }
        assert!(grew, "the test grew a big table by steps");
        for (p, &v) in items.iter().enumerate() {
            assert_eq!(index.find(hash(v), |q| items[q as usize] == v), Some(p as u32));
        }
        let mut all: std::vec::Vec<u32> = index.iter().collect();
        all.sort_unstable();
        assert!(all.iter().copied().eq(0..items.len() as u32));
    }
}
