//! Scores as Redis reads and writes them: [`parse_score`] (ZADD, ZINCRBY, WEIGHTS: C's `strtod` over the
//! whole argument, no leading space, no NaN, no overflow), [`parse_bound`] (the ends of a score range:
//! `strtod` as Redis's `zslParseRange` calls it, leading spaces and overflow allowed) and
//! [`format_score`] (`%.17g`, as Redis's `addReplyDouble`: integers plainly, everything else with 17
//! significant digits).

/// Whether `b` is a byte C's `isspace` accepts.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The value of `s` read whole as C's `strtod` reads a number (decimal, hexadecimal, `inf`, `infinity`,
/// `nan`, any case, an optional sign), and whether it overflowed or underflowed to zero (C's `ERANGE`
/// on a result of infinity or zero). None when `s` is not all one number.
fn strtod_whole(s: &[u8]) -> Option<(f64, bool)> {
    let text = core::str::from_utf8(s).ok()?;
    let (neg, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body.len() > 1 && (body.starts_with("0x") || body.starts_with("0X")) {
        let v = parse_hex(&body[2..])?;
        return Some((if neg { -v.0 } else { v.0 }, v.1));
    }
    // Rust's grammar is C's decimal one (digits with an optional point, an optional exponent) plus the
    // words inf, infinity and nan; it has no sign of its own once we took it, and no hexadecimal.
    if body.starts_with(['+', '-']) {
        return None;
    }
    let v: f64 = body.parse().ok()?;
    let word = body.bytes().next().is_some_and(|c| c.is_ascii_alphabetic());
    let range = if word {
        false
    } else if v.is_infinite() {
        true
    } else {
        v == 0.0 && mantissa_nonzero(body)
    };
    Some((if neg { -v } else { v }, range))
}

/// Whether a decimal literal's digits before its exponent are not all zero.
fn mantissa_nonzero(body: &str) -> bool {
    body.bytes()
        .take_while(|c| !matches!(c, b'e' | b'E'))
        .any(|c| matches!(c, b'1'..=b'9'))
}

/// C's hexadecimal float (after the `0x`): hex digits with an optional point, then an optional binary
/// exponent `p[+-]digits`. Exact for up to 13 significant hex digits, which is what clients send.
fn parse_hex(s: &str) -> Option<(f64, bool)> {
    let (mant, exp) = match s.find(['p', 'P']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    if let Some(e) = exp {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let e: i32 = e
            .parse()
            .unwrap_or(if e.starts_with('-') { -100_000 } else { 100_000 });
        v = times_power_of_two(v, e.clamp(-2000, 2000));
    }
    let nonzero = int.chars().chain(frac.chars()).any(|c| c != '0');
    Some((v, v.is_infinite() || (v == 0.0 && nonzero)))
}

/// `v × 2^e` as C's `ldexp` computes it: each step multiplies by a power of two that is itself an exact
/// normal `f64`, so nothing rounds until the result leaves the normal range. (`powi` is not promised to be
/// exact, and Miri rounds it differently on purpose: `0x1p-2` read as 0.24999999999999992.)
fn times_power_of_two(mut v: f64, mut e: i32) -> f64 {
    while e > 1023 {
        v *= f64::from_bits(0x7fe0_0000_0000_0000); // 2^1023
        e -= 1023;
    }
    while e < -1022 {
        v *= f64::from_bits(0x0010_0000_0000_0000); // 2^-1022
        e += 1022;
    }
    v * f64::from_bits(((e + 1023) as u64) << 52)
}

/// A score argument (ZADD, ZINCRBY, WEIGHTS) as Redis's `getDoubleFromObject` reads it: the whole
/// argument one number, no leading space, neither NaN nor out of range. `-0` stays negative zero, as in
/// Redis: ZINCRBY and ZADD INCR reply it for a new member, and the large form keeps it (the compact one
/// stores `0`: [`SortedSet`](super::SortedSet)).
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.first().is_some_and(|&c| is_c_space(c)) {
        return None;
    }
    let (v, range) = strtod_whole(s)?;
    if range || v.is_nan() {
        return None;
    }
    Some(v)
}

/// One end of a score range as Redis's `zslParseRange` reads it: an optional `(` (exclusive), then C's
/// `strtod` over the rest, which skips leading spaces, reads an empty string as 0 and an overflow as
/// infinity; NaN is refused. Returns the value and whether it is exclusive.
pub fn parse_bound(s: &[u8]) -> Option<(f64, bool)> {
    let (ex, rest) = match s.first() {
        Some(b'(') => (true, &s[1..]),
        _ => (false, s),
    };
    let start = rest.iter().position(|&c| !is_c_space(c)).unwrap_or(rest.len());
    let rest = &rest[start..];
    if rest.is_empty() {
        // strtod consumed nothing: its end pointer is the argument's start, a NUL when empty.
        return (start == 0).then_some((0.0, ex));
    }
    let (v, _) = strtod_whole(rest)?;
    (!v.is_nan()).then_some((v, ex))
}

/// A SORT weight as Redis's `sortCommand` reads one: C's `strtod` over the whole value, leading spaces
/// allowed, an empty value 0; None (its "can't be converted into double") for anything left over, NaN,
/// or a value out of range.
pub fn parse_sort_weight(s: &[u8]) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s.iter().position(|&c| !is_c_space(c))?;
    let (v, range) = strtod_whole(&s[start..])?;
    (!range && !v.is_nan()).then_some(v)
}

