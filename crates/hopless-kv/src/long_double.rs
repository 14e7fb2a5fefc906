//! Redis's `long double` arithmetic for HINCRBYFLOAT, emulated exactly: x86-64 Redis reads the stored
//! value and the increment with `strtold` into the x87 80-bit format (64-bit mantissa), adds them, and
//! prints the sum with `%.17Lf` minus trailing zeros (`ld2string(.., LD_STR_HUMAN)`). An `f64` gets
//! the common cases right and the rest wrong (integers past 2^53, 17-digit fractions, values past
//! 1e308, amounts under 1e-17 that print as 0), so this does what the FPU does, with exact big-integer
//! arithmetic (correct rounding, half to even, as glibc's `strtold` and `printf` round).
//!
//! Costs grow with the text: at most Redis's 5 KiB per number (`MAX_LONG_DOUBLE_CHARS`), a few
//! thousand-limb big integers at worst.

use crate::bignum::{mul, shr, Big};

/// Redis's `MAX_LONG_DOUBLE_CHARS`: longer text is not a float to `string2ld`.
const MAX_CHARS: usize = 5 * 1024;
/// The binary exponent of the least significant mantissa bit of the smallest subnormal (2^-16445).
const MIN_LSB: i64 = -16445;
/// Values from 2^16384 on are infinite.
const MAX_EXP: i64 = 16384;

/// A finite x87 extended value, `(-1)^neg × m × 2^e` (`m == 0`: zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LongDouble {
    neg: bool,
    m: u64,
    e: i64,
}

/// What `strtold` made of a text Redis accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Finite(LongDouble),
    Infinite,
}

/// Rounds `n × 2^s` to the format, half to even; None when it overflows to infinity.
fn round(neg: bool, n: &Big, s: i64) -> Option<LongDouble> {
    if n.is_zero() {
        return Some(LongDouble { neg, m: 0, e: 0 });
    }
    let top = n.bits() - 1 + s;
    let mut lsb = (top - 63).max(MIN_LSB);
    let drop = lsb - s;
    let mut m = if drop <= 0 {
        n.shl(-drop).shr_u64(0)
    } else {
        n.shr_u64(drop)
    };
    if drop > 0 && n.bit(drop - 1) && (n.any_below(drop - 1) || m & 1 == 1) {
        let (v, over) = m.overflowing_add(1);
        m = if over {
            lsb += 1;
            1 << 63
        } else {
            v
        };
    }
    if m != 0 && 63 - m.leading_zeros() as i64 + lsb >= MAX_EXP {
        return None;
    }
    Some(LongDouble { neg, m, e: lsb })
}

/// Redis's `string2ld`: `strtold` over the whole text, no leading space, not NaN, not out of range
/// (infinite from overflow, or zero from underflow). `inf`/`infinity` are read as such.
pub(crate) fn parse(b: &[u8]) -> Option<Parsed> {
    if b.is_empty() || b.len() >= MAX_CHARS || b[0].is_ascii_whitespace() || b[0] == 0x0b {
        return None;
    }
    let (neg, rest) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    let lower = rest.to_ascii_lowercase();
    if lower == b"inf" || lower == b"infinity" {
        return Some(Parsed::Infinite);
    }
    let v = if lower.starts_with(b"0x") {
        parse_hex(neg, &lower[2..])
    } else {
        parse_decimal(neg, &lower)
    };
    v.map(Parsed::Finite)
}

