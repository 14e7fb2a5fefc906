//! A hash (field → value), in one of two forms as Redis keeps it:
//!
//! - compact (OBJECT ENCODING `listpack`): field, value, field, value... in one `Packed` block, in
//!   insertion order, while the hash has at most `hash-max-listpack-entries` fields and no field or value
//!   longer than `hash-max-listpack-value` bytes. Lookups walk the block (it is small).
//! - large (`hashtable`): `dict::Dict`, O(1) lookups, inserts, removals and random picks.
//!
//! A hash converts to the large form when a write crosses a threshold, and never back (as in Redis):
//! the threshold is checked on every write of a field and value, against the limits of that moment.

mod dict;

use allocator_api2::boxed::Box;

use crate::alloc::KvAlloc;
use crate::types::packed::Packed;
use crate::types::{random_below, Limits};

use self::dict::{Dict, DictIter};

/// Redis converts a listpack that would grow past 1 GiB (`lpSafeToAdd`), whatever the thresholds say.
const PACKED_MAX: usize = 1 << 30;

enum Repr<A: KvAlloc> {
    Compact(Packed<A>),
    /// Boxed, so that a small hash (and every collection, whose size is its largest kind's) stays small.
    Large(Box<Dict<A>, A>),
}

pub struct Hash<A: KvAlloc> {
    repr: Repr<A>,
    alloc: A,
}

impl<A: KvAlloc> Hash<A> {
    pub fn new_in(alloc: A) -> Self {
        Hash {
            repr: Repr::Compact(Packed::new_in(alloc.clone())),
            alloc,
        }
    }

