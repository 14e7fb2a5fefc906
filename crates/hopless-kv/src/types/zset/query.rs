//! What the range commands ask of a set (ZRANGE and its BYSCORE, BYLEX, REV and LIMIT forms, the
//! legacy ZREVRANGE/ZRANGEBYSCORE/ZRANGEBYLEX spellings, ZRANGESTORE, ZREMRANGEBY*): a [`RangeSpec`],
//! turned into a [`Run`] of ranks as Redis's `genericZrangeby*Command` would walk them, and ZRANDMEMBER's
//! picks.

use super::range::{LexRange, ScoreRange};
use super::sorted_set::ZSet;
use crate::alloc::KvAlloc;
use crate::types::random::random_below;

/// How a range is given.
#[derive(Debug, Clone, PartialEq)]
pub enum RangeBy {
    /// Start and stop ranks, inclusive, negative from the end.
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// A range request: what, which way, and (for scores and members) LIMIT's offset and count.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSpec {
    pub by: RangeBy,
    /// Highest first (for Rank, the ranks count from the highest).
    pub rev: bool,
    /// LIMIT's offset (negative: nothing, as in Redis).
    pub offset: i64,
    /// LIMIT's count (negative: no limit).
    pub count: i64,
}

impl RangeSpec {
    pub fn new(by: RangeBy, rev: bool) -> Self {
        RangeSpec {
            by,
            rev,
            offset: 0,
            count: -1,
        }
    }
}

/// A run of ranks: `len` members from rank `first`, upwards, or downwards when `rev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub first: usize,
    pub len: usize,
    pub rev: bool,
}

impl Run {
    const EMPTY: Run = Run {
        first: 0,
        len: 0,
        rev: false,
    };

    /// The same ranks as `lo..hi`, lowest first.
    pub fn span(&self) -> (usize, usize) {
        if self.len == 0 {
            (0, 0)
        } else if self.rev {
            (self.first + 1 - self.len, self.first + 1)
        } else {
            (self.first, self.first + self.len)
        }
    }
}

/// Redis's rank range: negative ranks from the end, clamped; empty when start is past stop or the end.
pub fn rank_span(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let n = len as i64;
    let mut start = if start < 0 { n.saturating_add(start) } else { start };
    let mut stop = if stop < 0 { n.saturating_add(stop) } else { stop };
    if start < 0 {
        start = 0;
    }
    if start > stop || start >= n {
        return None;
    }
    if stop >= n {
        stop = n - 1;
    }
    Some((start as usize, stop as usize + 1))
}

impl<A: KvAlloc> ZSet<A> {
    /// The ranks `spec` selects, in the order they are to be returned.
    pub fn run_of(&self, spec: &RangeSpec) -> Run {
        let n = self.len();
        let (lo, hi) = match &spec.by {
            RangeBy::Rank(start, stop) => {
                let Some((a, b)) = rank_span(n, *start, *stop) else {
                    return Run::EMPTY;
                };
                return if spec.rev {
                    Run {
                        first: n - 1 - a,
                        len: b - a,
                        rev: true,
                    }
                } else {
                    Run {
                        first: a,
                        len: b - a,
                        rev: false,
                    }
                };
            }
            RangeBy::Score(r) => self.score_ranks(r),
            RangeBy::Lex(r) => self.lex_ranks(r),
        };
        if spec.offset < 0 || spec.offset as u64 >= (hi - lo) as u64 {
            return Run::EMPTY;
        }
        let off = spec.offset as usize;
        let mut len = hi - lo - off;
        if spec.count >= 0 {
            len = len.min(spec.count as usize);
        }
        Run {
            first: if spec.rev { hi - 1 - off } else { lo + off },
            len,
            rev: spec.rev,
        }
    }

    /// The members and scores of a run, in its order.
    pub fn collect(&self, run: Run) -> Vec<(Vec<u8>, f64)> {
        if run.len == 0 {
            return Vec::new();
        }
        self.walk(run.first, run.rev)
            .take(run.len)
            .map(|(m, s)| (m.to_vec(), s))
            .collect()
    }