/// Digits, an optional point and digits (at least one digit in all), then the exponent text.
fn split_mantissa(s: &[u8], is_digit: impl Fn(u8) -> bool) -> Option<(&[u8], &[u8], &[u8])> {
    let int_end = s.iter().position(|&c| !is_digit(c)).unwrap_or(s.len());
    let (int, rest) = s.split_at(int_end);
    let (frac, rest) = match rest.first() {
        Some(b'.') => {
            let r = &rest[1..];
            let end = r.iter().position(|&c| !is_digit(c)).unwrap_or(r.len());
            r.split_at(end)
        }
        _ => (&rest[..0], rest),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    Some((int, frac, rest))
}

/// An exponent's text after its letter: `[sign]digits`, saturating (the bounds below catch huge ones).
fn parse_exp(s: &[u8]) -> Option<i64> {
    let (neg, d) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = d
        .iter()
        .fold(0i64, |a, &c| {
            a.saturating_mul(10).saturating_add((c - b'0') as i64)
        })
        .min(1 << 40);
    Some(if neg { -v } else { v })
}

/// A float's text split as both bases read it: its significant digits (leading zeros dropped), how many
/// digits followed the point, and the exponent after `marker` (0 without one); None when it is not such a
/// text.
fn mantissa_parts(s: &[u8], is_digit: fn(u8) -> bool, marker: u8) -> Option<(Vec<u8>, usize, i64)> {
    let (int, frac, rest) = split_mantissa(s, is_digit)?;
    let exp = match rest.first() {
        None => 0,
        Some(&c) if c == marker => parse_exp(&rest[1..])?,
        Some(_) => return None,
    };
    let digits = int
        .iter()
        .chain(frac)
        .copied()
        .skip_while(|&c| c == b'0')
        .collect();
    Some((digits, frac.len(), exp))
}

/// A decimal float's text (after its sign); None when it is not one, or when `strtold` would report
/// it out of range (overflow to infinity, or underflow to zero), which Redis refuses alike.
fn parse_decimal(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let (digits, frac_len, exp) = mantissa_parts(s, |c| c.is_ascii_digit(), b'e')?;
    if digits.is_empty() {
        return Some(LongDouble { neg, m: 0, e: 0 });
    }
    let e10 = exp - frac_len as i64;
    let magnitude = e10 + digits.len() as i64;
    if magnitude > 4940 {
        return None;
    }
    if magnitude < -4960 {
        return None;
    }
    let mut d = Big(Vec::new());
    for chunk in digits.chunks(9) {
        let v = chunk.iter().fold(0u32, |a, &c| a * 10 + (c - b'0') as u32);
        d.mul_add_small(10u32.pow(chunk.len() as u32), v);
    }
    let r = if e10 >= 0 {
        let n = {
            let p = Big::pow10(e10 as u32);
            mul(&d, &p)
        };
        round(neg, &n, 0)
    } else {
        let p = Big::pow10((-e10) as u32);
        let k = (p.bits() - d.bits() + 66).max(0);
        let (q, sticky) = d.shl(k).div_sticky(&p);
        let n = q.shl(1).add(&Big::from_u64(sticky as u64));
        round(neg, &n, -k - 1)
    };
    r.filter(|v| v.m != 0)
}

/// A hexadecimal float's text after `0x` (hex digits, an optional point, an optional binary exponent
/// `p`), as [`parse_decimal`].
fn parse_hex(neg: bool, s: &[u8]) -> Option<LongDouble> {
    let (digits, frac_len, exp) = mantissa_parts(s, |c| c.is_ascii_hexdigit(), b'p')?;
    if digits.is_empty() {
        return Some(LongDouble { neg, m: 0, e: 0 });
    }
    let e2 = exp - 4 * frac_len as i64;
    let magnitude = e2 + 4 * digits.len() as i64;
    if magnitude > MAX_EXP + 4 {
        return None;
    }
    if magnitude < MIN_LSB - 4 {
        return None;
    }
    let mut n = Big(Vec::new());
    for &c in &digits {
        n.mul_add_small(16, (c as char).to_digit(16).unwrap_or(0));
    }
    round(neg, &n, e2).filter(|v| v.m != 0)
}

impl LongDouble {
    pub(crate) const ZERO: LongDouble = LongDouble {
        neg: false,
        m: 0,
        e: 0,
    };

    /// `self + o`, rounded; None when it overflows to infinity.
    pub(crate) fn add(self, o: LongDouble) -> Option<LongDouble> {
        if self.m == 0 {
            return Some(if o.m == 0 {
                LongDouble {
                    neg: self.neg && o.neg,
                    ..o
                }
            } else {
                o
            });
        }
        if o.m == 0 {
            return Some(self);
        }
        let base = self.e.min(o.e);
        let a = Big::from_u64(self.m).shl(self.e - base);
        let b = Big::from_u64(o.m).shl(o.e - base);
        if self.neg == o.neg {
            return round(self.neg, &a.add(&b), base);
        }
        match a.cmp(&b) {
            core::cmp::Ordering::Equal => Some(LongDouble {
                neg: false,
                m: 0,
                e: 0,
            }),
            core::cmp::Ordering::Greater => round(self.neg, &a.sub(&b), base),
            core::cmp::Ordering::Less => round(o.neg, &b.sub(&a), base),
        }
    }

    /// `%.17Lf` without trailing zeros (nor a trailing point), `-0` as `0`: Redis's `LD_STR_HUMAN`.
    pub(crate) fn to_human(self) -> String {
        let scaled = mul(&Big::from_u64(self.m), &Big::pow10(17));
        let x = if self.e >= 0 {
            scaled.shl(self.e)
        } else {
            let drop = -self.e;
            let q = shr(&scaled, drop);
            let half = scaled.bit(drop - 1);
            if half && (scaled.any_below(drop - 1) || q.bit(0)) {
                q.add(&Big::from_u64(1))
            } else {
                q
            }
        };
        let mut digits = x.to_decimal();
        if digits.len() < 18 {
            digits = format!("{}{digits}", "0".repeat(18 - digits.len()));
        }
        let (int, frac) = digits.split_at(digits.len() - 17);
        let frac = frac.trim_end_matches('0');
        let mut s = String::with_capacity(digits.len() + 2);
        if self.neg {
            s.push('-');
        }
        s.push_str(int);
        if !frac.is_empty() {
            s.push('.');
            s.push_str(frac);
        }
        if s == "-0" {
            s = "0".to_string();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(a: &str, b: &str) -> String {
        let (Some(Parsed::Finite(x)), Some(Parsed::Finite(y))) = (parse(a.as_bytes()), parse(b.as_bytes()))
        else {
            panic!("{a} or {b} is no finite float");
        };
        x.add(y).expect("finite").to_human()
    }

    #[test]
    fn sums_print_as_x86_64_redis_prints_them() {
        // Each answer is what redis-server 7.0 (x86-64) replied to HINCRBYFLOAT.
        assert_eq!(add("0", "10.5"), "10.5");
        assert_eq!(add("0.1", "0.2"), "0.3");
        assert_eq!(add("3.0", "-3"), "0");
        assert_eq!(add("-9223372036854775807", "1.5"), "-9223372036854775805.5");
        assert_eq!(add("-9223372036854775807", "1e2"), "-9223372036854775707");
        assert_eq!(add("9223372036854775807", "1.5"), "9223372036854775808");
        assert_eq!(add("1e308", "0"), "99999999999999999996685879655845645660560099847415567207797047994921734868838061872100126921888539320446747225054013223152134749593960583597420814430196418767959100019603190778663109604507106667939153395788938914560543563061268364901618630217086589253444881623791300855757318142424510452728255046343928578048");
        assert_eq!(add("1e-18", "0"), "0");
        assert_eq!(add("-1e-18", "0"), "0");
        assert_eq!(add("5.0e0", "0"), "5");
        assert_eq!(add("0x10", "0"), "16");
        assert_eq!(add("1.", "-.5"), "0.5");
        assert!(add("1e4000", "1")
            .starts_with("99999999999999999999654638730996237849324925835069576313015083330432619433063423"));
        assert_eq!(add("0x1p-16445", "0"), "0");
        assert_eq!(add("0.3", "0.00000000000000001"), "0.30000000000000001");
        assert_eq!(add("2.5e-17", "0"), "0.00000000000000002");
        assert_eq!(add("1.5e-17", "0"), "0.00000000000000002");
        assert_eq!(add("123456789.123456789", "0"), "123456789.12345678899873747");
    }

    #[test]
    fn what_string2ld_refuses() {
        for bad in [
            "", " 1", "abc", "1e", "1e+", ".", "0x", "nan", "-nan", "1.5x", "1e99999", "1e-99999", "--1",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse(b"inf"), Some(Parsed::Infinite));
        assert_eq!(parse(b"-Infinity"), Some(Parsed::Infinite));
        assert!(matches!(parse(b"1e4000"), Some(Parsed::Finite(_))));
        assert!(matches!(parse(b"1e-4950"), Some(Parsed::Finite(_))));
        assert_eq!(parse(b"1e-4951"), None);
        assert_eq!(parse(b"1e5000"), None);
        assert_eq!(parse(&[b'1'; 5120]), None);
    }

    #[test]
    fn overflow_is_infinite() {
        let Some(Parsed::Finite(x)) = parse(b"1e4932") else {
            panic!()
        };
        assert_eq!(x.add(x), None);
    }
}
