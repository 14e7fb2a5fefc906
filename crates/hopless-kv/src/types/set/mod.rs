//! A set of byte strings (SADD and friends), in the three forms Redis keeps one in:
//!
//! - **intset**: while every member is an integer in canonical decimal form (Redis's `string2ll`: "01",
//!   "+1" and "-0" are not) and there are at most `set-max-intset-entries`: sorted integers, 2, 4 or 8
//!   bytes each, binary search (`intset.rs`). Iterates in ascending order, as Redis's does.
//! - **listpack**: while there are at most `set-max-listpack-entries` members of at most
//!   `set-max-listpack-value` bytes: one `Packed` block, insertion order, linear search.
//! - **hashtable**: otherwise: a hash index over a dense vector of members (`table.rs`).
//!
//! A set starts as an intset, and converts once when an add crosses a threshold: an intset to a listpack
//! when a non-integer member arrives and the whole set fits a listpack, else to a hashtable; a listpack to
//! a hashtable. It never converts back (as in Redis). Redis 7.0 has no listpack sets (a set that is not an
//! intset is a hashtable there); Redis 7.2 converts exactly as here.
//!
//! The random commands take their random numbers from the caller (`rng`), so that the type stays
//! deterministic under test.

mod intset;
mod table;

use allocator_api2::boxed::Box;

use self::intset::IntSet;
use self::table::Table;
use super::limits::Limits;
use super::packed::Packed;
use crate::alloc::KvAlloc;
use crate::redis_util::parse_i64;

/// The thresholds of a set's compact forms (`set-max-intset-entries`, `set-max-listpack-entries`,
/// `set-max-listpack-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetLimits {
    pub intset_entries: usize,
    pub entries: usize,
    pub value: usize,
}

impl SetLimits {
    /// The set thresholds of the store's [`Limits`].
    pub fn of(l: &Limits) -> Self {
        let n = |v: i64| v.max(0) as usize;
        SetLimits {
            intset_entries: n(l.set_intset_entries),
            entries: n(l.set_entries),
            value: n(l.set_value),
        }
    }
}

enum Repr<A: KvAlloc> {
    /// Sorted, no duplicates.
    Ints(IntSet<A>),
    /// Insertion order, no duplicates.
    Packed(Packed<A>),
    /// Boxed, so that a small set (and every collection, whose size is its largest kind's) stays small.
    Table(Box<Table<A>, A>),
}

pub struct Set<A: KvAlloc> {
    alloc: A,
    repr: Repr<A>,
}