    /// Fields held.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(p) => p.len() / 2,
            Repr::Large(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this collection's blocks take beyond the struct itself.
    pub fn bytes(&self) -> usize {
        match &self.repr {
            Repr::Compact(p) => p.bytes(),
            Repr::Large(d) => core::mem::size_of::<Dict<A>>() + d.bytes(),
        }
    }

    /// OBJECT ENCODING's answer: `listpack` (compact) or `hashtable` (large).
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Large(_) => "hashtable",
        }
    }

    /// A deep copy (COPY), or None when the allocator has no memory for it.
    pub fn try_clone(&self) -> Option<Self> {
        let repr = match &self.repr {
            Repr::Compact(p) => {
                let mut c = Packed::new_in(self.alloc.clone());
                for e in p.iter() {
                    c.push_back(e);
                }
                Repr::Compact(c)
            }
            Repr::Large(d) => Repr::Large(Box::new_in(d.try_clone()?, self.alloc.clone())),
        };
        Some(Hash {
            repr,
            alloc: self.alloc.clone(),
        })
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Compact(p) => p.find(field, 2).map(|pos| {
                let next = p.get(pos).1;
                p.get(next).0
            }),
            Repr::Large(d) => d.get(field),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value` (converting to the large form first when either is longer than
    /// `hash_value`, and after when the hash then has more than `hash_entries` fields); whether the field
    /// is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        if let Repr::Compact(p) = &self.repr {
            let long = |b: &[u8]| b.len() as i64 > limits.hash_value;
            if long(field) || long(value) || p.used() + field.len() + value.len() > PACKED_MAX {
                self.convert();
            }
        }
        let new = match &mut self.repr {
            Repr::Compact(p) => match p.find(field, 2) {
                Some(pos) => {
                    let vpos = p.get(pos).1;
                    p.replace(vpos, value);
                    false
                }
                None => {
                    p.push_back(field);
                    p.push_back(value);
                    true
                }
            },
            Repr::Large(d) => d.set(field, value),
        };
        if matches!(self.repr, Repr::Compact(_)) && self.len() as i64 > limits.hash_entries {
            self.convert();
        }
        new
    }

    /// Removes `field`; whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Compact(p) => match p.find(field, 2) {
                Some(pos) => {
                    p.remove_n(pos, 2);
                    true
                }
                None => false,
            },
            Repr::Large(d) => d.remove(field),
        }
    }

    /// Moves the fields into the large form.
    #[cold]
    fn convert(&mut self) {
        let Repr::Compact(p) = &self.repr else {
            return;
        };
        let mut d = Dict::with_capacity_in(p.len() / 2, self.alloc.clone());
        let mut it = p.iter();
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            d.set(f, v);
        }
        self.repr = Repr::Large(Box::new_in(d, self.alloc.clone()));
    }

    /// Every field and value: in insertion order in the compact form (as Redis's listpack replies),
    /// in the array's order in the large form.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        match &self.repr {
            Repr::Compact(p) => Iter::Compact(p.iter(), self.len()),
            Repr::Large(d) => Iter::Large(d.iter()),
        }
    }

    /// One step of HSCAN from `cursor`: calls `f` on each field and value visited, returns the next
    /// cursor (0 when done). The compact form gives everything at once with cursor 0, as Redis does for
    /// a listpack; the large form visits `count` positions of its array, from the end towards the front
    /// (see `dict` for why nothing present throughout a scan is missed).
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], &'a [u8])) -> u64 {
        match &self.repr {
            Repr::Compact(_) => {
                for (k, v) in self.iter() {
                    f(k, v);
                }
                0
            }
            Repr::Large(d) => {
                let len = d.len();
                let start = match usize::try_from(cursor) {
                    Ok(c) if c != 0 && c <= len => c,
                    _ => len,
                };
                let stop = start.saturating_sub(count.max(1));
                for i in (stop..start).rev() {
                    let (k, v) = d.nth(i);
                    f(k, v);
                }
                stop as u64
            }
        }
    }

    /// `n` random picks with repeats (HRANDFIELD with a negative count), each handed to `f` as it is
    /// made, so that a big `n` costs no list of them.
    pub fn random_picks<'a>(&'a self, n: u64, mut f: impl FnMut(&'a [u8], &'a [u8])) {
        let len = self.len();
        if len == 0 {
            return;
        }
        match &self.repr {
            Repr::Compact(_) => {
                let all: std::vec::Vec<(&[u8], &[u8])> = self.iter().collect();
                for _ in 0..n {
                    let (k, v) = all[random_below(len)];
                    f(k, v);
                }
            }
            Repr::Large(d) => {
                for _ in 0..n {
                    let (k, v) = d.nth(random_below(len));
                    f(k, v);
                }
            }
        }
    }

    /// HRANDFIELD's picks, as Redis makes them: `count` fields with repeats when it is negative
    /// (`-count` picks), distinct fields otherwise (the whole hash, in its order, when `count` is at
    /// least its length). The caller keeps `-count` to what it can reply.
    pub fn random_pairs(&self, count: i64) -> std::vec::Vec<(&[u8], &[u8])> {
        let len = self.len();
        if len == 0 || count == 0 {
            return std::vec::Vec::new();
        }
        if count as u64 >= len as u64 && count > 0 {
            return self.iter().collect();
        }
        // The compact form walks to a position: index it once.
        let all: std::vec::Vec<(&[u8], &[u8])> = match &self.repr {
            Repr::Compact(_) => self.iter().collect(),
            Repr::Large(_) => std::vec::Vec::new(),
        };
        let nth = |i: usize| match &self.repr {
            Repr::Compact(_) => all[i],
            Repr::Large(d) => d.nth(i),
        };
        if count < 0 {
            let mut out = std::vec::Vec::new();
            self.random_picks(count.unsigned_abs(), |f, v| out.push((f, v)));
            return out;
        }
        let n = count as usize;
        let picks: std::vec::Vec<usize> = if n * 3 > len {
            // Many of them: a partial shuffle of every position.
            let mut idx: std::vec::Vec<usize> = (0..len).collect();
            for k in 0..n {
                let j = k + random_below(len - k);
                idx.swap(k, j);
            }
            idx.truncate(n);
            idx
        } else {
            // Few of them: draw until `n` distinct positions came up (each draw is new with chance at
            // least 2/3).
            let mut seen = std::collections::HashSet::with_capacity(n);
            let mut idx = std::vec::Vec::with_capacity(n);
            while idx.len() < n {
                let i = random_below(len);
                if seen.insert(i) {
                    idx.push(i);
                }
            }
            idx
        };
        picks.into_iter().map(nth).collect()
    }
}

/// Fields and values of a [`Hash`], see [`Hash::iter`].
enum Iter<'a, A: KvAlloc> {
    Compact(crate::types::packed::Iter<'a, A>, usize),
    Large(DictIter<'a, A>),
}

impl<'a, A: KvAlloc> Iterator for Iter<'a, A> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Compact(it, left) => {
                let f = it.next()?;
                let v = it.next()?;
                *left -= 1;
                Some((f, v))
            }
            Iter::Large(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Iter::Compact(_, left) => *left,
            Iter::Large(it) => it.len(),
        };
        (n, Some(n))
    }
}

impl<A: KvAlloc> ExactSizeIterator for Iter<'_, A> {}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;
    use std::collections::HashMap;

    fn limits(entries: i64, value: i64) -> Limits {
        Limits {
            hash_entries: entries,
            hash_value: value,
            ..Limits::default()
        }
    }

    fn contents(h: &Hash<Global>) -> HashMap<std::vec::Vec<u8>, std::vec::Vec<u8>> {
        h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }

    #[test]
    fn converts_once_past_either_threshold_and_keeps_every_field() {
        let l = limits(4, 8);
        let mut h = Hash::new_in(Global);
        for i in 0..4 {
            assert!(h.set(format!("f{i}").as_bytes(), b"v", &l));
        }
        assert_eq!(h.encoding(), "listpack");
        assert!(!h.set(b"f0", b"changed", &l));
        assert_eq!(h.encoding(), "listpack");
        assert!(h.set(b"f4", b"v", &l));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        assert_eq!(h.get(b"f0"), Some(&b"changed"[..]));
        // Removing back under the threshold does not convert back.
        for i in 0..4 {
            assert!(h.remove(format!("f{i}").as_bytes()));
        }
        assert_eq!(h.encoding(), "hashtable");

        let mut h = Hash::new_in(Global);
        h.set(b"a", b"short", &l);
        assert!(!h.set(b"a", b"longer than eight", &l));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"a"), Some(&b"longer than eight"[..]));

        let mut h = Hash::new_in(Global);
        h.set(b"", b"", &limits(0, 8));
        assert_eq!(h.encoding(), "hashtable");
    }

    #[test]
    fn both_forms_agree_with_a_map_through_random_edits() {
        let mut seed = 99u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for l in [limits(1 << 30, 1 << 30), limits(16, 10), limits(0, 0)] {
            let mut h = Hash::new_in(Global);
            let mut model = HashMap::new();
            let steps = if cfg!(miri) { 80 } else { 4000 };
            for _ in 0..steps {
                let f = format!("f{}", rnd(40)).into_bytes();
                match rnd(3) {
                    0 | 1 => {
                        let v = vec![b'x'; rnd(14) as usize];
                        assert_eq!(h.set(&f, &v, &l), model.insert(f, v).is_none());
                    }
                    _ => assert_eq!(h.remove(&f), model.remove(&f).is_some()),
                }
                assert_eq!(h.len(), model.len());
            }
            assert_eq!(contents(&h), model);
            assert_eq!(contents(&h.try_clone().unwrap()), model);
            for (f, v) in &model {
                assert_eq!(h.get(f), Some(&v[..]));
            }
        }
    }

    #[test]
    fn a_hash_is_small_whatever_its_form() {
        assert!(core::mem::size_of::<Hash<Global>>() <= 40);
    }

    #[test]
    fn compact_order_is_insertion_order() {
        let l = Limits::default();
        let mut h = Hash::new_in(Global);
        for f in [&b"c"[..], b"a", b"b"] {
            h.set(f, b"1", &l);
        }
        h.set(b"a", b"2", &l);
        h.remove(b"c");
        h.set(b"c", b"3", &l);
        let order: std::vec::Vec<_> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        assert_eq!(
            order,
            vec![
                (b"a".to_vec(), b"2".to_vec()),
                (b"b".to_vec(), b"1".to_vec()),
                (b"c".to_vec(), b"3".to_vec())
            ]
        );
    }

    #[test]
    fn a_full_scan_sees_every_field_present_throughout_despite_removals() {
        let l = limits(0, 0);
        let mut h = Hash::new_in(Global);
        let n = if cfg!(miri) { 50 } else { 1000 };
        for i in 0..n {
            h.set(format!("f{i}").as_bytes(), b"v", &l);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut removed = 0;
        loop {
            cursor = h.scan(cursor, 7, |f, _| {
                seen.insert(f.to_vec());
            });
            // Remove a field seen already and one not yet seen, between steps.
            for f in [format!("f{removed}"), format!("f{}", n - 1 - removed)] {
                h.remove(f.as_bytes());
            }
            removed += 1;
            if cursor == 0 {
                break;
            }
        }
        for i in removed..n - removed {
            assert!(seen.contains(format!("f{i}").as_bytes()), "f{i} missed");
        }
    }

    #[test]
    fn random_pairs_follow_redis_cases() {
        for l in [Limits::default(), limits(0, 0)] {
            let mut h = Hash::new_in(Global);
            for i in 0..10 {
                h.set(format!("f{i}").as_bytes(), format!("v{i}").as_bytes(), &l);
            }
            assert_eq!(h.random_pairs(0).len(), 0);
            assert_eq!(h.random_pairs(-25).len(), 25);
            let all: std::vec::Vec<_> = h.iter().collect();
            assert_eq!(h.random_pairs(10), all);
            assert_eq!(h.random_pairs(100), all);
            for n in [1, 2, 5, 9] {
                let p = h.random_pairs(n);
                let distinct: std::collections::HashSet<_> = p.iter().collect();
                assert_eq!((p.len(), distinct.len()), (n as usize, n as usize));
                for (f, v) in p {
                    assert_eq!(h.get(f), Some(v));
                }
            }
        }
    }
}