    /// ZRANDMEMBER's picks: `count` distinct members when `count >= 0` (all of them, in order, when
    /// that is at least the set's size), `-count` members with repeats when negative (the caller
    /// bounds that: it is the size of the result).
    pub fn random(&self, count: i64) -> Vec<(Vec<u8>, f64)> {
        let n = self.len();
        let own = |(m, s): (&[u8], f64)| (m.to_vec(), s);
        if n == 0 {
            return Vec::new();
        }
        if count < 0 {
            return (0..count.unsigned_abs())
                .map(|_| own(self.at(random_below(n))))
                .collect();
        }
        let k = count as usize;
        if k >= n {
            return self.iter().map(own).collect();
        }
        let mut ranks: Vec<usize>;
        if k * 3 > n {
            // Most of the set: a partial shuffle of every rank.
            ranks = (0..n).collect();
            for i in 0..k {
                let j = i + random_below(n - i);
                ranks.swap(i, j);
            }
            ranks.truncate(k);
        } else {
            let mut seen = std::collections::HashSet::with_capacity(k);
            ranks = Vec::with_capacity(k);
            while ranks.len() < k {
                let r = random_below(n);
                if seen.insert(r) {
                    ranks.push(r);
                }
            }
        }
        ranks.into_iter().map(|r| own(self.at(r))).collect()
    }

    /// A set of `pairs` (distinct members, any order), in the form Redis would store it: compact when
    /// within the limits.
    pub fn from_pairs(alloc: A, pairs: &[(Vec<u8>, f64)], limits: &crate::types::limits::Limits) -> Self {
        let mut z = ZSet::new_in(alloc);
        let max_len = pairs.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        z.prepare(pairs.len(), max_len, limits);
        for (m, s) in pairs {
            z.insert(m, *s, limits);
        }
        z
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    fn set(n: usize) -> ZSet<Global> {
        let lim = crate::types::Limits::default();
        let pairs: Vec<(Vec<u8>, f64)> = (0..n)
            .map(|i| (format!("m{i:03}").into_bytes(), i as f64))
            .collect();
        ZSet::from_pairs(Global, &pairs, &lim)
    }

    fn names(z: &ZSet<Global>, spec: RangeSpec) -> Vec<String> {
        z.collect(z.run_of(&spec))
            .into_iter()
            .map(|(m, _)| String::from_utf8(m).unwrap())
            .collect()
    }

    #[test]
    fn ranges_select_as_redis_does() {
        for n in [5, 300] {
            let z = set(n);
            let last = format!("m{:03}", n - 1);
            assert_eq!(
                names(&z, RangeSpec::new(RangeBy::Rank(0, 1), false)),
                ["m000", "m001"]
            );
            assert_eq!(
                names(&z, RangeSpec::new(RangeBy::Rank(-1, -1), false)),
                std::slice::from_ref(&last)
            );
            assert_eq!(names(&z, RangeSpec::new(RangeBy::Rank(0, 0), true)), [last]);
            assert!(names(&z, RangeSpec::new(RangeBy::Rank(3, 2), false)).is_empty());
            assert!(names(&z, RangeSpec::new(RangeBy::Rank(-1000, -1000), false)).is_empty());
            let sr = ScoreRange::parse(b"(1", b"3").unwrap();
            assert_eq!(
                names(&z, RangeSpec::new(RangeBy::Score(sr), false)),
                ["m002", "m003"]
            );
            assert_eq!(
                names(&z, RangeSpec::new(RangeBy::Score(sr), true)),
                ["m003", "m002"]
            );
            let mut lim = RangeSpec::new(RangeBy::Score(sr), true);
            lim.offset = 1;
            assert_eq!(names(&z, lim.clone()), ["m002"]);
            lim.offset = -1;
            assert!(names(&z, lim).is_empty());
            let lr = LexRange::parse(b"[m001", b"(m003").unwrap();
            let mut l = RangeSpec::new(RangeBy::Lex(lr), false);
            l.count = 1;
            assert_eq!(names(&z, l), ["m001"]);
        }
    }

    #[test]
    fn random_picks_are_distinct_or_repeated_as_asked() {
        let z = set(if cfg!(miri) { 20 } else { 200 });
        for k in [0, 1, 5, 15, 19, 20, 500] {
            let got = z.random(k);
            let distinct: std::collections::HashSet<_> = got.iter().map(|p| p.0.clone()).collect();
            assert_eq!(got.len(), (k as usize).min(z.len()));
            assert_eq!(distinct.len(), got.len());
        }
        assert_eq!(z.random(-7).len(), 7);
    }
}