/// `x` in decimal, written into `buf`.
pub(crate) fn int_bytes(x: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = x.unsigned_abs();
    let mut p = buf.len();
    loop {
        p -= 1;
        buf[p] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if x < 0 {
        p -= 1;
        buf[p] = b'-';
    }
    &buf[p..]
}

/// A random index below `n` (not 0) from a 64-bit random number.
fn below(rng: &mut impl FnMut() -> u64, n: usize) -> usize {
    ((rng() as u128 * n as u128) >> 64) as usize
}

/// `k` distinct random indices below `n` (`k <= n`), in random order.
fn distinct_indices(k: usize, n: usize, rng: &mut impl FnMut() -> u64) -> Vec<usize> {
    if k.saturating_mul(3) > n {
        // Many of them: a partial Fisher-Yates shuffle of all the indices.
        let mut all: Vec<usize> = (0..n).collect();
        for j in 0..k {
            let t = j + below(rng, n - j);
            all.swap(j, t);
        }
        all.truncate(k);
        all
    } else {
        // Few: Floyd's sampling, O(k).
        let mut chosen = std::collections::HashSet::with_capacity(k);
        let mut out = Vec::with_capacity(k);
        for j in n - k..n {
            let t = below(rng, j + 1);
            let pick = if chosen.insert(t) { t } else { j };
            if pick == j {
                chosen.insert(j);
            }
            out.push(pick);
        }
        out
    }
}

impl<A: KvAlloc> Set<A> {
    pub fn new_in(alloc: A) -> Self {
        Set {
            repr: Repr::Ints(IntSet::new_in(alloc.clone())),
            alloc,
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Ints(v) => v.len(),
            Repr::Packed(p) => p.len(),
            Repr::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this collection's blocks take beyond the struct itself.
    pub fn bytes(&self) -> usize {
        match &self.repr {
            Repr::Ints(v) => v.bytes(),
            Repr::Packed(p) => p.bytes(),
            Repr::Table(t) => core::mem::size_of::<Table<A>>() + t.bytes(),
        }
    }

    /// OBJECT ENCODING's answer, in Redis 7.0's names: `intset`, or `hashtable` for every other set. A
    /// small set of strings is packed here (as Redis 7.2 keeps one in a listpack), but Redis 7.0, whose
    /// replies the server follows, has no listpack sets: its clients and its own tests expect
    /// `hashtable` for any set that is not an intset.
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Ints(_) => "intset",
            Repr::Packed(_) | Repr::Table(_) => "hashtable",
        }
    }

    /// The form this set is really in: `intset`, `packed` or `table` (what [`Set::encoding`] does not
    /// tell apart).
    pub fn form(&self) -> &'static str {
        match &self.repr {
            Repr::Ints(_) => "intset",
            Repr::Packed(_) => "packed",
            Repr::Table(_) => "table",
        }
    }

    /// A deep copy, or None when the allocator has no memory for it.
    pub fn try_clone(&self) -> Option<Self> {
        let repr = match &self.repr {
            Repr::Ints(v) => Repr::Ints(v.try_clone()?),
            Repr::Packed(p) => {
                let mut c = Packed::new_in(self.alloc.clone());
                for e in p.iter() {
                    c.push_back(e);
                }
                Repr::Packed(c)
            }
            Repr::Table(t) => Repr::Table(Box::new_in(t.try_clone()?, self.alloc.clone())),
        };
        Some(Set {
            alloc: self.alloc.clone(),
            repr,
        })
    }

    /// SISMEMBER.
    pub fn contains(&self, m: &[u8]) -> bool {
        match &self.repr {
            Repr::Ints(v) => parse_i64(m).is_some_and(|x| v.contains(x)),
            Repr::Packed(p) => p.find(m, 1).is_some(),
            Repr::Table(t) => t.contains(m),
        }
    }

    /// Adds `m`; false if it was a member already. Converts to a larger form first when `m` would not fit
    /// the current one under `lim`.
    pub fn add(&mut self, m: &[u8], lim: &SetLimits) -> bool {
        match &mut self.repr {
            Repr::Ints(v) => {
                if let Some(x) = parse_i64(m) {
                    if !v.insert(x) {
                        return false;
                    }
                    if v.len() > lim.intset_entries.min(1 << 30) {
                        self.convert_to_table(0);
                    }
                    return true;
                }
                // Redis 7.2's test: every member (the widest integers, and `m`) within the value limit,
                // and room for one more.
                let mut buf = [0u8; 20];
                let widest = match (v.first(), v.last()) {
                    (Some(lo), Some(hi)) => int_bytes(lo, &mut buf).len().max(int_bytes(hi, &mut buf).len()),
                    _ => 0,
                };
                if v.len() < lim.entries && m.len() <= lim.value && widest <= lim.value {
                    self.convert_to_packed();
                } else {
                    self.convert_to_table(1);
                }
            }
            Repr::Packed(p) => {
                if p.find(m, 1).is_some() {
                    return false;
                }
                if p.len() >= lim.entries || m.len() > lim.value {
                    self.convert_to_table(1);
                }
            }
            Repr::Table(_) => {}
        }
        match &mut self.repr {
            Repr::Packed(p) => {
                p.push_back(m);
                true
            }
            Repr::Table(t) => t.insert(m),
            Repr::Ints(_) => unreachable!("converted above"),
        }
    }

    /// Removes `m`; false if it was not a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Ints(v) => parse_i64(m).is_some_and(|x| v.remove(x)),
            Repr::Packed(p) => match p.find(m, 1) {
                Some(pos) => {
                    p.remove(pos);
                    true
                }
                None => false,
            },
            Repr::Table(t) => t.remove(m),
        }
    }

    /// Every member, in the form's order (ascending for an intset).
    pub fn for_each(&self, mut f: impl FnMut(&[u8])) {
        self.for_each_while(|m| {
            f(m);
            true
        });
    }

    /// Members in the form's order while `f` says to go on.
    pub fn for_each_while(&self, mut f: impl FnMut(&[u8]) -> bool) {
        match &self.repr {
            Repr::Ints(v) => {
                let mut buf = [0u8; 20];
                for x in v.iter() {
                    if !f(int_bytes(x, &mut buf)) {
                        return;
                    }
                }
            }
            Repr::Packed(p) => {
                for m in p.iter() {
                    if !f(m) {
                        return;
                    }
                }
            }
            Repr::Table(t) => {
                for m in t.iter() {
                    if !f(m) {
                        return;
                    }
                }
            }
        }
    }

    /// Every member, copied out (SMEMBERS).
    pub fn members(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|m| out.push(m.to_vec()));
        out
    }

    /// The members at positions `idx` (each below `len`), in that order.
    fn members_at(&self, idx: &[usize]) -> Vec<Vec<u8>> {
        match &self.repr {
            Repr::Ints(v) => {
                let mut buf = [0u8; 20];
                idx.iter()
                    .map(|&i| int_bytes(v.get(i), &mut buf).to_vec())
                    .collect()
            }
            Repr::Packed(p) => {
                let all: Vec<&[u8]> = p.iter().collect();
                idx.iter().map(|&i| all[i].to_vec()).collect()
            }
            Repr::Table(t) => idx.iter().map(|&i| t.get(i).to_vec()).collect(),
        }
    }

    /// A random member (SRANDMEMBER), None if empty.
    pub fn random_member(&self, rng: &mut impl FnMut() -> u64) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let i = below(rng, self.len());
        Some(match &self.repr {
            Repr::Ints(v) => int_bytes(v.get(i), &mut [0u8; 20]).to_vec(),
            Repr::Packed(p) => p.get(p.offset_of(i)).0.to_vec(),
            Repr::Table(t) => t.get(i).to_vec(),
        })
    }

    /// `count` random members, repeats allowed (SRANDMEMBER with a negative count); none if empty.
    pub fn random_members(&self, count: usize, rng: &mut impl FnMut() -> u64) -> Vec<Vec<u8>> {
        if self.is_empty() {
            return Vec::new();
        }
        let n = self.len();
        let idx: Vec<usize> = (0..count).map(|_| below(rng, n)).collect();
        self.members_at(&idx)
    }

    /// `min(count, len)` distinct random members (SRANDMEMBER with a positive count): the whole set, in
    /// its order, when `count >= len`, else in random order.
    pub fn sample(&self, count: usize, rng: &mut impl FnMut() -> u64) -> Vec<Vec<u8>> {
        if count >= self.len() {
            return self.members();
        }
        self.members_at(&distinct_indices(count, self.len(), rng))
    }

    /// Removes and returns a random member (SPOP), None if empty.
    pub fn pop(&mut self, rng: &mut impl FnMut() -> u64) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let i = below(rng, self.len());
        Some(match &mut self.repr {
            Repr::Ints(v) => int_bytes(v.remove_at(i), &mut [0u8; 20]).to_vec(),
            Repr::Packed(p) => {
                let pos = p.offset_of(i);
                let m = p.get(pos).0.to_vec();
                p.remove(pos);
                m
            }
            Repr::Table(t) => t.remove_at(i).to_vec(),
        })
    }

    /// Removes and returns `min(count, len)` distinct random members (SPOP with a count): all of them, in
    /// the set's order, when `count >= len`.
    pub fn pop_many(&mut self, count: usize, rng: &mut impl FnMut() -> u64) -> Vec<Vec<u8>> {
        if count >= self.len() {
            let all = self.members();
            self.repr = Repr::Ints(IntSet::new_in(self.alloc.clone()));
            return all;
        }
        let out = self.members_at(&distinct_indices(count, self.len(), rng));
        match &mut self.repr {
            Repr::Ints(v) => {
                let mut gone: Vec<i64> = out.iter().filter_map(|m| parse_i64(m)).collect();
                gone.sort_unstable();
                v.retain(|x| gone.binary_search(&x).is_err());
            }
            _ => {
                for m in &out {
                    self.remove(m);
                }
            }
        }
        out
    }

    /// One step of SSCAN from `cursor`, looking at about `count` members, passing each to `f`; returns
    /// the next cursor (0: done). An intset or a listpack is returned whole in one step, as Redis does.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8])) -> u64 {
        match &self.repr {
            Repr::Table(t) => t.scan(cursor, count, f),
            _ => {
                self.for_each(&mut f);
                0
            }
        }
    }

    /// Converts an intset to a listpack.
    fn convert_to_packed(&mut self) {
        let Repr::Ints(v) = &self.repr else {
            return;
        };
        let mut p = Packed::new_in(self.alloc.clone());
        let mut buf = [0u8; 20];
        for x in v.iter() {
            p.push_back(int_bytes(x, &mut buf));
        }
        self.repr = Repr::Packed(p);
    }

    /// Converts an intset or a listpack to a hashtable, with room for `extra` more members.
    fn convert_to_table(&mut self, extra: usize) {
        if matches!(self.repr, Repr::Table(_)) {
            return;
        }
        let mut t = Table::with_capacity_in(self.len() + extra, self.alloc.clone());
        self.for_each(|m| {
            t.insert(m);
        });
        self.repr = Repr::Table(Box::new_in(t, self.alloc.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;
    use std::collections::BTreeSet;

    const LIM: SetLimits = SetLimits {
        intset_entries: 8,
        entries: 6,
        value: 10,
    };

    fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    fn sorted(s: &Set<Global>) -> Vec<Vec<u8>> {
        let mut v = s.members();
        v.sort();
        v
    }

    #[test]
    fn int_bytes_writes_every_width() {
        for x in [0, 1, -1, 9, 10, -10, i64::MAX, i64::MIN, 123_456_789] {
            assert_eq!(int_bytes(x, &mut [0; 20]), x.to_string().as_bytes());
        }
    }

    #[test]
    fn intset_stays_sorted_and_converts_past_its_limit() {
        let mut s = Set::new_in(Global);
        for x in [5, -3, 9, 0, 5] {
            s.add(x.to_string().as_bytes(), &LIM);
        }
        assert_eq!(s.form(), "intset");
        assert_eq!(
            s.members(),
            vec![b"-3".to_vec(), b"0".to_vec(), b"5".to_vec(), b"9".to_vec()]
        );
        // Non-canonical integers are strings.
        assert!(!s.contains(b"05"));
        assert!(!s.contains(b"+5"));
        for x in 10..14 {
            assert!(s.add(x.to_string().as_bytes(), &LIM));
        }
        assert_eq!(s.form(), "intset");
        assert_eq!(s.len(), 8);
        assert!(s.add(b"100", &LIM));
        assert_eq!(s.form(), "table");
        assert!(s.contains(b"100") && s.contains(b"-3") && !s.contains(b"7"));
    }

    #[test]
    fn intset_takes_a_string_as_a_listpack_when_it_fits() {
        let mut s = Set::new_in(Global);
        s.add(b"1", &LIM);
        s.add(b"2", &LIM);
        assert!(s.add(b"01", &LIM));
        assert_eq!(s.form(), "packed");
        assert_eq!(s.members(), vec![b"1".to_vec(), b"2".to_vec(), b"01".to_vec()]);
        assert!(!s.add(b"2", &LIM));
        // A member longer than the value limit: a hashtable.
        let mut t = Set::new_in(Global);
        t.add(b"1", &LIM);
        t.add(b"a-long-member", &LIM);
        assert_eq!(t.form(), "table");
        // An integer wider than the value limit keeps the set out of a listpack.
        let mut u = Set::new_in(Global);
        u.add(b"12345678901", &LIM);
        u.add(b"a", &LIM);
        assert_eq!(u.form(), "table");
        // A first string member.
        let mut w = Set::new_in(Global);
        w.add(b"a", &LIM);
        assert_eq!(w.form(), "packed");
    }

    #[test]
    fn listpack_converts_on_count_or_length() {
        let mut s = Set::new_in(Global);
        for m in ["a", "b", "c", "d", "e", "f"] {
            s.add(m.as_bytes(), &LIM);
        }
        assert_eq!(s.form(), "packed");
        s.add(b"g", &LIM);
        assert_eq!(s.form(), "table");
        let mut t = Set::new_in(Global);
        t.add(b"a", &LIM);
        t.add(b"0123456789x", &LIM);
        assert_eq!(t.form(), "table");
        assert_eq!(sorted(&t), vec![b"0123456789x".to_vec(), b"a".to_vec()]);
    }

    #[test]
    fn every_form_against_a_model() {
        let mut rng = xorshift(7);
        let steps = if cfg!(miri) { 300 } else { 20_000 };
        for lim in [
            LIM,
            SetLimits {
                intset_entries: 0,
                entries: 0,
                value: 0,
            },
            SetLimits {
                intset_entries: 512,
                entries: 128,
                value: 64,
            },
        ] {
            let mut s = Set::new_in(Global);
            let mut m = BTreeSet::new();
            for _ in 0..steps {
                let r = rng();
                let member: Vec<u8> = match r % 6 {
                    0 | 1 => ((r >> 8) % 40).to_string().into_bytes(),
                    2 => format!("m{}", (r >> 8) % 40).into_bytes(),
                    3 => format!("0{}", (r >> 8) % 10).into_bytes(),
                    // Integers of every intset width.
                    _ => (((r >> 8) % 9) as i64 - 4)
                        .wrapping_mul(1 << (8 * ((r >> 16) % 8)))
                        .to_string()
                        .into_bytes(),
                };
                match (r >> 32) % 8 {
                    0..=3 => assert_eq!(s.add(&member, &lim), m.insert(member.clone())),
                    4 | 5 => assert_eq!(s.remove(&member), m.remove(&member)),
                    6 => {
                        if let Some(p) = s.pop(&mut rng) {
                            assert!(m.remove(&p));
                        } else {
                            assert!(m.is_empty());
                        }
                    }
                    _ => {
                        let k = ((r >> 40) % 6) as usize;
                        let got = s.pop_many(k, &mut rng);
                        assert_eq!(got.len(), k.min(m.len()));
                        for g in got {
                            assert!(m.remove(&g));
                        }
                    }
                }
                assert_eq!(s.len(), m.len());
                assert_eq!(s.contains(&member), m.contains(&member));
            }
            assert_eq!(sorted(&s), m.iter().cloned().collect::<Vec<_>>());
            let c = s.try_clone().unwrap();
            assert_eq!(sorted(&c), sorted(&s));
            assert_eq!(c.form(), s.form());
        }
    }

    #[test]
    fn samples_are_distinct_members() {
        let mut rng = xorshift(99);
        let mut s = Set::new_in(Global);
        let n = if cfg!(miri) { 40 } else { 300 };
        for i in 0..n {
            s.add(format!("x{i}").as_bytes(), &LIM);
        }
        for k in [0, 1, 5, n / 3, n / 2, n - 1, n, n + 10] {
            let got = s.sample(k, &mut rng);
            assert_eq!(got.len(), k.min(n));
            let uniq: BTreeSet<_> = got.iter().collect();
            assert_eq!(uniq.len(), got.len());
            assert!(got.iter().all(|g| s.contains(g)));
        }
        let rep = s.random_members(1000, &mut rng);
        assert_eq!(rep.len(), 1000);
        assert!(rep.iter().all(|g| s.contains(g)));
        let uniq: BTreeSet<_> = rep.iter().collect();
        assert!(uniq.len() > n / 2, "repeats cover the set");
    }

    #[test]
    fn scan_returns_every_member_present_throughout() {
        let mut rng = xorshift(3);
        let mut s = Set::new_in(Global);
        let n = if cfg!(miri) { 50 } else { 2000 };
        for i in 0..n {
            s.add(format!("k{i}").as_bytes(), &LIM);
        }
        let mut seen = BTreeSet::new();
        let mut removed = BTreeSet::new();
        let mut cursor = 0;
        loop {
            cursor = s.scan(cursor, 7, |m| {
                seen.insert(m.to_vec());
            });
            // Change the set between steps: remove some, add some.
            for _ in 0..3 {
                if let Some(p) = s.pop(&mut rng) {
                    removed.insert(p);
                }
            }
            s.add(format!("new{}", rng() % 1000).as_bytes(), &LIM);
            if cursor == 0 {
                break;
            }
        }
        for i in 0..n {
            let m = format!("k{i}").into_bytes();
            assert!(seen.contains(&m) || removed.contains(&m), "member {i} missed");
        }
    }
}
