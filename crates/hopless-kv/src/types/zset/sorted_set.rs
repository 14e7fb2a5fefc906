//! [`ZSet`]: a sorted set in either form (the compact `listpack.rs` block or the large `large.rs`
//! hash and tree) behind one API, the one-way conversion between them, and ZADD's conditions.

use allocator_api2::boxed::Box;

use super::large::Large;
use super::range::{LexRange, ScoreRange};
use super::{listpack, tree};
use crate::alloc::KvAlloc;
use crate::types::limits::Limits;
use crate::types::packed::Packed;

pub(super) enum Form<A: KvAlloc> {
    Listpack(Packed<A>),
    /// Boxed: a set's struct stays the size of the compact form (every key's collection is sized by
    /// the largest kind's struct).
    Skiplist(Box<Large<A>, A>),
}

pub struct ZSet<A: KvAlloc> {
    alloc: A,
    pub(super) form: Form<A>,
}

/// ZADD's conditions (its NX, XX, GT, LT and INCR options).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddFlags {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update when the new score is greater.
    pub gt: bool,
    /// Only update when the new score is less.
    pub lt: bool,
    /// The score is an increment of the current one.
    pub incr: bool,
}

/// What one ZADD pair did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Added {
    /// A new member, at this score.
    Added(f64),
    /// An existing member moved to this score.
    Updated(f64),
    /// An existing member that kept its score (this one) as the options asked, or an update with the
    /// same score.
    Same(f64),
    /// Nothing done (NX on an existing member, XX on a missing one, GT/LT refused).
    Nop,
}

/// The increment would make the score NaN (`+inf` plus `-inf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NanScore;

impl<A: KvAlloc> ZSet<A> {
    pub fn new_in(alloc: A) -> Self {
        ZSet {
            form: Form::Listpack(Packed::new_in(alloc.clone())),
            alloc,
        }
    }

    pub fn len(&self) -> usize {
        match &self.form {
            Form::Listpack(p) => p.len() / 2,
            Form::Skiplist(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this collection's blocks take beyond the struct itself.
    pub fn bytes(&self) -> usize {
        match &self.form {
            Form::Listpack(p) => p.bytes(),
            Form::Skiplist(l) => core::mem::size_of::<Large<A>>() + l.bytes(),
        }
    }

    pub fn encoding(&self) -> &'static str {
        match &self.form {
            Form::Listpack(_) => "listpack",
            Form::Skiplist(_) => "skiplist",
        }
    }

    pub fn try_clone(&self) -> Option<Self> {
        let form = match &self.form {
            Form::Listpack(p) => {
                let mut q = Packed::new_in(self.alloc.clone());
                for e in p.iter() {
                    q.push_back(e);
                }
                Form::Listpack(q)
            }
            Form::Skiplist(l) => Form::Skiplist(Box::new_in(l.try_clone()?, self.alloc.clone())),
        };
        Some(ZSet {
            alloc: self.alloc.clone(),
            form,
        })
    }

    /// Picks the form for a set about to receive `n` members, the longest `max_len` bytes, as Redis's
    /// `zsetTypeCreate` does for a new key: the large form at once when the hint is past the limits.
    /// Only an empty set changes form here.
    pub fn prepare(&mut self, n: usize, max_len: usize, limits: &Limits) {
        if self.is_empty()
            && matches!(self.form, Form::Listpack(_))
            && (n as i64 > limits.zset_entries || max_len as i64 > limits.zset_value)
        {
            let large = Large::new_in(self.alloc.clone(), n.min(1 << 16));
            self.form = Form::Skiplist(Box::new_in(large, self.alloc.clone()));
        }
    }

    /// Converts to the large form when one more member of `len` bytes would cross a limit.
    fn grow_for(&mut self, len: usize, limits: &Limits) {
        let Form::Listpack(p) = &self.form else {
            return;
        };
        if (p.len() / 2 + 1) as i64 <= limits.zset_entries && len as i64 <= limits.zset_value {
            return;
        }
        let mut large = Large::new_in(self.alloc.clone(), p.len() / 2 + 1);
        for (m, s) in listpack::walk(p, 0, false) {
            large.insert(m, s);
        }
        self.form = Form::Skiplist(Box::new_in(large, self.alloc.clone()));
    }

    /// `member`'s score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.form {
            Form::Listpack(p) => listpack::find(p, member).map(|(_, _, s)| s),
            Form::Skiplist(l) => l.score(member),
        }
    }

