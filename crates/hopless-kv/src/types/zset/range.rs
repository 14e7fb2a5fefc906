//! The ranges ZRANGEBYSCORE, ZCOUNT, ZRANGEBYLEX, ZLEXCOUNT and their kin select: a score interval
//! ([`ScoreRange`], parsed as Redis's `zslParseRange`) and a member interval ([`LexRange`], parsed as
//! `zslParseLexRange`), each seen as two predicates over the set's order, true on a prefix: "below the
//! range" and "not above the range". The members in range are then a run of ranks.

use super::score::parse_bound;

/// A score interval, each end open or closed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub min_ex: bool,
    pub max_ex: bool,
}

impl ScoreRange {
    /// From ZRANGEBYSCORE's `min max` arguments; None where Redis says "min or max is not a float".
    pub fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, min_ex) = parse_bound(min)?;
        let (max, max_ex) = parse_bound(max)?;
        Some(ScoreRange {
            min,
            max,
            min_ex,
            max_ex,
        })
    }

    /// Whether no score can be in it (Redis then answers at once).
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.min_ex || self.max_ex))
    }

    /// Whether `s` lies before the range (Redis's `!zslValueGteMin`).
    pub fn before(&self, s: f64) -> bool {
        if self.min_ex {
            s <= self.min
        } else {
            s < self.min
        }
    }

    /// Whether `s` does not lie past the range (Redis's `zslValueLteMax`).
    pub fn not_after(&self, s: f64) -> bool {
        if self.max_ex {
            s < self.max
        } else {
            s <= self.max
        }
    }
}

/// One end of a member interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: before every member.
    Min,
    /// `+`: after every member.
    Max,
    /// `[m`.
    Incl(Vec<u8>),
    /// `(m`.
    Excl(Vec<u8>),
}

impl LexBound {
    /// From `-`, `+`, `[member` or `(member`; None where Redis says "not valid string range item".
    pub fn parse(s: &[u8]) -> Option<LexBound> {
        match s {
            b"+" => Some(LexBound::Max),
            b"-" => Some(LexBound::Min),
            [b'[', rest @ ..] => Some(LexBound::Incl(rest.to_vec())),
            [b'(', rest @ ..] => Some(LexBound::Excl(rest.to_vec())),
            _ => None,
        }
    }

    fn exclusive(&self) -> bool {
        matches!(self, LexBound::Excl(_))
    }

    /// `m` against the bound as Redis's `sdscmplex` compares them.
    fn cmp_member(m: &[u8], b: &LexBound) -> core::cmp::Ordering {
        use core::cmp::Ordering::*;
        match b {
            LexBound::Min => Greater,
            LexBound::Max => Less,
            LexBound::Incl(x) | LexBound::Excl(x) => m.cmp(x),
        }
    }
}

/// A member interval (the set's scores are meant to be all equal, as Redis's docs ask).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    /// Whether no member can be in it.
    pub fn is_empty(&self) -> bool {
        use core::cmp::Ordering::*;
        let c = match (&self.min, &self.max) {
            (LexBound::Min, LexBound::Min) | (LexBound::Max, LexBound::Max) => Equal,
            (LexBound::Min, _) | (_, LexBound::Max) => Less,
            (LexBound::Max, _) | (_, LexBound::Min) => Greater,
            (LexBound::Incl(a) | LexBound::Excl(a), LexBound::Incl(b) | LexBound::Excl(b)) => a.cmp(b),
        };
        c == Greater || (c == Equal && (self.min.exclusive() || self.max.exclusive()))
    }

    /// Whether `m` lies before the range (Redis's `!zslLexValueGteMin`).
    pub fn before(&self, m: &[u8]) -> bool {
        let c = LexBound::cmp_member(m, &self.min);
        if self.min.exclusive() {
            c.is_le()
        } else {
            c.is_lt()
        }
    }

    /// Whether `m` does not lie past the range (Redis's `zslLexValueLteMax`).
    pub fn not_after(&self, m: &[u8]) -> bool {
        let c = LexBound::cmp_member(m, &self.max);
        if self.max.exclusive() {
            c.is_lt()
        } else {
            c.is_le()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_ranges_are_those_redis_answers_at_once() {
        let s = |a: &str, b: &str| ScoreRange::parse(a.as_bytes(), b.as_bytes()).unwrap();
        assert!(s("2", "1").is_empty());
        assert!(s("(1", "1").is_empty());
        assert!(!s("1", "1").is_empty());
        assert!(!s("-inf", "+inf").is_empty());
        let l = |a: &str, b: &str| LexRange::parse(a.as_bytes(), b.as_bytes()).unwrap();
        assert!(l("+", "-").is_empty());
        assert!(!l("-", "+").is_empty());
        assert!(l("(a", "[a").is_empty());
        assert!(!l("[a", "[a").is_empty());
        assert!(!l("-", "-").is_empty());
        assert!(LexRange::parse(b"a", b"+").is_none());
        assert!(LexRange::parse(b"", b"+").is_none());
    }

    #[test]
    fn predicates_split_the_order() {
        let r = ScoreRange::parse(b"(1", b"3").unwrap();
        assert!(r.before(1.0) && !r.before(1.5));
        assert!(r.not_after(3.0) && !r.not_after(3.5));
        let l = LexRange::parse(b"[b", b"(d").unwrap();
        assert!(l.before(b"a") && !l.before(b"b"));
        assert!(l.not_after(b"c") && !l.not_after(b"d"));
        let all = LexRange::parse(b"-", b"+").unwrap();
        assert!(!all.before(b"") && all.not_after(b"\xff"));
    }
}
