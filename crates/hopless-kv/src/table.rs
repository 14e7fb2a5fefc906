//! A shard's hash table: open addressing with linear probing, one 8-byte word per slot (a 48-bit item
//! pointer and a 16-bit hash tag), backward-shift deletion (no tombstones).
//!
//! A key's home bucket is `((hash >> 32) * capacity) >> 32`: monotone in the hash, and defined for any
//! capacity, so the table grows by half (its load stays between 7/12 and 7/8, where doubling would leave
//! it as low as 7/16 and cost up to twice the memory per key), and a SCAN cursor is simply a position in
//! hash space: everything below it has been visited, whatever the table's size was then or is now. The
//! tag comes from other hash bits (16..32), so it still tells neighbours in one run apart; one word per
//! slot means one cache line per probe. Where a slot's full hash is needed (moving entries on delete,
//! resizing, scanning) it is recomputed from the item's key.
//!
//! Why not hashbrown: SCAN needs that cursor and sampled eviction needs random slots, both of which need
//! index access to the slot array, which `hashbrown::HashTable` does not expose. With linear probing, the
//! keys whose home is bucket `b` sit in the run of occupied slots starting at `b`, so "all keys with home
//! `b`" is a short probe. The array is allocated through the store's allocator.

use core::hash::BuildHasher;

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use crate::value::{self, Header, ItemPtr};

/// One past the last SCAN position (positions are the top 32 bits of a key's hash).
pub(crate) const SCAN_END: u64 = 1 << 32;

const PTR_BITS: u32 = 48;
const PTR_MASK: u64 = (1 << PTR_BITS) - 1;

#[inline]
fn tag_of(hash: u64) -> u64 {
    (hash >> 16) & 0xffff
}

#[inline]
fn pack(hash: u64, item: ItemPtr) -> u64 {
    let addr = item.as_ptr().expose_provenance() as u64;
    assert!(addr <= PTR_MASK && addr != 0, "item address above 48 bits");
    (tag_of(hash) << PTR_BITS) | addr
}

#[inline]
fn unpack(word: u64) -> ItemPtr {
    let p = core::ptr::with_exposed_provenance_mut::<Header>((word & PTR_MASK) as usize);
    // SAFETY: only non-empty words (non-null addresses) are unpacked.
    unsafe { ItemPtr::new_unchecked(p) }
}

/// The hash of keys: foldhash, seeded at random or from [`Config::hash_seed`](crate::Config::hash_seed).
/// A store and its tables share one, so that a key's hash agrees everywhere.
pub(crate) type KeyHasher = foldhash::fast::SeedableRandomState;

pub(crate) struct Table<A: Allocator + Clone> {
    slots: Vec<u64, A>,
    len: usize,
    cap: usize,
    hasher: KeyHasher,
}

// SAFETY: the table owns one reference to each item; items are immutable and atomically counted.
unsafe impl<A: Allocator + Clone + Send> Send for Table<A> {}
// SAFETY: shared access only reads.
unsafe impl<A: Allocator + Clone + Sync> Sync for Table<A> {}

const MIN_SLOTS: usize = 16;

impl<A: Allocator + Clone> Table<A> {
    /// A table whose keys are hashed with `hasher` (the store's, so hashes agree).
    pub(crate) fn new_in(alloc: A, hasher: KeyHasher) -> Self {
        let mut t = Table {
            slots: Vec::new_in(alloc),
            len: 0,
            cap: 0,
            hasher,
        };
        t.resize_to(MIN_SLOTS);
        t
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes the slot array takes.
    pub(crate) fn bytes(&self) -> usize {
        self.capacity() * 8
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (((hash >> 32) * self.cap as u64) >> 32) as usize
    }

    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.cap {
            0
        } else {
            i + 1
        }
    }

    /// The full hash of the item in a non-empty slot word.
    #[inline]
    fn hash_of(&self, word: u64) -> u64 {
        // SAFETY: the table holds a reference to every item in it.
        self.hasher.hash_one(unsafe { value::key(unpack(word)) })
    }

    /// The slot holding `key` (whose hash is `hash`), if present.
    #[inline]
    pub(crate) fn find(&self, hash: u64, key: &[u8]) -> Option<usize> {
        let tag = tag_of(hash);
        let mut i = self.home(hash);
        loop {
            let w = self.slots[i];
            if w == 0 {
                return None;
            }
            // SAFETY: the table holds a reference to every item in it.
            if w >> PTR_BITS == tag && unsafe { value::key(unpack(w)) } == key {
                return Some(i);
            }
            i = self.next(i);
        }
    }

    #[inline]
    pub(crate) fn item(&self, slot: usize) -> ItemPtr {
        debug_assert!(self.slots[slot] != 0);
        unpack(self.slots[slot])
    }

