//! A hash's large form (OBJECT ENCODING `hashtable`): its fields in a dense array, each field with its
//! value in one block, and an index from field to position in the array (a hashbrown table of `u32`
//! positions, hashed with a per-hash random seed so that chosen field names cannot flood it).
//!
//! The dense array is what makes HRANDFIELD O(1) a pick (a random position) and HSCAN's cursor a
//! position: removal moves the last entry into the hole (`swap_remove`), and scanning walks the array
//! from the end towards the front, so an entry that moves only ever moves from a part already walked
//! into the part still ahead (it may be returned twice, never missed, Redis's SCAN guarantee). Inserts
//! append, and the array never reorders otherwise.
//!
//! Per field: 16 bytes of array slot, about 5.7 bytes of index (a `u32` and a control byte at hashbrown's
//! 7/8 load), and the block (4 bytes of field length, then field and value). Redis's dict pays a 24-byte
//! entry, an 8-byte bucket and two sds headers.
//!
//! Invariant (relied on by every method): `index` holds each position `0..entries.len()` exactly once,
//! filed under the hash of that entry's field; no two entries have the same field.

use core::hash::BuildHasher;

use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;

use crate::alloc::KvAlloc;
use crate::types::pos_index::PosIndex;

/// One field and its value in one block: the field's length (4 bytes, little-endian), the field, the
/// value.
pub(super) struct Entry<A: KvAlloc>(Box<[u8], A>);

impl<A: KvAlloc> Entry<A> {
    fn new(field: &[u8], value: &[u8], alloc: A) -> Self {
        let flen = u32::try_from(field.len()).expect("a hash field is under 4 GiB");
        let mut v = Vec::with_capacity_in(4 + field.len() + value.len(), alloc);
        v.extend_from_slice(&flen.to_le_bytes());
        v.extend_from_slice(field);
        v.extend_from_slice(value);
        Entry(v.into_boxed_slice())
    }

    fn field_len(&self) -> usize {
        let b = &self.0;
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    }

    fn field(&self) -> &[u8] {
        &self.0[4..4 + self.field_len()]
    }

    fn value(&self) -> &[u8] {
        &self.0[4 + self.field_len()..]
    }

    /// Bytes of the block.
    fn size(&self) -> usize {
        self.0.len()
    }
}

/// [`Dict::iter`]'s iterator, named so that the hash's iterator can hold it without a box.
pub(super) type DictIter<'a, A> =
    core::iter::Map<core::slice::Iter<'a, Entry<A>>, fn(&'a Entry<A>) -> (&'a [u8], &'a [u8])>;

pub(super) struct Dict<A: KvAlloc> {
    entries: Vec<Entry<A>, A>,
    index: PosIndex<A>,
    hasher: foldhash::fast::RandomState,
    /// Bytes of every entry's block, kept in step by each change.
    heap: usize,
}

impl<A: KvAlloc> Dict<A> {
    pub(super) fn with_capacity_in(n: usize, alloc: A) -> Self {
        Dict {
            entries: Vec::with_capacity_in(n, alloc.clone()),
            index: PosIndex::with_capacity_in(n, alloc),
            hasher: foldhash::fast::RandomState::default(),
            heap: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes of the array, the index and the blocks.
    pub(super) fn bytes(&self) -> usize {
        self.entries.capacity() * core::mem::size_of::<Entry<A>>() + self.index.allocation_size() + self.heap
    }

    fn position(&self, field: &[u8]) -> Option<usize> {
        let h = self.hasher.hash_one(field);
        let entries = &self.entries;
        self.index
            .find(h, |i| entries[i as usize].field() == field)
            .map(|i| i as usize)
    }

    pub(super) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.position(field).map(|i| self.entries[i].value())
    }

    /// The `i`-th field and value in array order (`i < len`).
    pub(super) fn nth(&self, i: usize) -> (&[u8], &[u8]) {
        let e = &self.entries[i];
        (e.field(), e.value())
    }

    /// Sets `field` to `value`; whether the field is new.
    pub(super) fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Some(i) = self.position(field) {
            let e = &mut self.entries[i];
            let flen = e.field_len();
            if e.size() == 4 + flen + value.len() {
                // Same length (HINCRBY mostly): overwrite in place, no allocation.
                e.0[4 + flen..].copy_from_slice(value);
            } else {
                let new = Entry::new(field, value, self.entries.allocator().clone());
                self.heap = self.heap + new.size() - self.entries[i].size();
                self.entries[i] = new;
            }
            return false;
        }
        let pos = u32::try_from(self.entries.len()).expect("a hash holds under 2^32 fields");
        let e = Entry::new(field, value, self.entries.allocator().clone());
        self.heap += e.size();
        let h = self.hasher.hash_one(field);
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index
            .insert(h, pos, |i| hasher.hash_one(entries[i as usize].field()));
        self.entries.push(e);
        self.step();
        true
    }

    /// Removes `field`; whether it was there.
    pub(super) fn remove(&mut self, field: &[u8]) -> bool {
        let h = self.hasher.hash_one(field);
        let entries = &self.entries;
        let Some(i) = self.index.remove(h, |i| entries[i as usize].field() == field) else {
            return false;
        };
        let i = i as usize;
        let last = self.entries.len() - 1;
        let gone = self.entries.swap_remove(i);
        self.heap -= gone.size();
        if i != last {
            // The last entry now sits at `i`: re-file its position.
            let (entries, hasher) = (&self.entries, &self.hasher);
            let h = hasher.hash_one(entries[i].field());
            self.index.refile(h, last as u32, i as u32, |j| {
                hasher.hash_one(entries[j as usize].field())
            });
        }
        self.step();
        self.maybe_shrink();
        true
    }