/// A score as Redis replies it (`addReplyDouble`): `inf`, `-inf`, `nan`, else as `%.17g` prints it
/// (integers plainly, `-0` for negative zero, which only the large form stores).
pub fn format_score(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 && v.is_sign_negative() {
        return "-0".into();
    }
    if v.abs() < 4_503_599_627_370_496.0 && v == v.trunc() {
        return format!("{}", v as i64);
    }
    format_g17(v)
}

/// C's `%.17g` of a finite, non-zero `v`.
fn format_g17(v: f64) -> String {
    let e = format!("{v:.16e}");
    let (mant, exp) = e.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent digits");
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(24);
    if neg {
        out.push('-');
    }
    if !(-4..17).contains(&exp) {
        let frac = digits[1..].trim_end_matches('0');
        out.push_str(&digits[..1]);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        out.push_str(&format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()));
    } else if exp >= 0 {
        let cut = exp as usize + 1;
        out.push_str(&digits[..cut]);
        let frac = digits[cut..].trim_end_matches('0');
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
    } else {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_as_redis_reads_them() {
        for (s, want) in [
            ("1", Some(1.0)),
            ("-1.5", Some(-1.5)),
            ("+2", Some(2.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("1e3", Some(1000.0)),
            ("inf", Some(f64::INFINITY)),
            ("+inf", Some(f64::INFINITY)),
            ("-INF", Some(f64::NEG_INFINITY)),
            ("Infinity", Some(f64::INFINITY)),
            ("0x10", Some(16.0)),
            ("0x1p-2", Some(0.25)),
            ("-0", Some(-0.0)),
            ("4e-320", Some(4e-320)),
            ("nan", None),
            ("1e400", None),
            ("1e-400", None),
            (" 1", None),
            ("1 ", None),
            ("", None),
            ("abc", None),
            ("1e", None),
            ("--1", None),
            ("+-1", None),
        ] {
            assert_eq!(parse_score(s.as_bytes()), want, "{s:?}");
        }
        assert!(
            parse_score(b"-0").is_some_and(|v| v.is_sign_negative()),
            "-0 keeps its sign"
        );
    }

    #[test]
    fn bounds_parse_as_zsl_parse_range_reads_them() {
        assert_eq!(parse_bound(b"(1"), Some((1.0, true)));
        assert_eq!(parse_bound(b"-inf"), Some((f64::NEG_INFINITY, false)));
        assert_eq!(parse_bound(b""), Some((0.0, false)));
        assert_eq!(parse_bound(b"("), Some((0.0, true)));
        assert_eq!(parse_bound(b" 2"), Some((2.0, false)));
        assert_eq!(parse_bound(b"1e400"), Some((f64::INFINITY, false)));
        assert_eq!(parse_bound(b"  "), None);
        assert_eq!(parse_bound(b"nan"), None);
        assert_eq!(parse_bound(b"1x"), None);
        assert_eq!(parse_bound(b"[1"), None);
    }

    #[test]
    fn scores_print_as_redis_prints_them() {
        for (v, want) in [
            (0.0, "0"),
            (-0.0, "-0"),
            (3.0, "3"),
            (-42.0, "-42"),
            (0.1, "0.10000000000000001"),
            (1.5, "1.5"),
            (1e20, "1e+20"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5e-10, "-2.5000000000000002e-10"),
            (123456.789, "123456.789"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (4e-320, "3.999955468730732e-320"),
        ] {
            assert_eq!(format_score(v), want, "{v:e}");
        }
    }
}