    /// Puts a new item (same key) in an occupied slot; returns the old item, whose reference the caller
    /// now owns.
    pub(crate) fn replace(&mut self, slot: usize, item: ItemPtr) -> ItemPtr {
        let w = self.slots[slot];
        debug_assert!(w != 0);
        self.slots[slot] = (w & !PTR_MASK) | (pack(0, item) & PTR_MASK);
        unpack(w)
    }

    /// Inserts an item whose key (hashing to `hash`) is not in the table (the caller checked with `find`).
    pub(crate) fn insert_new(&mut self, hash: u64, item: ItemPtr) {
        // Grow past 7/8 full: the tag filters probes, so long runs cost little, and every slot saved is
        // 8 bytes.
        if (self.len + 1) * 8 > self.capacity() * 7 {
            self.resize_to(self.capacity() + self.capacity() / 2);
        }
        self.place(hash, pack(hash, item));
        self.len += 1;
    }

    fn place(&mut self, hash: u64, word: u64) {
        let mut i = self.home(hash);
        while self.slots[i] != 0 {
            i = self.next(i);
        }
        self.slots[i] = word;
    }

    /// Removes the item in `slot`; the caller owns the returned reference.
    pub(crate) fn remove(&mut self, slot: usize) -> ItemPtr {
        let item = unpack(self.slots[slot]);
        self.len -= 1;
        let mut j = slot;
        self.slots[j] = 0;
        let mut k = j;
        loop {
            k = self.next(k);
            let w = self.slots[k];
            if w == 0 {
                break;
            }
            let h = self.home(self.hash_of(w));
            // The entry at k stays if its home lies cyclically in (j, k].
            let stays = if j <= k { j < h && h <= k } else { j < h || h <= k };
            if stays {
                continue;
            }
            self.slots[j] = w;
            self.slots[k] = 0;
            j = k;
        }
        item
    }

    fn resize_to(&mut self, cap: usize) {
        debug_assert!(cap > self.len);
        let alloc = self.slots.allocator().clone();
        let mut slots = Vec::with_capacity_in(cap, alloc);
        slots.resize(cap, 0u64);
        let old = core::mem::replace(&mut self.slots, slots);
        self.cap = cap;
        for &w in old.iter() {
            if w != 0 {
                let h = self.hash_of(w);
                self.place(h, w);
            }
        }
    }

    /// Removes every item, handing each reference to `f`, and shrinks to the minimum size.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(ItemPtr)) {
        for w in self.slots.iter_mut() {
            if *w != 0 {
                f(unpack(*w));
                *w = 0;
            }
        }
        self.len = 0;
        self.resize_to(MIN_SLOTS);
    }

    /// One step of a SCAN from hash position `pos` (start at 0): visits every item of the home bucket
    /// holding `pos` whose hash position is at least `pos`, and returns where the next step starts
    /// ([`SCAN_END`] when the table has been covered). Keys present for the whole scan are visited at
    /// least once, however the table is resized between steps.
    pub(crate) fn scan_step(&self, pos: u64, mut visit: impl FnMut(ItemPtr)) -> u64 {
        if pos >= SCAN_END {
            return SCAN_END;
        }
        let cap = self.cap as u64;
        let b = ((pos * cap) >> 32) as usize;
        let mut i = b;
        while self.slots[i] != 0 {
            let w = self.slots[i];
            let h = self.hash_of(w);
            if self.home(h) == b && (h >> 32) >= pos {
                visit(unpack(w));
            }
            i = self.next(i);
        }
        // First hash position of bucket b + 1.
        ((b as u64 + 1) << 32).div_ceil(cap)
    }

    /// Every item, in slot order (a snapshot's walk, under the shard's lock).
    pub(crate) fn items(&self) -> impl Iterator<Item = ItemPtr> + '_ {
        self.slots.iter().filter(|&&w| w != 0).map(|&w| unpack(w))
    }

    /// The occupied slot at or after `start` (wrapping), for sampling. None when empty.
    pub(crate) fn occupied_from(&self, start: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mut i = start % self.cap;
        while self.slots[i] == 0 {
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

    fn hasher() -> KeyHasher {
        KeyHasher::random()
    }

    #[test]
    fn matches_a_hashmap_through_inserts_removes_and_growth() {
        let hs = hasher();
        let hash = |k: &[u8]| hs.hash_one(k);
        let mut t = Table::new_in(Global, hs);
        let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut x = 1u64;
        let n = if cfg!(miri) { 300 } else { 50_000 };
        for step in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = format!("k{}", x % (n as u64 / 3)).into_bytes();
            let tag = hash(&k);
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
            let slot = t.find(hash(k), k).expect("present");
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
        let hs = hasher();
        let hash = |k: &[u8]| hs.hash_one(k);
        let mut t = Table::new_in(Global, hs);
        let n = if cfg!(miri) { 100 } else { 5000 };
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("key{i}").into_bytes()).collect();
        for k in &keys {
            t.insert_new(hash(k), new_item(&Global, k, 0, |_| {}).unwrap());
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
                t.insert_new(hash(&k), new_item(&Global, &k, 0, |_| {}).unwrap());
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
