//! A shard's hash table: open addressing with linear probing, one 8-byte item pointer and one 4-byte
//! hash tag per slot, backward-shift deletion (no tombstones).
//!
//! A key's home bucket is `(tag * capacity) >> 32`: monotone in the hash, and defined for any capacity, so
//! the table grows by half (its load stays between 7/12 and 7/8, where doubling would leave it as low as
//! 7/16 and cost up to twice the memory per key), and a SCAN cursor is simply a position in hash space:
//! everything below it has been visited, whatever the table's size was then or is now.
//!
//! Why not hashbrown: SCAN needs that cursor and sampled eviction needs random slots, both of which need
//! index access to the slot array, which `hashbrown::HashTable` does not expose. With linear probing, the
//! keys whose home is bucket `b` sit in the run of occupied slots starting at `b`, so "all keys with home
//! `b`" is a short probe. Both arrays are allocated through the store's allocator.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use crate::value::{self, ItemPtr};

/// Tag of a hash: never zero (zero marks an empty slot); bits 1.. give the home bucket.
#[inline]
pub fn tag_of(hash: u64) -> u32 {
    ((hash >> 32) as u32) | 1
}

pub struct Table<A: Allocator + Clone> {
    tags: Vec<u32, A>,
    slots: Vec<Option<ItemPtr>, A>,
    len: usize,
    cap: usize,
}

/// One past the last SCAN position (positions are 32-bit hash values).
pub const SCAN_END: u64 = 1 << 32;

// SAFETY: the table owns one reference to each item; items are immutable and atomically counted.
unsafe impl<A: Allocator + Clone + Send> Send for Table<A> {}
// SAFETY: shared access only reads.
unsafe impl<A: Allocator + Clone + Sync> Sync for Table<A> {}

const MIN_SLOTS: usize = 16;

impl<A: Allocator + Clone> Table<A> {
    pub fn new_in(alloc: A) -> Self {
        let mut t = Table {
            tags: Vec::new_in(alloc.clone()),
            slots: Vec::new_in(alloc),
            len: 0,
            cap: 0,
        };
        t.resize_to(MIN_SLOTS);
        t
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes the two arrays take.
    pub fn bytes(&self) -> usize {
        self.capacity() * (4 + 8)
    }

    #[inline]
    fn home(&self, tag: u32) -> usize {
        ((tag as u64 * self.cap as u64) >> 32) as usize
    }

    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.cap {
            0
        } else {
            i + 1
        }
    }

    /// The slot holding `key`, if present.
    #[inline]
    pub fn find(&self, tag: u32, key: &[u8]) -> Option<usize> {
        let mut i = self.home(tag);
        loop {
            let t = self.tags[i];
            if t == 0 {
                return None;
            }
            if t == tag {
                let item = self.slots[i].expect("occupied slot");
                // SAFETY: the table holds a reference to every item in it.
                if unsafe { value::key(item) } == key {
                    return Some(i);
                }
            }
            i = self.next(i);
        }
    }

    #[inline]
    pub fn item(&self, slot: usize) -> ItemPtr {
        self.slots[slot].expect("occupied slot")
    }

    /// Puts a new item in the slot of an existing key; returns the old item (whose reference the caller
    /// now owns).
    pub fn replace(&mut self, slot: usize, item: ItemPtr) -> ItemPtr {
        self.slots[slot].replace(item).expect("occupied slot")
    }

    /// Inserts an item whose key is not in the table (the caller checked with `find`).
    pub fn insert_new(&mut self, tag: u32, item: ItemPtr) {
        // Grow past 7/8 full: with the tag array filtering probes, long runs cost little, and every slot
        // saved is 12 bytes per key.
        if (self.len + 1) * 8 > self.capacity() * 7 {
            self.resize_to(self.capacity() + self.capacity() / 2);
        }
        self.place(tag, item);
        self.len += 1;
    }

    fn place(&mut self, tag: u32, item: ItemPtr) {
        let mut i = self.home(tag);
        while self.tags[i] != 0 {
            i = self.next(i);
        }
        self.tags[i] = tag;
        self.slots[i] = Some(item);
    }

    /// Removes the item in `slot`; the caller owns the returned reference.
    pub fn remove(&mut self, slot: usize) -> ItemPtr {
        let item = self.slots[slot].take().expect("occupied slot");
        self.len -= 1;
        let mut j = slot;
        self.tags[j] = 0;
        let mut k = j;
        loop {
            k = self.next(k);
            let t = self.tags[k];
            if t == 0 {
                break;
            }
            let h = self.home(t);
            // The entry at k stays if its home lies cyclically in (j, k].
            let stays = if j <= k { j < h && h <= k } else { j < h || h <= k };
            if stays {
                continue;
            }
            self.tags[j] = t;
            self.slots[j] = self.slots[k].take();
            self.tags[k] = 0;
            j = k;
        }
        item
    }

    fn resize_to(&mut self, cap: usize) {
        debug_assert!(cap > self.len);
        let alloc = self.tags.allocator().clone();
        let mut tags = Vec::with_capacity_in(cap, alloc.clone());
        tags.resize(cap, 0u32);
        let mut slots = Vec::with_capacity_in(cap, alloc);
        slots.resize(cap, None);
        let old_tags = core::mem::replace(&mut self.tags, tags);
        let mut old_slots = core::mem::replace(&mut self.slots, slots);
        self.cap = cap;
        for (i, &t) in old_tags.iter().enumerate() {
            if t != 0 {
                let item = old_slots[i].take().expect("occupied slot");
                self.place(t, item);
            }
        }
    }