    /// `member`'s 0-based rank from the lowest score, and its score.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        match &self.form {
            Form::Listpack(p) => listpack::find(p, member).map(|(_, r, s)| (r, s)),
            Form::Skiplist(l) => l.rank(member),
        }
    }

    /// Where `member` is (its listpack offset or its arena slot) and its score.
    fn locate(&self, member: &[u8]) -> Option<(usize, f64)> {
        match &self.form {
            Form::Listpack(p) => listpack::find(p, member).map(|(pos, _, s)| (pos, s)),
            Form::Skiplist(l) => l.find(member).map(|i| (i as usize, l.tree.score(i))),
        }
    }

    /// Moves the member found at `at` (from [`ZSet::locate`]) to `score`.
    fn rescore_at(&mut self, at: usize, member: &[u8], score: f64) {
        match &mut self.form {
            Form::Listpack(p) => {
                listpack::remove_at(p, at);
                listpack::insert(p, member, score + 0.0);
            }
            Form::Skiplist(l) => l.rescore(at as u32, score),
        }
    }

    /// Adds `member`, known absent, converting first if it crosses a limit.
    fn insert_new(&mut self, member: &[u8], score: f64, limits: &Limits) {
        self.grow_for(member.len(), limits);
        match &mut self.form {
            // The compact form stores negative zero as `0`, the large form as it is: Redis's listpack
            // and skiplist do the same (ZSCORE reads `0` from one and `-0` from the other).
            Form::Listpack(p) => listpack::insert(p, member, score + 0.0),
            Form::Skiplist(l) => l.insert(member, score),
        }
    }

    /// Sets `member`'s score, adding it if new; whether it was new. `score` is not NaN.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: &Limits) -> bool {
        match self.locate(member) {
            Some((at, old)) => {
                if old != score {
                    self.rescore_at(at, member, score);
                }
                false
            }
            None => {
                self.insert_new(member, score, limits);
                true
            }
        }
    }

    /// One ZADD pair under `flags`, as Redis's `zsetAdd`. `score` is not NaN.
    pub fn add(
        &mut self,
        member: &[u8],
        score: f64,
        flags: AddFlags,
        limits: &Limits,
    ) -> Result<Added, NanScore> {
        match self.locate(member) {
            Some((at, cur)) => {
                if flags.nx {
                    return Ok(Added::Nop);
                }
                let mut score = score;
                if flags.incr {
                    score += cur;
                    if score.is_nan() {
                        return Err(NanScore);
                    }
                }
                if (flags.lt && score >= cur) || (flags.gt && score <= cur) {
                    return Ok(Added::Nop);
                }
                if score == cur {
                    return Ok(Added::Same(score));
                }
                self.rescore_at(at, member, score);
                Ok(Added::Updated(score))
            }
            None if flags.xx => Ok(Added::Nop),
            None => {
                // The reply is the score as given (`-0` too), whatever the form stores.
                self.insert_new(member, score, limits);
                Ok(Added::Added(score))
            }
        }
    }

    /// Removes `member`; whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.form {
            Form::Listpack(p) => match listpack::find(p, member) {
                Some((pos, _, _)) => {
                    listpack::remove_at(p, pos);
                    true
                }
                None => false,
            },
            Form::Skiplist(l) => l.remove(member),
        }
    }

    /// How many members, from the first, satisfy `pred(score, member)` (true on a prefix of the
    /// order).
    pub fn count_prefix(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        match &self.form {
            Form::Listpack(p) => listpack::count_prefix(p, pred),
            Form::Skiplist(l) => l.tree.count_prefix(pred),
        }
    }

    /// The ranks `lo..hi` of the members in a score range.
    pub fn score_ranks(&self, r: &ScoreRange) -> (usize, usize) {
        if r.is_empty() {
            return (0, 0);
        }
        let lo = self.count_prefix(|s, _| r.before(s));
        let hi = self.count_prefix(|s, _| r.not_after(s));
        (lo, hi.max(lo))
    }

    /// The ranks `lo..hi` of the members in a member range (meant for a set of equal scores).
    pub fn lex_ranks(&self, r: &LexRange) -> (usize, usize) {
        if r.is_empty() {
            return (0, 0);
        }
        let lo = self.count_prefix(|_, m| r.before(m));
        let hi = self.count_prefix(|_, m| r.not_after(m));
        (lo, hi.max(lo))
    }

    /// The members from rank `k` on, forwards, or from rank `k` back to the first when `rev`.
    pub fn walk(&self, k: usize, rev: bool) -> Walk<'_, A> {
        match &self.form {
            Form::Listpack(p) => Walk(WalkForm::Listpack(listpack::walk(p, k, rev))),
            Form::Skiplist(l) => Walk(WalkForm::Skiplist(l.walk(k, rev))),
        }
    }

    /// Every member and score, lowest first.
    pub fn iter(&self) -> Walk<'_, A> {
        self.walk(0, false)
    }

    /// The member and score at rank `k` (< len).
    pub fn at(&self, k: usize) -> (&[u8], f64) {
        match &self.form {
            Form::Listpack(p) => {
                let (m, s, _) = listpack::pair(p, p.offset_of(2 * k));
                (m, s)
            }
            Form::Skiplist(l) => {
                let i = l.tree.select(k);
                (l.tree.member(i), l.tree.score(i))
            }
        }
    }

    /// Removes the ranks `start..end` (within `0..len`), giving each member and score to `f` in
    /// order.
    pub fn remove_ranks(&mut self, start: usize, end: usize, mut f: impl FnMut(&[u8], f64)) {
        if start >= end {
            return;
        }
        match &mut self.form {
            Form::Listpack(p) => {
                let pos = p.offset_of(2 * start);
                for (m, s) in listpack::walk(p, start, false).take(end - start) {
                    f(m, s);
                }
                p.remove_n(pos, 2 * (end - start));
            }
            Form::Skiplist(l) => l.remove_ranks(start, end, f),
        }
    }

    /// ZSCAN: from `cursor`, at least `count` slots' worth of members to `f`; the next cursor (0 when
    /// done). The compact form goes whole in one call, as Redis's does; the large form walks its
    /// arena's slots, which do not move while a member stays, so a member present for the whole scan
    /// is returned exactly once.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        match &self.form {
            Form::Listpack(_) => {
                for (m, s) in self.iter() {
                    f(m, s);
                }
                0
            }
            Form::Skiplist(l) => {
                let slots = l.tree.slots();
                let mut i = cursor as usize;
                let mut seen = 0;
                while i < slots && seen < count {
                    if let Some((m, s)) = l.tree.slot(i) {
                        f(m, s);
                        seen += 1;
                    }
                    i += 1;
                }
                if i >= slots {
                    0
                } else {
                    i as u64
                }
            }
        }
    }
}

/// Members in order from a rank: see [`ZSet::walk`].
pub struct Walk<'a, A: KvAlloc>(WalkForm<'a, A>);

enum WalkForm<'a, A: KvAlloc> {
    Listpack(listpack::Walk<'a, A>),
    Skiplist(tree::Walk<'a, A>),
}

impl<'a, A: KvAlloc> Iterator for Walk<'a, A> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            WalkForm::Listpack(w) => w.next(),
            WalkForm::Skiplist(w) => w.next(),
        }
    }
}
