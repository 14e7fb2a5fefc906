//! [`StreamId`]: a stream entry's id, `<ms>-<seq>`, two unsigned 64-bit halves ordered as one 128-bit
//! number, with Redis's textual forms.

use core::fmt;

/// A stream entry's id: milliseconds, then a sequence number within the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

/// What an id argument said (XADD's `*`, `<ms>-*` and `<ms>-<seq>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdSpec {
    /// `*`: the clock's milliseconds, or the last id's successor.
    Auto,
    /// `<ms>-*`: these milliseconds, the next free sequence number in them.
    Ms(u64),
    /// An id in full (a missing sequence part is 0).
    Exact(StreamId),
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    /// The next id, or None past the last one.
    pub fn next(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId::new(ms + 1, 0)),
            (ms, seq) => Some(StreamId::new(ms, seq + 1)),
        }
    }

    /// The previous id, or None before the first one.
    pub fn prev(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId::new(ms - 1, u64::MAX)),
            (ms, seq) => Some(StreamId::new(ms, seq - 1)),
        }
    }

    /// Parses `<ms>-<seq>` or `<ms>` (whose sequence is `missing_seq`), as Redis reads an id: each part
    /// an unsigned 64-bit decimal; `-` and `+` are the least and greatest ids unless `strict`. The id
    /// argument is at most 127 bytes.
    pub fn parse(s: &[u8], missing_seq: u64, strict: bool) -> Option<StreamId> {
        match StreamId::parse_spec(s, missing_seq, strict, false)? {
            IdSpec::Exact(id) => Some(id),
            _ => None,
        }
    }

    /// [`StreamId::parse`] that also reads `<ms>-*` when `seq_star` (XADD's id), as [`IdSpec::Ms`].
    pub fn parse_spec(s: &[u8], missing_seq: u64, strict: bool, seq_star: bool) -> Option<IdSpec> {
        if s.len() > 127 {
            return None;
        }
        match s {
            b"-" if !strict => return Some(IdSpec::Exact(StreamId::MIN)),
            b"+" if !strict => return Some(IdSpec::Exact(StreamId::MAX)),
            _ => {}
        }
        let (ms, seq) = match s.iter().position(|&b| b == b'-') {
            Some(i) => (&s[..i], Some(&s[i + 1..])),
            None => (s, None),
        };
        let ms = parse_u64(ms)?;
        match seq {
            Some(b"*") if seq_star => Some(IdSpec::Ms(ms)),
            Some(seq) => Some(IdSpec::Exact(StreamId::new(ms, parse_u64(seq)?))),
            None => Some(IdSpec::Exact(StreamId::new(ms, missing_seq))),
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// An unsigned 64-bit decimal as Redis's `string2ull` reads one: a canonical integer (no sign, no
/// leading zero) first; else what `strtoull` takes whole (leading blanks, a sign, leading zeros; a
/// minus sign negates modulo 2^64), refusing a canonical negative number and overflow.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::redis_util::parse_i64(s) {
        return u64::try_from(v).ok();
    }
    let mut i = s
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .count();
    let mut negative = false;
    if let Some(&c) = s.get(i) {
        if c == b'+' || c == b'-' {
            negative = c == b'-';
            i += 1;
        }
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::{IdSpec, StreamId};

    #[test]
    fn ids_parse_as_redis_reads_them() {
        let p = |s: &str| StreamId::parse(s.as_bytes(), 0, false);
        assert_eq!(p("5-3"), Some(StreamId::new(5, 3)));
        assert_eq!(p("5"), Some(StreamId::new(5, 0)));
        assert_eq!(
            StreamId::parse(b"5", u64::MAX, false),
            Some(StreamId::new(5, u64::MAX))
        );
        assert_eq!(p("-"), Some(StreamId::MIN));
        assert_eq!(p("+"), Some(StreamId::MAX));
        assert_eq!(StreamId::parse(b"+", 0, true), None);
        assert_eq!(
            p("18446744073709551615-18446744073709551615"),
            Some(StreamId::MAX)
        );
        assert_eq!(p("18446744073709551616-0"), None);
        assert_eq!(p("007-01"), Some(StreamId::new(7, 1)));
        assert_eq!(p("1--1"), None);
        assert_eq!(p("1--0"), Some(StreamId::new(1, 0)));
        assert_eq!(p("-1"), None);
        assert_eq!(p("a-1"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("1-"), None);
        assert_eq!(p("1-*"), None);
        assert_eq!(StreamId::parse_spec(b"1-*", 0, true, true), Some(IdSpec::Ms(1)));
    }

    #[test]
    fn next_and_prev_carry_and_stop_at_the_ends() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        assert_eq!(StreamId::new(1, 2).to_string(), "1-2");
    }
}