    /// One step of the index's growth, if it is growing.
    fn step(&mut self) {
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index
            .step(entries.len(), |i| hasher.hash_one(entries[i as usize].field()));
    }

    /// Gives memory back once the hash fell to under a quarter of its capacity (Redis shrinks its dicts
    /// below 10% fill).
    fn maybe_shrink(&mut self) {
        let (len, cap) = (self.entries.len(), self.entries.capacity());
        if cap > 64 && len < cap / 4 {
            self.entries.shrink_to(len * 2);
            let (entries, hasher) = (&self.entries, &self.hasher);
            self.index
                .shrink_to(len * 2, |i| hasher.hash_one(entries[i as usize].field()));
        }
    }

    /// Every field and value, in array order.
    pub(super) fn iter(&self) -> DictIter<'_, A> {
        self.entries.iter().map(|e| (e.field(), e.value()))
    }

    /// A deep copy, or None when the allocator has no memory for it.
    pub(super) fn try_clone(&self) -> Option<Self> {
        let alloc = self.entries.allocator().clone();
        let mut entries = Vec::new_in(alloc.clone());
        entries.try_reserve_exact(self.entries.len()).ok()?;
        for e in &self.entries {
            let mut v = Vec::new_in(alloc.clone());
            v.try_reserve_exact(e.size()).ok()?;
            v.extend_from_slice(&e.0);
            entries.push(Entry(v.into_boxed_slice()));
        }
        let hasher = self.hasher;
        let mut index = PosIndex::try_with_capacity_in(entries.len(), alloc)?;
        for (i, e) in entries.iter().enumerate() {
            index.insert(hasher.hash_one(e.field()), i as u32, |j| {
                hasher.hash_one(entries[j as usize].field())
            });
        }
        Some(Dict {
            entries,
            index,
            hasher,
            heap: self.heap,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;
    use std::collections::HashMap;

    /// The index files each position once under its field: every field finds its own entry.
    fn check(d: &Dict<Global>, model: &HashMap<std::vec::Vec<u8>, std::vec::Vec<u8>>) {
        assert_eq!(d.len(), model.len());
        assert_eq!(d.index.len(), model.len());
        for (f, v) in model {
            assert_eq!(d.get(f), Some(&v[..]));
        }
        let heap: usize = d.entries.iter().map(|e| e.size()).sum();
        assert_eq!(heap, d.heap);
    }

    #[test]
    fn swap_remove_keeps_the_index_in_step() {
        let mut d = Dict::with_capacity_in(0, Global);
        let mut model = HashMap::new();
        let n = if cfg!(miri) { 40 } else { 2000 };
        for i in 0..n {
            let f = format!("f{}", i % (n / 2)).into_bytes();
            let v = format!("v{i}").into_bytes();
            assert_eq!(d.set(&f, &v), model.insert(f, v).is_none());
            if i % 3 == 0 {
                let f = format!("f{}", (i * 7) % (n / 2)).into_bytes();
                assert_eq!(d.remove(&f), model.remove(&f).is_some());
            }
        }
        check(&d, &model);
        let c = d.try_clone().unwrap();
        check(&c, &model);
        for f in model.keys() {
            assert!(d.remove(f));
        }
        assert_eq!(d.len(), 0);
        assert!(!d.remove(b"f1"));
        assert_eq!(d.heap, 0);
    }

    /// A hash big enough for its index to grow by steps: fields set, overwritten and removed while
    /// positions move between the two tables, each checked against a model, and a copy taken midway.
    #[test]
    fn a_big_hash_grows_its_index_by_steps() {
        if cfg!(miri) {
            return;
        }
        let mut d = Dict::with_capacity_in(0, Global);
        let mut model = HashMap::new();
        let mut grew = false;
        for i in 0..60_000u32 {
            let f = format!("f{}", i.wrapping_mul(2_654_435_761) % 30_000).into_bytes();
            let v = format!("v{i}").into_bytes();
            assert_eq!(d.set(&f, &v), model.insert(f.clone(), v).is_none());
            if i % 4 == 0 {
                let g = format!("f{}", (i / 4).wrapping_mul(40_503) % 30_000).into_bytes();
                assert_eq!(d.remove(&g), model.remove(&g).is_some());
            }
            assert_eq!(d.get(&f), model.get(&f).map(|v| &v[..]));
            grew |= d.index.growing();
            if i == 20_000 {
                check(&d.try_clone().unwrap(), &model);
            }
        }
        assert!(grew, "the index grew by steps");
        check(&d, &model);
    }

    /// A hash emptied while its index is growing: the shrink that follows finishes the growth first.
    #[test]
    fn a_hash_shrinks_while_its_index_grows() {
        if cfg!(miri) {
            return;
        }
        let mut d = Dict::with_capacity_in(0, Global);
        let mut model = HashMap::new();
        let mut n = 0u32;
        while !d.index.growing() || n < 5000 {
            let f = format!("f{n}").into_bytes();
            d.set(&f, b"v");
            model.insert(f, b"v".to_vec());
            n += 1;
        }
        for i in 0..n {
            let f = format!("f{i}").into_bytes();
            assert_eq!(d.remove(&f), model.remove(&f).is_some());
            if i % 97 == 0 {
                check(&d, &model);
            }
        }
        check(&d, &model);
        assert_eq!(d.len(), 0);
    }
}