    /// Removes every item, handing each reference to `f`, and shrinks to the minimum size.
    pub fn drain(&mut self, mut f: impl FnMut(ItemPtr)) {
        for (t, s) in self.tags.iter_mut().zip(self.slots.iter_mut()) {
            if *t != 0 {
                *t = 0;
                f(s.take().expect("occupied slot"));
            }
        }
        self.len = 0;
        self.resize_to(MIN_SLOTS);
    }

    /// One step of a SCAN from hash position `pos` (start at 0): visits every item of the home bucket
    /// holding `pos` whose hash is at least `pos`, and returns where the next step starts ([`SCAN_END`]
    /// when the table has been covered). Keys present for the whole scan are visited at least once,
    /// however the table is resized between steps.
    pub fn scan_step(&self, pos: u64, mut visit: impl FnMut(ItemPtr)) -> u64 {
        if pos >= SCAN_END {
            return SCAN_END;
        }
        let cap = self.cap as u64;
        let b = ((pos * cap) >> 32) as usize;
        let mut i = b;
        while self.tags[i] != 0 {
            let t = self.tags[i];
            if self.home(t) == b && t as u64 >= pos {
                visit(self.item(i));
            }
            i = self.next(i);
        }
        // First hash position of bucket b + 1.
        ((b as u64 + 1) << 32).div_ceil(cap)
    }

    /// The occupied slot at or after `start` (wrapping), for sampling. None when empty.
    pub fn occupied_from(&self, start: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mut i = start % self.cap;
        while self.tags[i] == 0 {
            i = self.next(i);
        }
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{new_item, release};
    use allocator_api2::alloc::Global;
    use std::collections::{HashMap, HashSet};
    use std::vec::Vec;

    fn hash(k: &[u8]) -> u64 {
        use core::hash::BuildHasher;
        foldhash::fast::FixedState::with_seed(1).hash_one(k)
    }

    #[test]
    fn matches_a_hashmap_through_inserts_removes_and_growth() {
        let mut t = Table::new_in(Global);
        let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut x = 1u64;
        let n = if cfg!(miri) { 300 } else { 50_000 };
        for step in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = format!("k{}", x % (n as u64 / 3)).into_bytes();
            let tag = tag_of(hash(&k));
            match (t.find(tag, &k), x % 3) {
                (Some(slot), 0) => {
                    let old = t.remove(slot);
                    // SAFETY: we own the removed reference.
                    unsafe { release(old, &Global) };
                    model.remove(&k);
                }
                (Some(slot), _) => {
                    let v = (step as u32).to_le_bytes();
                    let item = new_item(&Global, &k, 4, |b| b.copy_from_slice(&v)).unwrap();
                    let old = t.replace(slot, item);
                    // SAFETY: we own the replaced reference.
                    unsafe { release(old, &Global) };
                    model.insert(k, step as u32);
                }
                (None, _) => {
                    let v = (step as u32).to_le_bytes();
                    let item = new_item(&Global, &k, 4, |b| b.copy_from_slice(&v)).unwrap();
                    t.insert_new(tag, item);
                    model.insert(k, step as u32);
                }
            }
            assert_eq!(t.len(), model.len());
        }
        for (k, v) in &model {
            let slot = t.find(tag_of(hash(k)), k).expect("present");
            // SAFETY: the table holds the item.
            assert_eq!(unsafe { crate::value::value(t.item(slot)) }, v.to_le_bytes());
        }
        // A full scan sees every key exactly once when nothing changes.
        let mut seen = HashSet::new();
        let mut c = 0;
        loop {
            c = t.scan_step(c, |item| {
                // SAFETY: the table holds the item.
                let k = unsafe { crate::value::key(item) }.to_vec();
                assert!(seen.insert(k), "visited twice");
            });
            if c == SCAN_END {
                break;
            }
        }
        assert_eq!(seen.len(), model.len());
        t.drain(|item| {
            // SAFETY: drain hands us the table's reference.
            unsafe { release(item, &Global) }
        });
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn scan_survives_growth_between_steps() {
        let mut t = Table::new_in(Global);
        let n = if cfg!(miri) { 100 } else { 5000 };
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("key{i}").into_bytes()).collect();
        for k in &keys {
            t.insert_new(tag_of(hash(k)), new_item(&Global, k, 0, |_| {}).unwrap());
        }
        let mut seen = HashSet::new();
        let mut c = 0;
        let mut extra = 0;
        loop {
            c = t.scan_step(c, |item| {
                // SAFETY: the table holds the item.
                seen.insert(unsafe { crate::value::key(item) }.to_vec());
            });
            // Grow the table under the scan (to four times its size, then let the scan finish).
            for _ in 0..if extra < 3 * n { 20 } else { 0 } {
                let k = format!("extra{extra}").into_bytes();
                extra += 1;
                t.insert_new(tag_of(hash(&k)), new_item(&Global, &k, 0, |_| {}).unwrap());
            }
            if c == SCAN_END {
                break;
            }
        }
        for k in &keys {
            assert!(seen.contains(k), "key present for the whole scan was missed");
        }
        t.drain(|item| {
            // SAFETY: drain hands us the table's reference.
            unsafe { release(item, &Global) }
        });
    }
}
